"""benchmarks/learning.py --smoke: the 2-iteration tiny version of the SEED-vs-GRPO benchmark, end
to end through ``seed-gym train`` subprocesses."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
import torch
from conftest import ROOT

pytest.importorskip("transformers")


def load_bench():
    spec = importlib.util.spec_from_file_location(
        "learning_bench", ROOT / "benchmarks" / "learning.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_learning_benchmark_smoke(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path / "cache"))  # the runs' eval cache
    bench = load_bench()
    algos = "grpo,seed"
    args = ["--smoke", "--algos", algos, "--seeds", "0,1", "--out", str(tmp_path)]
    assert bench.main(args) == 0
    baseline, other = algos.split(",")
    res = json.loads((tmp_path / "learning.json").read_text())
    assert res["algos"] == [baseline, other] and res["seeds"] == [0, 1]
    assert res["config"]["iterations"] == 2 and res["config"]["preset"] == "tiny"
    # where the runs trained: the same CPU model runs other kernels on another machine
    assert res["machine"]["kernels"] == torch.backends.cpu.get_cpu_capability()
    for seed in (0, 1):
        metrics = (tmp_path / "runs" / f"grpo-s{seed}" / "metrics.jsonl").read_text().splitlines()
        assert [json.loads(m)["iteration"] for m in metrics] == [0, 1, 2]
        # eval of the starting policy, then after each iteration: 3 points per split and seed
        points = res["curves"]["unseen"]["grpo"]["per_seed"][str(seed)]
        assert [p[0] for p in points] == [0, 1, 2] and points[0][1] == 0.0  # at 0 env steps
        assert (tmp_path / "runs" / f"seed-s{seed}" / "train.log").is_file()
        # SEED starts from its Stage 1 model (shared by both seeds, built once by prepare),
        # GRPO from the model before it, as in the reference
        stage1 = json.loads(
            (tmp_path / "runs" / f"seed-s{seed}" / "stage1" / "stage1.json").read_text()
        )
        assert stage1["trained"] and stage1["model"].startswith(str(tmp_path / "cache"))
    for split in ("seen", "unseen"):
        rows = res["paired"][split][f"{other} - {baseline}"]
        assert rows and all(len(r["per_seed"]) == 2 for r in rows)
        # the grid runs from the start to the last step count every run reached
        ends = [c[-1][1] for c in res["curves"][split][baseline]["per_seed"].values()]
        ends += [c[-1][1] for c in res["curves"][split][other]["per_seed"].values()]
        assert rows[0]["env_steps"] == 0.0 and rows[-1]["env_steps"] == min(ends)
        for r in rows:
            assert r["diff"] == pytest.approx(sum(r["per_seed"]) / 2)
            assert r["ci95"][0] <= r["diff"] + 1e-12 <= r["ci95"][1] + 2e-12
    svg = (tmp_path / "learning.svg").read_text()
    assert svg.count('class="curve"') == 3 and 'data-method="grpo"' in svg
    html = (tmp_path / "report.html").read_text()
    assert "Learning curves" in html and "method-row" in html
    out = capsys.readouterr().out
    assert "paired difference" in out and "success at the last eval" in out

    # rerun: finished runs are skipped, the analysis is the same
    assert bench.main(args) == 0
    assert "[skip] grpo-s1: finished" in capsys.readouterr().out
    again = json.loads((tmp_path / "learning.json").read_text())
    assert again["paired"] == res["paired"]


def test_a_failed_run_is_named_and_the_others_go_on(tmp_path, capsys):
    """One run killed (the OOM killer's SIGKILL) or failing must not stall the benchmark: the
    others run, the failures are named at the end, and a rerun's log follows the first one's."""
    bench = load_bench()
    ok = [sys.executable, "-c", "print('fine')"]
    bad = [sys.executable, "-c", "import sys; print('broken'); sys.exit(3)"]
    killed = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    todo = [
        (tmp_path / "a", bad),
        (tmp_path / "b", ok),
        (tmp_path / "c", killed),
        (tmp_path / "d", ok),
    ]
    with pytest.raises(SystemExit, match=r"failed for a \(exit 3\), c \(exit -9: killed"):
        bench.run_jobs(todo, 2)
    out = capsys.readouterr().out
    assert "[done] b" in out and "[done] d" in out and "broken" in out
    assert bench.run_jobs([(tmp_path / "b", ok)], 1).keys() == {"b"}
    assert (tmp_path / "b" / "train.log").read_text() == "fine\nfine\n"


def test_learning_benchmark_rejects_unknown_algos(tmp_path):
    bench = load_bench()
    with pytest.raises(SystemExit, match="does not know"):
        bench.main(["--smoke", "--algos", "grpo,nonsense", "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="at least two"):
        bench.main(["--smoke", "--algos", "grpo", "--out", str(tmp_path)])


def test_paired_table_by_hand(tmp_path):
    # two seeds, two eval tasks of 2 samples; grpo: task a 0 -> 1, task b 0.5 -> 0.5
    bench = load_bench()

    def write(algo, seed, it, split, wins):
        d = tmp_path / "runs" / f"{algo}-s{seed}" / "evals"
        d.mkdir(parents=True, exist_ok=True)
        rows = [{"task_id": t, "won": w} for t, ws in wins.items() for w in ws]
        (d / f"iter_{it:04d}-{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    for seed in (0, 1):
        for split in ("seen", "unseen"):
            write("grpo", seed, 0, split, {"a": [0, 0], "b": [1, 0]})
            write("grpo", seed, 3, split, {"a": [1, 1], "b": [0, 1]})
            write("seed", seed, 0, split, {"a": [0, 0], "b": [1, 0]})
            write("seed", seed, 3, split, {"a": [1, 1], "b": [1, 1]})
    table = bench.paired_table(tmp_path, ["grpo", "seed"], [0, 1])
    g = table["gain"]["seen"]["grpo"]
    assert (g["first"], g["last"], g["gain"]) == (0.25, 0.75, 0.5)
    assert g["per_seed"] == {"0": 0.5, "1": 0.5} and g["tasks"] == 4
    assert g["ci95"] == [0.0, 1.0]  # clusters gain 1 (task a) or 0 (task b)
    s = table["gain"]["unseen"]["seed"]
    assert s["gain"] == 0.75
    vs = table["vs"]["seen"]["seed - grpo"]
    assert vs["diff"] == 0.25 and vs["ci95"][0] >= 0.0
    assert "| seen | grpo | 0.250 | 0.750 | +0.500 [+0.000, +1.000]" in bench.table_markdown(
        {"table": table}
    )


def test_every_config_parses_and_the_earlier_cpu_configs_differ_only_where_documented():
    bench = load_bench()
    cfgs = {name: bench.run_config(c, "seed", 0, []) for name, c in bench.CONFIGS.items()}
    cpu, six, long = cfgs["cpu"], cfgs["cpu-6turns"], cfgs["cpu-long"]
    assert (cpu.rollout.max_turns, cpu.eval.samples, cpu.warmup.episodes) == (4, 3, 32)
    assert (six.rollout.max_turns, six.eval.samples, six.warmup.episodes) == (6, 2, 32)
    assert (long.rollout.max_turns, long.eval.samples, long.warmup.episodes) == (6, 3, 64)
    assert long.warmup.analyzer_episodes == 16 and cpu.warmup.skill_episodes == 16
    assert six.replace(rollout=cpu.rollout, eval=cpu.eval) == cpu
    assert long.replace(rollout=cpu.rollout, warmup=cpu.warmup) == cpu
    opd = cfgs["cpu-long-opd"]
    assert (opd.iterations, opd.eval.every) == (6, 3)
    assert bench.CONFIGS["cpu-long-opd"]["algos"] == ["grpo", "seed", "seed-opid"]
    opid = bench.run_config(bench.CONFIGS["cpu-long-opd"], "seed-opid", 3, [])
    assert opid.algo == "seed" and opid.opd.teacher_advantage and opid.seed == 3
    for algo in ("grpo", "seed"):
        for name, kl in ((f"{algo}-kl001", 0.001), (f"{algo}-kl01", 0.01)):
            variant = bench.run_config(bench.CONFIGS["cpu-long-opd"], name, 0, [])
            assert (variant.algo, variant.optim.kl_coef) == (algo, kl)
            assert variant.replace(optim=opd.optim, algo="seed") == opd
        skip = bench.run_config(bench.CONFIGS["cpu-long-opd"], f"{algo}-skipsat", 0, [])
        kl001 = bench.run_config(bench.CONFIGS["cpu-long-opd"], f"{algo}-kl001", 0, [])
        assert skip.optim.skip_saturated and not kl001.optim.skip_saturated
        assert skip.replace(optim=kl001.optim) == kl001
        both = bench.run_config(bench.CONFIGS["cpu-long-opd"], f"{algo}-skiptkl", 0, [])
        assert (both.optim.skip_saturated, both.optim.target_kl) == (True, 0.02)
        assert both.replace(optim=kl001.optim) == kl001
        search = bench.run_config(bench.CONFIGS["cpu-long-opd"], f"{algo}-linesearch", 0, [])
        assert search.optim.max_update_kl == 0.02 and kl001.optim.max_update_kl is None
        assert search.replace(optim=kl001.optim) == kl001


def test_first_reach_and_steps_to_the_baselines_final():
    bench = load_bench()
    assert bench.first_reach([(0, 0.0, 0.2), (5, 100.0, 0.6)], 0.4) == pytest.approx(50.0)
    assert bench.first_reach([(0, 0.0, 0.5), (5, 100.0, 0.6)], 0.4) == 0.0
    assert bench.first_reach([(0, 0.0, 0.2), (5, 100.0, 0.3)], 0.4) is None
    assert bench.first_reach([(0, 0.0, 0.2)], 0.2) == 0.0

    class Run:
        def __init__(self, points):  # (iteration, env steps, seen success)
            self.metrics = [
                {"iteration": it, "rollout/env_steps": dx, "eval/seen/success": y}
                for it, dx, y in points
            ]

    runs = {
        ("grpo", 0): Run([(0, 0, 0.2), (1, 100, 0.4), (2, 100, 0.6)]),
        ("grpo", 1): Run([(0, 0, 0.2), (1, 100, 0.4), (2, 100, 0.4)]),  # final mean 0.5 at 200
        ("seed", 0): Run([(0, 0, 0.2), (1, 100, 0.7), (2, 100, 0.7)]),  # 0.5 at 60 steps
        ("seed", 1): Run([(0, 0, 0.2), (1, 100, 0.3), (2, 100, 0.3)]),  # never
    }
    r = bench.steps_to_base_final(runs, ["grpo", "seed"], [0, 1])["seen"]
    assert r["target"] == pytest.approx(0.5) and r["base_env_steps"] == 200.0
    assert r["seed"]["env_steps"][0] == pytest.approx(60.0) and r["seed"]["env_steps"][1] is None
    assert r["seed"]["mean_ratio"] == pytest.approx(0.3) and r["seed"]["reached"] == "1/2"
    assert r["grpo"]["reached"] == "1/2"  # seed 1 of the baseline ends below the mean


def test_saturated_updates_and_what_followed():
    bench = load_bench()

    class Run:
        def __init__(self, lines):  # (iteration, mean |advantage|, rollout success, kl_ref)
            self.metrics = [{"iteration": 0, "eval/seen/success": 0.5}] + [
                {"iteration": it, "train/adv_abs_mean": a, "rollout/success": y, "train/kl_ref": k}
                for it, a, y, k in lines
            ]

    runs = {
        ("grpo", 0): Run([(1, 0.8, 0.5, 0.01), (2, 0.0, 1.0, 0.02), (3, 0.7, 0.75, 0.09)]),
        ("grpo", 1): Run([(1, 0.9, 0.4, 0.01), (2, 0.5, 0.6, 0.02), (3, 0.0002, 1.0, 0.02)]),
        ("seed", 0): Run([(1, 0.8, 0.5, 0.01), (2, 0.3, 0.9, 0.02), (3, 0.4, 0.8, 0.03)]),
        ("seed", 1): Run([(1, 0.0, 1.0, 0.01), (2, 0.0, 0.5, 0.02), (3, 0.6, 0.25, 0.2)]),
    }
    r = bench.saturated_updates(runs, ["grpo", "seed"], [0, 1])
    g = r["grpo"]
    assert (g["updates"], g["saturated"]) == (6, 2)
    assert g["events"][0] == {"seed": 0, "iteration": 2, "success": 1.0, "next_success": 0.75,
                              "next_kl_ref": 0.09}  # fmt: skip
    assert g["events"][1]["next_success"] is None  # the run's last update: nothing after it
    assert g["mean_next_change"] == pytest.approx(-0.25)
    assert r["seed"]["saturated"] == 2 and r["seed"]["mean_next_change"] == pytest.approx(-0.375)


def test_the_shared_warmup_and_stage1_are_built_in_a_child_process(tmp_path, monkeypatch, capsys):
    """``prepare`` builds the warm-up and Stage 1 the runs load from the cache, in a child
    process (built in the benchmark's own process their memory stayed there beside the runs:
    OOM-killed on 23 GB); this process never loads a model for them."""
    from seed_gym.trainer import warmup
    from seed_gym.trainer.algorithms.seed import stage1 as sft

    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path))
    build = warmup.build_warmup_model
    monkeypatch.setattr(warmup, "build_warmup_model", lambda *a, **k: pytest.fail("in-process"))
    monkeypatch.setattr(sft, "run_stage1", lambda *a, **k: pytest.fail("in-process"))
    bench = load_bench()
    config = {**bench.CONFIGS["smoke"], "format-warmup-episodes": 2, "format-warmup-lr": 1e-3}
    bench.prepare(config, ["grpo", "seed"], 0, [], threads=1, out=tmp_path / "bench")
    built = list((tmp_path / "models").glob("warmup-*"))
    assert len(built) == 1 and (built[0] / "warmup.json").exists()
    stage1 = list((tmp_path / "models").glob("stage1-*"))
    assert len(stage1) == 1 and (stage1[0] / "stage1.json").exists()
    printed = capsys.readouterr().out
    assert f"[prepared] {built[0]} (" in printed and f"[prepared] {stage1[0]}" in printed
    monkeypatch.setattr(warmup, "build_warmup_model", build)
    stamp = (built[0] / "warmup.json").stat().st_mtime_ns
    cfg = bench.run_config(config, "grpo", 0, [])
    assert warmup.warmup_for_config(cfg) == built[0]  # what the runs load, from the cache
    assert (built[0] / "warmup.json").stat().st_mtime_ns == stamp
