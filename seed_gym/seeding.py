"""One way to derive seeds: an independent stream for every tuple of integers.

``derive_seed(run_seed, iteration, purpose)`` gives the task order, env seeds, sampling and
shuffling of a training iteration; ``derive_seed(seed, turn)`` the sampling seed of one turn of a
collection or an eval episode; ``derive_seed(seed, rank)`` a rank's rollout stream. Distinct
tuples give statistically independent 62-bit seeds (numpy's ``SeedSequence``), so nothing drawn
for one purpose shifts another, and a run is reproducible from its seed alone.
"""

from __future__ import annotations

import numpy as np

SEED_MAX = 2**63 - 1  # the largest --seed: what numpy, torch and int64 columns take


def derive_seed(*parts: int) -> int:
    """An independent 62-bit seed for the tuple ``parts`` (e.g. run seed, iteration, purpose)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1, np.uint64)[0] >> 2)
