"""The report's charts as inline SVG, drawn here so that the page needs no script, no library
and no network: it opens the same from a mail attachment as from the report folder.

Colours are the dashboard's (``dashboard/static/style.css``): ``--ok`` for pass, its
``.pill.unverified`` teal for unverified, ``--warn`` for partial, ``--bad`` for fail, the
"interrupted" purple for error, ``--accent`` first among the models. Every drawn value
carries ``data-`` attributes (model, status, value), so that a test (or a reader's script)
can check the drawing against the JSON.
"""

from __future__ import annotations

from html import escape
from typing import Any

from localhand.evals.report import STATUSES
from localhand.events import summarize

COLOURS = {
    "pass": "#15803d",
    "unverified": "#0e7490",
    "partial_pass": "#a16207",
    "fail": "#b91c1c",
    "error": "#7e22ce",
}
LABELS = {status: status for status in STATUSES} | {"partial_pass": "partial"}
SERIES = ("#4f46e5", "#0891b2", "#c2410c", "#15803d", "#7e22ce", "#a16207", "#1d4ed8", "#be185d")
GUARDRAILS = ("#b91c1c", "#a16207", "#4f46e5", "#0891b2", "#7e22ce", "#c2410c", "#6b7385")
MUTED, LINE, TEXT = "#6b7385", "#e3e6eb", "#1d2330"

WIDTH = 760
LABEL_W = 190
BAR_W = 400
ROW = 34
BAR_H = 18


def pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


def status_rate(status: str, model: dict[str, Any]) -> str:
    """A model's rate of ``status`` in a report (``–`` where one written before it lacks it)."""
    return pct(model["rates"].get(status, {}).get("rate"))


def _attrs(**values: Any) -> str:
    return " ".join(
        f'{key.rstrip("_").replace("_", "-")}="{escape(str(value))}"'
        for key, value in values.items()
        if value is not None
    )


def _svg(name: str, height: int, body: list[str], title: str) -> str:
    return (
        f'<svg class="chart" data-chart="{name}" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, text: str, **extra: Any) -> str:
    style = _attrs(font_size=extra.pop("size", 12), fill=extra.pop("fill", TEXT), **extra)
    return f'<text x="{x:.1f}" y="{y:.1f}" {style}>{escape(text)}</text>'


def _interval(lines: list[tuple[float, float, float, float]], width: float, **data: Any) -> str:
    """A confidence interval: its line, then the ticks at its ends (each ``x1, x2, y1, y2``)."""
    drawn = "".join(
        f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" />'
        for x1, x2, y1, y2 in lines
    )
    return f'<g class="ci" stroke="{TEXT}" stroke-width="{width}" {_attrs(**data)}>{drawn}</g>'


def _segment(x: float, y: float, width: float, colour: str, title: str, **data: Any) -> str:
    """One part of a stacked bar, its ``title`` shown on hover."""
    return (
        f'<rect class="seg" x="{x:.2f}" y="{y}" width="{width:.2f}" height="{BAR_H}" '
        f'fill="{colour}" {_attrs(**data)}><title>{escape(title)}</title></rect>'
    )


def _legend(items: list[tuple[str, str]], y: float) -> list[str]:
    body, x = [], float(LABEL_W)
    for label, colour in items:
        body.append(
            f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10" rx="2" fill="{colour}" />'
        )
        body.append(_text(x + 14, y, label, size=11, fill=MUTED))
        x += 24 + 7 * len(label)
    return body


def outcomes(models: list[dict[str, Any]]) -> str:
    """Per model, one bar split into pass / partial / fail / error, with the 95% interval of
    the pass rate drawn over it."""
    body = _legend([(LABELS[s], COLOURS[s]) for s in STATUSES], 14)
    for i, model in enumerate(models):
        y = 30 + i * ROW
        body.append(_text(0, y + 13, summarize(model["model"], 26), class_="label"))
        x = float(LABEL_W)
        for status in STATUSES:
            rate = float(model["rates"].get(status, {}).get("rate") or 0)  # older: no unverified
            width = rate * BAR_W
            title = f"{LABELS[status]}: {pct(rate)}"
            data = {"data_model": model["model"], "data_status": status, "data_value": rate}
            body.append(_segment(x, y, width, COLOURS[status], title, **data))
            x += width
        passed = model["rates"]["pass"]
        low, high = (LABEL_W + passed[end] * BAR_W for end in ("low", "high"))
        mid = y + BAR_H / 2
        ends = [(end, end, mid - 5, mid + 5) for end in (low, high)]
        data = {"data_low": passed["low"], "data_high": passed["high"]}
        body.append(
            _interval([(low, high, mid, mid), *ends], 1.5, data_model=model["model"], **data)
        )
        note = f"{pct(passed['rate'])} pass ({pct(passed['low'])}–{pct(passed['high'])})"
        body.append(_text(LABEL_W + BAR_W + 12, y + 13, note, class_="value"))
    return _svg("outcomes", 30 + len(models) * ROW + 4, body, "Outcomes per model")


def tiers(models: list[dict[str, Any]]) -> str:
    """Pass rate per tier, a bar per model, with 95% intervals."""
    names = sorted({t for m in models for t in m["tiers"]}, key=int)
    height, top, plot = 230, 24, 160
    left, group = 48.0, (WIDTH - 60) / max(1, len(names))
    bar = min(46.0, (group - 20) / max(1, len(models)))
    body = _legend(
        [(summarize(m["model"], 20), SERIES[i % len(SERIES)]) for i, m in enumerate(models)], 12
    )
    for tick in (0, 0.25, 0.5, 0.75, 1):
        y = top + plot * (1 - tick)
        body.append(f'<line x1="{left}" x2="{WIDTH}" y1="{y:.1f}" y2="{y:.1f}" stroke="{LINE}" />')
        body.append(_text(left - 8, y + 4, pct(tick), size=11, fill=MUTED, text_anchor="end"))
    for g, tier in enumerate(names):
        x0 = left + g * group + (group - bar * len(models)) / 2
        body.append(
            _text(
                left + g * group + group / 2,
                top + plot + 20,
                f"tier {tier}",
                fill=MUTED,
                text_anchor="middle",
            )
        )
        for i, model in enumerate(models):
            passed = model["tiers"].get(tier, {}).get("pass")
            if passed is None:
                continue
            x = x0 + i * bar
            h = passed["rate"] * plot
            body.append(
                f'<rect class="bar" x="{x + 2:.2f}" y="{top + plot - h:.2f}" '
                f'width="{bar - 4:.2f}" height="{h:.2f}" fill="{SERIES[i % len(SERIES)]}" '
                + _attrs(data_model=model["model"], data_tier=tier, data_value=passed["rate"])
                + f"><title>{escape(model['model'])}, tier {tier}: {pct(passed['rate'])} "
                f"of {passed['n']}</title></rect>"
            )
            mid = x + bar / 2
            low, high = top + plot * (1 - passed["low"]), top + plot * (1 - passed["high"])
            ends = [(mid - 4, mid + 4, end, end) for end in (low, high)]
            data = {"data_model": model["model"], "data_tier": tier}
            body.append(_interval([(mid, mid, low, high), *ends], 1.2, **data))
    return _svg("tiers", height, body, "Pass rate by tier")


def metric(name: str, title: str, values: list[tuple[str, float | None]], unit: str) -> str:
    """One horizontal bar per model for a figure (median tokens, seconds...), scaled to the
    largest; a model without the figure shows a dash."""
    top = max((v for _, v in values if v is not None), default=0.0) or 1.0
    body = []
    for i, (model, value) in enumerate(values):
        y = 6 + i * ROW
        body.append(_text(0, y + 13, summarize(model, 26), class_="label"))
        if value is None:
            body.append(_text(LABEL_W, y + 13, "–", fill=MUTED, class_="value"))
            continue
        width = value / top * BAR_W
        body.append(
            f'<rect class="bar" x="{LABEL_W}" y="{y}" width="{width:.2f}" height="{BAR_H}" '
            f'rx="2" fill="{SERIES[i % len(SERIES)]}" '
            + _attrs(data_model=model, data_value=value)
            + "></rect>"
        )
        body.append(_text(LABEL_W + width + 8, y + 13, _number(value, unit), class_="value"))
    return _svg(name, 6 + len(values) * ROW, body, title)


def guardrails(models: list[dict[str, Any]]) -> str:
    """Guardrail stops by kind: a stacked bar of counts per model."""
    kinds = sorted({k for m in models for k in m["guardrails"]})
    top = max((sum(m["guardrails"].values()) for m in models), default=0) or 1
    colour = {k: GUARDRAILS[i % len(GUARDRAILS)] for i, k in enumerate(kinds)}
    body = _legend([(k, colour[k]) for k in kinds], 14) if kinds else []
    for i, model in enumerate(models):
        y = 30 + i * ROW
        body.append(_text(0, y + 13, summarize(model["model"], 26), class_="label"))
        x = float(LABEL_W)
        for kind in kinds:
            count = int(model["guardrails"].get(kind, 0))
            width = count / top * BAR_W
            if count:
                title = f"{kind}: {count}"
                data = {"data_model": model["model"], "data_kind": kind, "data_value": count}
                body.append(_segment(x, y, width, colour[kind], title, **data))
            x += width
        total = sum(model["guardrails"].values())
        body.append(_text(x + 8, y + 13, f"{total} stop{'s' * (total != 1)}", class_="value"))
    return _svg("guardrails", 30 + len(models) * ROW + 4, body, "Guardrail stops by kind")


def seconds(value: float | None) -> str:
    """A duration as people read it: 340 ms, 2.5 s, 125 s; – when it is unknown."""
    if value is None:
        return "–"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.1f} s" if value < 100 else f"{value:.0f} s"


def _number(value: float, unit: str) -> str:
    if unit == "s":
        return seconds(value)
    if unit == "tokens":
        return f"{value:,.0f}"
    return f"{value:g}"
