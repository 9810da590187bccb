"""A filter of your own, in one file: drop pages that are mostly table rows.

Used from a config without editing raypipe (see examples/custom_filter.yaml):

    stages:
      - use: examples.filters.no_tables:NoTables
        after: quality
        options: {max_table_line_ratio: 0.5}
"""

from __future__ import annotations

from raypipe.stages.filter import Docs, Filter


class NoTables(Filter):
    name = "no_tables"
    counters = ("table_lines",)  # the manifest's counters.no_tables.table_lines

    def __init__(self, max_table_line_ratio: float = 0.5, languages: list[str] | None = None):
        self.max_ratio = max_table_line_ratio
        self.languages = languages or []

    def reasons(self, docs: Docs) -> list[str | None]:
        return [self._reason(docs, i, text) for i, text in enumerate(docs.texts)]

    def _reason(self, docs: Docs, i: int, text: str) -> str | None:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        rows = sum(line.startswith("|") or line.count("\t") >= 2 for line in lines)
        docs.count("table_lines", i, rows)
        return "no_tables:table_lines" if lines and rows / len(lines) > self.max_ratio else None
