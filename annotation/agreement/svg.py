"""Small server-side SVG charts for the agreement dashboards (no JavaScript, no CDN).

Every function returns a complete ``<svg>`` element as a safe string: a ``<title>`` (read by screen readers), axes
with ticks and labels, and the data marks, each with ``class="mark"`` and a ``<title>`` tooltip with its value.
Values that are ``None`` are left out (and counted in the caption by the caller). A mark that rests on fewer ratings
than its minimum (:mod:`annotation.agreement.minimums`; ``"weak"`` in the data) is drawn hollow or pale and its
tooltip says "too few ratings", so a chart never shows a shaky value like a solid one.
"""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import mark_safe

W, H = 520, 260
M_LEFT, M_RIGHT, M_TOP, M_BOTTOM = 52, 16, 26, 44
INK, GRID, ACCENT, ACCENT2, MUTED = "#1d2330", "#e3e7ee", "#2f6fde", "#e07b39", "#6b7280"
WEAK = " (too few ratings)"


def _fmt(v: float, digits: int = 2) -> str:
    return f"{v:.{digits}f}"


def _open(svg_id: str, title: str, width: int = W, height: int = H) -> list[str]:
    return [
        f'<svg id="{escape(svg_id)}" class="chart" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width} {height}" width="100%" role="img" aria-labelledby="{escape(svg_id)}-title">',
        f'<title id="{escape(svg_id)}-title">{escape(title)}</title>',
        f'<text x="{M_LEFT}" y="16" font-size="13" font-weight="600" fill="{INK}">{escape(title)}</text>',
    ]


def _scale(lo: float, hi: float, a: float, b: float):
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def _y_axis(parts, y, ticks, lo_x, hi_x, label: str, digits: int = 1):
    for t in ticks:
        yy = y(t)
        parts.append(f'<line x1="{lo_x}" y1="{yy:.1f}" x2="{hi_x}" y2="{yy:.1f}" stroke="{GRID}"/>')
        parts.append(
            f'<text x="{lo_x - 6}" y="{yy + 4:.1f}" font-size="11" text-anchor="end" fill="{MUTED}">'
            f"{escape(_fmt(t, digits) if isinstance(t, float) else str(t))}</text>"
        )
    parts.append(
        f'<text transform="translate(13,{(M_TOP + H - M_BOTTOM) / 2:.0f}) rotate(-90)" font-size="11" '
        f'text-anchor="middle" fill="{MUTED}">{escape(label)}</text>'
    )


def _x_label(parts, label: str, width: int = W, height: int = H):
    parts.append(
        f'<text x="{(M_LEFT + width - M_RIGHT) / 2:.0f}" y="{height - 6}" font-size="11" '
        f'text-anchor="middle" fill="{MUTED}">{escape(label)}</text>'
    )


def _empty(parts, text: str = "no data yet"):
    parts.append(
        f'<text x="{W / 2:.0f}" y="{H / 2:.0f}" font-size="13" text-anchor="middle" fill="{MUTED}">'
        f"{escape(text)}</text>"
    )


def _nice_max(v: float) -> int:
    v = max(1, int(v))
    for step in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000):
        if v <= step * 5:
            return step * ((v + step - 1) // step)
    return v


def histogram(svg_id: str, counts: list[int], edges: list[float], *, title: str, xlabel: str, ylabel: str = "items"):
    """Bars of ``counts`` over the bins ``[edges[k], edges[k+1])`` (the last bin includes its right edge)."""
    parts = _open(svg_id, title)
    x0, x1, y0, y1 = M_LEFT, W - M_RIGHT, H - M_BOTTOM, M_TOP
    top = _nice_max(max(counts) if counts else 1)
    y = _scale(0, top, y0, y1)
    step = max(1, top // 5)
    _y_axis(parts, y, list(range(0, top + 1, step)), x0, x1, ylabel, 0)
    if not counts or not sum(counts):
        _empty(parts)
    n = len(counts)
    bw = (x1 - x0) / max(1, n)
    for k, c in enumerate(counts):
        bx = x0 + k * bw
        if c:
            parts.append(
                f'<rect class="mark" x="{bx + 1:.1f}" y="{y(c):.1f}" width="{bw - 2:.1f}" '
                f'height="{y0 - y(c):.1f}" fill="{ACCENT}"><title>{_fmt(edges[k], 1)}–'
                f"{_fmt(edges[k + 1], 1)}: {c} item{'s' if c != 1 else ''}</title></rect>"
            )
    for k, e in enumerate(edges):
        if k % 2 == 0 or len(edges) <= 6:
            parts.append(
                f'<text x="{x0 + k * bw:.1f}" y="{y0 + 15}" font-size="11" text-anchor="middle" '
                f'fill="{MUTED}">{_fmt(e, 1)}</text>'
            )
    parts.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="{INK}"/>')
    _x_label(parts, xlabel)
    parts.append("</svg>")
    return mark_safe("".join(parts))


def scatter(svg_id: str, points: list[dict], *, title: str, xlabel: str, ylabel: str):
    """Points ``{"x", "y", "label", "highlight"}`` on [0, 1] x [0, 1]; highlighted points in the second colour."""
    parts = _open(svg_id, title)
    x0, x1, y0, y1 = M_LEFT, W - M_RIGHT, H - M_BOTTOM, M_TOP
    x, y = _scale(0, 1, x0 + 8, x1 - 8), _scale(0, 1, y0 - 8, y1 + 8)
    _y_axis(parts, y, [0.0, 0.25, 0.5, 0.75, 1.0], x0, x1, ylabel, 2)
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<text x="{x(t):.1f}" y="{y0 + 15}" font-size="11" text-anchor="middle" fill="{MUTED}">{_fmt(t)}</text>'
        )
    parts.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="{INK}"/>')
    shown = [p for p in points if p.get("x") is not None and p.get("y") is not None]
    if not shown:
        _empty(parts, "no worker has both values yet")
    for p in shown:
        colour = ACCENT2 if p.get("highlight") else ACCENT
        look = (
            f'fill="#fff" stroke="{colour}" stroke-width="2"'
            if p.get("weak")
            else f'fill="{colour}" fill-opacity="0.75" stroke="#fff"'
        )
        parts.append(
            f'<circle class="mark{" weak" if p.get("weak") else ""}" cx="{x(p["x"]):.1f}" '
            f'cy="{y(p["y"]):.1f}" r="5" {look}><title>{escape(p.get("label", ""))}: '
            f"{_fmt(p['x'])} / {_fmt(p['y'])}{escape(p.get('note', ''))}"
            f"{WEAK if p.get('weak') else ''}</title></circle>"
        )
    _x_label(parts, xlabel)
    parts.append("</svg>")
    return mark_safe("".join(parts))


def lines(
    svg_id: str,
    xs: list[float],
    series: list[dict],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    lo: float = 0.0,
    hi: float = 1.0,
    notes: list[str] | None = None,
):
    """Line chart: ``series`` = ``[{"name", "values": [...] (None = gap), "colour"?, "weak"?: [bool per x]}]`` over
    ``xs``; ``notes``: a text per x added to the tooltips (its n). Weak points are hollow."""
    parts = _open(svg_id, title)
    x0, x1, y0, y1 = M_LEFT, W - M_RIGHT, H - M_BOTTOM, M_TOP
    vals = [v for s in series for v in s["values"] if v is not None]
    lo = min([lo] + vals)
    hi = max([hi] + vals)
    y = _scale(lo, hi, y0, y1)
    ticks = [lo + (hi - lo) * k / 4 for k in range(5)]
    _y_axis(parts, y, ticks, x0, x1, ylabel, 2)
    if not xs or not vals:
        _empty(parts)
    xmin, xmax = (min(xs), max(xs)) if xs else (0, 1)
    x = _scale(xmin, xmax if xmax > xmin else xmin + 1, x0 + 8, x1 - 8)
    for t in sorted(set(xs)) if len(set(xs)) <= 12 else sorted(set(xs))[:: max(1, len(set(xs)) // 10)]:
        parts.append(
            f'<text x="{x(t):.1f}" y="{y0 + 15}" font-size="11" text-anchor="middle" fill="{MUTED}">{t:g}</text>'
        )
    parts.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="{INK}"/>')
    if lo < 0 < hi:
        parts.append(
            f'<line x1="{x0}" y1="{y(0):.1f}" x2="{x1}" y2="{y(0):.1f}" stroke="{MUTED}" stroke-dasharray="3 3"/>'
        )
    legend_x = x1 - 150
    for k, s in enumerate(series):
        colour = s.get("colour") or (ACCENT, ACCENT2, MUTED)[k % 3]
        pts = [(x(a), y(v)) for a, v in zip(xs, s["values"]) if v is not None]
        if len(pts) > 1:
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                f'points="{" ".join(f"{px:.1f},{py:.1f}" for px, py in pts)}"/>'
            )
        weak = s.get("weak") or [False] * len(xs)
        kept = [(a, v, w, n) for a, v, w, n in zip(xs, s["values"], weak, notes or [""] * len(xs)) if v is not None]
        for (px, py), (a, v, w, note) in zip(pts, kept):
            look = f'fill="#fff" stroke="{colour}" stroke-width="1.5"' if w else f'fill="{colour}"'
            parts.append(
                f'<circle class="mark{" weak" if w else ""}" cx="{px:.1f}" cy="{py:.1f}" r="3.5" {look}>'
                f"<title>{escape(s['name'])} after {a:g}: {_fmt(v, 3)}{escape(note)}"
                f"{WEAK if w else ''}</title></circle>"
            )
        ly = M_TOP + 4 + 14 * k
        parts.append(
            f'<rect x="{legend_x}" y="{ly}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{legend_x + 14}" y="{ly + 9}" font-size="11" fill="{INK}">{escape(s["name"])}</text>'
        )
    _x_label(parts, xlabel)
    parts.append("</svg>")
    return mark_safe("".join(parts))


def bars(svg_id: str, rows: list[dict], *, title: str, xlabel: str, lo: float = 0.0, hi: float = 1.0):
    """Horizontal bars ``{"label", "value" (None = undefined), "note", "weak"?}``; the value axis spans [lo, hi]
    (widened to the data, so negative alphas show to the left of zero). A weak bar is pale with a dashed outline."""
    height = max(H, M_TOP + M_BOTTOM + 26 * len(rows))
    label_w = 150
    parts = _open(svg_id, title, height=height)
    x0, x1, y0 = M_LEFT + label_w - 40, W - M_RIGHT, height - M_BOTTOM
    vals = [r["value"] for r in rows if r.get("value") is not None]
    lo, hi = min([lo] + vals), max([hi] + vals)
    x = _scale(lo, hi, x0, x1)
    for t in [lo + (hi - lo) * k / 4 for k in range(5)]:
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{M_TOP}" x2="{x(t):.1f}" y2="{y0}" stroke="{GRID}"/>'
            f'<text x="{x(t):.1f}" y="{y0 + 15}" font-size="11" text-anchor="middle" fill="{MUTED}">'
            f"{_fmt(t)}</text>"
        )
    if not rows:
        _empty(parts)
    band = (y0 - M_TOP - 8) / max(1, len(rows))
    bh = min(20.0, band * 0.7)
    zero = x(0.0) if lo <= 0 <= hi else x(lo)
    for k, r in enumerate(rows):
        cy = M_TOP + 8 + k * band + band / 2
        label = str(r["label"])
        short = label if len(label) <= 22 else label[:21] + "…"
        parts.append(
            f'<text x="{x0 - 6}" y="{cy + 4:.1f}" font-size="11" text-anchor="end" fill="{INK}">'
            f"{escape(short)}<title>{escape(label)}</title></text>"
        )
        v = r.get("value")
        if v is None:
            parts.append(f'<text x="{zero + 4:.1f}" y="{cy + 4:.1f}" font-size="11" fill="{MUTED}">undefined</text>')
            continue
        left, right = sorted((zero, x(v)))
        colour = ACCENT if v >= 0 else ACCENT2
        weak = bool(r.get("weak"))
        look = (
            f'fill="{colour}" fill-opacity="0.25" stroke="{colour}" stroke-dasharray="3 2"'
            if weak
            else f'fill="{colour}"'
        )
        parts.append(
            f'<rect class="mark{" weak" if weak else ""}" x="{left:.1f}" y="{cy - bh / 2:.1f}" '
            f'width="{max(1.0, right - left):.1f}" height="{bh:.1f}" {look}><title>{escape(label)}: '
            f"{_fmt(v, 3)}{escape(r.get('note', ''))}{WEAK if weak else ''}</title></rect>"
        )
        shown = f"{_fmt(v, 3)}{' · too few' if weak else ''}"
        if right + (90 if weak else 40) <= W:  # the value right of the bar, or inside its end where it would leave
            parts.append(f'<text x="{right + 4:.1f}" y="{cy + 4:.1f}" font-size="11" fill="{INK}">{shown}</text>')
        else:
            parts.append(
                f'<text x="{right - 4:.1f}" y="{cy + 4:.1f}" font-size="11" text-anchor="end" '
                f'fill="{INK if weak else "#ffffff"}">{shown}</text>'
            )
    parts.append(f'<line x1="{zero:.1f}" y1="{M_TOP}" x2="{zero:.1f}" y2="{y0}" stroke="{INK}"/>')
    _x_label(parts, xlabel, height=height)
    parts.append("</svg>")
    return mark_safe("".join(parts))
