"""The ablation's report.html: the table of variants and their training-loss curves."""

from __future__ import annotations

from html import escape

from raypipe.report.html import STYLE, bar_chart

WIDTH, HEIGHT, MARGIN = 640, 300, 50
COLOURS = ["#4472c4", "#ed7d31", "#70ad47", "#7030a0", "#c00000", "#00b0f0", "#7f6000"]


def _gap(row: dict, reference: str) -> str:
    if (gap := row.get(f"vs_{reference}")) is None:
        return ""
    noise = {True: "", False: " (noise)", None: ""}[gap["beyond_noise"]]
    return f"{gap['gap']:+.4f}{noise}"


def _table(result: dict) -> str:
    head = (
        "variant",
        "documents kept",
        "tokens in shards",
        "epochs",
        "bits per byte",
        "± std",
        "vs raw",
        "vs recipe",
        "per seed",
    )
    rows = []
    for name, row in result["variants"].items():
        cells = (
            name,
            f"{row['documents_out']:,} / {row['documents_in']:,}",
            f"{row['tokens_in_shards']:,}",
            f"{row['epochs']:.2f}",
            f"{row['bits_per_byte']:.4f}",
            f"{row['std']:.4f}",
            _gap(row, "raw"),
            _gap(row, "recipe"),
            " ".join(f"{value:.4f}" for value in row["per_seed"]),
        )
        rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f"<table><tr>{header}</tr>{''.join(rows)}</table>"


def loss_curves(result: dict) -> str:
    """Training loss (mean over seeds) against tokens seen, one line per variant."""
    lines = [(name, row["curve_tokens"], row["curve"]) for name, row in result["variants"].items()]
    losses = [loss for _, _, curve in lines for loss in curve]
    if not losses:
        return ""
    top, bottom = max(losses), min(losses)
    right = max(max(tokens) for _, tokens, _ in lines)
    x = lambda t: MARGIN + (WIDTH - 2 * MARGIN) * t / right  # noqa: E731
    y = lambda v: MARGIN / 2 + (HEIGHT - MARGIN) * (top - v) / ((top - bottom) or 1)  # noqa: E731
    parts = [
        f'<text x="{MARGIN}" y="12">loss (nats per token), {top:.2f} to {bottom:.2f}</text>',
        f'<text x="{WIDTH - MARGIN}" y="{HEIGHT - 4}" text-anchor="end">tokens seen: '
        f"{right:,}</text>",
    ]
    for i, (name, tokens, curve) in enumerate(lines):
        colour = COLOURS[i % len(COLOURS)]
        points = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in zip(tokens, curve, strict=True))
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}">'
            f"<title>{escape(name)}</title></polyline>"
            f'<text x="{WIDTH - MARGIN + 4}" y="{y(curve[-1]):.1f}" fill="{colour}">'
            f"{escape(name)}</text>"
        )
    return (
        '<figure><figcaption>training loss</figcaption><svg role="img" aria-label="training '
        f'loss" width="{WIDTH + 80}" height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg">'
        f"{''.join(parts)}</svg></figure>"
    )


def render(result: dict) -> str:
    variants = result["variants"]
    first = next(iter(variants.values()))
    bars = bar_chart(
        "bits per byte on the held-out set (lower is better)",
        [(name, round(row["bits_per_byte"], 4)) for name, row in variants.items()],
    )
    setup = (
        f"{result['seeds']} seed(s) per variant, {result['tokens']:,} training tokens each, "
        f"a GPT-2 of {first['parameters']:,} parameters, sequences of {result['seq_len']} "
        f"tokens. Held out: {', '.join(result['heldout'])}. A gap marked (noise) is within "
        "twice the standard error of the two means."
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>raypipe ablation</title>"
        f"<style>{STYLE}</style></head><body><h1>raypipe ablation</h1><p>{escape(setup)}</p>"
        f"{_table(result)}{bars}{loss_curves(result)}</body></html>"
    )
