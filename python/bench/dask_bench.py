"""polymage.dask on a large image: Harris over a 16384 x 16384 f32 picture made on the
workers, run by a distributed.LocalCluster of 1 worker process x 1 thread and one of 2
worker processes x 1 thread, against the single-process kernel (the same pipeline, a
whole-image kernel, at 2 threads, into an output made once and into a new output each
call) on the same picture in this process.

    PYTHONPATH=build/python /usr/bin/python3 python/bench/dask_bench.py [--quick]
        [--size N] [--chunk ROWSxCOLS] [--rounds N] [--runs N]

The picture is a dask array whose blocks are made by the workers from their own position
(a seeded random generator per block), persisted before any timing: no image crosses from
this process. A Dask run is map_pipeline(...).persist() until every output block is in
worker memory (the halo blocks' assembly included, as a user gets it), then released. The
four run in turn within each round (warm-up first: each worker compiles once, the second
loads the first's kernel from the shared disk cache), and all runs of all rounds are
pooled into the median and spread. One output block of each cluster is checked against
the single-process kernel's output (within 1e-5 relative: the whole kernel contracts
multiply-adds, a window form rounds as the interpreter does).

Called by make bench-python (bench.py) after the OpenCV cases; time it alone
(/work/shared/tools/timed).
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import polymage as pm
from polymage import apps

try:
    import dask.array as da
    import distributed
    import polymage.dask as pmd
except ImportError:                      # python3-dask python3-distributed (install-deps.sh)
    da = None

TARGET_SCALING = 1.6                     # 2 workers x 1 thread over 1 worker x 1 thread
TARGET_VS_KERNEL = 0.8                   # 2 workers x 1 thread over the kernel at 2 threads


def _block(seed, block_info=None):
    """One block of the picture, from its position alone (so any process makes the same)."""
    info = block_info[None]
    (r0, r1), (c0, c1) = info["array-location"]
    rng = np.random.default_rng([seed, r0, c0])
    return rng.random((r1 - r0, c1 - c0), dtype=np.float32)


def picture(n, chunk, seed=1):
    """The n x n picture as a dask array of chunk[0] x chunk[1] blocks made where they are
    computed."""
    return da.map_blocks(_block, seed, dtype=np.float32,
                         chunks=(_axis(n, chunk[0]), _axis(n, chunk[1])))


def _axis(n, chunk):
    return tuple([chunk] * (n // chunk) + ([n % chunk] if n % chunk else []))


def local_picture(n, chunk, seed=1):
    """The same picture as one NumPy array in this process."""
    out = np.empty((n, n), np.float32)
    for r in range(0, n, chunk[0]):
        for c in range(0, n, chunk[1]):
            loc = [(r, min(r + chunk[0], n)), (c, min(c + chunk[1], n))]
            out[loc[0][0]:loc[0][1], loc[1][0]:loc[1][1]] = _block(
                seed, {None: {"array-location": loc}})
    return out


class DaskRun:
    """A LocalCluster of `workers` processes x 1 thread holding the persisted picture."""

    def __init__(self, workers, n, chunk, cache_dir):
        self.name = f"dask {workers}x1"
        self.cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, memory_limit=0,
            dashboard_address=":0", silence_logs=40)
        self.client = distributed.Client(self.cluster, set_as_default=False)
        self.picture = self.client.persist(picture(n, chunk))
        self.wait(self.picture)
        self.pipeline, self.cache_dir = apps.build("harris"), cache_dir
        self.params = apps.params("harris", n, n)

    def output(self):
        return pmd.map_pipeline(self.pipeline, self.picture, cache_dir=self.cache_dir,
                                **self.params)

    def wait(self, collection):
        with self.client.as_current():   # distributed.wait asks for the current client
            distributed.wait(distributed.futures_of(collection))

    def run(self):
        out = self.client.persist(self.output())
        self.wait(out)
        del out

    def block(self, index):
        """One output block, computed on the cluster and brought here."""
        out = self.output()
        return self.client.compute(out.blocks[index]).result()

    def close(self):
        self.client.close()
        self.cluster.close()


def run(n=16384, chunk=(8192, 16384), rounds=3, runs=2, out=sys.stdout):
    """Times the three and prints a table and the targets; returns (ok, ratios)."""
    if da is None:
        print("dask: python3-dask and python3-distributed are not installed: skipped", file=out)
        return True, {}
    print(f"\nDask: Harris on a {n} x {n} f32 picture made on the workers, {chunk[0]} x {chunk[1]} "
          f"chunks; {rounds} rounds x {runs} runs, in turn; times in ms", file=out)
    with tempfile.TemporaryDirectory(prefix="pm-dask-bench-") as cache_dir:
        p = apps.build("harris")
        params = apps.params("harris", n, n)
        img = local_picture(n, chunk)
        result = np.zeros(p.output_shapes(**params)[0], np.float32)
        kernel = pm.compile(p, params, threads=2)
        # the kernel into one output made once (the strongest), and returning a new
        # output each call as a Dask task does (its pages are faulted in by the kernel)
        single = [("kernel 2 threads", lambda: kernel(img, out=result, **params)),
                  ("kernel, new output", lambda: kernel(img, **params))]
        clusters = [DaskRun(1, n, chunk, cache_dir), DaskRun(2, n, chunk, cache_dir)]
        try:
            impls = [(c.name, c.run) for c in clusters] + single
            times = {name: [] for name, _ in impls}
            for name, call in impls:                     # warm-up: compiles, first touches
                call()
            for _ in range(rounds):
                for name, call in impls:
                    for _ in range(runs):
                        t = time.perf_counter()
                        call()
                        times[name].append((time.perf_counter() - t) * 1e3)
            checks = []
            for c in clusters:
                at = [min(1, (n - 1) // c) for c in chunk]   # the second block, if any
                got = c.block(tuple(at))
                want = result[at[0] * chunk[0]:(at[0] + 1) * chunk[0],
                              at[1] * chunk[1]:(at[1] + 1) * chunk[1]]
                err = float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))
                checks.append((c.name, at, err <= 1e-5, err))
        finally:
            for c in clusters:
                c.close()
    print(f"{'implementation':18} {'median':>9} {'min':>9} {'max':>9}", file=out)
    med = {}
    for name, ts in times.items():
        med[name] = statistics.median(ts)
        print(f"{name:18} {med[name]:9.1f} {min(ts):9.1f} {max(ts):9.1f}", file=out)
    ok = True
    for name, at, good, err in checks:
        print(f"  check, {name} block {tuple(at)} against the kernel's output: "
              f"{'ok' if good else 'FAIL'} (largest relative difference {err:.2g})", file=out)
        ok &= good
    scaling = med["dask 1x1"] / med["dask 2x1"]
    vs_kernel = med["kernel 2 threads"] / med["dask 2x1"]
    vs_new = med["kernel, new output"] / med["dask 2x1"]
    return ok, {"scaling": scaling, "vs_kernel": vs_kernel, "vs_new": vs_new}


def report_targets(ratios, out=sys.stdout):
    if not ratios:
        return
    s, k = ratios["scaling"], ratios["vs_kernel"]
    print(f"  dask 2x1 over 1x1 >= {TARGET_SCALING:.1f}x: {s:.2f}x "
          f"{'met' if s >= TARGET_SCALING else 'MISSED'}", file=out)
    print(f"  dask 2x1 over the kernel at 2 threads >= {TARGET_VS_KERNEL:.1f}x: {k:.2f}x "
          f"{'met' if k >= TARGET_VS_KERNEL else 'MISSED'} (a new output each call: "
          f"{ratios['vs_new']:.2f}x)", file=out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a 1024 x 1024 picture: a smoke run")
    ap.add_argument("--size", type=int)
    ap.add_argument("--chunk", help="ROWSxCOLS (default: half the rows, every column)")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--runs", type=int)
    a = ap.parse_args(argv)
    n = a.size or (1024 if a.quick else 16384)
    chunk = tuple(int(v) for v in a.chunk.split("x")) if a.chunk else (n // 2, n)
    ok, ratios = run(n, chunk, a.rounds or (1 if a.quick else 3), a.runs or 2)
    print("\ntargets:")
    report_targets(ratios)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
