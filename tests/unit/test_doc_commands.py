"""Every `raypipe` and `python -m bench` command the README and docs show names a real
subcommand, real flags, config keys that exist (`--set key=value`), a recipe that ships and
bench cases that exist, including the commands with placeholder paths (CONFIG.yaml,
s3://bucket/...) that no test can run as written."""

from __future__ import annotations

import re
import shlex
import types
import typing
from pathlib import Path

import pytest
import typer
from pydantic import BaseModel

from raypipe.cli import app
from raypipe.config import PipelineConfig
from raypipe.recipes import names as recipe_names

ROOT = Path(__file__).parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "examples/README.md"]
FENCE = re.compile(r"```[a-z]*\n(.*?)```", re.S)
INLINE = re.compile(r"`((?:raypipe|python -m bench) [^`]+)`")
CASES = {p.stem for p in (ROOT / "bench" / "cases").glob("*.py")} - {"__init__"}
PLACEHOLDERS = {"key", "NAME", "..."}  # of usage lines: `--set key=value ...`, `--only NAME`


def commands() -> list[tuple[str, str]]:
    """(document, command) for each command line shown, continuation lines joined."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        lines = [m.group(1) for m in INLINE.finditer(text)]
        for block in FENCE.findall(text):
            lines += block.replace("\\\n", " ").splitlines()
        for line in lines:
            for part in re.split(r"&&|;|\|\s", line):
                part = re.sub(r"^\s*(\.venv/bin/)?", "", part.split(" #")[0]).strip()
                if part.startswith(("raypipe ", "python -m bench ")):
                    found.append((doc.name, part))
    return found


def is_key(key: str, model: type[BaseModel] = PipelineConfig) -> bool:
    """Whether `key` (a.b.c) names an option of the config model (free below a dict)."""
    head, _, rest = key.partition(".")
    field = model.model_fields.get(head)
    if field is None:
        return False
    if not rest:
        return True
    annotation = field.annotation
    inner = [annotation]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = list(typing.get_args(annotation))
    for candidate in inner:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return is_key(rest, candidate)
    return True  # a dict or list option: its own keys are the user's


def check(command: str) -> list[str]:
    words = [w.strip("[]") for w in shlex.split(command)]
    if words[:3] == ["python", "-m", "bench"]:
        named = words[words.index("--only") + 1 :] if "--only" in words else []
        named = [n for n in named if not n.startswith("-") and n not in PLACEHOLDERS]
        return [f"no bench case {n}" for n in named if n not in CASES]
    group = typer.main.get_command(app)  # typer's own click: groups have `commands`
    words = words[1:]
    while hasattr(group, "commands") and words and words[0] in group.commands:
        group, words = group.commands[words[0]], words[1:]
    if hasattr(group, "commands"):  # a group named alone (`raypipe sft`) is a mention
        return [f"no subcommand {words[0]}"] if words else []
    flags = {opt for param in group.params for opt in (*param.opts, *param.secondary_opts)}
    problems = []
    for i, word in enumerate(words):
        flag, _, value = word.partition("=")
        if not word.startswith("-") or word in ("-", "..."):
            continue
        if flag not in flags:
            problems.append(f"{group.name} has no flag {flag}")
            continue
        value = value or (words[i + 1] if i + 1 < len(words) else "")
        key = value.partition("=")[0]
        if flag in ("--set", "-s") and key not in PLACEHOLDERS and not is_key(key):
            problems.append(f"no config key {key}")
        if flag == "--recipe" and value not in {*recipe_names(), "none", "NAME"}:
            problems.append(f"no recipe {value}")
    return problems


def test_the_docs_show_commands():
    shown = commands()
    assert len(shown) > 40
    assert {c.split()[1] for _, c in shown} >= {"run", "locate", "remove", "train-classifier"}


@pytest.mark.parametrize(("doc", "command"), commands())
def test_a_command_in_the_docs_names_real_commands_flags_and_keys(doc, command):
    assert check(command) == [], f"{doc}: {command}"


def test_the_checker_finds_a_stale_command():
    assert check("raypipe run job.yaml --set pack.seq_length=4096") == [
        "no config key pack.seq_length"
    ]
    assert check("raypipe locate OUT --url X") == ["locate has no flag --url"]
    assert check("raypipe run job.yaml --recipe finweb") == ["no recipe finweb"]
    assert check("python -m bench run --only tokenise") == ["no bench case tokenise"]
