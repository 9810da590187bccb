"""Live progress: workers report to the driver's meter while a phase runs."""

import time

import pytest
import ray

from raypipe import progress
from raypipe.progress import Goal, watching


@ray.remote
def _work(n: int) -> None:
    for _ in range(n):
        progress.add(documents=10, rejected=1)
    progress.flush()  # as every task of a run does at its end


@pytest.mark.ray
def test_without_a_terminal_a_phase_logs_its_progress_periodically_and_at_the_end(
    local_ray, monkeypatch
):
    monkeypatch.setattr(progress, "LOG_SECONDS", 0.3)
    lines: list[str] = []
    with watching("clean", Goal("documents", 1_000), lines.append):
        ray.get([_work.remote(20) for _ in range(2)])
        time.sleep(1.0)
    assert len(lines) >= 3, lines  # periodic lines, then the phase's last one
    assert lines[-1].startswith("clean: 400 documents, "), lines
    assert "40 rejected, ETA " in lines[-1]
    with watching("pack", Goal("shards", 2), lines.append):  # the next phase starts at zero
        pass
    assert lines[-1] == "pack: 0 s"


@ray.remote
def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:  # CPU work, not waiting
        pass
    progress.done(documents=1)


@pytest.mark.ray
def test_a_phase_counts_the_cpu_time_of_its_workers(local_ray):
    with watching("spin", Goal("documents", 2), lambda _: None) as seen:
        ray.get([_spin.remote(0.6) for _ in range(2)])
    # two workers spun 0.6 s each; their processes also started and ran Ray's threads
    assert 1.2 <= seen["cpu_seconds"] < 4, seen
    assert seen["documents"] == 2
