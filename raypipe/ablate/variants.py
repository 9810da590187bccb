"""Ablation variants: the config as given, with what each variant turns off.

`raw` keeps extraction and normalization (a model cannot read HTML) and turns off every
stage that rejects documents; `no-X` turns off stage X alone, so the gap between `recipe`
and `no-X` is what X contributes.
"""

from __future__ import annotations

REJECTING = {
    "langid": ["langid.enabled=false"],
    "content": [
        "content.blocked_domains=[]",
        "content.blocked_url_substrings=[]",
        "content.opt_out=[]",
        "content.bad_words.enabled=false",
    ],
    "quality": ["quality.enabled=false"],
    "dedup": ["dedup.exact.enabled=false", "dedup.near.enabled=false"],
    "stages": ["stages=[]"],
}
VARIANTS: dict[str, list[str]] = {
    "recipe": [],
    "raw": [override for overrides in REJECTING.values() for override in overrides],
    **{f"no-{stage}": overrides for stage, overrides in REJECTING.items()},
    "no-near": ["dedup.near.enabled=false"],
    "no-heuristic": ["quality.heuristic.enabled=false"],
    "no-gopher": [
        "quality.gopher_quality.enabled=false",
        "quality.gopher_repetition.enabled=false",
    ],
    "no-c4": ["quality.c4.enabled=false"],
    "no-fineweb": ["quality.fineweb.enabled=false"],
    "no-pii": ["pii.enabled=false"],
}
DEFAULT = ["raw", "recipe", "no-quality", "no-dedup"]
