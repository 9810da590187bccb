"""The quick-start job reads every record of the bundled sample as a document."""

from pathlib import Path

import pyarrow.compute as pc

from raypipe.config import load_config
from raypipe.io import storage
from raypipe.io.readers import read_file

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_reads_every_sample_record_text_or_html():
    cfg = load_config(ROOT / "examples" / "demo.yaml")
    paths = [str(ROOT / p) for p in cfg.input.paths]
    html = total = 0
    for index, (uri, *_) in enumerate(storage.expand(paths)):
        for batch in read_file(uri, index, cfg.input, 256):
            total += batch.num_rows
            assert batch["reason"].null_count == batch.num_rows, uri  # no read rejects
            if "html" in batch.column_names:
                html += batch.num_rows - pc.sum(pc.is_null(batch["html"])).as_py()
    assert total > 400 and html >= 100  # the handbook and Python docs pages are HTML
