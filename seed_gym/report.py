"""``seed-gym report RUN_DIR [RUN_DIR ...] --out report.html [--csv FILE]``: one static,
self-contained HTML file, and with ``--csv`` the same numbers as one flat table
(``report_csv.py``: a row per run, split and iteration, for pandas).

Inputs (each argument may also be a folder that holds such folders, searched two levels deep):
- training runs (``seed-gym train --out RUN_DIR``): ``config.json`` + ``metrics.jsonl``; the
  per-iteration ``rollout/*`` metrics give the training curve and ``eval/{split}/*`` lines the
  seen / unseen curves; ``trajectories/iter_*.jsonl`` (``seed_gym.trajlog``) feed the viewer.
- eval folders (``seed-gym eval --out DIR``): ``results.json`` (and ``trajectories/eval.jsonl``
  with ``--save-trajectories``).

Sections:
1. **Learning curves**: success vs cumulative env steps, one chart per env and split (train, seen,
   unseen), one line per algorithm; with several seeds of an algorithm the line is the mean at each
   iteration and the band spans min..max over seeds. Drawn as inline SVG (``report_svg.py``):
   each algorithm in its own colour, dash and marker, the same in every report.
2. **Results**: methods × (env, split) with 95% Wilson intervals (``stats.wilson_interval``, the
   CLI's): over an eval's episodes, or for training runs over the last eval's episodes pooled over
   seeds; then every eval's details (macro success, pass@k, return, steps, invalid rate, model hash).
   Training runs add SEED's instruments per iteration (analyzer skill kinds, the skill's effect
   on the teacher on fork tokens against the shuffled control, gradient ratio and cosine) and
   where each phase's time and peak memory went.
3. **Trajectories** (``report_viewer.py``): pick a trajectory, filtered by won / lost,
   algorithm and task; each step shows the observation (images inline), the
   response, the parsed action, validity and reward; for SEED runs the skill the teacher saw and a
   per-token heat map of teacher - student logprob (blue: the teacher likes the token more, red:
   less; hover for values).

Everything (CSS, JS, images) is inline, so the file can be mailed or attached to a paper.
"""

from __future__ import annotations

import html
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import seed_gym
from seed_gym import stats
from seed_gym.jsonl import read_json_object, read_jsonl
from seed_gym.oneline import OneLineParser, usage_error
from seed_gym.report_csv import eval_row, train_rows, write_csv
from seed_gym.report_svg import STYLES, style_of, svg_chart
from seed_gym.report_viewer import JS, viewer_section

__all__ = ["STYLES", "main", "render", "style_of", "svg_chart", "write_report"]

SPLITS = ("train", "seen", "unseen")
# a method's colour was once its place in this list, so it changed between reports; the list
# stays for scripts that import it, but ``style_of`` gives each method one style everywhere
COLORS = tuple(style.color for style in STYLES.values())


# --- loading ---------------------------------------------------------------------------------------
@dataclass
class Run:
    """A training run or an eval folder."""

    path: Path
    kind: str  # "train" | "eval"
    env: str
    method: str
    seed: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    results: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        return self.path.name


def _is_run(path: Path) -> bool:
    return (path / "metrics.jsonl").is_file() or (path / "results.json").is_file()


def discover(paths: list[str | Path]) -> list[Path]:
    """Run and eval folders among ``paths`` and (two levels of) their subfolders."""
    found: list[Path] = []
    for p in map(Path, paths):
        if not p.is_dir():
            raise SystemExit(f"seed-gym report: {p} is not a folder")
        if _is_run(p):
            found.append(p)
            continue
        below = sorted(q for q in p.glob("*") if q.is_dir() and _is_run(q))
        below += sorted(q for q in p.glob("*/*") if q.is_dir() and _is_run(q))
        if not below:
            raise SystemExit(
                f"seed-gym report: {p} holds no run (metrics.jsonl) or eval (results.json)"
            )
        found.extend(below)
    return list(dict.fromkeys(found))


def _is_record(row: Any) -> bool:
    """Metrics rows and trajectories are JSON objects; a stray ``[1, 2]`` line is skipped."""
    return isinstance(row, dict)


def _read_object(path: Path) -> dict[str, Any]:
    try:
        return read_json_object(path)
    except ValueError as e:  # torn, hand-edited or not seed-gym's
        usage_error("seed-gym report", e)


def load_run(path: Path) -> Run:
    if (path / "metrics.jsonl").is_file():
        config = {}
        if (path / "config.json").is_file():
            config = _read_object(path / "config.json")
        algo = config.get("algo", "?")
        return Run(
            path=path,
            kind="train",
            env=config.get("env", "?"),
            method=algo,
            seed=config.get("seed"),
            config=config,
            metrics=read_jsonl(path / "metrics.jsonl", valid=_is_record),
        )
    results = _read_object(path / "results.json")
    info = results.get("policy_info") or {}
    method = results.get("policy", "?")
    if method.startswith("openai:") and info.get("model"):
        method = f"openai:{info['model']}"
    return Run(
        path=path,
        kind="eval",
        env=results.get("env_id", "?"),
        method=method,
        seed=results.get("seed"),
        config=results.get("config", {}),
        results=results,
    )


# --- curves ----------------------------------------------------------------------------------------
def env_steps(metrics: list[dict[str, Any]]) -> list[float]:
    """Cumulative env steps after each metrics line (``rollout/env_steps`` when the trainer logs
    it, else episodes x mean episode length; lines without rollouts add none)."""
    total, out = 0.0, []
    for m in metrics:
        if "rollout/env_steps" in m:
            total += float(m["rollout/env_steps"])
        elif "rollout/episodes" in m and "rollout/episode_len" in m:
            total += float(m["rollout/episodes"]) * float(m["rollout/episode_len"])
        out.append(total)
    return out


def curve_points(run: Run, split: str) -> list[tuple[int, float, float]]:
    """(iteration, env steps, success) of one run on ``split``."""
    key = "rollout/success" if split == "train" else f"eval/{split}/success"
    steps = env_steps(run.metrics)
    return [
        (int(m.get("iteration", i)), steps[i], float(m[key]))
        for i, m in enumerate(run.metrics)
        if key in m and m[key] is not None
    ]


def aggregate(runs: list[Run], split: str) -> list[dict[str, float]]:
    """Mean over seeds at each iteration: x = mean env steps, y = mean success, band = min..max."""
    by_it: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for run in runs:
        for it, x, y in curve_points(run, split):
            by_it[it].append((x, y))
    out = []
    for it in sorted(by_it):
        xs, ys = zip(*by_it[it], strict=True)
        out.append(
            {
                "iteration": it,
                "x": sum(xs) / len(xs),
                "y": sum(ys) / len(ys),
                "lo": min(ys),
                "hi": max(ys),
                "n": len(ys),
            }
        )
    return out


def curves_section(runs: list[Run]) -> str:
    train = [r for r in runs if r.kind == "train"]
    if not train:
        return "<p class='empty'>No training runs given: no learning curves.</p>"
    blocks = []
    for env in sorted({r.env for r in train}):
        charts = []
        for split in SPLITS:
            series = {}
            for method in sorted({r.method for r in train if r.env == env}):
                group = [r for r in train if r.env == env and r.method == method]
                pts = aggregate(group, split)
                if pts:
                    series[method] = pts
            if series:
                charts.append(svg_chart(series, title=f"{split}", env=env, split=split))
        if charts:
            blocks.append(
                f'<div class="env-curves"><h3>{html.escape(env)}</h3>'
                f'<div class="charts">{"".join(charts)}</div></div>'
            )
    note = (
        "<p class='note'>Success vs cumulative env steps. <b>train</b>: the training rollouts "
        "(sampled); <b>seen</b> / <b>unseen</b>: periodic greedy evals. Lines are means over "
        "seeds at each iteration; bands span min..max over seeds. Each algorithm keeps its colour, "
        "dash and marker in every report.</p>"
    )
    return note + "".join(blocks)


# --- tables ----------------------------------------------------------------------------------------
def success_interval(results: dict[str, Any]) -> list[float]:
    """An eval's success interval: the Wilson interval ``results.json`` holds, recomputed from its
    episodes for files that predate it (the same ``stats.wilson_interval`` as the CLI)."""
    n = int(results.get("episodes", 0) or 0)
    wins = round(float(results.get("success_rate", 0.0)) * n)
    return list(stats.wilson_interval(wins, n))


def macro_ci(results: dict[str, Any], boot: dict[str, Any]) -> dict[str, Any]:
    """The macro success's interval: with one task type macro success is the success, and gets
    its Wilson interval; over several types, the cluster bootstrap of ``results.json``."""
    if len(results.get("per_task_type") or {}) == 1:
        return {"macro_success": success_interval(results)}
    return boot


def result_cells(runs: list[Run]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(method, env, split) -> success, interval, episodes, runs, interval kind."""
    cells: dict[tuple[str, str, str], dict[str, Any]] = {}
    pooled: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for run in runs:
        if run.kind == "eval":
            r = run.results or {}
            cells[(run.method, run.env, r.get("split", "?"))] = {
                "success": r.get("success_rate", 0.0),
                "ci": success_interval(r),
                "episodes": r.get("episodes", 0),
                "runs": 1,
                "how": "wilson",
                "k": r.get("k", 1),
            }
            continue
        for split in ("seen", "unseen"):
            key = f"eval/{split}/success"
            last = [m for m in run.metrics if key in m]
            if not last:
                continue
            m = last[-1]
            n = float(m.get(f"eval/{split}/episodes", 0.0))
            acc = pooled[(run.method, run.env, split)]
            acc[0] += float(m[key]) * n
            acc[1] += n
            acc[2] += 1
    for key, (succ, n, k) in pooled.items():
        cells[key] = {
            "success": succ / n if n else 0.0,
            "ci": list(stats.wilson_interval(round(succ), n)),
            "episodes": int(n),
            "runs": k,
            "how": "wilson, pooled over seeds",
            "k": 1,
        }
    return cells


def results_table(runs: list[Run]) -> str:
    cells = result_cells(runs)
    if not cells:
        return "<p class='empty'>No evaluation results.</p>"
    cols = sorted(
        {(env, split) for _, env, split in cells},
        key=lambda c: (c[0], SPLITS.index(c[1]) if c[1] in SPLITS else 9),
    )
    methods = sorted({m for m, _, _ in cells})
    e = html.escape
    head = "".join(
        f"<th>{e(env)}<br><span class='split'>{e(split)}</span></th>" for env, split in cols
    )
    rows = []
    for method in methods:
        tds = []
        for env, split in cols:
            c = cells.get((method, env, split))
            if c is None:
                tds.append("<td class='na'>-</td>")
                continue
            lo, hi = c["ci"]
            tip = f"{c['episodes']} episodes, {c['runs']} run(s), interval: {c['how']}"
            tds.append(
                f"<td class='cell' title='{e(tip)}'><b>{c['success']:.3f}</b> "
                f"<span class='ci'>[{lo:.3f}, {hi:.3f}]</span>"
                f"<span class='n'>n={c['episodes']}{' x' + str(c['runs']) if c['runs'] > 1 else ''}"
                "</span></td>"
            )
        rows.append(
            f"<tr class='method-row'><th class='method'>{e(method)}</th>{''.join(tds)}</tr>"
        )
    return (
        "<table class='results'><thead><tr><th>method</th>"
        + head
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table><p class='note'>Success with 95% intervals (hover a cell for how it "
        "was computed): the Wilson interval, as <code>seed-gym eval</code> prints it. Eval "
        "folders: over the eval's episodes; training runs: over the last eval's episodes, pooled "
        "over seeds (n = episodes x runs).</p>"
    )


def eval_details(runs: list[Run]) -> str:
    evals = [r for r in runs if r.kind == "eval" and r.results]
    if not evals:
        return ""
    e = html.escape
    rows = []
    for run in evals:
        r = run.results
        ci = (r.get("bootstrap") or {}).get("ci95", {})

        def fmt(name: str, value: float | None, key: str = "", r_=ci) -> str:
            if value is None:
                return "<td>-</td>"
            lo_hi = r_.get(key or name)
            extra = f" <span class='ci'>[{lo_hi[0]:.3f}, {lo_hi[1]:.3f}]</span>" if lo_hi else ""
            return f"<td>{value:.3f}{extra}</td>"

        passes = ", ".join(f"@{j}: {v:.3f}" for j, v in (r.get("pass_at_k") or {}).items())
        model = (r.get("policy_info") or {}).get("model_sha256")
        rows.append(
            "<tr class='eval-row'>"
            f"<td>{e(run.label)}</td><td>{e(run.env)}</td><td>{e(r.get('split', '?'))}</td>"
            f"<td>{e(run.method)}</td><td>{r.get('episodes', 0)}</td><td>{r.get('k', 1)}</td>"
            + fmt("success", r.get("success_rate"), r_={"success": success_interval(r)})
            + fmt("macro", r.get("macro_success_rate"), "macro_success", macro_ci(r, ci))
            + f"<td>{e(passes)}</td>"
            + fmt("return", r.get("mean_return"))
            + fmt("steps", r.get("mean_steps"))
            + fmt("invalid", r.get("invalid_action_rate"), "invalid_rate")
            + f"<td><code>{e((model or '-')[:12])}</code></td></tr>"
        )
    return (
        "<h3>Eval details</h3><table class='details'><thead><tr><th>folder</th><th>env</th>"
        "<th>split</th><th>policy</th><th>episodes</th><th>k</th><th>success</th><th>macro</th>"
        "<th>pass@k</th><th>return</th><th>steps</th><th>invalid</th><th>model sha256</th></tr>"
        "</thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def runs_table(runs: list[Run]) -> str:
    train = [r for r in runs if r.kind == "train"]
    if not train:
        return ""
    e = html.escape
    rows = []
    for r in train:
        c = r.config
        rollout = c.get("rollout") or c  # config.json in groups, or flat (before 0.3)
        last = r.metrics[-1]["iteration"] if r.metrics else 0
        steps = env_steps(r.metrics)[-1] if r.metrics else 0
        rows.append(
            f"<tr class='run-row'><td>{e(r.label)}</td><td>{e(r.env)}</td><td>{e(r.method)}</td>"
            f"<td>{r.seed}</td><td>{e(str(c.get('model', '?')))}</td><td>{last}</td>"
            f"<td>{steps:,.0f}</td><td>{rollout.get('tasks_per_iter', '?')} x "
            f"{rollout.get('group_size', '?')}</td></tr>"
        )
    return (
        "<h3>Training runs</h3><table class='details'><thead><tr><th>folder</th><th>env</th>"
        "<th>algo</th><th>seed</th><th>model</th><th>iterations</th><th>env steps</th>"
        "<th>B x G</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


# SEED's instruments (docs/seed.md): what the analyzer wrote and what the skill did to the teacher
INSTRUMENTS = (
    ("analyzer/parse_rate", "parse rate"),
    ("analyzer/avoidance_share_lost", "lost: avoidance"),
    ("analyzer/workflow_share_won", "won: workflow"),
    ("opd/skill_gap_fork_won", "fork gap won"),
    ("opd/skill_gap_fork_lost", "fork gap lost"),
    ("opd/control_gap_fork_won", "control won"),
    ("opd/control_gap_fork_lost", "control lost"),
    ("opd/grad_ratio", "|g teacher| / |g PG|"),
    ("opd/grad_cosine", "cosine"),
    ("opd/active_ratio", "active"),
    ("train/kl_ref", "KL to ref"),
)


def instruments_table(runs: list[Run]) -> str:
    """Per run and iteration: the analyzer's parse rate and skill kinds, the skill's effect on the
    teacher on fork tokens (own skill and shuffled control), the gradient ratio and cosine."""
    rows = []
    for r in runs:
        for m in r.metrics if r.kind == "train" else []:
            if not any(k in m for k, _ in INSTRUMENTS[:7]):
                continue
            cells = "".join(
                f"<td>{m[k]:+.4f}</td>" if "gap" in k and k in m
                else f"<td>{m[k]:.3f}</td>" if k in m else "<td>-</td>"
                for k, _ in INSTRUMENTS
            )  # fmt: skip
            rows.append(f"<tr><td>{html.escape(r.label)}</td><td>{m['iteration']}</td>{cells}</tr>")
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(name)}</th>" for _, name in INSTRUMENTS)
    return (
        "<h3>SEED instruments</h3><p class='note'>gaps: teacher minus sampling logprob on the "
        "sampled tokens where the policy was unsure (NLL &gt; 0.1), nats per token; the control "
        "scores the same tokens under another task's skill. A useful skill gives won &gt; 0, lost "
        "&lt; 0, both beyond the control.</p><table class='details'><thead><tr><th>run</th>"
        f"<th>iteration</th>{head}</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def phases_table(runs: list[Run]) -> str:
    """Per run: seconds and peak resident memory of each phase (``trainer/phases.py``)."""
    from seed_gym.trainer.phases import phase_rows  # stdlib only: no torch

    rows = []
    for r in runs:
        for name, p in phase_rows(r.metrics if r.kind == "train" else []).items():
            peak = f"{p['peak_mb'] / 1024:.2f}" if p["peak_mb"] else "-"
            rows.append(f"<tr><td>{html.escape(r.label)}</td><td>{html.escape(name)}</td>"
                        f"<td>{p['seconds']:.1f}</td><td>{p['n']:.0f}</td><td>{peak}</td></tr>")  # fmt: skip
    if not rows:
        return ""
    return (
        "<h3>Where the time and memory went</h3><table class='details'><thead><tr><th>run</th>"
        "<th>phase</th><th>seconds</th><th>times</th><th>peak resident GiB</th></tr></thead>"
        "<tbody>" + "".join(rows) + "</tbody></table>"
    )


CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;
 max-width:1400px;padding:0 16px;color:#222}
h1{font-size:22px}h2{border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}
.charts{display:flex;flex-wrap:wrap;gap:12px}
svg.curve .frame{fill:#fff;stroke:#999}svg.curve .grid{stroke:#eee}
svg.curve .tick{font-size:10px;fill:#555}svg.curve .axis{font-size:11px;fill:#333}
svg.curve .title{font-size:13px;font-weight:600}svg.curve .legend{font-size:11px}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ddd;padding:4px 8px;
 text-align:left;vertical-align:top}thead th{background:#f5f5f5}
.ci{color:#666;font-size:12px}.n{display:block;color:#888;font-size:11px}.split{font-weight:400;color:#666}
.note{color:#555;font-size:12px}.empty{color:#888;font-style:italic}
.traj-head{margin:8px 0}.task{color:#444;margin-bottom:8px}
.skill{background:#fff8e1;border:1px solid #f0d58c;padding:6px 10px;margin:8px 0;border-radius:4px}
.step{border:1px solid #ddd;border-radius:4px;margin:8px 0;padding:6px 10px}
.step-meta{font-size:12px;color:#444;margin-bottom:4px}.obs pre,.response pre{white-space:pre-wrap;
 margin:4px 0;background:#f7f7f7;padding:6px}.obs-img{max-width:240px;image-rendering:pixelated;
 margin:4px;border:1px solid #ccc}
.tokens{font-family:ui-monospace,Menlo,monospace;font-size:12px;white-space:pre-wrap;
 background:#fafafa;padding:6px;line-height:1.9}
.tok{border-radius:2px;padding:1px 0;margin-right:1px}.won{color:#2a7d2a;font-weight:600}
.lost,.invalid{color:#b2182b;font-weight:600}.legend-heat{font-size:12px;margin:6px 0}
.legend-heat .tok{padding:2px 6px;margin:0 4px}
.filters{margin:6px 0;display:flex;gap:12px;flex-wrap:wrap;align-items:center}
#traj-count{color:#666;font-size:12px}
"""


def render(runs: list[Run], *, title: str = "seed-gym report", per_run: int = 12) -> str:
    sources = "".join(f"<li><code>{html.escape(str(r.path))}</code> ({r.kind})</li>" for r in runs)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p class='note'>seed-gym {html.escape(seed_gym.__version__)} · {len(runs)} folders</p>"
        f"<details><summary>sources</summary><ul>{sources}</ul></details>"
        f"<h2 id='curves'>Learning curves</h2>{curves_section(runs)}"
        f"<h2 id='results'>Results</h2>{results_table(runs)}{eval_details(runs)}{runs_table(runs)}"
        f"{instruments_table(runs)}{phases_table(runs)}"
        f"<h2 id='trajectories'>Trajectories</h2>{viewer_section(runs, per_run)}"
        f"<script>{JS}</script></body></html>"
    )


def disambiguate(runs: list[Run]) -> list[Run]:
    """Name training methods by algorithm, adding the model when runs used several models."""
    models = {str(r.config.get("model")) for r in runs if r.kind == "train"}
    if len(models) > 1:
        for r in runs:
            if r.kind == "train":
                r.method = f"{r.method} ({Path(str(r.config.get('model'))).name})"
    return runs


def load_runs(paths: list[str | Path]) -> list[Run]:
    """Every run and eval folder among ``paths`` (``discover``), loaded and named."""
    return disambiguate([load_run(p) for p in discover(paths)])


def write_report(
    paths: list[str | Path], out: str | Path, *, title: str = "seed-gym report", per_run: int = 12
) -> Path:
    return _write_html(load_runs(paths), out, title=title, per_run=per_run)


def _write_html(runs: list[Run], out: str | Path, *, title: str, per_run: int) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(runs, title=title, per_run=per_run), encoding="utf-8")
    return out


def csv_rows(runs: list[Run]) -> list[dict[str, Any]]:
    """One flat row per (run, split, iteration) (``report_csv.COLUMNS``)."""
    rows: list[dict[str, Any]] = []
    for run in runs:
        if run.kind == "train":
            rows += train_rows(run, env_steps(run.metrics))
        else:
            rows.append(eval_row(run, success_interval(run.results or {})))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(
        prog="seed-gym report",
        description="Write a static HTML report (curves, results table, trajectory viewer) and, "
        "with --csv, a flat table of the same numbers.",
        epilog="examples: seed-gym report runs/ --out report.html; "
        "seed-gym report runs/ --csv runs.csv (then pandas.read_csv('runs.csv'))",
    )
    p.add_argument("runs", nargs="+", help="training run / eval folders (or folders of them)")
    p.add_argument(
        "--out",
        default=None,
        help="the HTML file (default report.html; with --csv and no --out, no HTML is written)",
    )
    p.add_argument(
        "--csv",
        default=None,
        metavar="FILE",
        help="write one row per (run, split, iteration): run, algo, seed, env, split, iteration, "
        "env_steps, success, ci_lo, ci_hi, return, ... (pandas.read_csv reads it)",
    )
    p.add_argument("--title", default="seed-gym report")
    p.add_argument(
        "--trajectories", type=int, default=12, help="trajectories shown per folder (default 12)"
    )
    args = p.parse_args(argv)
    runs = load_runs(args.runs)
    if args.out is not None or args.csv is None:
        path = _write_html(
            runs, args.out or "report.html", title=args.title, per_run=args.trajectories
        )
        print(f"wrote {path}")
    if args.csv is not None:
        rows = csv_rows(runs)
        print(f"wrote {write_csv(rows, args.csv)} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
