"""Live progress of a phase: documents, megabytes, rate, ETA and rejects so far.

Workers add what they just did (`add`, sent on to one small named actor every half
second and at the end of each task: `flush`); the driver polls the actor
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

SEND_SECONDS = 0.5  # a worker sends its counts at most this often (and at a task's end)

_meter: ray.actor.ActorHandle | None = None
_looked = -_LOOKUP_SECONDS
_pending: Counter[str] = Counter()  # this process's counts not sent yet
_sent = [-SEND_SECONDS]  # when they were last sent
_cpu = [time.process_time()]  # this process's CPU time when it last sent


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
    """From a worker: count `documents`, `bytes`, `rejected` or `shards` it just did. The
    counts gather here and go to the meter at most every SEND_SECONDS, without waiting: a
    round trip per batch and stage cost a run of 30 s four seconds."""
    _pending.update({k: v for k, v in amounts.items() if v})
    if _pending and time.monotonic() - _sent[0] >= SEND_SECONDS:
        _send(wait=False)


def flush() -> None:
    """At the end of a task: send what is left, and wait for it, so that a phase's last
    line counts all of its work."""
    if _pending:
        _send(wait=True)


def done(**amounts: float) -> None:
    """`add` and `flush`: the work of a block that ends here."""
    add(**amounts)
    flush()


def _send(wait: bool) -> None:
    """What is pending, to the driver's meter; a process with no run to report to (no Ray,
    no meter) drops it."""
    global _meter, _looked
    amounts = dict(_pending)
    _pending.clear()
    _sent[0], used = time.monotonic(), time.process_time()
    # the CPU this process (all its threads: the task, Ray's serialization) used since
    amounts["cpu_seconds"], _cpu[0] = used - _cpu[0], used
    if not ray.is_initialized():
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
        sent = _meter.add.remote(amounts)
        if wait:
            ray.get(sent)
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
def watching(
    title: str, goal: Goal | None, log: Callable[[str], None]
) -> Iterator[dict[str, float]]:
    """Show the live progress of the work inside the block; the dict it gives holds, once
    the block ends, what the block's workers counted, `cpu_seconds` (their CPU time and
    the driver's) included."""
    meter, driver_cpu, seen = _owned_meter(), time.process_time(), {}
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
        yield seen
    finally:
        stop.set()
        poller.join()
    seen.update(ray.get(meter.take.remote()))
    seen["cpu_seconds"] = seen.get("cpu_seconds", 0.0) + time.process_time() - driver_cpu
    log(line(title, seen, time.monotonic() - started, goal))
