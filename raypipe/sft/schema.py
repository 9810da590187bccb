"""The three record shapes and what the rules look at in each.

instruction: {"instruction", "input" (optional), "output"}
chat:        {"conversations": [{"role", "content"}, ...]}: an optional system turn first,
             then user and assistant alternating, starting with user, ending with assistant
preference:  {"prompt", "chosen", "rejected"}, chosen different from rejected

Other keys are carried through untouched. A schema problem is (reason, message); reasons
start with `schema:` and messages name the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raypipe.sft.config import Format

Problem = tuple[str, str]  # (reason, message)

ROLES = ("system", "user", "assistant")
REQUIRED = {
    "instruction": ("instruction", "output"),
    "preference": ("prompt", "chosen", "rejected"),
}


@dataclass(frozen=True)
class Example:
    """A schema-valid record seen as texts: what the user asks and what the model answers."""

    line: int
    record: dict[str, Any]
    fields: dict[str, str]  # every text field by its path, e.g. "conversations[2].content"
    required: tuple[str, ...]  # paths of fields that must not be blank
    prompts: list[str]
    answers: list[str]  # what the model is trained to write (preference: the chosen answer)

    @property
    def text(self) -> str:
        """All text fields in order: what deduplication compares."""
        return "\n".join(self.fields.values())


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number from 1, text) of every non-blank line; invalid UTF-8 becomes U+FFFD,
    which the encoding rule reports."""
    with open(path, "rb") as handle:
        yield from numbered(handle, 1)


def numbered(raw_lines: Iterable[bytes], first: int) -> Iterator[tuple[int, str]]:
    """(number, text) of the non-blank lines of `raw_lines`, the first numbered `first`."""
    for number, raw in enumerate(raw_lines, start=first):
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if text.strip():
            yield number, text


def parse(text: str) -> tuple[Any, Problem | None]:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        return None, ("schema:invalid_json", f"not valid JSON: {error.msg} (column {error.colno})")
    if not isinstance(record, dict):
        return None, ("schema:not_an_object", f"expected a JSON object, got {_kind(record)}")
    return record, None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )


def _strings(
    record: dict, names: tuple[str, ...], optional: tuple[str, ...] = (), where: str = ""
) -> list[Problem]:
    """Problems of the string fields `names` (required) and `optional` of `record`, whose
    path in the line starts with `where`."""
    problems = []
    for name in names + optional:
        if name not in record:
            if name not in optional:
                problems.append(("schema:missing_field", f"field '{where}{name}' is missing"))
        elif not isinstance(record[name], str):
            got = _kind(record[name])
            problems.append(
                ("schema:not_a_string", f"field '{where}{name}' must be a string, got {got}")
            )
    return problems


def _turn_problems(turns: list) -> list[Problem]:
    problems: list[Problem] = []
    roles = []
    for i, turn in enumerate(turns):
        where = f"conversations[{i}]"
        if not isinstance(turn, dict):
            problems.append(
                ("schema:not_an_object", f"{where} must be an object, got {_kind(turn)}")
            )
            continue
        problems.extend(_strings(turn, ("role", "content"), where=f"{where}."))
        role = turn.get("role")
        if isinstance(role, str) and role not in ROLES:
            problems.append(
                ("schema:unknown_role", f"{where}.role is '{role}', expected one of {list(ROLES)}")
            )
        roles.append(role)
    return problems or _order_problems(roles)


def _order_problems(roles: list[str]) -> list[Problem]:
    if any(role == "system" for role in roles[1:]):
        at = roles.index("system", 1)
        return [
            (
                "schema:system_not_first",
                f"conversations[{at}] is a system turn; only the first may be",
            )
        ]
    dialogue = roles[1:] if roles[:1] == ["system"] else roles
    if not dialogue:
        return [("schema:empty_conversation", "conversations has no user or assistant turn")]
    offset = len(roles) - len(dialogue)
    for i, role in enumerate(dialogue):
        expected = "user" if i % 2 == 0 else "assistant"
        if role != expected:
            return [
                (
                    "schema:not_alternating",
                    f"conversations[{i + offset}] is '{role}' where '{expected}' was expected "
                    "(user and assistant alternate, starting with user)",
                )
            ]
    if dialogue[-1] != "assistant":
        return [("schema:no_final_assistant", "the last turn must be 'assistant', got 'user'")]
    return []


def schema_problems(record: dict, fmt: Format) -> list[Problem]:
    """Everything wrong with the record's shape for `fmt` (empty when it is valid)."""
    if fmt == "instruction":
        return _strings(record, REQUIRED[fmt], optional=("input",))
    if fmt == "preference":
        problems = _strings(record, REQUIRED[fmt])
        if not problems and record["chosen"].strip() == record["rejected"].strip():
            problems.append(
                ("schema:chosen_equals_rejected", "'chosen' and 'rejected' are the same")
            )
        return problems
    turns = record.get("conversations")
    if turns is None:
        return [("schema:missing_field", "field 'conversations' is missing")]
    if not isinstance(turns, list):
        return [("schema:not_a_list", f"field 'conversations' must be a list, got {_kind(turns)}")]
    return _turn_problems(turns)


def example(line: int, record: dict, fmt: Format) -> Example:
    """The texts of a schema-valid record."""
    if fmt == "instruction":
        fields = {"instruction": record["instruction"]}
        if record.get("input"):
            fields["input"] = record["input"]
        fields["output"] = record["output"]
        return Example(
            line,
            record,
            fields,
            REQUIRED[fmt],
            prompts=[t for k, t in fields.items() if k != "output"],
            answers=[record["output"]],
        )
    if fmt == "preference":
        fields = {name: record[name] for name in REQUIRED[fmt]}
        return Example(line, record, fields, REQUIRED[fmt], [record["prompt"]], [record["chosen"]])
    turns = record["conversations"]
    fields = {f"conversations[{i}].content": turn["content"] for i, turn in enumerate(turns)}
    # A chat's answer is everything the assistant says in it: the model learns all of it.
    said = [turn["content"] for turn in turns if turn["role"] == "assistant"]
    return Example(
        line,
        record,
        fields,
        tuple(fields),
        prompts=[turn["content"] for turn in turns if turn["role"] == "user"],
        answers=["\n\n".join(said)],
    )
