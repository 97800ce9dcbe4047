"""The per-phase meter: seconds and peak memory per phase, and memory freed in a phase handed
back to the system before the next one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from seed_gym.trainer.phases import (
    PhaseMeter,
    phase_rows,
    release_free_memory,
    rss_mb,
)

linux_glibc = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not release_free_memory(),
    reason="glibc's malloc_trim and /proc/self/status (Linux)",
)


@linux_glibc
def test_memory_freed_in_a_phase_goes_back_to_the_system():
    # 4000 x 64 KiB (under glibc's mmap threshold, so on the heap), every other one freed: holes
    # that glibc keeps resident on its own (as it kept 2 GiB of a SmolLM2 update)
    meter = PhaseMeter()
    with meter.phase("update"):
        chunks = [bytearray(65536) for _ in range(4000)]
        del chunks[::2]
        held = rss_mb()
    after = rss_mb()
    assert held - after > 64  # of the 125 MiB freed
    assert meter.peak_mb["update"] >= held
    del chunks


_FREED_AT_ONCE = """
import numpy as np
from seed_gym.trainer.phases import eager_release, release_free_memory, rss_mb

def freed_at_once(n=300):
    arrays = [np.ones(1 << 17) for _ in range(n)]  # 1 MiB each, written, so resident
    before = rss_mb()
    del arrays[::2]
    freed = before - rss_mb()
    del arrays
    release_free_memory()
    return freed

with eager_release() as eager:
    assert eager
    inside = freed_at_once()
outside = freed_at_once()  # the threshold now sits at glibc's ceiling: 1 MiB is heap
print(inside, outside)
"""


@linux_glibc
def test_eager_release_gives_freed_blocks_back_at_once_and_the_heap_after_it_does_not():
    # In a fresh process: the mmap threshold applies only to blocks the heap cannot already
    # serve, so in a process whose heap holds free 1-MiB holes (as the test session's does after
    # other tests) the arrays land in those holes and nothing is given back at once.
    done = subprocess.run(
        [sys.executable, "-c", _FREED_AT_ONCE], capture_output=True, text=True, check=True
    )
    inside, outside = map(float, done.stdout.split())
    assert inside > 120  # of the 150 MiB freed
    assert outside < 0.5 * inside


def test_a_phase_entered_twice_adds_seconds_and_keeps_the_larger_peak():
    meter = PhaseMeter()
    for _ in range(2):
        with meter.phase("rollout"):
            pass
    meter.peak_mb["rollout"] = 1e9  # an earlier entry's peak, above anything this one reaches
    with meter.phase("rollout"):
        pass
    assert meter.peak_mb["rollout"] == 1e9
    rows = phase_rows([meter.metrics(), meter.metrics()])
    assert rows["rollout"]["n"] == 2
    assert rows["rollout"]["seconds"] == pytest.approx(2 * meter.seconds["rollout"])


_CHILD_PEAK = """
import subprocess, sys
from seed_gym.trainer.phases import PhaseMeter
child = "import sys; b = bytearray(int(sys.argv[1]) * 2**20); b[::4096] = b'x' * len(b[::4096])"
meter = PhaseMeter()
with meter.phase("warmup"):  # a build in a child, as the warm-up's SFT
    subprocess.run([sys.executable, "-c", child, "300"], check=True)
with meter.phase("stage1"):  # a smaller child: RUSAGE_CHILDREN still says 300, not this one's
    subprocess.run([sys.executable, "-c", child, "10"], check=True)
with meter.phase("load"):
    pass
print(meter.peak_mb["warmup"], meter.peak_mb["stage1"], meter.peak_mb["load"])
"""


@linux_glibc
def test_a_phase_counts_the_peak_of_a_child_it_ran_and_not_an_earlier_childs():
    # in a fresh process: RUSAGE_CHILDREN keeps the largest peak of any child so far
    done = subprocess.run(
        [sys.executable, "-c", _CHILD_PEAK], capture_output=True, text=True, check=True
    )
    warmup, stage1, load = map(float, done.stdout.split())
    assert warmup >= 300  # the child's 300 MiB, not the parent's idle wait
    assert stage1 < 300 and load < 300  # the parent's own peak: the earlier child not counted
