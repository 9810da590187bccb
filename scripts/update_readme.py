"""Rewrite the README's configuration reference from the config model."""

import re
from pathlib import Path

from raypipe.config import reference_table

README = Path(__file__).parents[1] / "README.md"
text = README.read_text()
text = re.sub(
    r"(<!-- reference:start -->\n).*?(<!-- reference:end -->)",
    lambda m: f"{m.group(1)}{reference_table()}\n{m.group(2)}",
    text,
    flags=re.S,
)
README.write_text(text)
