"""examples/quickstart.ipynb runs top to bottom in a fresh kernel, as a user runs it."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

EXAMPLES = Path(__file__).parents[2] / "examples"
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_quickstart_notebook_executes(tmp_path):
    notebook = nbformat.read(EXAMPLES / "quickstart.ipynb", as_version=4)
    parameters = notebook.cells[1]
    assert parameters.source.startswith("# Parameters")
    parameters.source = f'OUTPUT = "{tmp_path / "out"}"'
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": EXAMPLES}}
    ).execute()
    outputs = {
        i: "".join(o.get("text", "") + str(o.get("data", {})) for o in cell.get("outputs", []))
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
    }
    assert "after quality" not in outputs[5] and "quality" in outputs[5]
    assert "'documents_in': 514" in outputs[7]
    assert "Rejected documents by reason" in outputs[9]
    assert "(" in outputs[11] and "uint16" in outputs[11]
    assert (tmp_path / "out" / "manifest.json").exists()
