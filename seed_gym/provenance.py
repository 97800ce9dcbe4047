"""What produced a number: the installed package versions and the machine.

Both go into ``results.json`` (``seed-gym eval``), ``learning.json`` (the learning benchmark) and
a training run's ``provenance.jsonl`` (one line per start or resume): two "AMD EPYC" machines, one
on AVX2 kernels and one on AVX-512, sampled different runs from the same command and seed.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

VERSION_PACKAGES = (
    "seed-gym",
    "numpy",
    "gymnasium",
    "torch",
    "transformers",
    "tokenizers",
    "pillow",
    "alfworld",
    "textworld",
    "bm25s",
    "faiss-cpu",
)


def package_versions() -> dict[str, str]:
    """Python and the installed versions of the packages results depend on."""

    out = {"python": platform.python_version()}
    for name in VERSION_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def machine_info() -> dict[str, Any]:
    """The machine results were measured on: CPU model, torch's CPU kernel level and cores. The
    same model name ("AMD EPYC") runs AVX2 kernels on one machine and AVX-512 on another, and
    sampled runs differ between them from the first iteration (docs/benchmarks.md)."""

    cpu = ""
    if Path("/proc/cpuinfo").exists():
        names = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if "model name" in ln]
        cpu = names[0].split(":", 1)[1].strip() if names else ""
    try:
        import torch

        kernels = torch.backends.cpu.get_cpu_capability()
    except ImportError:
        kernels = None
    return {"cpu": cpu or platform.processor(), "kernels": kernels, "cores": os.cpu_count(),
            "arch": platform.machine()}  # fmt: skip


def provenance_record(**extra: Any) -> dict[str, Any]:
    """One line of a run's ``provenance.jsonl``: the UTC time, the package versions, the machine
    and ``extra`` (the trainer adds the iteration it starts at and its torch threads, which
    change a CPU run's numbers as the kernels do)."""
    from datetime import datetime, timezone

    return {"time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "versions": package_versions(), "machine": machine_info(), **extra}  # fmt: skip
