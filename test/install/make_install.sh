#!/usr/bin/env bash
# make_install.sh — `make install` (ctest test_make_install): into a temporary build folder
# and prefix, with apt-get, dpkg-query and sudo on the PATH replaced by stubs that record
# being called and fail. It must configure, build and install without them (only
# `make build` installs packages) and build what it installs and nothing else: no test
# program, no fuzzer, no bench tool.
#
#   test/install/make_install.sh SOURCE_DIR [CMAKE_ARGS...]
#
# CMAKE_ARGS configure the temporary build folder first (ctest passes a Debug build type,
# quicker to compile); without them `make install` configures it itself.
set -euo pipefail
src=$(cd "$1" && pwd)
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pm-make-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset MAKEFLAGS MFLAGS MAKELEVEL
fail() { echo "make install test: $*" >&2; exit 1; }

mkdir -p "$tmp/stubs"
for tool in apt-get apt dpkg-query sudo; do
  printf '#!/bin/sh\necho "%s $*" >> "%s/called"\nexit 1\n' "$tool" "$tmp" > "$tmp/stubs/$tool"
  chmod +x "$tmp/stubs/$tool"
done
if [ $# -gt 0 ]; then
  cmake -S "$src" -B "$tmp/build" "$@" > "$tmp/configure.log" ||
    { cat "$tmp/configure.log" >&2; fail "configuring $tmp/build failed"; }
fi

echo "make install test: make install BUILD=$tmp/build PREFIX=$tmp/prefix"
PATH="$tmp/stubs:$PATH" make -C "$src" install BUILD="$tmp/build" PREFIX="$tmp/prefix" \
  JOBS="${PM_INSTALL_JOBS:-2}" > "$tmp/make.log" 2>&1 ||
  { tail -n 40 "$tmp/make.log" >&2; fail "make install failed"; }
if [ -f "$tmp/called" ]; then
  cat "$tmp/called" >&2
  fail "make install ran the package tools above"
fi

# Built: the installed targets and the internal archives they link, nothing else.
built=$(find "$tmp/build" -type f -perm -u+x \( -name 'test_*' -o -name pm_fuzz -o \
        -name pm_sweep -o -name pm_cache_bench -o -name pm_loadgen -o -name run_sample -o \
        -name serve \) | sed "s|$tmp/build/||")
[ -z "$built" ] || fail "make install built programs it does not install: $built"
[ -e "$tmp/prefix/include/polymage.h" ] || fail "not installed: include/polymage.h"
ls "$tmp"/prefix/lib*/libpolymage.* > /dev/null 2>&1 || fail "not installed: libpolymage"
for f in "$tmp/build/polymage" "$tmp/build/polymage-serve"; do
  name=$(basename "$f")
  if [ -e "$f" ] && [ ! -x "$tmp/prefix/bin/$name" ]; then
    fail "built but not installed: bin/$name"
  fi
done
if ls "$tmp"/build/python/polymage/_core*.so > /dev/null 2>&1; then
  ls "$tmp"/prefix/lib/python3*/dist-packages/polymage/_core*.so > /dev/null 2>&1 ||
    fail "built but not installed: the Python package polymage"
fi
echo "make install test: installed $(find "$tmp/prefix" -type f | wc -l) files; no test," \
  "no package tool"
