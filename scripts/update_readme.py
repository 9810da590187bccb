"""Rewrite the configuration references (README, docs/sft.md) from the config models."""

import re
from pathlib import Path

from raypipe.ablate.options import reference_table as ablate_reference_table
from raypipe.config import reference_table
from raypipe.sft.config import reference_table as sft_reference_table

ROOT = Path(__file__).parents[1]
for path, table, marker in (
    (ROOT / "README.md", reference_table(), "reference"),
    (ROOT / "docs" / "sft.md", sft_reference_table(), "reference"),
    (ROOT / "docs" / "ablate.md", ablate_reference_table(), "ablate-reference"),
):
    text = re.sub(
        rf"(<!-- {marker}:start -->\n).*?(<!-- {marker}:end -->)",
        lambda m, table=table: f"{m.group(1)}{table}\n{m.group(2)}",
        path.read_text(),
        flags=re.S,
    )
    path.write_text(text)
