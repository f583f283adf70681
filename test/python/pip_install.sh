#!/usr/bin/env bash
# pip_install.sh — ctest test_python_pip: `pip install ./python` offline, as docs/python.md
# says, into a venv with the system's packages (NumPy), building the extension against the
# build tree's libpolymage (POLYMAGE_INCLUDE_DIR, POLYMAGE_LIB_DIR; python/setup.py). It
# builds from a copy of python/ so nothing is written into the source tree, then imports the
# venv's polymage (no PYTHONPATH) and compiles and runs a filter.
#
#   test/python/pip_install.sh PYTHON SOURCE_DIR BUILD_DIR
set -euo pipefail
python=$1 src=$(cd "$2" && pwd) build=$(cd "$3" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pm-pip-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "pip test: $*" >&2; exit 1; }
cp -r "$src/python" "$tmp/python"
rm -rf "$tmp/python/build" "$tmp"/python/*.egg-info
"$python" -m venv --system-site-packages "$tmp/v" || fail "python3 -m venv failed (python3-venv)"
unset PYTHONPATH
POLYMAGE_INCLUDE_DIR=$src/include POLYMAGE_LIB_DIR=$build PIP_NO_INDEX=1 \
  "$tmp/v/bin/pip" install -q --no-build-isolation "$tmp/python" > "$tmp/pip.log" 2>&1 ||
  { cat "$tmp/pip.log" >&2; fail "pip install failed"; }
cd "$tmp"
"$tmp/v/bin/python" -c '
import os, sys, numpy as np, polymage as pm
from polymage import filters
assert pm.__file__.startswith(sys.argv[1]), pm.__file__
libs = {l.split()[-1] for l in open("/proc/self/maps") if "libpolymage.so" in l}
assert libs == {os.path.realpath(sys.argv[2] + "/libpolymage.so.0")}, libs
a = np.arange(35, dtype=np.uint8).reshape(5, 7)
out = pm.compile(filters.hist_eq(), {"R": 5, "C": 7})(a, R=5, C=7)
assert out[0, 0] == 0 and out[4, 6] == 255, out
print("pip test: polymage", pm.__version__, "from", pm.__file__)
' "$tmp/v" "$build" || fail "the pip-installed package failed"
