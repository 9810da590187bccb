"""From JSONL lines to verdicts: schema, then rules, then deduplication among the examples
that passed both. Every non-blank line gets exactly one verdict: kept, or rejected with its
first reason (all problems are listed for `check`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from raypipe.sft import dedup
from raypipe.sft.config import SftConfig
from raypipe.sft.rules import Rules
from raypipe.sft.schema import Example, Problem, example, parse, schema_problems


@dataclass
class Verdict:
    line: int
    text: str  # the line as read
    example: Example | None = None  # set when the record is schema-valid
    problems: list[Problem] = field(default_factory=list)
    duplicate_of: int | None = None  # the keeper's line

    @property
    def reason(self) -> str | None:
        return self.problems[0][0] if self.problems else None

    @property
    def record(self) -> dict[str, Any] | None:
        return self.example.record if self.example else None


def reject_row(verdict: Verdict) -> dict[str, Any]:
    """A rejected line as written to the rejects file."""
    return {
        "line": verdict.line,
        "reason": verdict.reason,
        "problems": [{"reason": r, "message": m} for r, m in verdict.problems],
        "duplicate_of": verdict.duplicate_of,
        "text": verdict.text,
    }


def examine(line: int, text: str, cfg: SftConfig, rules: Rules) -> Verdict:
    """The verdict of one line on its own: schema and rules (no dedup)."""
    verdict = Verdict(line, text)
    record, problem = parse(text)
    if problem:
        verdict.problems.append(problem)
    elif problems := schema_problems(record, cfg.format):
        verdict.problems.extend(problems)
    else:
        verdict.example = example(line, record, cfg.format)
        verdict.problems.extend(rules(verdict.example))
    return verdict


def judge(lines: Iterable[tuple[int, str]], cfg: SftConfig) -> list[Verdict]:
    """A verdict for every (line number, text), in input order."""
    rules = Rules(cfg.rules)
    verdicts = [examine(line, text, cfg, rules) for line, text in lines]
    alive = [v for v in verdicts if not v.problems]
    texts = [v.example.text for v in alive]
    for reason, find_pairs in dedup_steps(cfg):
        mark(
            alive, reason, lambda rows, find_pairs=find_pairs: find_pairs([texts[i] for i in rows])
        )
    return verdicts


PairFinder = Callable[[list[str]], np.ndarray]


def dedup_steps(cfg: SftConfig) -> list[tuple[str, PairFinder]]:
    """(reason, texts -> (keeper, duplicate) pairs) of every enabled dedup, in order."""
    steps: list[tuple[str, PairFinder]] = []
    if cfg.dedup.exact.enabled:
        steps.append(("duplicate:exact", lambda texts: dedup.exact_pairs(dedup.exact_keys(texts))))
    if cfg.dedup.near.enabled:
        near = cfg.dedup.near
        steps.append(
            (
                "duplicate:near",
                lambda texts: dedup.near_pairs(
                    dedup.signatures(texts, near.num_perm, near.shingle_words), near.threshold
                ),
            )
        )
    if cfg.dedup.semantic.enabled:
        from raypipe.sft.semantic import Embedder

        semantic = cfg.dedup.semantic
        embedder = Embedder(semantic.model, semantic.batch_size)
        steps.append(
            (
                "duplicate:semantic",
                lambda texts: dedup.semantic_pairs(
                    embedder(texts), semantic.threshold, semantic.nprobe
                ),
            )
        )
    return steps


def mark(
    verdicts: list[Verdict], reason: str, find_pairs: Callable[[list[int]], np.ndarray]
) -> None:
    """Reject every non-keeper among the verdicts still alive; `find_pairs` gets the positions
    (in `verdicts`) of the alive ones and returns pairs of indices into that list."""
    rows = [i for i, v in enumerate(verdicts) if not v.problems]
    if len(rows) < 2:
        return
    roots = dedup.keepers(len(rows), find_pairs(rows))
    for row, root in zip(rows, roots.tolist(), strict=True):
        verdict, keeper = verdicts[row], verdicts[rows[root]]
        if keeper is not verdict:
            verdict.duplicate_of = keeper.line
            verdict.problems.append((reason, f"duplicate of line {keeper.line}"))
