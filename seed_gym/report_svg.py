"""The report's learning-curve charts: inline SVG, one style per algorithm, round axis ticks.

An algorithm keeps its colour, dash and marker in every report (``style_of``): the built-in
algorithms have fixed entries in ``STYLES``; any other name (an ``--import``-ed algorithm, a
benchmark variant, an eval policy) gets one from a hash of its name, so it too is the same
everywhere. A method named ``algo (model)`` (``report.disambiguate``) keeps its algorithm's colour
and marker and takes its dash from the whole name. Curves are drawn with a dash and a marker on
every point, so lines that overlap stay apart.
"""

from __future__ import annotations

import hashlib
import html
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Style:
    color: str
    dash: str  # SVG stroke-dasharray; "" is a solid line
    marker: str  # one of MARKERS


MARKERS = ("circle", "square", "triangle", "diamond", "down", "cross")
DASHES = ("", "7 3", "2 3", "9 3 2 3", "4 2", "12 4", "2 2", "6 2 2 2")
# the built-in algorithms (trainer/algorithms) and the benchmark's OPID variants
STYLES: dict[str, Style] = {
    "grpo": Style("#1f77b4", DASHES[0], "circle"),
    "seed": Style("#d62728", DASHES[1], "square"),
    "prompt": Style("#7f7f7f", DASHES[2], "triangle"),
    "skill-grpo": Style("#2ca02c", DASHES[3], "diamond"),
    "static-skills": Style("#9467bd", DASHES[4], "down"),
    "opsd": Style("#ff7f0e", DASHES[5], "cross"),
    "opid": Style("#8c564b", DASHES[6], "circle"),
    "seed-opid": Style("#e377c2", DASHES[7], "square"),
}
# colours no built-in algorithm uses, for every other name
OTHER_COLORS = ("#17becf", "#bcbd22", "#393b79", "#637939", "#843c39", "#7b4173", "#3182bd")


def _hash(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big")


def style_of(method: str) -> Style:
    """The colour, dash and marker of ``method``: the same in every report."""
    base, _, variant = method.partition(" (")
    if base in STYLES:
        style = STYLES[base]
    else:
        h = _hash(base)
        style = Style(
            OTHER_COLORS[h % len(OTHER_COLORS)],
            DASHES[(h // 7) % len(DASHES)],
            MARKERS[(h // 56) % len(MARKERS)],
        )
    if variant:  # the same algorithm on another model: another dash
        style = Style(style.color, DASHES[_hash(method) % len(DASHES)], style.marker)
    return style


def nice_ticks(v_max: float, n: int = 5) -> list[float]:
    """Ticks from 0 at a round step (1, 2 or 5 x 10^k), the last one at or above ``v_max``, at
    most ``n`` + 1 of them: 25 gives 0, 5, ..., 25; 1234 gives 0, 500, 1000, 1500."""
    if not v_max > 0 or not math.isfinite(v_max):
        return [0.0, 1.0]
    raw = v_max / n
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw * (1 - 1e-9))
    count = math.ceil(v_max / step - 1e-9)
    return [round(i * step, 10) for i in range(count + 1)]


def _tick_label(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:g}"


def marker_svg(kind: str, x: float, y: float, color: str, tip: str, r: float = 3.5) -> str:
    """One point marker with a hover title."""
    title = f"<title>{html.escape(tip)}</title>"
    attrs = f'class="marker" data-marker="{kind}" fill="{color}" stroke="{color}"'
    if kind == "circle":
        return f'<circle {attrs} cx="{x:.1f}" cy="{y:.1f}" r="{r}">{title}</circle>'
    if kind == "square":
        return (
            f'<rect {attrs} x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r}" height="{2 * r}">'
            f"{title}</rect>"
        )
    shapes = {
        "triangle": [(0, -1.2), (1.1, 0.9), (-1.1, 0.9)],
        "down": [(0, 1.2), (1.1, -0.9), (-1.1, -0.9)],
        "diamond": [(0, -1.3), (1.1, 0), (0, 1.3), (-1.1, 0)],
    }
    if kind in shapes:
        pts = " ".join(f"{x + dx * r:.1f},{y + dy * r:.1f}" for dx, dy in shapes[kind])
        return f'<polygon {attrs} points="{pts}">{title}</polygon>'
    d = f"M{x - r:.1f},{y - r:.1f}L{x + r:.1f},{y + r:.1f}M{x - r:.1f},{y + r:.1f}L{x + r:.1f},{y - r:.1f}"
    return f'<path {attrs} d="{d}" stroke-width="2">{title}</path>'  # cross


def svg_chart(
    series: dict[str, list[dict[str, float]]],
    *,
    title: str,
    env: str,
    split: str,
    colors: dict[str, str] | None = None,
    x_label: str = "env steps",
    y_label: str = "success",
    width: int = 440,
    height: int = 280,
) -> str:
    """One line chart (success in [0, 1] vs env steps) as an SVG element; each method in its
    ``style_of`` (``colors`` overrides the colours only). Points are dicts with ``x``, ``y``,
    ``lo``, ``hi``, ``n`` (seeds) and ``iteration``; a band spans lo..hi where n > 1."""
    ml, mr, mt, mb = 48, 12, 26, 40
    pw, ph = width - ml - mr, height - mt - mb
    ticks = nice_ticks(max((p["x"] for pts in series.values() for p in pts), default=0.0))
    x_max = ticks[-1]

    def sx(x: float) -> float:
        return ml + pw * (x / x_max)

    def sy(y: float) -> float:
        return mt + ph * (1.0 - max(0.0, min(1.0, y)))

    e = html.escape
    parts = [
        f'<svg class="curve" data-env="{e(env)}" data-split="{e(split)}" '
        f'xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{e(title)}">',
        f'<text x="{ml}" y="16" class="title">{e(title)}</text>',
        f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" class="frame"/>',
    ]
    for i in range(6):  # y grid at 0, 0.2, ..., 1
        y = i / 5
        parts.append(
            f'<line x1="{ml}" x2="{ml + pw}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" class="grid"/>'
            f'<text x="{ml - 6}" y="{sy(y) + 4:.1f}" class="tick" text-anchor="end">{y:.1f}</text>'
        )
    for x in ticks:
        parts.append(
            f'<text x="{sx(x):.1f}" y="{mt + ph + 16}" class="tick x-tick" text-anchor="middle">'
            f"{_tick_label(x)}</text>"
        )
    parts.append(
        f'<text x="{ml + pw / 2}" y="{height - 6}" class="axis" text-anchor="middle">{e(x_label)}</text>'
        f'<text x="12" y="{mt + ph / 2}" class="axis" text-anchor="middle" '
        f'transform="rotate(-90 12 {mt + ph / 2})">{e(y_label)}</text>'
    )
    shown = [(m, pts) for m, pts in sorted(series.items()) if pts]
    for k, (method, pts) in enumerate(shown):
        style = style_of(method)
        color = (colors or {}).get(method, style.color)
        if any(p["n"] > 1 for p in pts):
            upper = " ".join(f"{sx(p['x']):.1f},{sy(p['hi']):.1f}" for p in pts)
            lower = " ".join(f"{sx(p['x']):.1f},{sy(p['lo']):.1f}" for p in reversed(pts))
            parts.append(
                f'<polygon class="band" points="{upper} {lower}" fill="{color}" fill-opacity="0.12"/>'
            )
        d = " ".join(
            f"{'M' if i == 0 else 'L'}{sx(p['x']):.1f},{sy(p['y']):.1f}" for i, p in enumerate(pts)
        )
        dash = f' stroke-dasharray="{style.dash}"' if style.dash else ""
        parts.append(
            f'<path class="series" data-method="{e(method)}" data-points="{len(pts)}" '
            f'data-marker="{style.marker}" d="{d}" stroke="{color}" fill="none" '
            f'stroke-width="2"{dash}/>'
        )
        for p in pts:
            tip = (
                f"{method}: iteration {p['iteration']}, {p['x']:,.0f} env steps, success "
                f"{p['y']:.3f} (seeds: {p['n']}, range {p['lo']:.3f}..{p['hi']:.3f})"
            )
            parts.append(marker_svg(style.marker, sx(p["x"]), sy(p["y"]), color, tip))
        ly = mt + 12 + 14 * k
        parts.append(
            f'<g class="legend-entry" data-method="{e(method)}">'
            f'<line x1="{ml + 8}" x2="{ml + 30}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" '
            f'stroke-width="2"{dash}/>'
            + marker_svg(style.marker, ml + 19, ly - 4, color, method, r=3)
            + f'<text x="{ml + 34}" y="{ly}" class="legend">{e(method)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)
