"""Leak check (not a pytest test: it takes about a minute): N compile+run calls of one
pipeline (cache hits after the first) plus 100 distinct sizes, printing RSS after the first
1,000 calls and at the end (issue 40: at most 5 MB more). Run:
    PYTHONPATH=build/python /usr/bin/python3 python/tests/rss_loop.py [N]"""
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
    for i in range(n):
        pm.compile(p, {"R": 64, "C": 64})(a, R=64, C=64)
        pm.Pipeline.from_text(p.text) if i % 10 == 0 else None
        if i == 999:
            base = rss_mb()
            print(f"after 1000 calls: {base:.1f} MB")
    jit = pm.default_jit()
    jit.set_policy(max_kernels=16)
    for s in range(100):                      # 100 sizes, bucket ratio 2^(1/4): many compiles
        r = 16 + s
        b = np.ones((r, r), np.float32)
        pm.compile(p, {"R": r, "C": r})(b, R=r, C=r)
    end = rss_mb()
    print(f"after {n} calls and 100 sizes: {end:.1f} MB ({end - base:+.1f} MB)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10000)
