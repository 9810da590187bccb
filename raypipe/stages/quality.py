"""Quality filters: documents that are not prose a model should learn from.

Rules run in the order of FineWeb's recipe: heuristic, gopher_repetition, gopher_quality,
c4, fineweb, then the model-based perplexity and classifier; the first rule a document
fails names its reason. c4 also removes the lines that are not sentences, and the rules
after it see the cleaned page. Every document that reaches a model-based rule gets its
score: `bits_per_byte` (perplexity), `quality_score` (the classifier's P(keep)).
Each rule is a `Filter` (raypipe.stages.filter); this file only binds them to their config.
"""

from __future__ import annotations

from collections.abc import Sequence

from raypipe.config import (
    C4Config,
    ClassifierConfig,
    FineWebConfig,
    GopherQualityConfig,
    GopherRepetitionConfig,
    HeuristicConfig,
    PerplexityConfig,
    QualityConfig,
)
from raypipe.quality.c4 import clean_page
from raypipe.quality.classifier import QualityModel
from raypipe.quality.fineweb import fineweb_reason
from raypipe.quality.gopher import quality_reason, repetition_reason
from raypipe.quality.heuristic import heuristic_reasons
from raypipe.quality.perplexity import ByteLM
from raypipe.quality.words import splitter
from raypipe.stages.filter import Docs, Filter, FilterStage


class Heuristic(Filter):
    name = "heuristic"

    def __init__(self, cfg: HeuristicConfig):
        self.cfg, self.languages = cfg, cfg.languages

    def reasons(self, docs: Docs) -> Sequence[str | None]:
        return heuristic_reasons(docs.texts, self.cfg)


class GopherRepetition(Filter):
    name = "gopher_repetition"

    def __init__(self, cfg: GopherRepetitionConfig):
        self.cfg, self.languages = cfg, cfg.languages

    def reasons(self, docs: Docs) -> Sequence[str | None]:
        return [repetition_reason(t, docs.words(i), self.cfg) for i, t in enumerate(docs.texts)]


class GopherQuality(Filter):
    name = "gopher_quality"

    def __init__(self, cfg: GopherQualityConfig):
        self.cfg, self.languages = cfg, cfg.languages

    def reasons(self, docs: Docs) -> Sequence[str | None]:
        return [quality_reason(t, docs.words(i), self.cfg) for i, t in enumerate(docs.texts)]


class C4(Filter):
    name = "c4"

    def __init__(self, cfg: C4Config):
        self.cfg, self.languages = cfg, cfg.languages

    def setup(self) -> None:
        self.split = splitter()  # spaCy's tokenizer rules, loaded once per worker

    def reasons(self, docs: Docs) -> Sequence[str | None]:
        reasons = []
        for i, text in enumerate(docs.texts):
            reason, cleaned = clean_page(text, self.split, self.cfg)
            docs.correct(i, cleaned)
            reasons.append(reason)
        return reasons


class FineWeb(Filter):
    name = "fineweb"

    def __init__(self, cfg: FineWebConfig):
        self.cfg, self.languages = cfg, cfg.languages

    def reasons(self, docs: Docs) -> Sequence[str | None]:
        return [fineweb_reason(t, docs.words(i), self.cfg) for i, t in enumerate(docs.texts)]


class Perplexity(Filter):
    name = "perplexity"
    scores = ("bits_per_byte",)

    def __init__(self, cfg: PerplexityConfig):
        self.cfg = cfg

    def setup(self) -> None:
        self.lm = ByteLM.load(self.cfg.model)

    def reasons(self, docs: Docs) -> Sequence[str | None]:
        reasons = []
        for i, text in enumerate(docs.texts):
            score = self.lm.bits_per_byte(text)
            docs.score("bits_per_byte", i, score)
            too_high = score is not None and score > self.cfg.max_bits_per_byte
            # with drop_worst, the share is cut over the whole run after dedup (raypipe.cut)
            rejected = self.cfg.drop_worst is None and too_high
            reasons.append("perplexity:bits_per_byte" if rejected else None)
        return reasons


class Classifier(Filter):
    name = "classifier"
    scores = ("quality_score",)

    def __init__(self, cfg: ClassifierConfig):
        self.cfg = cfg

    def setup(self) -> None:
        self.model = QualityModel(self.cfg.model)

    def reasons(self, docs: Docs) -> Sequence[str | None]:
        scores = self.model.score(docs.texts)
        for i, score in enumerate(scores.tolist()):
            docs.score("quality_score", i, score)
        if self.cfg.drop_worst is not None:  # cut over the whole run after dedup (raypipe.cut)
            return [None] * len(docs)
        return ["classifier:quality_score" if s < self.cfg.min_score else None for s in scores]


RULES: list[tuple[str, type[Filter]]] = [
    ("heuristic", Heuristic),
    ("gopher_repetition", GopherRepetition),
    ("gopher_quality", GopherQuality),
    ("c4", C4),
    ("fineweb", FineWeb),
    ("perplexity", Perplexity),
    ("classifier", Classifier),
]


def Quality(cfg: QualityConfig) -> FilterStage:  # noqa: N802 (a stage, built like one)
    """The enabled quality rules as one stage named `quality`."""
    sections = [(getattr(cfg, field), rule) for field, rule in RULES]
    return FilterStage("quality", [rule(section) for section, rule in sections if section.enabled])
