"""From JSONL lines to verdicts: schema, then rules, then deduplication among the examples
that passed both. Every non-blank line gets exactly one verdict: kept, or rejected with its
first reason (all problems are listed for `check`)."""

from __future__ import annotations

from collections.abc import Iterable
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


def judge(lines: Iterable[tuple[int, str]], cfg: SftConfig) -> list[Verdict]:
    """A verdict for every (line number, text), in input order."""
    rules = Rules(cfg.rules)
    verdicts = []
    for line, text in lines:
        verdict = Verdict(line, text)
        record, problem = parse(text)
        if problem:
            verdict.problems.append(problem)
        elif problems := schema_problems(record, cfg.format):
            verdict.problems.extend(problems)
        else:
            verdict.example = example(line, record, cfg.format)
            verdict.problems.extend(rules(verdict.example))
        verdicts.append(verdict)
    mark_duplicates([v for v in verdicts if not v.problems], cfg)
    return verdicts


def mark_duplicates(candidates: list[Verdict], cfg: SftConfig) -> None:
    """Reject every non-keeper: exact first, then near, then semantic among the survivors."""
    steps = []
    if cfg.dedup.exact.enabled:
        steps.append(("duplicate:exact", dedup.exact_pairs))
    if cfg.dedup.near.enabled:
        near = cfg.dedup.near

        def near_step(texts: list[str]) -> np.ndarray:
            sigs = dedup.signatures(texts, near.num_perm, near.shingle_words)
            return dedup.near_pairs(sigs, near.threshold)

        steps.append(("duplicate:near", near_step))
    if cfg.dedup.semantic.enabled:
        from raypipe.sft.semantic import Embedder

        semantic = cfg.dedup.semantic
        embedder = Embedder(semantic.model, semantic.batch_size)

        def semantic_step(texts: list[str]) -> np.ndarray:
            vectors = embedder(texts)
            return dedup.semantic_pairs(vectors, semantic.threshold, semantic.nprobe)

        steps.append(("duplicate:semantic", semantic_step))
    for reason, find_pairs in steps:
        alive = [v for v in candidates if not v.problems]
        if len(alive) < 2:
            return
        pairs = find_pairs([v.example.text for v in alive])
        roots = dedup.keepers(len(alive), pairs)
        for verdict, root in zip(alive, roots.tolist(), strict=True):
            if alive[root] is not verdict:
                verdict.duplicate_of = alive[root].line
                verdict.problems.append((reason, f"duplicate of line {verdict.duplicate_of}"))
