"""Leak check: N compile+run calls of one pipeline (cache hits after the first,
and every 10th call a pipeline rebuilt from the canonical text) plus 100 distinct sizes
(compiled per size bucket of the jit: a dozen compiles into a cache of at most 4 kernels,
so most are evicted), printing RSS after the first 1,000 calls and at the end; the bound
is at most 5 MB more. test_contract.py's test_rss_bound runs it in a process of its own
(so no other test's memory counts) and reads the last lines, "stats COMPILES EVICTIONS"
and "rss_mb BASE END". By hand:
    PYTHONPATH=build/python /usr/bin/python3 python/tests/rss_loop.py [N]
Kernels run on one thread: a small kernel split over two threads waits at its end for a
core, which another process may hold for a scheduler tick (milliseconds per call)."""
import sys

import numpy as np

import polymage as pm
from pipelines import blur3


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024


def main(n):
    p = blur3()
    a = np.random.default_rng(0).random((64, 64), dtype=np.float32)
    base = None
    for i in range(n):
        pm.compile(p, {"R": 64, "C": 64}, threads=1)(a, R=64, C=64)
        pm.Pipeline.from_text(p.text) if i % 10 == 0 else None
        if i == 999:
            base = rss_mb()
            print(f"after 1000 calls: {base:.1f} MB")
    jit = pm.default_jit()
    jit.set_policy(max_kernels=4)
    for s in range(100):                      # 100 sizes: a dozen compiles, 4 kernels kept
        r = 16 + s
        b = np.ones((r, r), np.float32)
        pm.compile(p, {"R": r, "C": r}, threads=1)(b, R=r, C=r)
    end = rss_mb()
    print(f"after {n} calls and 100 sizes: {end:.1f} MB ({end - base:+.1f} MB)")
    st = jit.stats()
    print(f"stats {st['sync_compiles']} {st['evictions']}")
    print(f"rss_mb {base:.3f} {end:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10000)
