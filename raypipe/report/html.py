"""report.html: the run's report as one static page with inline SVG charts.

No scripts, no fonts, no network: the file opens anywhere, including an air-gapped
cluster's login node, and can be attached to a ticket as it is.
"""

from __future__ import annotations

from html import escape

from raypipe.accounting import LENGTH_BINS

BAR_HEIGHT = 18
LABEL_WIDTH = 220
PLOT_WIDTH = 420

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; } td, th { padding: 2px 12px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
tr:nth-child(even) { background: #f4f4f4; }
svg text { font: 12px system-ui, sans-serif; }
"""


def bar_chart(title: str, rows: list[tuple[str, float]], unit: str = "") -> str:
    """A horizontal bar chart; one bar per (label, value)."""
    if not rows:
        return f'<p class="empty">{escape(title)}: none</p>'
    top = max(value for _, value in rows) or 1
    height = BAR_HEIGHT * len(rows) + 4
    width = LABEL_WIDTH + PLOT_WIDTH + 120
    bars = []
    for i, (label, value) in enumerate(rows):
        y = i * BAR_HEIGHT + 2
        length = max(1.0, PLOT_WIDTH * value / top) if value else 0.0
        bars.append(
            f'<text x="{LABEL_WIDTH - 6}" y="{y + 13}" text-anchor="end">{escape(label)}</text>'
            f'<rect class="bar" x="{LABEL_WIDTH}" y="{y}" width="{length:.1f}" '
            f'height="{BAR_HEIGHT - 4}" fill="#4472c4"><title>{escape(label)}: {value:,}'
            f"</title></rect>"
            f'<text x="{LABEL_WIDTH + length + 6:.1f}" y="{y + 13}">{value:,}{unit}</text>'
        )
    return (
        f'<figure><figcaption>{escape(title)}</figcaption><svg role="img" '
        f'aria-label="{escape(title)}" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(bars)}</svg></figure>'
    )


def table(rows: list[tuple[str, object]]) -> str:
    cells = [(k, f"{v:,}" if isinstance(v, int) else str(v)) for k, v in rows]
    body = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in cells)
    return f"<table>{body}</table>"


def _length_rows(bins: list[int]) -> list[tuple[str, float]]:
    used = [k for k in range(LENGTH_BINS) if bins[k]]
    if not used:
        return []
    return [(f"{2**k:,}–{2 ** (k + 1) - 1:,} chars", bins[k]) for k in range(used[0], used[-1] + 1)]


def language_rows(kept: dict[str, int], rejected: dict[str, dict[str, int]]) -> list:
    """Per language, most documents first: kept after cleaning, rejected, and why."""
    rows = []
    for language in sorted(kept.keys() | rejected.keys()):
        reasons = sorted(rejected.get(language, {}).items(), key=lambda kv: (-kv[1], kv[0]))
        lost = sum(n for _, n in reasons)
        why = ", ".join(f"{reason} {n:,}" for reason, n in reasons[:3])
        rows.append((kept.get(language, 0) + lost, language, kept.get(language, 0), lost, why))
    rows.sort(key=lambda r: (-r[0], r[1]))
    return [
        (language, f"kept {k:,}, rejected {lost:,}" + (f" ({why})" if why else ""))
        for _, language, k, lost, why in rows
    ]


def render(manifest: dict, report: dict) -> str:
    """The page: summary, funnel, rejects by reason, lengths, languages, sources, tokens."""
    funnel = [("read", manifest["documents_in"])]
    remaining = manifest["documents_in"]
    for stage, count in manifest["rejected_by_stage"].items():
        remaining -= count
        funnel.append((f"after {stage}", remaining))
    summary = [
        ("documents in", manifest["documents_in"]),
        ("documents out", manifest["documents_out"]),
        ("rejected", sum(manifest["rejected"].values())),
        ("input files", manifest["files"]),
    ]
    if "tokens" in report:
        summary += [
            ("tokens", report["tokens"]),
            ("sequences", report["sequences"]),
            ("chars per token", f"{report['chars_per_token']:.2f}"),
            ("words per document", f"{report['doc_words']['mean']:,.0f}"),
            ("vocabulary used", f"{report['vocab_utilization']:.3f}"),
        ]
        if report["sequence_utilization"] is not None:  # None: unpacked (megatron) output
            summary += [
                ("sequence utilization", f"{report['sequence_utilization']:.4f}"),
                ("split documents", report["split_documents"]),
            ]
    sources = manifest.get("sources", {})
    parts = [
        "<h2>Summary</h2>",
        *(f"<p class='warning'>warning: {escape(w)}</p>" for w in report.get("warnings", [])),
        table(summary),
        "<h2>Funnel</h2>",
        bar_chart("Documents remaining after each stage", funnel),
        "<h2>Rejects</h2>",
        bar_chart(
            "Rejected documents by reason",
            sorted(manifest["rejected"].items(), key=lambda kv: (-kv[1], kv[0])),
        ),
        "<h2>Document lengths</h2>",
        bar_chart("Kept documents by length", _length_rows(report["length_bins"])),
        "<h2>Languages</h2>",
        bar_chart(
            "Kept documents by language",
            sorted(report["languages"].items(), key=lambda kv: (-kv[1], kv[0]))[:30],
        ),
        "<p>Cleaning per language (und: no language reached its threshold; duplicates are "
        "removed after cleaning and counted under Rejects):</p>",
        table(language_rows(report["languages"], report.get("rejected_by_language", {}))[:30]),
        "<h2>Personal data</h2>",
        bar_chart("Masked spans by entity", sorted(report.get("masked", {}).items())),
        "<h2>Sources</h2>",
        bar_chart(
            "Documents kept after cleaning, per source",
            [(name, s["documents_cleaned"]) for name, s in sources.items()],
        ),
    ]
    if "near_duplicates" in report:
        near = report["near_duplicates"]
        parts += [
            "<h2>Near-duplicate clusters</h2>",
            f"<p>share of documents removed: {near['share_removed']:.4f}</p>",
            bar_chart(
                "Near-duplicate clusters by size (documents)",
                [(f"size {size}", n) for size, n in near["cluster_sizes"].items()],
            ),
        ]
    if report.get("top_tokens"):
        parts += [
            "<h2>Tokens</h2>",
            bar_chart(
                "Most frequent tokens",
                [(repr(t["token"]), t["count"]) for t in report["top_tokens"]],
            ),
        ]
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>raypipe report</title><style>{STYLE}</style></head><body>"
        f"<h1>raypipe report</h1><p>run {escape(manifest['fingerprint'][:16])}</p>"
        f"{''.join(parts)}</body></html>"
    )
