#!/usr/bin/env bash
# install-deps.sh — installs the Debian 12 packages PolyMage-JIT needs, if any is missing.
# Idempotent and quiet when everything is present; safe to run before every build.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  llvm-19-dev            # LLVM C API + ORC LLJIT (libLLVM-19)
  libisl-dev             # sets, schedules, ASTs
  libsodium-dev          # BLAKE2b for the disk cache's kernel files
  libhalide14-0-dev      # the comparison in bench/
  graphviz               # `polymage explain` draws the grouped stage graph with dot
  universal-ctags        # scripts/check_function_length.sh: each function's first and last line
  cscope                 # scripts/check_call_graph.sh: the calls between runtime/*.c
  libpng-dev libjpeg62-turbo-dev  # polymage_io: PNG and JPEG (samples, serve, polymage)
  zlib1g-dev libzstd-dev libedit-dev libffi-dev libxml2-dev
  libgomp1               # OpenMP runtime that compiled kernels call
  libmicrohttpd-dev      # the HTTP image service, samples/serve
  python3-dev python3-numpy python3-pytest python3-setuptools python3-venv  # python/: the polymage package
  python3-dask python3-distributed  # polymage.dask: pipelines over dask arrays (tests on a LocalCluster)
  python3-opencv         # make bench-python: the OpenCV baselines
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-deps: not root and no sudo; please install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
