import os
import subprocess

import pytest


@pytest.fixture
def c_text():
    """The canonical text of a pipeline built in C (python/tests/canon_text.c)."""
    tool = os.environ.get("PM_CANON_TEXT")
    if not tool:
        pytest.skip("PM_CANON_TEXT (build/python/pm_py_canon_text) not set: run through ctest")

    def get(name):
        return subprocess.run([tool, name], check=True, capture_output=True, text=True).stdout
    return get
