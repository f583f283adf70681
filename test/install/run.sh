#!/usr/bin/env bash
# run.sh — the install test (ctest test_install): installs the build into a temporary
# prefix, then builds and runs the consumer projects against that prefix only:
# examples/consumer-pkgconfig (make + pkg-config) and examples/consumer-cmake
# (find_package(PolyMage)) each JIT-compile a small pipeline, run it on libgomp threads
# and check the result against a plain C loop; examples/consumer-io (pkg-config, and
# PolyMage::polymage_io) writes and reads back a PNG. The installed polymage command and
# polymage-serve run from the prefix. The Python package, when it was built, imports from
# the prefix (PYTHONPATH into it, never the build tree) and compiles and runs a pipeline.
#
#   test/install/run.sh BUILD_DIR SOURCE_DIR [EXTRA_FLAGS]
#
# Both consumers link with --as-needed (the default of some distributions' compilers), so
# libgomp must come with libpolymage itself. EXTRA_FLAGS go to the consumers' compile and
# link (the sanitizer flags of an ASan build, whose libpolymage needs the sanitizer
# runtime in the program).
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) extra=${3:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pm-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
# Run from ctest inside `make test`: the consumers' make must not join that make's jobs.
unset MAKEFLAGS MFLAGS MAKELEVEL
fail() { echo "install test: $*" >&2; exit 1; }
step() { echo "install test: $*"; }

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" ||
  { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }

pc=$(find "$prefix" -name polymage.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || fail "no polymage.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in "$prefix/include/polymage.h" "$libdir/cmake/PolyMage/PolyMageConfig.cmake" \
         "$libdir/cmake/PolyMage/PolyMageConfigVersion.cmake" \
         "$libdir/cmake/PolyMage/PolyMageTargets.cmake"; do
  [ -f "$f" ] || fail "not installed: $f"
done
if [ -e "$libdir/libpolymage.so" ]; then
  shared=1
  [ -e "$libdir/libpolymage.so.0" ] || fail "libpolymage.so.0 (the SONAME link) not installed"
  readelf -d "$libdir/libpolymage.so" | grep -q 'RUNPATH\|RPATH' &&
    fail "the installed libpolymage.so keeps the build tree's RUNPATH"
else
  shared=0
  [ -f "$libdir/libpolymage.a" ] || fail "neither libpolymage.so nor libpolymage.a installed"
fi
grep -q -- '-L/usr/lib/llvm' "$pc" &&
  fail "polymage.pc adds -L/usr/lib/llvm-*: -lgomp could then find LLVM's libomp"
helper=$prefix/libexec/polymage/polymage-compile
[ -x "$helper" ] || fail "not installed: $helper (the compile helper)"
# consumer-cmake compiles in the helper: a shared library finds it next to itself (the
# build tree's, which ctest names, must not be found instead); a static one is told.
if [ $shared = 1 ]; then unset PM_COMPILE_HELPER; else export PM_COMPILE_HELPER=$helper; fi
export PKG_CONFIG_PATH=$libdir/pkgconfig
[ "$(pkg-config --variable=prefix polymage)" = "$prefix" ] ||
  fail "polymage.pc's prefix is $(pkg-config --variable=prefix polymage), not $prefix"
version=$(pkg-config --modversion polymage)
step "installed polymage $version ($([ $shared = 1 ] && echo shared || echo static)) in $libdir"

# The consumer must have loaded the installed library, not the build tree's, and (when
# it links isl itself: a static libpolymage) bind isl to libisl, not to the copy of isl
# that libLLVM-19 exports (isl_*@LLVM_19.1).
check_loaded() {
  if nm -D --undefined-only "$1" | grep -qE ' isl_[A-Za-z0-9_]*@LLVM'; then
    fail "$1 binds isl functions to libLLVM's copy of isl (libLLVM before libisl)"
  fi
  [ $shared = 1 ] || return 0
  local where
  where=$(ldd "$1" | sed -nE 's/^[[:space:]]*libpolymage\.so\.0 => ([^ ]+).*/\1/p')
  [ "$where" = "$libdir/libpolymage.so.0" ] ||
    fail "$1 loads libpolymage.so.0 from '${where:-nowhere}', not from $libdir"
}

# Runs a consumer, and fails when the dynamic linker bound any isl function of the
# process (the consumer's or libpolymage's) to libLLVM's copy of isl.
run_consumer() {
  rm -f "$tmp"/ld.*
  LD_DEBUG=bindings LD_DEBUG_OUTPUT="$tmp/ld" "$1"
  if awk '/binding file .* symbol .isl_/ && $4 !~ /libLLVM/ && $7 ~ /libLLVM/' \
       "$tmp"/ld.* | grep -m 3 .; then
    fail "$1: isl functions bound to libLLVM's copy of isl at run time"
  fi
}

step "examples/consumer-pkgconfig: make, with pkg-config --cflags --libs polymage"
mkdir -p "$tmp/pkgconfig"
make -s -C "$src/examples/consumer-pkgconfig" OUT="$tmp/pkgconfig" \
  CFLAGS="-O2 -Wall -Wextra -Werror $extra" LDFLAGS="-Wl,--as-needed $extra"
check_loaded "$tmp/pkgconfig/consumer"
run_consumer "$tmp/pkgconfig/consumer"

step "examples/consumer-cmake: cmake with find_package(PolyMage)"
cmake -S "$src/examples/consumer-cmake" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="-Wall -Wextra -Werror $extra" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,--as-needed $extra" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF > "$tmp/cmake.log" ||
  { cat "$tmp/cmake.log" >&2; fail "configuring examples/consumer-cmake failed"; }
found=$(sed -nE 's/^PolyMage_DIR:PATH=(.*)/\1/p' "$tmp/cmake/CMakeCache.txt")
[ "$found" = "$libdir/cmake/PolyMage" ] || fail "find_package(PolyMage) found '$found'"
cmake --build "$tmp/cmake" > "$tmp/cmake-build.log" ||
  { cat "$tmp/cmake-build.log" >&2; fail "building examples/consumer-cmake failed"; }
check_loaded "$tmp/cmake/consumer"
run_consumer "$tmp/cmake/consumer"
step "both consumers built against $prefix and ran"

# The image I/O component, when it was built: polymage_io.pc, PolyMage::polymage_io, and
# a program that writes and reads back a PNG built with each.
if [ -f "$libdir/pkgconfig/polymage_io.pc" ]; then
  step "examples/consumer-io: cc with pkg-config --cflags --libs polymage_io"
  [ -f "$prefix/include/polymage_io.h" ] || fail "not installed: polymage_io.h"
  # shellcheck disable=SC2046,SC2086
  cc -O2 -Wall -Wextra -Werror $extra "$src/examples/consumer-io/main.c" \
    $(pkg-config --cflags --libs polymage_io) -Wl,--as-needed -Wl,-rpath,"$libdir" $extra \
    -o "$tmp/consumer-io" ||
    fail "building examples/consumer-io failed"
  check_loaded "$tmp/consumer-io"
  (cd "$tmp" && "$tmp/consumer-io" "$tmp/io.png") || fail "examples/consumer-io failed"

  step "examples/consumer-io: cmake with find_package(PolyMage COMPONENTS io)"
  cmake -S "$src/examples/consumer-io" -B "$tmp/cmake-io" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="-Wall -Wextra -Werror $extra" \
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,--as-needed $extra" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    > "$tmp/cmake-io.log" ||
    { cat "$tmp/cmake-io.log" >&2; fail "configuring examples/consumer-io failed"; }
  cmake --build "$tmp/cmake-io" > "$tmp/cmake-io-build.log" ||
    { cat "$tmp/cmake-io-build.log" >&2; fail "building examples/consumer-io with CMake failed"; }
  check_loaded "$tmp/cmake-io/consumer-io"
  (cd "$tmp" && "$tmp/cmake-io/consumer-io" "$tmp/io-cmake.png") ||
    fail "examples/consumer-io (CMake) failed"
fi

# The commands, when they were built: they run from the prefix (no build tree's RUNPATH
# needed), the service answers on a free port and stops on SIGTERM.
if [ -e "$build/polymage" ]; then
  step "bin/polymage apps"
  "$prefix/bin/polymage" apps > "$tmp/apps.txt" || fail "the installed polymage failed"
  grep -q interpolate "$tmp/apps.txt" || fail "the installed polymage lists no apps"
fi
if [ -e "$build/serve" ]; then
  step "bin/polymage-serve --port 0, then SIGTERM"
  [ -x "$prefix/bin/polymage-serve" ] || fail "not installed: bin/polymage-serve"
  "$prefix/bin/polymage-serve" --port 0 > "$tmp/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    grep -q listening "$tmp/serve.log" && break
    sleep 0.1
  done
  grep -q "listening on http://127.0.0.1:" "$tmp/serve.log" ||
    { kill $pid; cat "$tmp/serve.log" >&2; fail "the installed polymage-serve did not listen"; }
  kill -TERM $pid
  wait $pid || fail "polymage-serve exited with $? on SIGTERM"
fi

# The Python package, when it was built: PYTHONPATH into the prefix only, run from $tmp;
# the extension must load the installed libpolymage (its $ORIGIN RUNPATH), not the build's.
if ls "$build"/python/polymage/_core*.so > /dev/null 2>&1; then
  python=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
  init=$(find "$prefix" -path '*/dist-packages/polymage/__init__.py' | head -n 1)
  [ -n "$init" ] || fail "the Python package polymage is not installed under $prefix"
  site=$(dirname "$(dirname "$init")")
  step "python: import polymage from $site, compile and run the Sobel filter"
  (cd "$tmp" && PYTHONPATH=$site PYTHONDONTWRITEBYTECODE=1 "${python:-/usr/bin/python3}" -c '
import os, sys, numpy as np, polymage as pm
from polymage import filters
assert pm.__file__.startswith(sys.argv[1]), pm.__file__
libs = {l.split()[-1] for l in open("/proc/self/maps") if "libpolymage.so" in l}
assert libs == {os.path.realpath(sys.argv[2] + "/libpolymage.so.0")}, libs
a = np.full((5, 7), 9, np.uint8)
out = pm.compile(filters.sobel(), {"R": 5, "C": 7})(a, R=5, C=7)
assert out.shape == (5, 7) and not out.any(), out
print("install test: polymage", pm.__version__, "from", pm.__file__)
' "$site" "$libdir") || fail "the installed Python package failed"
fi
