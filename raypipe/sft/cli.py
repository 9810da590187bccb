"""`raypipe sft check|clean|convert`: fine-tuning datasets from JSONL to JSONL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from raypipe.config import ConfigError
from raypipe.sft import report as sft_report
from raypipe.sft.clean import Verdict, judge, reject_row
from raypipe.sft.config import Format, SftConfig, load_sft_config
from raypipe.sft.convert import ConversionError, chat_to_instruction, instruction_to_chat
from raypipe.sft.golden import distances
from raypipe.sft.schema import Example, parse, read_lines, schema_problems

app = typer.Typer(
    help="Fine-tuning datasets (instruction, chat, preference JSONL): check, clean, convert.",
    no_args_is_help=True,
)
console = Console(stderr=True)

InputArg = Annotated[Path, typer.Argument(help="JSONL file, one example per line")]
FormatOpt = Annotated[
    str | None, typer.Option("--format", "-f", help="instruction | chat | preference")
]
ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="YAML of sft options")]
SemanticOpt = Annotated[
    bool, typer.Option("--semantic", help="Also drop paraphrases (needs the semantic extra)")
]


def _fail(message: str) -> None:
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _config(path: Path | None, fmt: str | None, semantic: bool) -> SftConfig:
    overrides: dict = {}
    if fmt is not None:
        overrides["format"] = fmt
    if semantic:
        overrides["dedup.semantic.enabled"] = True
    try:
        return load_sft_config(path, overrides)
    except ConfigError as error:
        _fail(str(error))


def _judge(source: Path, cfg: SftConfig) -> list[Verdict]:
    if not source.is_file():
        _fail(f"{source}: no such file")
    try:
        return judge(read_lines(source), cfg)
    except (ValueError, RuntimeError) as error:
        _fail(str(error))


def _golden(cfg: SftConfig) -> list[Example] | None:
    """The golden examples (schema-valid ones, taken as given), or None without a golden set."""
    if cfg.golden.path is None:
        return None
    path = Path(cfg.golden.path)
    if not path.is_file():
        _fail(f"golden.path {path}: no such file")
    golden = [v.example for v in judge(read_lines(path), _schema_only(cfg)) if v.example]
    if not golden:
        _fail(f"golden.path {path}: the golden set has no valid {cfg.format} example")
    return golden


def _furthest(
    verdicts: list[Verdict], golden: list[Example] | None, show: int
) -> list[tuple[float, int]] | None:
    if golden is None:
        return None
    kept = [v.example for v in verdicts if not v.problems and v.example]
    far = distances(kept, golden)
    return sorted(zip(far.tolist(), (e.line for e in kept), strict=True), reverse=True)[:show]


def _schema_only(cfg: SftConfig) -> SftConfig:
    """The same format with every rule and dedup off: golden examples are taken as given."""
    return SftConfig.model_validate(
        {
            "format": cfg.format,
            "rules": {name: {"enabled": False} for name in SftConfig().rules.model_fields},
            "dedup": {name: {"enabled": False} for name in SftConfig().dedup.model_fields},
        }
    )


def _print_problems(source: Path, verdicts: list[Verdict], limit: int) -> None:
    shown = 0
    for verdict in verdicts:
        for reason, message in verdict.problems:
            if shown == limit:
                print("... (more problems: raise --show to see them)")
                return
            print(f"{source}:{verdict.line}: {reason}: {message}")
            shown += 1


@app.command()
def check(
    source: InputArg,
    fmt: FormatOpt = None,
    config: ConfigOpt = None,
    semantic: SemanticOpt = False,
    show: Annotated[int, typer.Option(min=0, help="Problems to print")] = 50,
    report: Annotated[Path | None, typer.Option(help="Also write the report as JSON")] = None,
) -> None:
    """List what is wrong with a dataset, line by line, and report on it. Exit 1 if anything is."""
    cfg = _config(config, fmt, semantic)
    golden = _golden(cfg)
    verdicts = _judge(source, cfg)
    _print_problems(source, verdicts, show)
    data = sft_report.build(verdicts, _furthest(verdicts, golden, cfg.golden.show))
    print(sft_report.markdown(data))
    if report:
        report.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if data["kept"] != data["examples"]:
        raise typer.Exit(1)


@app.command()
def clean(
    source: InputArg,
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the kept examples")],
    fmt: FormatOpt = None,
    config: ConfigOpt = None,
    semantic: SemanticOpt = False,
    ray: Annotated[
        bool, typer.Option("--ray", help="Run on Ray Data (large sets; the report has counts)")
    ] = False,
    address: Annotated[
        str | None, typer.Option(help="Ray cluster address with --ray (default: local)")
    ] = None,
) -> None:
    """Write the examples that pass every rule and are no duplicate; the rest, with their
    reasons, to OUT's .rejects.jsonl; the report to OUT's .report.json."""
    cfg = _config(config, fmt, semantic)
    if not source.is_file():
        _fail(f"{source}: no such file")
    out.parent.mkdir(parents=True, exist_ok=True)
    rejects = out.with_name(f"{out.stem}.rejects.jsonl")
    report_path = out.with_name(f"{out.stem}.report.json")
    if ray:
        if cfg.golden.path is not None:
            _fail("golden.path needs the in-process run: drop --ray or golden.path")
        data = _clean_on_ray(source, out, cfg, address)
    else:
        golden = _golden(cfg)
        verdicts = _judge(source, cfg)
        _write(verdicts, out, rejects)
        data = sft_report.build(verdicts, _furthest(verdicts, golden, cfg.golden.show))
    report_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(sft_report.markdown(data))
    print(f"\nkept:    {out}\nrejects: {rejects}\nreport:  {report_path}")


def _clean_on_ray(source: Path, out: Path, cfg: SftConfig, address: str | None) -> dict:
    from raypipe.config import RayConfig, StorageConfig
    from raypipe.runtime import connect
    from raypipe.sft import job

    connect(RayConfig(address=address), StorageConfig())
    try:
        return job.run(source, out, cfg)
    except (ValueError, RuntimeError) as error:
        _fail(str(error))


def _write(verdicts: list[Verdict], out: Path, rejects: Path) -> None:
    with open(out, "w", encoding="utf-8") as kept, open(rejects, "w", encoding="utf-8") as bad:
        for verdict in verdicts:
            if not verdict.problems:
                kept.write(verdict.text + "\n")
                continue
            bad.write(json.dumps(reject_row(verdict), ensure_ascii=False) + "\n")


@app.command()
def convert(
    source: InputArg,
    to: Annotated[str, typer.Option("--to", help="chat | instruction")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the converted file")],
) -> None:
    """Convert instruction records to chat records or back (single-exchange chats only)."""
    if to not in ("chat", "instruction"):
        _fail(f"--to must be chat or instruction, got {to!r}")
    origin: Format = "instruction" if to == "chat" else "chat"
    change = instruction_to_chat if to == "chat" else chat_to_instruction
    if not source.is_file():
        _fail(f"{source}: no such file")
    failed = 0
    with open(out, "w", encoding="utf-8") as sink:
        for line, text in read_lines(source):
            record, problem = parse(text)
            problems = [problem] if problem else schema_problems(record, origin)
            if not problems:
                try:
                    sink.write(json.dumps(change(record), ensure_ascii=False) + "\n")
                    continue
                except ConversionError as error:
                    problems = [("convert:no_equivalent", str(error))]
            failed += 1
            for reason, message in problems:
                print(f"{source}:{line}: {reason}: {message}")
    print(f"converted to {to}: {out}" + (f" ({failed} lines not converted)" if failed else ""))
    if failed:
        raise typer.Exit(1)
