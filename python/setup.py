"""The extension polymage._core for pip (pyproject.toml), linked against a libpolymage
already built or installed, found, first that applies:
  - POLYMAGE_INCLUDE_DIR and POLYMAGE_LIB_DIR (the folders of polymage.h and
    libpolymage.so), e.g. a build tree: POLYMAGE_INCLUDE_DIR=$PWD/include
    POLYMAGE_LIB_DIR=$PWD/build;
  - pkg-config polymage (an installed prefix; PKG_CONFIG_PATH=PREFIX/lib/pkgconfig);
  - the compiler's default folders (/usr/local/include and /usr/local/lib).
The library's folder becomes the extension's RUNPATH, so it loads that libpolymage."""
import os
import subprocess

from setuptools import Extension, setup


def pkg_config(flag):
    try:
        out = subprocess.run(["pkg-config", flag, "polymage"], check=True,
                             capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return []
    return [w[2:] for w in out]


inc, lib = os.environ.get("POLYMAGE_INCLUDE_DIR"), os.environ.get("POLYMAGE_LIB_DIR")
include_dirs = [inc] if inc else pkg_config("--cflags-only-I")
library_dirs = [lib] if lib else pkg_config("--libs-only-L")
setup(ext_modules=[Extension(
    "polymage._core", ["src/module.c", "src/builder.c", "src/jit.c"],
    include_dirs=include_dirs, library_dirs=library_dirs, libraries=["polymage"],
    runtime_library_dirs=[os.path.abspath(d) for d in library_dirs],
    extra_compile_args=["-fvisibility=hidden"])])
