"""Wall time and peak memory of each phase of a run (warm-up, Stage 1, eval, rollout, analyze,
rescore, update), so a run says where its time and memory went.

At the end of every phase the C allocator is asked to return freed memory to the system
(``release_free_memory``: glibc's ``malloc_trim``). glibc keeps what torch frees in its arenas: a
SmolLM2 forward/backward/AdamW step left 4.2 GiB resident, 2.0 GiB after the trim (the weights,
gradients and AdamW state), so every later phase started 2 GiB higher than it needed to.

Peak memory is the process's peak resident set size *during* the phase: Linux keeps the peak
(``VmHWM`` in ``/proc/self/status``) and resets it when ``5`` is written to
``/proc/self/clear_refs``. Where that is not available (other systems) the peak since the start of
the process is reported instead (``resource.getrusage``), which never goes down. On a GPU the
phase's peak allocated CUDA memory is reported too.

A phase that runs a child process (the warm-up and Stage 1 SFTs are built in one, so their memory
goes back before training) counts the child's peak when it is the largest any child of this
process has had so far (``RUSAGE_CHILDREN`` keeps only that maximum, over children that ended):
the table then shows the build's peak instead of the parent's idle wait.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import re
import resource
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def reset_peak_rss() -> bool:
    """Start a new peak; False where the system cannot (then ``peak_rss_mb`` is all-time).

    Linux resets the process's high-water mark itself (``/proc/self/clear_refs``), and the
    maximum resident size the kernel reports for the process (``ru_maxrss``, GNU time's ``%M``)
    is read from that mark: after a reset it forgets the earlier peaks. A run's peak is therefore
    the largest of its phase peaks (the run's phase table), not what an outside tool reports."""
    try:
        _CLEAR_REFS.write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float:
    """The peak resident memory (MiB) since the last ``reset_peak_rss`` (or the process start)."""
    try:
        found = re.search(r"VmHWM:\s+(\d+) kB", _STATUS.read_text())
        if found:
            return int(found.group(1)) / 1024
    except OSError:
        pass
    return _ru_maxrss_mb(resource.RUSAGE_SELF)


def _ru_maxrss_mb(who: int) -> float:
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB elsewhere
    return resource.getrusage(who).ru_maxrss / scale


@functools.cache
def _libc_trim():
    """glibc's ``malloc_trim``, or None (another C library, another system)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


@functools.cache
def _libc_mallopt():
    """glibc's ``mallopt``, or None (another C library, another system)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return None


_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
EAGER_MMAP_BYTES = 128 * 1024  # glibc's starting threshold, fixed for the phase
LAZY_MMAP_BYTES = 32 * 1024 * 1024  # glibc's ceiling for its own moving threshold (64-bit)


@contextlib.contextmanager
def eager_release(enabled: bool = True) -> Iterator[bool]:
    """Within the block, every allocation of ``EAGER_MMAP_BYTES`` or more that the heap's free
    chunks cannot serve is its own mapping, returned to the system when torch frees it; yields
    whether that is so (False when not ``enabled`` or where glibc is absent). A block that fits
    a free chunk already in the heap is served from it as before.

    glibc raises its mmap threshold each time a mapped block is freed (up to 32 MiB), so a
    backward pass's activations, freed and allocated again in other sizes, end up in the heap,
    which fragments: the process holds more than its tensors use. Measured on SmolLM2 update
    steps (``benchmarks/update_memory.py``, docs/benchmarks.md): peak 5.9 GiB instead of 6.9 and
    2.0 GiB resident between steps instead of 6.2, but 1.48x the seconds per step (every
    activation is mapped and faulted in afresh). So the trainer uses it only in its low-memory
    mode (``--gradient-checkpointing``: peak 3.2 GiB). After the block the threshold is fixed at
    glibc's ceiling, so big blocks go on being mapped."""
    mallopt = _libc_mallopt() if enabled else None
    if mallopt is None:
        yield False
        return
    mallopt(_M_MMAP_THRESHOLD, EAGER_MMAP_BYTES)
    try:
        yield True
    finally:
        mallopt(_M_MMAP_THRESHOLD, LAZY_MMAP_BYTES)


def children_peak_rss_mb() -> float:
    """The largest peak resident memory (MiB) of any child process that has ended so far."""
    return _ru_maxrss_mb(resource.RUSAGE_CHILDREN)


def release_free_memory() -> bool:
    """Return the C heap's free memory to the system; False where there is no ``malloc_trim``."""
    trim = _libc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def rss_mb() -> float:
    """The resident memory (MiB) now."""
    try:
        found = re.search(r"VmRSS:\s+(\d+) kB", _STATUS.read_text())
        if found:
            return int(found.group(1)) / 1024
    except OSError:
        pass
    return peak_rss_mb()


@dataclass
class PhaseMeter:
    """``with meter.phase("update"): ...`` records the phase's seconds and peak memory (MiB);
    a phase entered again adds its seconds and keeps the larger peak."""

    seconds: dict[str, float] = field(default_factory=dict)
    peak_mb: dict[str, float] = field(default_factory=dict)
    cuda_peak_mb: dict[str, float] = field(default_factory=dict)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        cuda = _cuda()
        reset_peak_rss()
        children = children_peak_rss_mb()
        if cuda is not None:
            cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0
            peak, child = peak_rss_mb(), children_peak_rss_mb()
            if child > children:  # a child of this phase peaked higher than any before it
                peak = max(peak, child)
            self.peak_mb[name] = max(self.peak_mb.get(name, 0.0), peak)
            release_free_memory()  # what the phase freed, before the next one starts
            if cuda is not None:
                peak = cuda.max_memory_allocated() / 2**20
                self.cuda_peak_mb[name] = max(self.cuda_peak_mb.get(name, 0.0), peak)

    def forget(self, name: str) -> None:
        """Drop a phase that did nothing worth showing."""
        for d in (self.seconds, self.peak_mb, self.cuda_peak_mb):
            d.pop(name, None)

    def metrics(self) -> dict[str, float]:
        """``time/<phase>`` and ``memory/<phase>_peak_mb`` (``memory/<phase>_cuda_peak_mb``)."""
        out = {f"time/{k}": v for k, v in self.seconds.items()}
        out.update({f"memory/{k}_peak_mb": v for k, v in self.peak_mb.items()})
        out.update({f"memory/{k}_cuda_peak_mb": v for k, v in self.cuda_peak_mb.items()})
        return out


def _cuda():
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return torch.cuda


def phase_rows(lines: list[dict]) -> dict[str, dict[str, float]]:
    """Per phase over a run's metrics lines: ``seconds`` summed over the lines that logged it,
    ``n`` (how many), ``peak_mb`` (the largest peak)."""
    rows: dict[str, dict[str, float]] = {}
    for m in lines:
        for key, value in m.items():
            if key.startswith("time/") and isinstance(value, (int, float)):
                r = rows.setdefault(key[5:], {"seconds": 0.0, "n": 0, "peak_mb": 0.0})
                r["seconds"] += value
                r["n"] += 1
                r["peak_mb"] = max(r["peak_mb"], float(m.get(f"memory/{key[5:]}_peak_mb", 0.0)))
    return rows


def phase_table(rows: dict[str, dict[str, float]]) -> list[str]:
    """Lines of a per-phase table: ``{phase: {"seconds": s, "peak_mb": m, "n": count}}``."""
    lines = [f"{'phase':>10}  {'seconds':>9}  {'x':>3}  {'peak memory':>12}"]
    for name, r in rows.items():
        n = int(r.get("n", 1))
        peak = f"{r['peak_mb'] / 1024:.2f} GiB" if r.get("peak_mb") else "-"
        lines.append(f"{name:>10}  {r['seconds']:>9.1f}  {n:>3}  {peak:>12}")
    return lines
