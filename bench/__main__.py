"""`python -m bench run [--quick] [--only NAME ...]`: run the cases, write BENCHMARKS.md.

Each case (bench/cases/<name>.py) runs in its own process, so a case that crashes, hangs
or leaves Ray running cannot take the others down: its section then says what went wrong
and the run goes on. A section is stored in bench/results/<name>.md (quick runs in
bench/results/quick/), and BENCHMARKS.md is rebuilt from the stored sections: a full
result wins over a quick one, and every section says when and how it was measured.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import CACHE, ROOT, SHARED_DATA, child_env
from bench.machine import describe_inputs, describe_machine

CASES = ROOT / "bench" / "cases"
RESULTS = ROOT / "bench" / "results"
LOGS = CACHE / "logs"
BENCHMARKS = ROOT / "BENCHMARKS.md"
# A case that runs longer than this is stopped and reported as failed.
TIMEOUT_SECONDS = {"quick": 3600, "full": 4 * 3600}
LOG_TAIL_LINES = 40
BUSY_LOAD_PER_CORE = 2  # a load average above this many per core is flagged in the section
# The words a case writes where raypipe is slower than a peer, and the harness where a case
# failed: the summary at the top of BENCHMARKS.md collects the lines that hold them.
SLOWER = "slower here"
FAILED = "This case failed"


@dataclass(frozen=True)
class Layout:
    """Where cases come from and where their results go (tests use their own)."""

    cases: Path = CASES
    results: Path = RESULTS
    logs: Path = LOGS
    benchmarks: Path = BENCHMARKS
    inputs: Path = SHARED_DATA / "bench"  # the throughput corpora, described in BENCHMARKS.md

    def result(self, name: str, quick: bool) -> Path:
        return (self.results / "quick" if quick else self.results) / f"{name}.md"


def discover(cases: Path) -> list[str]:
    """Names of the cases: every bench/cases/<name>.py but the package's own files."""
    return sorted(p.stem for p in cases.glob("*.py") if not p.stem.startswith("_"))


def run_case(name: str, quick: bool, command: str, layout: Layout) -> tuple[bool, float]:
    """Run one case in a child process; store its section (or its failure). True if it ran."""
    mode = "quick" if quick else "full"
    target = layout.result(name, quick)
    target.parent.mkdir(parents=True, exist_ok=True)
    layout.logs.mkdir(parents=True, exist_ok=True)
    log = layout.logs / f"{name}.{mode}.log"
    section_file = log.with_suffix(".md")
    section_file.unlink(missing_ok=True)
    args = [sys.executable, "-m", "bench", "case", str(layout.cases / f"{name}.py")]
    args += ["--out", str(section_file), *(["--quick"] if quick else [])]
    load = os.getloadavg()[0]
    started = time.time()
    with open(log, "w") as sink:
        # Its own process group: whatever the case started (Ray, worker pools) is ended
        # with it, so nothing it leaves behind slows the next case.
        child = subprocess.Popen(
            args,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=child_env(),
            cwd=ROOT,
            start_new_session=True,
        )
        try:
            code = child.wait(timeout=TIMEOUT_SECONDS[mode])
            failure = None if code == 0 else f"exit status {code}"
        except subprocess.TimeoutExpired:
            failure = f"stopped after {TIMEOUT_SECONDS[mode]} s"
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    seconds = time.time() - started
    if failure is None and not section_file.exists():
        failure = "the case returned no section"
    stamp = (
        f"_Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))} by "
        f"`{command}` ({mode} run, {seconds:.0f} s; load average {load:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at end)._"
    )
    if load > BUSY_LOAD_PER_CORE * (os.cpu_count() or 1):
        stamp += (
            f"\n\n**The machine was busy** (load average {load:.0f} on {os.cpu_count()} cores, "
            "from other work): rates here are far below an idle machine's and ratios are noisy."
        )
    if failure is None:
        section = with_stamp(section_file.read_text(), stamp)
    else:
        section = failed_section(name, failure, log, stamp)
    target.write_text(section.rstrip() + "\n")
    return failure is None, seconds


def with_stamp(section: str, stamp: str) -> str:
    """The section with the stamp right under its `## ` title."""
    title, _, body = section.strip().partition("\n")
    if not title.startswith("## "):
        title, body = "## (untitled case)", section.strip()
    return f"{title}\n\n{stamp}\n{body}"


def failed_section(name: str, failure: str, log: Path, stamp: str) -> str:
    tail = log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
    return "\n".join(
        [
            f"## {name}",
            "",
            stamp,
            "",
            f"**{FAILED} ({failure}); it has no figures.** The end of its output:",
            "",
            "```",
            *tail,
            "```",
        ]
    )


def slower_lines(sections: list[str]) -> list[str]:
    """Every line of the sections that says raypipe is slower (or that a case failed),
    with its section's title: the list a reader should see first."""
    found = []
    for section in sections:
        title, *lines = section.splitlines()
        found += [
            f"- {title.removeprefix('## ')}: {line.strip().removeprefix('- ')}"
            for line in lines
            if SLOWER in line or FAILED in line
        ]
    return found or ["- Nowhere: raypipe is at least as fast as every peer below."]


def write_benchmarks(names: list[str], command: str, layout: Layout) -> str:
    """BENCHMARKS.md from the stored sections (full ones before quick ones)."""
    sections = []
    for name in names:
        full, quick = layout.result(name, False), layout.result(name, True)
        chosen = full if full.exists() else quick if quick.exists() else None
        if chosen is not None:
            sections.append(chosen.read_text().strip())
    text = "\n\n".join(
        [
            "# Benchmarks",
            "Written by `python -m bench run` from `bench/results/`; no figure here is typed by "
            "hand. Each section names the run that measured it. Rates are the median of "
            "the repeats (after one untimed warm-up), with the slowest and fastest repeat; "
            "a ratio above 1 means raypipe is faster.",
            f"Last command: `{command}`",
            "## Machine",
            describe_machine(),
            "## Inputs",
            describe_inputs(layout.inputs),
            "## Where raypipe is slower",
            "Each line below is from the section it names, which shows the profile behind it.",
            "\n".join(slower_lines(sections)),
            *sections,
        ]
    )
    layout.benchmarks.write_text(text + "\n")
    return text


def run(names: list[str], quick: bool, command: str, layout: Layout) -> bool:
    """Run the named cases one after another; True if every one ran."""
    ok = True
    for name in names:
        print(f"bench: {name} ...", flush=True)
        ran, seconds = run_case(name, quick, command, layout)
        ok &= ran
        status = "done" if ran else f"FAILED (log: {layout.logs / name}.*.log)"
        print(f"bench: {name} {status} in {seconds:.0f} s", flush=True)
        print(layout.result(name, quick).read_text(), flush=True)
    write_benchmarks(discover(layout.cases), command, layout)
    print(f"bench: wrote {layout.benchmarks}")
    return ok


def case_main(path: Path, quick: bool, out: Path) -> None:
    """Child process: import the case file, run it, write its section."""
    spec = importlib.util.spec_from_file_location(f"bench.cases.{path.stem}", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load benchmark case {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out.write_text(module.run(quick))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="run cases and write BENCHMARKS.md")
    run_parser.add_argument("--quick", action="store_true", help="small slices, for development")
    run_parser.add_argument(
        "--only", nargs="+", metavar="NAME", help="run only these cases (default: all)"
    )
    commands.add_parser("write", help="rewrite BENCHMARKS.md from the stored results only")
    case_parser = commands.add_parser("case", help="run one case file (used by `run`)")
    case_parser.add_argument("path", type=Path)
    case_parser.add_argument("--out", type=Path, required=True)
    case_parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)

    if args.command == "case":
        case_main(args.path, args.quick, args.out)
        return 0
    layout = Layout()
    available = discover(layout.cases)
    if args.command == "write":
        write_benchmarks(available, "python -m bench write", layout)
        return 0
    unknown = sorted(set(args.only or []) - set(available))
    if unknown:
        parser.error(f"no case named {', '.join(unknown)}; cases: {', '.join(available)}")
    command = shlex.join(["python", "-m", "bench", *(argv if argv is not None else sys.argv[1:])])
    return 0 if run(args.only or available, args.quick, command, layout) else 1


if __name__ == "__main__":
    sys.exit(main())
