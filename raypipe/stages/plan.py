"""The document stages of a run as a plan the driver can read without building them.

Each planned stage knows its name, how to build itself (on the worker: models load there)
and the resources it asks for. User stages from the config's `stages:` are imported by
`module:Class` and placed after the built-in stage they name; a stage that declares
resources runs in an actor pool of its own (`pools`), the others share one.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from raypipe.config import ConfigError, Resources, UserStage
from raypipe.stages import Stage
from raypipe.stages.filter import Filter, FilterStage

BUILT_IN = ("extract", "normalize", "langid", "content", "quality", "pii")


@dataclass(frozen=True)
class Planned:
    name: str
    build: Callable[[], Stage]
    resources: Resources | None = None
    user: bool = False
    counters: tuple[tuple[str, str], ...] = ()  # (stage, counter): summed into the manifest


def user_class(use: str) -> type:
    """The class a `use: module:Class` names, or a ConfigError that says what is wrong."""
    module, _, name = use.partition(":")
    if os.getcwd() not in sys.path:
        # Modules of the project the run starts in, as `python -m` finds them; Ray hands
        # the driver's path to its workers when it starts, so this runs before Ray does.
        sys.path.insert(0, os.getcwd())
    try:
        found = getattr(importlib.import_module(module), name)
    except ImportError as error:
        raise ConfigError(f"stages: cannot import {module!r} for {use!r}: {error}") from None
    except AttributeError:
        raise ConfigError(f"stages: {module!r} has no {name!r}") from None
    if not isinstance(found, type):
        raise ConfigError(f"stages: {use!r} is not a class")
    return found


def build_user_stage(spec: UserStage) -> Stage:
    cls = user_class(spec.use)
    try:
        made = cls(**spec.options)
    except TypeError as error:
        raise ConfigError(f"stages: {spec.use} does not take these options: {error}") from None
    if isinstance(made, Filter):
        if not made.name:
            raise ConfigError(f"stages: {spec.use} needs a `name` (its reasons' stage)")
        return FilterStage(made.name, [made])
    if not callable(made) or not getattr(made, "name", ""):
        raise ConfigError(
            f"stages: {spec.use} is neither a raypipe Filter nor a stage (a `name` and a "
            "__call__ taking and returning a document batch)"
        )
    return made


KEYS = ("dedup_keys", "signatures")  # what dedup needs from phase 1, last in every plan


def with_user_stages(plan: list[Planned], specs: Sequence[UserStage]) -> list[Planned]:
    """`plan` with each user stage after its `after` stage (or where that one would be)."""
    plan = list(plan)
    for spec in specs:
        cls = user_class(spec.use)  # a wrong path fails on the driver, before any work
        rank = BUILT_IN.index(spec.after)
        at = max((i for i, p in enumerate(plan) if p.name in BUILT_IN[: rank + 1]), default=-1)
        while at + 1 < len(plan) and plan[at + 1].user:
            at += 1  # several stages after the same one keep their config order
        declared = tuple((cls.name, counter) for counter in getattr(cls, "counters", ()))
        build = partial(build_user_stage, spec)
        user = Planned(spec.use, build, spec.resources, user=True, counters=declared)
        plan.insert(at + 1, user)
    return plan


def pool_of(plan: list[Planned]) -> list[int]:
    """The actor pool of each stage: a stage with resources has a pool of its own (odd
    numbers), the stages between two such share one (even numbers). The key stages at the
    end are cheap hashing and ride in the last pool rather than holding a pool of their own.
    Sources of a mixture have the same user stages, so their pools line up."""
    pools, alone = [], 0
    for planned in plan:
        if pools and planned.name in KEYS:
            pools.append(pools[-1])
            continue
        pools.append(2 * alone + (planned.resources is not None))
        alone += planned.resources is not None
    return pools


def pools(plans: Sequence[list[Planned]]) -> list[tuple[int, Resources | None]]:
    """The pools the sources' plans need, in order, with what each pool's actors reserve."""
    needed: dict[int, Resources | None] = {}
    for plan in plans:
        for planned, pool in zip(plan, pool_of(plan), strict=True):
            needed.setdefault(pool, planned.resources)  # a pool is named by its first stage
    return sorted(needed.items(), key=lambda item: item[0])
