"""The report's trajectory viewer: pick a trajectory (filtered by outcome, algorithm and task);
each step shows the observation (images inline), the response, the parsed action, validity and
reward; for SEED runs the skill the teacher saw and a per-token heat map of teacher - student
logprob (blue: the teacher likes the token more, red: less; hover for values). The heat map's
legend is shown only with a trajectory that has teacher logprobs."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from seed_gym.jsonl import read_jsonl
from seed_gym.trajlog import trajectory_files

HEAT_CLIP = 2.0  # nats: |teacher - student| at or beyond this gets the full colour


def heat_color(delta: float) -> str:
    a = min(1.0, abs(delta) / HEAT_CLIP) * 0.85
    return f"rgba(33,102,172,{a:.3f})" if delta >= 0 else f"rgba(178,24,43,{a:.3f})"


def has_teacher(t: dict[str, Any]) -> bool:
    """Whether a trajectory carries teacher logprobs (what the heat map shows)."""
    return any(
        s.get("teacher_logprobs") is not None and s.get("tokens") for s in t.get("steps", [])
    )


def render_tokens(step: dict[str, Any]) -> str:
    e = html.escape
    tokens, student, teacher = (
        step.get("tokens"),
        step.get("logprobs"),
        step.get("teacher_logprobs"),
    )
    if tokens and teacher is not None and student is not None:
        spans = []
        for tok, s, t in zip(tokens, student, teacher, strict=False):
            d = t - s
            tip = f"teacher - student = {d:+.3f} (teacher {t:.3f}, student {s:.3f})"
            spans.append(
                f'<span class="tok heat" data-delta="{d:.4f}" style="background:{heat_color(d)}" '
                f'title="{e(tip)}">{e(tok)}</span>'
            )
        return '<div class="tokens heatmap">' + "".join(spans) + "</div>"
    if tokens and student is not None:
        spans = [
            f'<span class="tok" title="student logprob {s:.3f}">{e(tok)}</span>'
            for tok, s in zip(tokens, student, strict=False)
        ]
        return '<div class="tokens">' + "".join(spans) + "</div>"
    return f'<pre class="response-text">{e(step.get("response", ""))}</pre>'


def _filter_attrs(t: dict[str, Any], algo: str) -> str:
    """What the viewer's filters match on (the same on a trajectory's option and section)."""
    e = html.escape
    outcome = "won" if t.get("won") else "lost"
    return (
        f"data-outcome='{outcome}' data-algo='{e(algo)}' data-task='{e(str(t.get('task_id', '')))}'"
    )


def render_trajectory(i: int, t: dict[str, Any], source: str, algo: str = "") -> str:
    e = html.escape
    head = (
        f"<div class='traj-head'><b>{e(t.get('traj_id', ''))}</b> · task <code>"
        f"{e(str(t.get('task_id', '')))}</code> ({e(t.get('task_type', '') or '-')}) · seed "
        f"{t.get('seed')} · {'<span class=won>won</span>' if t.get('won') else '<span class=lost>lost</span>'}"
        f" · return {t.get('return', 0.0):+.2f} · {len(t.get('steps', []))} steps · from "
        f"<code>{e(source)}</code></div>"
        f"<div class='task'>{e(t.get('task', ''))}</div>"
    )
    if t.get("skill"):
        head += (
            "<div class='skill'><b>Skill the teacher saw:</b> "
            f"<span class='skill-text'>{e(t['skill'])}</span>"
            + (
                f"<div class='summary'>summary: {e(t['skill_summary'])}</div>"
                if t.get("skill_summary")
                else ""
            )
            + "</div>"
        )
    steps = []
    for j, s in enumerate(t.get("steps", [])):
        imgs = "".join(
            f'<img class="obs-img" src="{e(u)}" alt="observation image {k}">'
            for k, u in enumerate(s.get("images") or [])
            if isinstance(u, str) and u.startswith("data:image/")
        )
        gap = ""
        if s.get("teacher_logprobs") is not None and s.get("logprobs"):
            d = [a - b for a, b in zip(s["teacher_logprobs"], s["logprobs"], strict=False)]
            gap = f" · mean teacher - student {sum(d) / max(1, len(d)):+.3f}"
        steps.append(
            f"<div class='step' data-step='{j}'>"
            f"<div class='step-meta'>step {j + 1} · action <code class='action'>"
            f"{e(str(s.get('action')) if s.get('action') is not None else '(invalid)')}</code> · "
            f"{'valid' if s.get('valid') else '<span class=invalid>invalid</span>'} · reward "
            f"<span class='reward'>{s.get('reward', 0.0):+.2f}</span>{gap}</div>"
            f"<div class='obs'><pre>{e(s.get('observation', ''))}</pre>{imgs}</div>"
            f"<div class='response'>{render_tokens(s)}</div></div>"
        )
    return (
        f"<section class='traj' id='traj-{i}' data-index='{i}' {_filter_attrs(t, algo)} "
        f"data-heat='{int(has_teacher(t))}'{' hidden' if i else ''}>"
        + head
        + "".join(steps)
        + "</section>"
    )


Picked = tuple[str, str, dict[str, Any]]  # (source file, algorithm, trajectory)


def collect_trajectories(runs: Sequence[Any], per_run: int) -> list[Picked]:
    """Up to ``per_run`` trajectories of each run (``report.Run``), newest iteration first,
    SEED-annotated and won ones first within it (the interesting ones)."""
    out: list[Picked] = []
    for run in runs:
        picked: list[Picked] = []
        for f in reversed(trajectory_files(run.path)):
            trajs = read_jsonl(f, valid=lambda row: isinstance(row, dict))
            trajs.sort(key=lambda t: (t.get("skill") is None, not t.get("won")))
            picked += [(f"{run.label}/{f.name}", run.method, t) for t in trajs]
            if len(picked) >= per_run:
                break
        out += picked[:per_run]
    return out


def _select(id_: str, label: str, values: list[tuple[str, str]]) -> str:
    e = html.escape
    options = "".join(f"<option value='{e(v)}'>{e(text)}</option>" for v, text in values)
    return (
        f"<label>{label} <select id='{id_}'><option value=''>all</option>{options}</select></label>"
    )


def filters(trajs: list[Picked]) -> str:
    """Outcome, algorithm and task selects (each choice lists only what the trajectories hold)."""
    outcomes = sorted({"won" if t.get("won") else "lost" for _, _, t in trajs}, reverse=True)
    algos = sorted({a for _, a, _ in trajs})
    tasks = sorted({(str(t.get("task_id", "")), t.get("task_type") or "") for _, _, t in trajs})
    return (
        "<div class='filters'>"
        + _select("filter-outcome", "outcome", [(o, o) for o in outcomes])
        + _select("filter-algo", "algorithm", [(a, a) for a in algos])
        + _select("filter-task", "task", [(k, f"{k} ({ty})" if ty else k) for k, ty in tasks])
        + f" <span id='traj-count'>{len(trajs)} of {len(trajs)} trajectories</span></div>"
    )


def viewer_section(runs: Sequence[Any], per_run: int) -> str:
    trajs = collect_trajectories(runs, per_run)
    if not trajs:
        return (
            "<p class='empty'>No trajectory files (RUN_DIR/trajectories/*.jsonl; "
            "<code>seed-gym eval --save-trajectories</code> writes them).</p>"
        )
    e = html.escape
    options = "".join(
        f"<option value='{i}' {_filter_attrs(t, algo)}>{e(src)} · {e(t.get('traj_id', ''))} · "
        f"{'won' if t.get('won') else 'lost'}{' · skill' if t.get('skill') else ''}</option>"
        for i, (src, algo, t) in enumerate(trajs)
    )
    legend = ""
    if any(has_teacher(t) for _, _, t in trajs):  # no teacher data anywhere: no legend
        first = has_teacher(trajs[0][2])
        legend = (
            f"<div class='legend-heat' id='legend-heat'{'' if first else ' hidden'}>"
            "token heat map: "
            f"<span class='tok heat' style='background:{heat_color(-HEAT_CLIP)}'>teacher lower</span>"
            "<span class='tok'>equal</span>"
            f"<span class='tok heat' style='background:{heat_color(HEAT_CLIP)}'>teacher higher</span>"
            f" (full colour at |teacher - student| >= {HEAT_CLIP:g} nats)</div>"
        )
    body = "".join(render_trajectory(i, t, src, algo) for i, (src, algo, t) in enumerate(trajs))
    return (
        filters(trajs)
        + f"<label>trajectory <select id='traj-select'>{options}</select></label>"
        + "<p class='empty' id='traj-none' hidden>No trajectory matches the filters.</p>"
        + f"{legend}<div id='viewer'>{body}</div>"
    )


# shows the chosen trajectory; the filters hide the options that do not match and, when the
# shown one no longer matches, show the first that does
JS = """
(function(){
const sel=document.getElementById('traj-select');
if(!sel)return;
const keys=['outcome','algo','task'];
const fs=keys.map(k=>document.getElementById('filter-'+k));
const legend=document.getElementById('legend-heat');
function show(v){
 let heat=false;
 document.querySelectorAll('section.traj').forEach(s=>{
  s.hidden=(s.dataset.index!==v);if(!s.hidden)heat=s.dataset.heat==='1';});
 if(legend)legend.hidden=!heat;
 document.getElementById('traj-none').hidden=(v!=='');
}
function apply(){
 let first=null,n=0;
 for(const o of sel.options){
  const ok=keys.every((k,i)=>!fs[i].value||o.dataset[k]===fs[i].value);
  o.hidden=!ok;o.disabled=!ok;if(ok){n++;if(first===null)first=o;}
 }
 document.getElementById('traj-count').textContent=n+' of '+sel.options.length+' trajectories';
 const cur=sel.options[sel.selectedIndex];
 if(!cur||cur.disabled){if(first){sel.value=first.value;show(first.value);}else{show('');}}
 else{show(sel.value);}
}
sel.addEventListener('change',()=>show(sel.value));
fs.forEach(f=>f.addEventListener('change',apply));
})();
"""
