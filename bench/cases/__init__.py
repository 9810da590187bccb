"""One module per comparison; each exposes run(quick: bool) -> str (a Markdown section)."""
