"""Quality rules on schema-valid examples. Each rule is named (its name starts the reject
reason), switched and tuned in `rules.*` of the config, and returns (reason, message) or None."""

from __future__ import annotations

import re
from collections.abc import Callable

from raypipe.sft.config import RulesConfig
from raypipe.sft.schema import Example, Problem

# CJK ideographs and kana count one word each: those scripts do not separate words.
_WORD = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]|[^\s\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]+"
)
FENCE = re.compile(r"^ {0,3}(?:```|~~~)", re.M)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# UTF-8 read as Latin-1/Windows-1252: é -> Ã©, ’ -> â€™, a no-break space -> Â.
_MOJIBAKE = re.compile(r"[ÃÂ][\u0080-\u00bf]|â€")
_OPENING_MARKS = " \t\n\"'*_>#“«„"


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def _fold(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u02bc", "'").casefold()


class Rules:
    """Every enabled rule, compiled once; call it on an example for its (reason, message)s."""

    def __init__(self, cfg: RulesConfig):
        self.cfg = cfg
        self.refusals = tuple(_fold(prefix) for prefix in cfg.refusal.prefixes)
        try:
            self.placeholders = [re.compile(p) for p in cfg.placeholder.patterns]
        except re.error as error:
            raise ValueError(f"rules.placeholder.patterns: {error.pattern!r}: {error}") from None
        rules: list[tuple[bool, Callable[[Example], Problem | None]]] = [
            (cfg.empty_field.enabled, self.empty_field),
            (cfg.answer_words.enabled, self.answer_words),
            (cfg.code_fences.enabled, self.code_fences),
            (cfg.refusal.enabled, self.refusal),
            (cfg.encoding.enabled, self.encoding),
            (cfg.placeholder.enabled, self.placeholder),
        ]
        self.active = [rule for enabled, rule in rules if enabled]

    def __call__(self, example: Example) -> list[Problem]:
        return [problem for rule in self.active if (problem := rule(example))]

    def empty_field(self, example: Example) -> Problem | None:
        blank = [name for name in example.required if not example.fields.get(name, "").strip()]
        return ("empty_field", f"empty field(s): {', '.join(blank)}") if blank else None

    def answer_words(self, example: Example) -> Problem | None:
        bounds = self.cfg.answer_words
        for answer in example.answers:
            words = word_count(answer)
            if words < bounds.min:
                return (
                    "answer_words:too_short",
                    f"answer has {words} word(s), fewer than {bounds.min}",
                )
            if words > bounds.max:
                return (
                    "answer_words:too_long",
                    f"answer has {words:,} words, more than {bounds.max:,}",
                )
        return None

    def code_fences(self, example: Example) -> Problem | None:
        for name, text in example.fields.items():
            fences = len(FENCE.findall(text))
            if fences % 2:
                return (
                    "code_fences",
                    f"{name} has {fences} code fence lines (a block is not closed)",
                )
        return None

    def refusal(self, example: Example) -> Problem | None:
        for answer in example.answers:
            opening = _fold(answer.lstrip(_OPENING_MARKS))
            for prefix, shown in zip(self.refusals, self.cfg.refusal.prefixes, strict=True):
                if opening.startswith(prefix):
                    return ("refusal", f"answer starts with a refusal ({shown!r})")
        return None

    def encoding(self, example: Example) -> Problem | None:
        for name, text in example.fields.items():
            if "\ufffd" in text:
                return ("encoding", f"{name} has U+FFFD (bytes that were not valid UTF-8)")
            if found := _MOJIBAKE.search(text):
                return (
                    "encoding",
                    f"{name} has mojibake {found.group()!r} (UTF-8 read as Latin-1)",
                )
            if found := _CONTROL.search(text):
                return ("encoding", f"{name} has control character U+{ord(found.group()):04X}")
        return None

    def placeholder(self, example: Example) -> Problem | None:
        for name, text in example.fields.items():
            for pattern in self.placeholders:
                if found := pattern.search(text):
                    return ("placeholder", f"{name} has template leftover {found.group()!r}")
        return None
