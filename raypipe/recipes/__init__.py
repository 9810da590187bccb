"""Named recipes: the options a published pipeline fixes, each value with its source.

A recipe is a YAML file beside this module: a title, the references it cites, the settings
(`dotted.key: {value: ..., cite: reference}`) and the notes that list where raypipe cannot or
deliberately does not do what the original did. A config naming a recipe starts from its
settings; the config's own keys and `--set` win over them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml


@dataclass(frozen=True)
class Setting:
    value: Any
    cite: str  # a key of the recipe's references


@dataclass(frozen=True)
class Recipe:
    name: str
    title: str
    references: dict[str, str]
    settings: dict[str, Setting]
    notes: list[str]

    def as_config(self) -> dict:
        """The settings as a nested config mapping."""
        tree: dict = {}
        for key, setting in self.settings.items():
            *sections, leaf = key.split(".")
            node = tree
            for section in sections:
                node = node.setdefault(section, {})
            node[leaf] = setting.value
        return tree


def names() -> list[str]:
    return sorted(
        entry.name.removesuffix(".yaml")
        for entry in resources.files(__name__).iterdir()
        if entry.name.endswith(".yaml")
    )


@cache
def load(name: str) -> Recipe:
    """The recipe called `name`; ValueError naming the known ones if there is none."""
    if name not in names():
        raise ValueError(f"unknown recipe {name!r}; recipes: {', '.join(names())}")
    data = yaml.safe_load(resources.files(__name__).joinpath(f"{name}.yaml").read_text("utf-8"))
    references = data["references"]
    settings = {}
    for key, entry in data["settings"].items():
        if entry["cite"] not in references:
            raise ValueError(f"recipe {name}: {key} cites unknown reference {entry['cite']!r}")
        settings[key] = Setting(entry["value"], entry["cite"])
    return Recipe(name, data["title"], references, settings, data.get("notes", []))


def merged(base: dict, over: dict) -> dict:
    """`base` with `over` laid on top, section by section (a value of `over` replaces)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out
