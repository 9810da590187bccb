"""The `raypipe` command."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from raypipe.config import ConfigError, load_config
from raypipe.io import storage
from raypipe.io.storage import StorageError

app = typer.Typer(
    help="Raw text to training-ready token shards on Ray Data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(stderr=True)

ConfigArg = Annotated[str, typer.Argument(help="YAML config file (see README: reference)")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="Override a config key: --set pack.seq_len=4096"),
]


def _fail(message: str, code: int = 2) -> None:
    console.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def _config(path: str, overrides: list[str] | None, address: str | None = None):
    try:
        cfg = load_config(path, overrides)
    except ConfigError as error:
        _fail(str(error))
    if address:
        cfg.ray.address = address
    return cfg


def _summary(manifest: dict) -> Table:
    table = Table(title="raypipe run", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("documents in", f"{manifest['documents_in']:,}")
    table.add_row("documents out", f"{manifest['documents_out']:,}")
    for reason, count in sorted(manifest["rejected"].items(), key=lambda kv: -kv[1]):
        table.add_row(f"  rejected: {reason}", f"{count:,}")
    for entity, count in sorted(manifest.get("masked", {}).items()):
        table.add_row(f"  masked: {entity}", f"{count:,}")
    if "tokens" in manifest:
        table.add_row("tokens", f"{manifest['tokens']:,}")
        table.add_row(
            "sequences", f"{manifest['sequences']:,} x {manifest['seq_len']} ({manifest['dtype']})"
        )
        table.add_row("shards", f"{len(manifest['shards']):,}")
    for field, tags in sorted(manifest.get("tags", {}).items()):
        if set(tags) != {"unspecified"}:  # only when the config tags its inputs
            for tag, counts in sorted(tags.items()):
                out = counts.get("tokens_out")
                amount = f"{out:,} tokens" if out is not None else ""
                docs = counts.get("documents_out", counts["documents_cleaned"])
                table.add_row(f"  {field}: {tag}", f"{docs:,} docs {amount}".strip())
    seconds = manifest.get("seconds")
    if seconds:
        table.add_row(
            "time", f"{seconds:,.1f} s ({manifest['documents_in'] / seconds:,.0f} docs/s)"
        )
    return table


@app.command()
def run(
    config: ConfigArg,
    set_: SetOpt = None,
    address: Annotated[
        str | None, typer.Option(help="Ray cluster address (default: RAY_ADDRESS or local)")
    ] = None,
) -> None:
    """Run the pipeline end to end and print where the output is."""
    from raypipe.pipeline import Pipeline

    cfg = _config(config, set_, address)
    try:
        manifest = Pipeline(cfg, log=lambda m: console.print(f"[cyan]{m}[/]")).run()
    except (ConfigError, StorageError) as error:
        _fail(str(error), 1)
    out = cfg.output.path
    console.print(_summary(manifest))
    if "shards" in manifest:
        print(f"shards:   {storage.join(out, 'shards')}/")
        print(f"report:   {storage.join(out, 'report.json')}")
    else:
        print(f"documents: {storage.join(out, 'documents')}/")
    print(f"rejects:  {storage.join(out, 'rejects')}/")
    print(f"manifest: {storage.join(out, 'manifest.json')}")


def _snippet(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@app.command()
def preview(
    config: ConfigArg,
    n: Annotated[int, typer.Option("-n", min=1, help="Documents to show")] = 3,
    set_: SetOpt = None,
    width: Annotated[int, typer.Option(min=20, help="Characters of text per document")] = 160,
) -> None:
    """Show the first N documents after each stage (runs here, without Ray)."""
    from raypipe.pipeline import Pipeline

    cfg = _config(config, set_)
    try:
        views = Pipeline(cfg).preview(n)
    except (ConfigError, StorageError) as error:
        _fail(str(error), 1)
    for stage, batch in views:
        table = Table(title=f"after {stage}", title_justify="left", expand=True)
        table.add_column("id", overflow="fold", max_width=28)
        table.add_column("status", max_width=24)
        table.add_column("text", overflow="fold")
        for row in batch.select(["id", "reason", "text"]).to_pylist():
            status = f"[red]{row['reason']}[/]" if row["reason"] else "[green]kept[/]"
            table.add_row(row["id"], status, _snippet(row["text"], width))
        Console().print(table)


@app.command()
def options() -> None:
    """Print every config option with its default, bounds and meaning (Markdown)."""
    from raypipe.config import reference_table

    print(reference_table())
