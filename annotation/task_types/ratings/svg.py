"""Two small inline SVG charts for the ratings results page (no scripts, no CDN): stacked win / tie / loss shares per
system, and grouped mean ± SD bars per criterion. Every mark states its n (the row label, the tooltip); a row or bar
resting on fewer ratings than its minimum (:mod:`annotation.agreement.minimums`, ``"weak"``) is drawn pale and says
"too few ratings". The three share colours each contrast at least 3:1 with the white card (WCAG 1.4.11), so no part
of a bar disappears into the background."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import mark_safe

INK, MUTED, GRID = "#1d2330", "#5b6475", "#e3e6ec"
WIN, TIE, LOSS = "#2456c9", "#6b7280", "#c2410c"  # blue / grey / burnt orange: 6.5, 4.8 and 5.2 : 1 on white
SERIES = ("#2456c9", "#d97706", "#1e7d3a", "#9333ea", "#b3261e", "#0e7490")


def _f(v: float, digits: int = 2) -> str:
    return f"{v:.{digits}f}"


def shares(svg_id: str, rows: list[dict], *, title: str) -> str:
    """Rows ``{"label", "win", "tie", "loss", "n"?, "weak"?}`` (shares 0..1): one stacked horizontal bar per row,
    labelled with its n."""
    width, left, right, top = 640, 190, 20, 30
    band = 30
    height = top + band * max(1, len(rows)) + 42
    x0, x1 = left, width - right
    span = x1 - x0
    parts = [
        f'<svg id="{escape(svg_id)}" class="chart" role="img" aria-label="{escape(title)}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<text x="8" y="16" font-size="12" font-weight="600" fill="{INK}">{escape(title)}</text>',
    ]
    y_axis = top + band * max(1, len(rows))
    for k in range(5):
        x = x0 + span * k / 4
        parts.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{y_axis}" stroke="{GRID}"/>'
            f'<text x="{x:.1f}" y="{y_axis + 14}" font-size="11" text-anchor="middle" fill="{MUTED}">'
            f"{k * 25}%</text>"
        )
    if not rows:
        parts.append(
            f'<text x="{x0 + span / 2:.1f}" y="{top + 18}" font-size="12" text-anchor="middle" '
            f'fill="{MUTED}">no judgements yet</text>'
        )
    for n, r in enumerate(rows):
        y = top + n * band + 5
        label = str(r["label"])
        weak = bool(r.get("weak"))
        n_text = f" (n = {r['n']})" if r.get("n") is not None else ""
        parts.append(
            f'<text x="{x0 - 8}" y="{y + (9 if weak else 14)}" font-size="12" text-anchor="end" '
            f'fill="{INK}">{escape((label if len(label) <= 18 else label[:17] + "…") + n_text)}</text>'
        )
        if weak:
            parts.append(
                f'<text class="too-few" x="{x0 - 8}" y="{y + 21}" font-size="10" text-anchor="end" '
                f'fill="#6b4500">too few ratings</text>'
            )
        x = float(x0)
        for part, color in (("win", WIN), ("tie", TIE), ("loss", LOSS)):
            w = span * float(r.get(part) or 0.0)
            if w > 0:
                look = f'fill="{color}" fill-opacity="0.45"' if weak else f'fill="{color}"'
                parts.append(
                    f'<rect class="mark {part}{" weak" if weak else ""}" x="{x:.1f}" y="{y}" '
                    f'width="{w:.1f}" height="20" {look}><title>{escape(label)} {part}: '
                    f"{_f(100 * r[part], 1)}%{escape(n_text)}{' (too few ratings)' if weak else ''}"
                    f"</title></rect>"
                )
                if w > 34 and not weak:
                    parts.append(
                        f'<text x="{x + w / 2:.1f}" y="{y + 14}" font-size="11" text-anchor="middle" '
                        f'fill="#fff">{_f(100 * r[part], 0)}%</text>'
                    )
            x += w
    ly = y_axis + 30
    for k, (name, color) in enumerate((("wins", WIN), ("ties", TIE), ("losses", LOSS))):
        lx = x0 + k * 90
        parts.append(
            f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{color}" stroke="{MUTED}" '
            f'stroke-width=".5"/><text x="{lx + 14}" y="{ly}" font-size="11" fill="{MUTED}">{name}</text>'
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))


def means(svg_id: str, groups: list[dict], series: list[str], *, title: str, lo: float = 1.0, hi: float = 4.0) -> str:
    """Groups ``{"label", "values": [{"mean", "sd", "n"?, "weak"?} or None per series]}``: vertical bars with ±SD
    whiskers; a weak bar (too few ratings) is pale with a dashed outline."""
    width, height, left, right, top, bottom = 640, 260, 40, 16, 30, 50
    x0, x1, y0, y1 = left, width - right, height - bottom, top
    parts = [
        f'<svg id="{escape(svg_id)}" class="chart" role="img" aria-label="{escape(title)}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<text x="{x0}" y="16" font-size="12" font-weight="600" fill="{INK}">{escape(title)}</text>',
    ]
    base = 0.0

    def y(v: float) -> float:
        v = max(base, min(hi, v))
        return y0 - (y0 - y1) * (v - base) / (hi - base)

    for t in range(int(base), int(hi) + 1):
        parts.append(
            f'<line x1="{x0}" y1="{y(t):.1f}" x2="{x1}" y2="{y(t):.1f}" stroke="{GRID}"/>'
            f'<text x="{x0 - 6}" y="{y(t) + 4:.1f}" font-size="11" text-anchor="end" fill="{MUTED}">{t}</text>'
        )
    band = (x1 - x0) / max(1, len(groups))
    bw = min(36.0, band * 0.8 / max(1, len(series)))
    for g, group in enumerate(groups):
        cx = x0 + band * g + band / 2
        start = cx - bw * len(series) / 2
        for s, cell in enumerate(group["values"]):
            if not cell or cell.get("mean") is None:
                continue
            m, sd = cell["mean"], cell.get("sd")
            bx = start + s * bw
            color = SERIES[s % len(SERIES)]
            weak = bool(cell.get("weak"))
            look = (
                f'fill="{color}" fill-opacity="0.3" stroke="{color}" stroke-dasharray="3 2"'
                if weak
                else f'fill="{color}"'
            )
            n_text = f" (n = {cell['n']})" if cell.get("n") is not None else ""
            parts.append(
                f'<rect class="mark{" weak" if weak else ""}" x="{bx + 2:.1f}" y="{y(m):.1f}" '
                f'width="{bw - 4:.1f}" height="{y0 - y(m):.1f}" {look}><title>{escape(group["label"])}, '
                f"{escape(series[s])}: {_f(m, 3)}{' ± ' + _f(sd, 3) if sd is not None else ''}"
                f"{n_text}{' (too few ratings)' if weak else ''}</title></rect>"
            )
            if sd is not None:
                mx = bx + bw / 2
                parts.append(
                    f'<line x1="{mx:.1f}" y1="{y(m - sd):.1f}" x2="{mx:.1f}" y2="{y(m + sd):.1f}" '
                    f'stroke="{INK}"/><line x1="{mx - 4:.1f}" y1="{y(m + sd):.1f}" x2="{mx + 4:.1f}" '
                    f'y2="{y(m + sd):.1f}" stroke="{INK}"/><line x1="{mx - 4:.1f}" y1="{y(m - sd):.1f}" '
                    f'x2="{mx + 4:.1f}" y2="{y(m - sd):.1f}" stroke="{INK}"/>'
                )
        parts.append(
            f'<text x="{cx:.1f}" y="{y0 + 15}" font-size="12" text-anchor="middle" fill="{INK}">'
            f"{escape(group['label'])}</text>"
        )
    parts.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="{INK}"/>')
    for s, name in enumerate(series):
        lx = x0 + s * 130
        parts.append(
            f'<rect x="{lx}" y="{height - 17}" width="10" height="10" fill="{SERIES[s % len(SERIES)]}"/>'
            f'<text x="{lx + 14}" y="{height - 8}" font-size="11" fill="{MUTED}">'
            f"{escape(name if len(name) <= 16 else name[:15] + '…')}</text>"
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))
