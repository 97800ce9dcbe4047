"""The trainer's low-memory mode (``--gradient-checkpointing``): the same update, less memory.
Activations are recomputed in the backward pass instead of kept, and inside the update freed
blocks go back to the system at once (``phases.eager_release``); the losses and the trained
weights are those of the default update."""

from __future__ import annotations

import pytest
from conftest import run_metrics

torch = pytest.importorskip("torch")

from seed_gym.trainer.train import main as train_main  # noqa: E402

TINY = ["--preset", "tiny", "--env", "seed_gym/Sokoban-v0", "--iterations", "1", "--no-progress"]
TINY += ["--no-tensorboard", "--eval-splits", "seen", "--eval-tasks", "2"]


def test_gradient_checkpointing_trains_the_same_weights(tmp_path):
    runs = {}
    for name, extra in (("default", []), ("low", ["--gradient-checkpointing"])):
        out = tmp_path / name
        assert train_main([*TINY, *extra, "--out", str(out)]) == 0
        runs[name] = (run_metrics(out)[-1], torch.load(out / "checkpoint.pt", weights_only=False))
    (m0, c0), (m1, c1) = runs["default"], runs["low"]
    assert m0["train/loss"] == pytest.approx(m1["train/loss"], rel=1e-5, abs=1e-7)
    w0, w1 = c0["model"], c1["model"]
    assert w0.keys() == w1.keys()
    for key in w0:
        torch.testing.assert_close(w0[key], w1[key], rtol=1e-4, atol=1e-6, msg=key)


def test_the_update_leaves_no_gradients_behind(tmp_path, monkeypatch):
    """The last optimizer step's gradients are freed with the update: left on the parameters they
    would hold a model's worth of fp32 through the next rollout, analysis and eval."""
    import seed_gym.trainer.train as train_module

    real, left = train_module.run_update, []

    def spy(model, *args, **kwargs):
        metrics = real(model, *args, **kwargs)
        left.append([n for n, p in model.named_parameters() if p.grad is not None])
        return metrics

    monkeypatch.setattr(train_module, "run_update", spy)
    assert train_main([*TINY, "--iterations", "2", "--out", str(tmp_path / "run")]) == 0
    assert left == [[], []]  # both iterations' updates ran, and each freed its gradients
