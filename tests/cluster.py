"""A real multi-node Ray cluster on this machine, for tests, torn down to the last process."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

BIN = Path(sys.executable).parent


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                cmdline = (
                    (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="ignore")
                )
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                table[int(entry.name)] = (parent, cmdline)
    return table


def cluster_processes(markers: list[str]) -> set[int]:
    """Processes whose command line names the cluster, and all their descendants."""
    table = _processes()
    found = {pid for pid, (_, cmd) in table.items() if any(m in cmd for m in markers)}
    grew = True
    while grew:
        children = {pid for pid, (parent, _) in table.items() if parent in found} - found
        found |= children
        grew = bool(children)
    return found - {os.getpid()}


def terminate(markers: list[str], grace: float = 10.0) -> set[int]:
    """SIGTERM the cluster's processes, SIGKILL what is left; return survivors (none)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in cluster_processes(markers):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.time() + grace
        while cluster_processes(markers) and time.time() < deadline:
            time.sleep(0.2)
    return cluster_processes(markers)


def ray(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "ray"), *args], capture_output=True, text=True, env=env, timeout=300
    )


def _agent_ports(metrics: int | None = None) -> list[str]:
    listen, grpc, runtime_env, spare = free_ports(4)
    metrics = metrics or spare
    return [
        f"--dashboard-agent-listen-port={listen}",
        f"--dashboard-agent-grpc-port={grpc}",
        f"--runtime-env-agent-port={runtime_env}",
        f"--metrics-export-port={metrics}",
    ]


@contextlib.contextmanager
def local_cluster(
    temp_dir: Path,
    port: int,
    dashboard_port: int,
    client_port: int,
    metrics_port: int,
    nodes: int = 2,
    cpus: int = 1,
) -> Iterator[dict]:
    """A head node and `nodes - 1` more (`cpus` each); yields the environment clients need.

    Each node exports Prometheus metrics; the head's on `metrics_port`. Every agent port
    is chosen here, so that the cluster never collides with another Ray on this machine.

    Token authentication stays on, as Ray 2.60 defaults: clients set RAY_AUTH_MODE=token
    and read the token ray start wrote to ~/.ray/auth_token.
    """
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "RAY_AUTH_MODE": "token"}
    env.pop("RAY_ADDRESS", None)
    markers = [
        str(temp_dir),
        f":{port} ",
        f"--port={port} ",
        f"--dashboard-port={dashboard_port} ",
        f"--metrics-export-port={metrics_port} ",
    ]
    try:
        head = ray(
            "start",
            "--head",
            f"--port={port}",
            f"--num-cpus={cpus}",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dashboard_port}",
            f"--ray-client-server-port={client_port}",
            f"--temp-dir={temp_dir}",
            "--disable-usage-stats",
            *_agent_ports(metrics_port),
            env=env,
        )
        assert head.returncode == 0, head.stderr[-3000:]
        for _ in range(nodes - 1):
            node = ray(
                "start",
                f"--address=127.0.0.1:{port}",
                f"--num-cpus={cpus}",
                "--disable-usage-stats",
                *_agent_ports(),
                env=env,
            )
            assert node.returncode == 0, node.stderr[-3000:]
        yield {
            **env,
            "RAY_API_SERVER_ADDRESS": f"http://127.0.0.1:{dashboard_port}",
            "RAY_ADDRESS": f"127.0.0.1:{port}",
        }
    finally:
        survivors = terminate(markers)
        assert not survivors, f"processes left behind: {survivors}"
