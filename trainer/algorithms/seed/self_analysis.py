"""``SelfAnalysis``: the algorithms whose policy analyzes its own episodes into skills (``seed``,
``skill-grpo``; SEED.md Stage 2 step 3): they start from SEED Stage 1's model, and each iteration
the current policy, greedy, reads every finished trajectory and writes its skill."""

from __future__ import annotations

from typing import Any

from seed_gym.trainer.algorithms.base import Algorithm
from seed_gym.trainer.algorithms.seed import analyzer  # by module: tests replace its generate fn
from seed_gym.trainer.algorithms.seed.stage1 import stage1_model


class SelfAnalysis(Algorithm):
    """Stage 1 first, then the policy as analyzer."""

    def start_model(self, cfg, base, run_dir, device, build) -> str | None:
        """Stage 1's model (cached; ``--no-sft``: none, ``--sft-model``: that one)."""
        return stage1_model(cfg.replace(model=base), run_dir, device, build=build)

    def bind(self, engine: Any, policy: Any) -> None:
        self._generate = analyzer.analyzer_generate_fn(self.cfg, engine)
        self._kwargs = analyzer.analyzer_kwargs(self.cfg.opd.analyzer_budget, policy.tokenizer)

    def skills(self, trajs, stats, failures):
        retry = self.cfg.opd.analyzer_retry
        return analyzer.analyze(
            trajs, self._generate, retry=retry, stats=stats, failures=failures, **self._kwargs
        )
