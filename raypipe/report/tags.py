"""Documents and tokens per licence and consent tag.

Tags belong to inputs (input.license, input.consent, or per source), so the counts per
tag are sums of the per-source counts: exact, and nothing more to carry through a run.
"""

from __future__ import annotations

from raypipe.io.readers import TAG_FIELDS
from raypipe.mix import Source

UNTAGGED = "unspecified"
COUNTS = ("documents_in", "documents_cleaned", "documents_out", "tokens_out")


def tag_counts(sources: dict[str, dict], mixture: list[Source]) -> dict[str, dict]:
    """{"license": {tag: counts}, "consent": {tag: counts}} from the per-source rows."""
    inputs = {source.name: source.input for source in mixture}
    tags: dict[str, dict] = {field: {} for field in TAG_FIELDS}
    for name, row in sources.items():
        # One unnamed input names its sources per file; they all share its tags.
        tagged = inputs[name] if name in inputs else inputs[None]
        for field in TAG_FIELDS:
            entry = tags[field].setdefault(getattr(tagged, field) or UNTAGGED, {})
            for key in COUNTS:
                if key in row:
                    entry[key] = entry.get(key, 0) + row[key]
    return tags
