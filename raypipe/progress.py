"""Live progress of a phase: documents, megabytes, rate, ETA and rejects so far.

Workers add what they just did to one small named actor (`add`); the driver polls it
and shows one line, redrawn on a terminal or in Jupyter, printed once a minute in a job's
log. Progress is for people watching: the run's accounting never reads it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import ray
from rich.console import Console
from rich.live import Live
from rich.text import Text

NAME = "raypipe_progress"
REDRAW_SECONDS = 0.5
LOG_SECONDS = 60.0  # in a job's log, a phase prints one progress line a minute
_LOOKUP_SECONDS = 10.0  # a worker with no meter to report to looks again after this

_meter: ray.actor.ActorHandle | None = None
_looked = -_LOOKUP_SECONDS


@ray.remote(num_cpus=0)
class _Meter:
    def __init__(self) -> None:
        self.amounts: Counter[str] = Counter()

    def add(self, amounts: dict[str, float]) -> None:
        self.amounts.update(amounts)

    def take(self) -> dict[str, float]:
        return dict(self.amounts)

    def reset(self) -> None:
        self.amounts.clear()


def add(**amounts: float) -> None:
    """From a worker: count `documents`, `bytes`, `rejected` or `shards` it just did; a
    process with no run to report to does nothing. Awaited (a millisecond per batch), so
    a phase's last line counts all of its work."""
    global _meter, _looked
    if not ray.is_initialized() or not any(amounts.values()):
        return
    if _meter is None and time.monotonic() - _looked > _LOOKUP_SECONDS:
        _looked = time.monotonic()
        try:
            _meter = ray.get_actor(NAME)
        except ValueError:
            return
    if _meter is None:
        return
    try:
        ray.get(_meter.add.remote(amounts))
    except ray.exceptions.RayError:  # the meter of an earlier session: look again later
        _meter = None


def _owned_meter() -> ray.actor.ActorHandle:
    """The driver's meter, emptied. The handle that created it is held for the driver's
    life: once it goes, Ray collects the actor, whatever other handles the workers hold."""
    global _meter
    try:
        ray.get(_meter.reset.remote())  # type: ignore[union-attr]
    except (AttributeError, ray.exceptions.RayError):  # none yet, or an ended session's
        _meter = _Meter.options(name=NAME).remote()
    return _meter


@dataclass(frozen=True)
class Goal:
    """What a phase works through, when known before it starts: `amount` of `unit`
    (`bytes`, `documents` or `shards`) gives the ETA."""

    unit: str
    amount: float


def line(title: str, amounts: dict[str, float], seconds: float, goal: Goal | None) -> str:
    """`read and clean: 12,345 documents, 45.1/120.0 MB, 2,310 docs/s, 1,020 rejected,
    ETA 0:32`: only what the phase has counted."""
    docs = amounts.get("documents", 0)
    parts = [f"{docs:,.0f} documents"] if docs else []
    if megabytes := amounts.get("bytes", 0) / 1e6:
        of = f"/{goal.amount / 1e6:,.1f}" if goal and goal.unit == "bytes" else ""
        parts.append(f"{megabytes:,.1f}{of} MB")
    if shards := amounts.get("shards", 0):
        of = f"/{goal.amount:,.0f}" if goal and goal.unit == "shards" else ""
        parts.append(f"{shards:,.0f}{of} shards")
    if docs and seconds > 0:
        parts.append(f"{docs / seconds:,.0f} docs/s")
    if rejected := amounts.get("rejected", 0):
        parts.append(f"{rejected:,.0f} rejected")
    done = amounts.get(goal.unit, 0) if goal else 0
    if goal and 0 < done < goal.amount:
        left = round(seconds * (goal.amount - done) / done)
        parts.append(f"ETA {left // 60}:{left % 60:02d}")
    return f"{title}: " + (", ".join(parts) or f"{seconds:.0f} s")


@contextmanager
def watching(title: str, goal: Goal | None, log: Callable[[str], None]) -> Iterator[None]:
    """Show the live progress of the work inside the block."""
    meter = _owned_meter()
    console = Console(stderr=True)  # where the CLI logs its phases
    live = console.is_terminal or console.is_jupyter
    started, stop = time.monotonic(), threading.Event()

    def current() -> str:
        amounts = ray.get(meter.take.remote())
        return line(title, amounts, time.monotonic() - started, goal)

    def poll() -> None:
        with suppress(ray.exceptions.RayError):  # the run is ending: its own error says why
            show()

    def show() -> None:
        if live:
            with Live(Text(""), console=console, transient=True) as view:
                while not stop.wait(REDRAW_SECONDS):
                    view.update(Text(current(), style="dim"))
        else:
            while not stop.wait(LOG_SECONDS):
                log(current())

    poller = threading.Thread(target=poll, name="raypipe-progress", daemon=True)
    poller.start()
    try:
        yield
    finally:
        stop.set()
        poller.join()
    log(current())
