"""The dataset report: verdict counts per reason, length distributions, the style split, the
examples furthest from the golden set, and how many examples each kind of task needs."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from raypipe.sft.clean import Verdict
from raypipe.sft.rules import word_count
from raypipe.sft.style import style_split

# How many examples fine-tuning needs, by task: published figures, and where none exist,
# the range practitioners report. Shown next to the dataset's own count.
GUIDANCE = [
    ("format, style or tone", "50–100", "OpenAI fine-tuning guide: clear gains from 50–100"),
    ("classification, extraction", "100+ per class", "rule of thumb: every label needs cover"),
    ("narrow task, one domain", "500–5,000", "rule of thumb: grows with task variety"),
    ("general chat alignment", "~1,000 excellent", "LIMA (Zhou et al. 2023): 1,000 curated"),
    ("preference tuning (DPO)", "1,000–10,000 pairs", "rule of thumb: pairs that differ clearly"),
]
PERCENTILES = (0, 10, 50, 90, 100)


def distribution(values: list[int]) -> dict[str, float]:
    if not values:
        return {}
    points = np.percentile(values, PERCENTILES)
    names = ("min", "p10", "median", "p90", "max")
    return {name: float(value) for name, value in zip(names, points, strict=True)}


def build(
    verdicts: list[Verdict], furthest: list[tuple[float, int]] | None = None
) -> dict[str, Any]:
    """The report as plain data (JSON-ready). `furthest`: (distance, line) from the golden set."""
    kept = [v.example for v in verdicts if not v.problems and v.example]
    reasons = Counter(v.reason for v in verdicts if v.problems)
    answers = ["\n\n".join(e.answers) for e in kept]
    report: dict[str, Any] = {
        "examples": len(verdicts),
        "kept": len(kept),
        "rejected": dict(reasons.most_common()),
        "answer_words": distribution([word_count(a) for a in answers]),
        "prompt_words": distribution([word_count("\n\n".join(e.prompts)) for e in kept]),
        "style": {name: dict(split.most_common()) for name, split in style_split(answers).items()},
    }
    if furthest is not None:
        report["furthest_from_golden"] = [
            {"line": line, "distance": round(d, 3)} for d, line in furthest
        ]
    return report


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables (what `raypipe sft check` prints)."""
    lines = [f"examples: {report['examples']:,}, kept: {report['kept']:,}", ""]
    if report["rejected"]:
        lines += ["| reason | examples |", "|---|---:|"]
        lines += [f"| {reason} | {count:,} |" for reason, count in report["rejected"].items()]
        lines.append("")
    # The Ray job's report has counts only: the per-example sections are optional.
    if "answer_words" in report:
        lines += [
            "| length (words, kept) | min | p10 | median | p90 | max |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name in ("prompt_words", "answer_words"):
            if stats := report[name]:
                cells = " | ".join(f"{value:,.0f}" for value in stats.values())
                lines.append(f"| {name.replace('_', ' ')} | {cells} |")
        lines += ["", "| style of answers | split |", "|---|---|"]
        for name, split in report["style"].items():
            total = sum(split.values()) or 1
            parts = ", ".join(f"{variant} {count / total:.0%}" for variant, count in split.items())
            lines.append(f"| {name} | {parts} |")
    if "furthest_from_golden" in report:
        lines += ["", "| furthest from golden: line | distance |", "|---:|---:|"]
        lines += [
            f"| {row['line']} | {row['distance']:.2f} |" for row in report["furthest_from_golden"]
        ]
    lines += [
        "",
        f"| task | examples needed (you have {report['kept']:,}) | basis |",
        "|---|---|---|",
    ]
    lines += [f"| {task} | {needed} | {basis} |" for task, needed, basis in GUIDANCE]
    return "\n".join(lines)
