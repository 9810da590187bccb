"""Conversion between instruction and chat records. Other keys are carried over; a system
prompt travels as the instruction record's `system` key, so a round trip loses nothing."""

from __future__ import annotations

from typing import Any


class ConversionError(ValueError):
    """A record that has no equivalent in the target format."""


def instruction_to_chat(record: dict[str, Any]) -> dict[str, Any]:
    rest = {
        k: v for k, v in record.items() if k not in ("system", "instruction", "input", "output")
    }
    prompt = record["instruction"]
    if record.get("input"):
        prompt = f"{prompt}\n\n{record['input']}"
    turns = [{"role": "system", "content": record["system"]}] if record.get("system") else []
    turns += [
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": record["output"]},
    ]
    return {**rest, "conversations": turns}


def chat_to_instruction(record: dict[str, Any]) -> dict[str, Any]:
    turns = record["conversations"]
    system = [t["content"] for t in turns if t["role"] == "system"]
    dialogue = [t for t in turns if t["role"] != "system"]
    if len(dialogue) != 2:
        raise ConversionError(
            f"a chat of {len(dialogue) // 2} exchanges has no instruction form (only one user "
            "turn and one assistant turn convert)"
        )
    rest = {k: v for k, v in record.items() if k != "conversations"}
    head = {"system": system[0]} if system else {}
    return {**rest, **head, "instruction": dialogue[0]["content"], "output": dialogue[1]["content"]}
