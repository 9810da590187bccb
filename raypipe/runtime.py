"""Joining or starting Ray, quietly: users see progress bars and the summary, not logs."""

from __future__ import annotations

import logging
import os

import ray
from ray.data import DataContext

from raypipe.config import RayConfig


def connect(cfg: RayConfig) -> None:
    """Join the configured cluster (or RAY_ADDRESS), else start a local Ray."""
    if ray.is_initialized():
        return
    address = cfg.address or os.environ.get("RAY_ADDRESS")
    # The local default keeps Ray's token authentication; its notice is not news here.
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(
        logging.ERROR
    )
    quiet = {"logging_level": logging.WARNING, "log_to_driver": True}
    if address:
        ray.init(address=address, **quiet)
    else:
        # address="local" always starts a fresh instance, whatever a stale
        # /tmp/ray/ray_current_cluster says.
        ray.init(address="local", num_cpus=cfg.num_cpus, include_dashboard=False, **quiet)
    if not os.isatty(2):
        # Without a terminal Ray Data logs its progress bars as INFO lines: keep job logs
        # readable (phases and the summary still print).
        logging.getLogger("ray.data").setLevel(logging.WARNING)
    context = DataContext.get_current()
    context.enable_progress_bars = True
    context.print_on_execution_start = False
    context.enable_auto_log_stats = False


def cluster_cpus() -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))
