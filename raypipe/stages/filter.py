"""The filter contract: a named rule that gives each document a reason to drop it, or None.

A filter is one small class:

    class NoPipes(Filter):
        name = "pipes"

        def reasons(self, docs: Docs) -> list[str | None]:
            return ["pipes:many" if t.count("|") > 20 else None for t in docs.texts]

It sees only the documents still alive and within its `languages`; `FilterStage` does the
bookkeeping once for every filter: which rows it sees, the reject with the stage's name
(raypipe.batch.reject), the texts a filter corrected, the score columns it wrote and the
counters it declares (summed into the manifest's `counters[name]`). Filters
of one stage run in order, and the first one a document fails names its reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import pyarrow as pa

from raypipe.batch import alive, counter_column, reject, scatter, set_column


class Alive:
    """The alive documents of one batch as every filter of a stage shares them: their texts
    (as corrected so far), their languages and the words of each, split once."""

    def __init__(self, batch: pa.Table):
        self.batch = batch
        self.rows = np.flatnonzero(alive(batch))
        take = pa.array(self.rows)
        self.texts: list[str] = batch["text"].take(take).to_pylist() if len(self.rows) else []
        self.languages: list[str | None] = (
            batch["language"].take(take).to_pylist()
            if "language" in batch.column_names
            else [None] * len(self.rows)
        )
        self.words: list[list[str] | None] = [None] * len(self.rows)
        self.changed: set[int] = set()
        self.scores: dict[str, np.ndarray] = {}
        self.counts: dict[str, np.ndarray] = {}  # by counter column


class Docs:
    """What a filter sees: the alive documents within its scope, in batch order."""

    def __init__(self, alive_docs: Alive, index: np.ndarray, name: str = ""):
        self._alive, self._index, self._name = alive_docs, index, name
        self.texts = [alive_docs.texts[i] for i in index.tolist()]
        self.languages = [alive_docs.languages[i] for i in index.tolist()]

    def __len__(self) -> int:
        return len(self.texts)

    def column(self, name: str) -> list:
        """Another column of these documents (e.g. `url`, `source`, `language_score`)."""
        rows = pa.array(self._alive.rows[self._index])
        return self._alive.batch[name].take(rows).to_pylist()

    def words(self, i: int) -> list[str]:
        """The words of document `i` as the published rules count them (split once per
        document and stage, whatever the number of filters asking)."""
        at = int(self._index[i])
        words = self._alive.words[at]
        if words is None:
            from raypipe.quality.words import splitter

            words = self._alive.words[at] = splitter()(self.texts[i])
        return words

    def correct(self, i: int, text: str) -> None:
        """Replace document `i`'s text (a line-level correction); later filters see it."""
        if text != self.texts[i]:
            at = int(self._index[i])
            self.texts[i] = self._alive.texts[at] = text
            self._alive.words[at] = None
            self._alive.changed.add(at)

    def score(self, column: str, i: int, value: float | None) -> None:
        """Record a score of document `i` in a column the filter declares in `scores`."""
        self._alive.scores[column][int(self._index[i])] = np.nan if value is None else value

    def count(self, counter: str, i: int, n: int = 1) -> None:
        """Add `n` to a counter the filter declares in `counters`, for document `i`."""
        self._alive.counts[counter_column(self._name, counter)][int(self._index[i])] += n


class Filter:
    """Subclass it, set `name`, implement `reasons`. `languages` (empty = all) scopes it to
    documents whose `language` column is listed; documents without a language see every
    filter. `setup` loads what the filter needs once per worker (a model, a word list)."""

    name: ClassVar[str] = ""
    languages: Sequence[str] = ()
    scores: ClassVar[tuple[str, ...]] = ()  # float columns `Docs.score` fills (null elsewhere)
    counters: ClassVar[tuple[str, ...]] = ()  # what `Docs.count` counts, summed per run

    def setup(self) -> None:
        """Load models or lists; called once on the worker before the first batch."""

    def reasons(self, docs: Docs) -> Sequence[str | None]:
        """One entry per document: the reason to drop it, or None to keep it."""
        raise NotImplementedError

    def applies(self, language: str | None) -> bool:
        return language is None or not self.languages or language in self.languages


class FilterStage:
    """A stage made of filters: rejects under the stage's `name`, one reason per document."""

    def __init__(self, name: str, filters: Sequence[Filter]):
        self.name, self.filters = name, list(filters)
        for rule in self.filters:
            rule.setup()

    def __call__(self, batch: pa.Table) -> pa.Table:
        if not self.filters:
            return batch
        docs = Alive(batch)
        verdict = np.full(len(docs.rows), None, dtype=object)
        for rule in self.filters:
            for column in rule.scores:  # every batch has the column, scored or not
                docs.scores.setdefault(column, np.full(len(docs.rows), np.nan))
            for counter in rule.counters:
                column = counter_column(rule.name, counter)
                docs.counts.setdefault(column, np.zeros(len(docs.rows), np.int64))
            index = np.array(
                [
                    i
                    for i, language in enumerate(docs.languages)
                    if verdict[i] is None and rule.applies(language)
                ],
                dtype=np.int64,
            )
            if len(index):
                found = rule.reasons(Docs(docs, index, rule.name))
                verdict[index] = np.asarray(list(found), dtype=object)
        for column, values in docs.scores.items():
            full = np.full(batch.num_rows, np.nan)
            full[docs.rows] = values
            batch = set_column(batch, column, pa.array(full, from_pandas=True))
        for column, values in docs.counts.items():
            full = np.zeros(batch.num_rows, np.int64)
            full[docs.rows] = values
            batch = set_column(batch, column, pa.array(full))
        if docs.changed:
            changed = sorted(docs.changed)
            texts = [docs.texts[i] for i in changed]
            batch = set_column(batch, "text", scatter(batch, docs.rows[changed], texts, "text"))
        reasons = np.full(batch.num_rows, None, dtype=object)
        reasons[docs.rows] = verdict
        return reject(batch, np.ones(batch.num_rows, bool), self.name, reasons)
