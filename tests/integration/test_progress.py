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
