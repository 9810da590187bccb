"""The `raypipe` command."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from raypipe.config import (
    DEFAULT_RECIPE,
    ConfigError,
    PipelineConfig,
    build_config,
    load_config,
)
from raypipe.io import storage
from raypipe.io.storage import StorageError
from raypipe.sft.cli import app as sft_app
from raypipe.writers import FORMATS

app = typer.Typer(
    help="Raw text to training-ready token shards on Ray Data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(sft_app, name="sft")
console = Console(stderr=True)

ConfigArg = Annotated[str, typer.Argument(help="YAML config file (see README: reference)")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="Override a config key: --set pack.seq_len=4096"),
]
RecipeOpt = Annotated[
    str | None,
    typer.Option(
        help="Start from a named recipe (fineweb, c4, ...; none = no recipe) instead of the "
        "config's or the default production: raypipe options --recipe NAME"
    ),
]
NO_RECIPE = "none"


def _recipe_override(recipe: str | None) -> list[str]:
    if not recipe:
        return []
    return [f"recipe={'null' if recipe == NO_RECIPE else recipe}"]


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
    if near := manifest.get("near_duplicates"):
        sizes = ", ".join(f"{size}: {n:,}" for size, n in near["cluster_sizes"].items())
        table.add_row("near-duplicate clusters", f"{near['clusters']:,} ({sizes or 'none'})")
        table.add_row("  share removed", f"{near['share_removed']:.2%}")
    for entity, count in sorted(manifest.get("masked", {}).items()):
        table.add_row(f"  masked: {entity}", f"{count:,}")
    if "tokens" in manifest:
        table.add_row("tokens", f"{manifest['tokens']:,}")
        if FORMATS[manifest["config"]["output"]["format"]].packed:  # megatron packs at training
            table.add_row(
                "sequences",
                f"{manifest['sequences']:,} x {manifest['seq_len']} ({manifest['dtype']})",
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
        busy = manifest.get("step_cpu", {})
        for step, took in manifest.get("step_seconds", {}).items():
            cpus = f", CPUs {busy[step]:.0%} busy" if step in busy else ""
            table.add_row(f"  {step}", f"{took:,.1f} s{cpus}")
    return table


@app.command()
def run(
    config: ConfigArg,
    set_: SetOpt = None,
    address: Annotated[
        str | None, typer.Option(help="Ray cluster address (default: RAY_ADDRESS or local)")
    ] = None,
    recipe: RecipeOpt = None,
) -> None:
    """Run the pipeline end to end and print where the output is."""
    _run(_config(config, _recipe_override(recipe) + (set_ or []), address))


@app.command()
def dedup(
    input_: Annotated[
        list[str], typer.Argument(metavar="INPUT", help="Document files, folders or globs")
    ],
    out: Annotated[str, typer.Option("--out", "-o", help="Output folder")],
    set_: SetOpt = None,
) -> None:
    """Remove exact and near-duplicate documents; write the kept ones and the rejects ledger."""
    only_dedup = {
        "input": {"paths": input_},
        "output": {"path": out, "format": "parquet"},
        "tokenizer": None,
        "normalize": {"enabled": False},
        "quality": {"enabled": False},
        "dedup": {"near": {"enabled": True}},
    }
    try:
        cfg = build_config(only_dedup, set_)
    except ConfigError as error:
        _fail(str(error))
    _run(cfg)


def _run(cfg: PipelineConfig) -> None:
    from raypipe.pipeline import Pipeline

    try:
        manifest = Pipeline(cfg, log=lambda m: console.print(f"[cyan]{m}[/]")).run()
    except (ConfigError, StorageError) as error:
        _fail(str(error), 1)
    except KeyboardInterrupt:
        console.print(
            "[bold]interrupted:[/] the same command resumes from the last committed phase",
            highlight=False,
        )
        raise typer.Exit(130) from None
    out = cfg.output.path
    console.print(_summary(manifest))
    for warning in manifest.get("warnings", []):
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    if "shards" in manifest:
        print(f"shards:   {storage.join(out, 'shards')}/")
    else:
        print(f"documents: {storage.join(out, 'documents')}/")
    print(f"report:   {storage.join(out, 'report.html')} (data: report.json)")
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
def locate(
    output: Annotated[str, typer.Argument(help="Output folder of a committed run")],
    keys: Annotated[list[str], typer.Argument(metavar="ID|URL", help="Document ids or URLs")],
) -> None:
    """Say where each document went: shard and sequences, or the reason it was rejected.

    One tab-separated line per place (a document mixed in twice has two); exit 1 when a
    key is found nowhere."""
    from raypipe.locate import locate as find

    try:
        places = find(output, keys)
    except (FileNotFoundError, ValueError, StorageError) as error:
        _fail(str(error), 1)
    for place in sorted(places, key=lambda p: keys.index(p.key)):  # in the order asked
        print(place.line())
    missing = set(keys) - {place.key for place in places}
    for key in keys:
        if key in missing:
            print(f"{key}\tnot found\t(not in this run's input, or its id differs)")
    if missing:
        raise typer.Exit(1)


@app.command()
def remove(
    output: Annotated[str, typer.Argument(help="Output folder of a committed run")],
    ids: Annotated[
        str | None, typer.Option(help="File of document ids to remove, one per line")
    ] = None,
    domains: Annotated[
        str | None,
        typer.Option(help="File of domains whose pages to remove (subdomains included)"),
    ] = None,
) -> None:
    """Remove documents from a committed run: rewrite only the shards holding them and
    record them in the manifest, report and rejects ledger (reason `removed`)."""
    from raypipe.blocklists import load_domains
    from raypipe.listfile import read_text
    from raypipe.remove import remove as take_out

    if not ids and not domains:
        _fail("name the documents: --ids FILE and/or --domains FILE")
    try:
        wanted = (
            {line.strip() for line in read_text(ids).splitlines() if line.strip()} if ids else set()
        )
        listed = load_domains((domains,)) if domains else None
        removed = take_out(output, wanted, listed, log=lambda m: console.print(f"[cyan]{m}[/]"))
    except (FileNotFoundError, ValueError, ConfigError, StorageError) as error:
        _fail(str(error), 1)
    if not removed.documents:
        print(f"nothing removed: no document of {output} matches")
        return
    copies = f"{removed.copies} copies, " if removed.copies != removed.documents else ""
    print(
        f"removed {removed.documents} documents ({copies}{removed.tokens} tokens) from "
        f"{removed.shards} shards; ledger: {storage.join(output, removed.ledger)}"
    )


def _pairs(items: list[str] | None, flag: str) -> dict[str, str]:
    pairs = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            _fail(f"{flag} expects key=value, got {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs


@app.command()
def ablate(
    config: Annotated[
        str | None, typer.Argument(help="YAML config the variants start from")
    ] = None,
    heldout: Annotated[
        list[str], typer.Option(help="Clean text the models are scored on (repeatable)")
    ] = ...,
    out: Annotated[
        str | None, typer.Option("--out", "-o", help="Local folder of the ablation")
    ] = None,
    evaluate: Annotated[
        str | None,
        typer.Option(
            help="Only score this trained model (a models/<variant>-seed<k> folder) on "
            "--heldout: text files or a native run's output folder"
        ),
    ] = None,
    variants: Annotated[
        str | None, typer.Option(help="Comma-separated variants (default raw,recipe,...)")
    ] = None,
    tokens: Annotated[int | None, typer.Option(help="Training tokens per model")] = None,
    seeds: Annotated[int | None, typer.Option(help="Models per variant")] = None,
    vocab_size: Annotated[
        int | None, typer.Option(help="BPE trained for the ablation; 0 = the config's")
    ] = None,
    seq_len: Annotated[int | None, typer.Option(help="Tokens per training sequence")] = None,
    cpus_per_run: Annotated[int | None, typer.Option(help="CPUs per training")] = None,
    heldout_field: Annotated[str | None, typer.Option(help="Text field of --heldout")] = None,
    model: Annotated[
        list[str] | None, typer.Option(help="Model option: --model d_model=256 (repeatable)")
    ] = None,
    set_: SetOpt = None,
    recipe: RecipeOpt = None,
) -> None:
    """Build each variant of CONFIG, train the same small model on each at equal tokens,
    and compare their bits per byte on held-out text (docs/ablate.md)."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as error:
        _fail(f"raypipe ablate trains models: pip install 'raypipe[ablate]' ({error})")
    from raypipe.ablate.options import ablation_config
    from raypipe.ablate.study import Ablation, evaluate_model

    if evaluate:
        try:
            scored = evaluate_model(evaluate, heldout, heldout_field or "text", seq_len or 256)
        except (ConfigError, StorageError, OSError, ValueError) as error:
            _fail(str(error), 1)
        print(
            f"{scored['bits_per_byte']:.4f} bits per byte ({scored['nats_per_token']:.4f} nats "
            f"per token, {scored['heldout_tokens']:,} tokens, {scored['heldout_bytes']:,} bytes)"
        )
        return
    if config is None or out is None:
        _fail("an ablation needs CONFIG and --out (or --evaluate MODEL)")

    given = {
        "variants": variants.split(",") if variants else None,
        "tokens": tokens,
        "seeds": seeds,
        "vocab_size": vocab_size,
        "seq_len": seq_len,
        "cpus_per_run": cpus_per_run,
        "heldout_field": heldout_field,
        "model": _pairs(model, "--model") or None,
    }
    log = lambda m: console.print(f"[cyan]{m}[/]", highlight=False)  # noqa: E731
    try:
        opts = ablation_config(
            heldout=heldout, out=out, **{k: v for k, v in given.items() if v is not None}
        )
        result = Ablation(config, _recipe_override(recipe) + (set_ or []), opts, log).run()
    except (ConfigError, StorageError) as error:
        _fail(str(error), 1)
    table = Table(title="raypipe ablate: bits per byte (lower is better)", title_justify="left")
    for column in ("variant", "documents", "bits per byte", "± std", "vs raw", "vs recipe"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for name, row in result["variants"].items():
        gaps = [
            f"{gap['gap']:+.4f}{'' if gap['beyond_noise'] is not False else ' (noise)'}"
            if (gap := row.get(f"vs_{ref}"))
            else ""
            for ref in ("raw", "recipe")
        ]
        table.add_row(
            name,
            f"{row['documents_out']:,}",
            f"{row['bits_per_byte']:.4f}",
            f"{row['std']:.4f}",
            *gaps,
        )
    Console().print(table)
    print(f"report:  {result['out']}/report.html (data: ablation.json)")
    print(f"models:  {result['out']}/models/")


def _texts(paths: list[str], text_field: str):
    """The alive texts of text, JSONL or Parquet files, folders or globs, read in turn."""
    from raypipe.batch import alive_texts
    from raypipe.config import InputConfig
    from raypipe.io.readers import read_file

    cfg = InputConfig(text_field=text_field)
    try:
        files = storage.expand(paths)
    except StorageError as error:
        _fail(str(error), 1)
    for index, (uri, *_) in enumerate(files):
        for batch in read_file(uri, index, cfg, 1024):
            yield from alive_texts(batch)[1]


TextFieldOpt = Annotated[str, typer.Option(help="Field holding the text")]


@app.command("train-lm")
def train_lm(
    reference: Annotated[
        list[str], typer.Argument(help="Reference text: JSONL/Parquet/text files, folders, globs")
    ],
    out: Annotated[str, typer.Option(help="Model file to write (quality.perplexity.model)")],
    order: Annotated[int, typer.Option(min=2, max=3, help="Bytes of context + 1")] = 3,
    text_field: TextFieldOpt = "text",
) -> None:
    """Train the byte n-gram model the perplexity filter scores documents with."""
    from raypipe.quality.perplexity import ByteLM

    try:
        model = ByteLM.train(_texts(reference, text_field), order)
    except ValueError as error:
        _fail(str(error), 1)
    model.save(out)
    console.print(f"model: {out} (order {order}, {len(reference)} path(s))", highlight=False)


@app.command("train-classifier")
def train_classifier(
    positive: Annotated[
        list[str], typer.Option(help="Text to keep: JSONL/Parquet/text files, folders, globs")
    ],
    negative: Annotated[list[str], typer.Option(help="Text to drop: the same kinds of path")],
    out: Annotated[str, typer.Option(help="Model file to write (quality.classifier.model)")],
    epoch: Annotated[int, typer.Option(min=1, max=100, help="Passes over the examples")] = 10,
    lr: Annotated[float, typer.Option(min=0.01, max=2.0, help="Learning rate")] = 0.5,
    dim: Annotated[int, typer.Option(min=8, max=300, help="Size of the word vectors")] = 64,
    word_ngrams: Annotated[
        int, typer.Option(min=1, max=3, help="Longest word n-gram the model sees")
    ] = 2,
    seed: Annotated[int, typer.Option(help="Shuffle and initialisation seed")] = 0,
    text_field: TextFieldOpt = "text",
) -> None:
    """Train the fastText quality classifier the `quality.classifier` filter scores with
    (P(keep), as DCLM's and FineWeb-Edu's classifiers)."""
    from raypipe.quality.classifier import train

    try:
        counts = train(
            _texts(positive, text_field),
            _texts(negative, text_field),
            out,
            epoch=epoch,
            lr=lr,
            dim=dim,
            word_ngrams=word_ngrams,
            seed=seed,
        )
    except ValueError as error:
        _fail(str(error), 1)
    console.print(
        f"model: {out} ({counts['positive']:,} positive, {counts['negative']:,} negative examples)",
        highlight=False,
    )


@app.command()
def options(
    recipe: Annotated[
        str,
        typer.Option(help="Show this recipe's values and their sources (none = no recipe)"),
    ] = DEFAULT_RECIPE,
) -> None:
    """Print every config option with its default, bounds and meaning (Markdown)."""
    from raypipe.config import reference_table

    try:
        print(reference_table(None if recipe == NO_RECIPE else recipe))
    except ConfigError as error:
        _fail(str(error))


@app.command("loader-bench")
def loader_bench(
    output: Annotated[str, typer.Argument(help="Output folder of a native run (local or s3://)")],
    batch_size: Annotated[int, typer.Option(min=1, help="Sequences per batch")] = 8,
    seconds: Annotated[float, typer.Option(min=0.1, help="How long to read")] = 10.0,
    seed: Annotated[int, typer.Option(min=0, help="Shuffle seed")] = 0,
) -> None:
    """Read the shards with the training loader (one rank, this process) and print its speed."""
    from raypipe.loader import Loader, throughput

    try:
        loader = Loader(output, batch_size=batch_size, seed=seed)
    except (ValueError, OSError, StorageError) as error:
        _fail(str(error), 1)
    result = throughput(loader, seconds)
    table = Table(title="raypipe loader", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("batches", f"{result['batches']:,} x {batch_size} x {loader.seq_len}")
    table.add_row("CPU seconds", f"{result['cpu_seconds']:,.2f}")
    table.add_row("positions per CPU second", f"{result['positions_per_cpu_s']:,.0f}")
    table.add_row("tokens (with a label) per CPU second", f"{result['tokens_per_cpu_s']:,.0f}")
    Console().print(table)
