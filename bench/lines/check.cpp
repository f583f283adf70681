/* check.cpp — pm_halide_lines: the Halide versions of the three example filters
 * (the _halide.cpp files of bench/lines, counted by docs/jit.md) compute exactly what the
 * examples compute (samples/examples, which test_examples holds to plain C loops): every
 * output byte equal, at sizes from 1 x 1 to 211 x 130, on noise, a narrow band and a flat
 * picture. Built with the bench (-DPM_BUILD_BENCH=ON); `make bench-quick` runs it. */
#include "halide_lines.h"

extern "C" {
#include "examples/examples.h"
}

#include <cstdio>
#include <cstring>
#include <vector>

typedef pm_status (*example_fn)(pm_jit *, const uint8_t *, uint8_t *, int64_t, int64_t,
                                pm_error *);

/* The input of one case: pattern 0 noise over 0..255, 1 a band of 20 levels, 2 flat. */
static std::vector<uint8_t> picture(size_t n, int64_t R, int64_t C, int pattern) {
    std::vector<uint8_t> in(n);
    unsigned s = (unsigned)(R * 977 + C * 31 + pattern);
    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        in[i] = pattern == 0 ? (uint8_t)(s >> 16) : pattern == 1 ? (uint8_t)(100 + (s >> 16) % 20)
                                                                 : 77;
    }
    return in;
}

/* Bytes of the Halide filter's output that differ from the example's at R x C. */
static size_t compare(pm_jit *jit, HalideLines &h, example_fn example, int channels, int64_t R,
                      int64_t C, int pattern) {
    size_t n = (size_t)(R * C * channels);
    std::vector<uint8_t> in = picture(n, R, C, pattern), want(n), got(n, 0xAB);
    pm_error err;
    if (example(jit, in.data(), want.data(), R, C, &err) != PM_OK) {
        fprintf(stderr, "example: %s\n", err.message);
        return n;
    }
    std::vector<int> shape = {(int)C, (int)R};
    if (channels == 3)
        shape.push_back(3);
    h.in.set(Halide::Buffer<uint8_t>(in.data(), shape));
    Halide::Buffer<uint8_t> out(got.data(), shape);
    h.out.realize(out);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += got[i] != want[i];
    return bad;
}

int main() {
    struct filter {
        const char *name;
        HalideLines (*halide)();
        example_fn example;
        int channels;
    } filters[] = {{"blur_rgb", halide_blur_rgb, blur_rgb, 3},
                   {"sobel", halide_sobel, sobel, 1},
                   {"hist_eq", halide_hist_eq, hist_eq, 1}};
    static const int64_t sizes[][2] = {{1, 1}, {2, 3}, {7, 5}, {64, 45}, {211, 130}};
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    if (!jit) {
        fprintf(stderr, "pm_halide_lines: %s\n", err.message);
        return 1;
    }
    int failed = 0;
    for (const filter &f : filters) {
        HalideLines h = f.halide();
        for (Halide::Func &g : h.root)
            g.compute_root();
        size_t bad = 0;
        for (const auto &s : sizes)
            for (int pattern = 0; pattern < 3; pattern++)
                bad += compare(jit, h, f.example, f.channels, s[0], s[1], pattern);
        printf("%s: Halide %s the example (%zu bytes differ)\n", f.name,
               bad ? "differs from" : "equals", bad);
        failed += bad != 0;
    }
    pm_jit_free(jit);
    return failed ? 1 : 0;
}
