"""The Python fragments of docs/python.md and README.md run as written (each file's
fragments in order, in one namespace)."""
import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.mark.parametrize("doc", ["docs/python.md", "README.md"])
def test_fragments_run(doc):
    with open(os.path.join(ROOT, doc)) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks or doc == "README.md"
    ns = {}
    for code in blocks:
        exec(compile(code, doc, "exec"), ns)
