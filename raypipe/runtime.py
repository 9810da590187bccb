"""Joining or starting Ray, quietly: users see the phases' progress and the summary, not logs."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import ray
from ray.data import ActorPoolStrategy, DataContext
from ray.data.context import ShuffleStrategy

from raypipe.config import ConfigError, RayConfig, StorageConfig

REACH_SECONDS = 15  # a cluster address that does not answer within this is an error
# Arrow's allocator in every worker, unless the environment names one. pyarrow's default,
# mimalloc, keeps the pages a task freed: a worker that once took a 27 MB batch held
# ~180 MB more after it; jemalloc hands them back, and a whole run's peak falls with it
# (BENCHMARKS.md, memory).
ARROW_POOL = {"ARROW_DEFAULT_MEMORY_POOL": os.environ.get("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")}


def use_storage(cfg: StorageConfig) -> dict[str, str]:
    """Apply the configured storage settings to this process as AWS environment variables."""
    settings = {"AWS_ENDPOINT_URL": cfg.endpoint, "AWS_REGION": cfg.region}
    env = {name: value for name, value in settings.items() if value}
    os.environ.update(env)
    return env


def connect(cfg: RayConfig, storage: StorageConfig) -> None:
    """Join the configured cluster (or RAY_ADDRESS), else start a local Ray.

    Storage settings reach the workers through the job's environment (a local Ray
    inherits this process's); credentials are never forwarded: workers take them from
    their own environment or instance role.
    """
    env = {**use_storage(storage), **ARROW_POOL}
    os.environ.update(ARROW_POOL)  # a local Ray's workers inherit this process's environment
    _tune_data_context()
    if ray.is_initialized():
        return
    address = cfg.address or os.environ.get("RAY_ADDRESS")
    # The local default keeps Ray's token authentication; its notice is not news here.
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(
        logging.ERROR
    )
    quiet = {"logging_level": logging.WARNING, "log_to_driver": True}
    if address:
        _reachable(address)
        ray.init(address=address, runtime_env={"env_vars": env}, **quiet)
    else:
        # address="local" always starts a fresh instance, whatever a stale
        # /tmp/ray/ray_current_cluster says.
        ray.init(address="local", num_cpus=cfg.num_cpus, include_dashboard=False, **quiet)
    # Ray Data's INFO lines (plan estimates, "execution finished") bury the phases' own
    # progress (raypipe.progress), on a terminal and in a job's log alike.
    logging.getLogger("ray.data").setLevel(logging.WARNING)


def _reachable(address: str) -> None:
    """A wrong host or port is one clear line within seconds, not a silent wait: Ray's own
    connection retries take minutes. `auto` (the cluster this process runs on) is Ray's."""
    if address == "auto" or ":" not in address:
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=REACH_SECONDS).close()
    except (OSError, ValueError) as error:
        raise ConfigError(
            f"ray.address: nothing answers at {address} within {REACH_SECONDS} s ({error}); "
            "check the head node's address and port (6379 for the GCS, 10001 for ray://)"
        ) from None


def _tune_data_context() -> None:
    context = DataContext.get_current()
    # A phase is several Ray Data plans (reads of checkpoints, merges of tallies): their
    # operator bars say less than one line per phase in documents, MB and rejects.
    context.enable_progress_bars = False
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "disabled"
    context.print_on_execution_start = False
    context.enable_auto_log_stats = False
    # Ray 2.60's new read path spends ~1.5 s per read in a file-listing task, even on one
    # small file, and a run reads its checkpoints about ten times; the classic path lists
    # the checkpoint folder on the driver in milliseconds.
    context.use_datasource_v2 = False
    # A phase is one fused task operator (read, work, write) and small tally merges: Ray
    # Data's reservation would hold back a share of the CPUs for the merges, and the work
    # would run one task at a time on 2 CPUs. Backpressure still bounds what is in flight.
    context.op_resource_reservation_enabled = False
    logging.getLogger("ray.data.dataset").addFilter(_not_the_idle_cpu_alarm)


def _not_the_idle_cpu_alarm(record: logging.LogRecord) -> bool:
    """Ray Data warns that a job "will hang" when the cluster shows no free CPU as a plan
    starts. Between two phases it always does for a moment: the last phase's tasks have
    ended but the cluster's resource view has not caught up, and the run goes on. Pools
    that could never fit are refused before any work (`phases._fits`)."""
    return "does not have any available CPUs" not in record.getMessage()


@contextmanager
def sort_shuffle() -> Iterator[None]:
    """Datasets built inside group by sort shuffle, which runs as plain tasks.

    Ray 2.60's default hash shuffle starts aggregator actors for every plan, ~7 s before
    the first row moves on a small run; its joins still need it, so it stays the default.
    """
    context = DataContext.get_current()
    before = context.shuffle_strategy
    context.shuffle_strategy = ShuffleStrategy.SORT_SHUFFLE_PULL_BASED
    try:
        yield
    finally:
        context.shuffle_strategy = before


def cluster_cpus() -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def workers(cfg: RayConfig) -> int:
    """How many workers a stage may use: the configured bound, else the CPUs present now."""
    return cfg.max_actors or cluster_cpus()


def actor_pool(cfg: RayConfig, share: int = 1) -> ActorPoolStrategy:
    """Stage actors: one to start, growing with the backlog up to `workers`.

    Pools chained in one phase split the workers: a first pool grown to every CPU would
    starve the next one of its first actor, and the chain would stall on backpressure.
    """
    return ActorPoolStrategy(min_size=1, max_size=max(1, workers(cfg) // share))
