/* membw.cpp — the triad bandwidth measurement (see membw.h). */
#include "membw.h"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

#include "isolate.h"

namespace {

/* [begin, end) of part `t` of n elements split over `threads`. */
void part(size_t n, int threads, int t, size_t *begin, size_t *end) {
    *begin = n * (size_t)t / (size_t)threads;
    *end = n * (size_t)(t + 1) / (size_t)threads;
}

template <typename F>
void run_parallel(int threads, const F &f) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; t++) pool.emplace_back(f, t);
    f(0);
    for (std::thread &th : pool) th.join();
}

} // namespace

double bench_triad_bandwidth(int threads, size_t array_bytes, int passes) {
    if (threads < 1) threads = 1;
    size_t n = array_bytes / sizeof(double);
    size_t bytes = n * sizeof(double);
    double *a = (double *)aligned_alloc(64, bytes);
    double *b = (double *)aligned_alloc(64, bytes);
    double *c = (double *)aligned_alloc(64, bytes);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        return 0;
    }
    /* First touch by the thread that will use the part (matters on NUMA hosts). */
    run_parallel(threads, [&](int t) {
        size_t lo, hi;
        part(n, threads, t, &lo, &hi);
        for (size_t i = lo; i < hi; i++) a[i] = 0, b[i] = 1.0, c[i] = 2.0;
    });
    const double s = 3.0;
    double best_ms = 0;
    for (int p = -1; p < passes; p++) { /* pass -1 is the warm-up */
        double t0 = bench_now_ms();
        run_parallel(threads, [&](int t) {
            size_t lo, hi;
            part(n, threads, t, &lo, &hi);
            double *__restrict pa = a;
            const double *__restrict pb = b, *__restrict pc = c;
            for (size_t i = lo; i < hi; i++) pa[i] = pb[i] + s * pc[i];
        });
        double ms = bench_now_ms() - t0;
        if (p >= 0 && (best_ms == 0 || ms < best_ms)) best_ms = ms;
    }
    bool ok = a[0] == 7.0 && a[n / 2] == 7.0 && a[n - 1] == 7.0;
    free(a), free(b), free(c);
    if (!ok || best_ms <= 0) return 0;
    return 3.0 * (double)bytes / (best_ms * 1e-3);
}
