/* unsharp_mask.cpp — Unsharp mask (docs/apps.md §1) in Halide.
 *
 * img f32 [3][R+4][C+4] with a zero ghost border of 2 -> mask f32 [3][R][C],
 * out[c][x-2][y-2]. Parameters (pipeline order): R, C, threshold, weight.
 */
#include "halide/halide_app.h"

#include <algorithm>
#include <cmath>

using namespace Halide;

static bool build_unsharp(const HalideAppArgs &args, HalideAppInstance *out, std::string *err) {
    if (!halide_check_shapes("unsharp_mask", args, 1, 1, {3}, {3}, err)) return false;
    if (args.params.size() != 4) {
        *err = "unsharp_mask (Halide): expected 4 parameters (R, C, threshold, weight)";
        return false;
    }
    ImageParam img(Float(32), 3, "img");
    Param<float> threshold("threshold"), weight("weight");
    threshold.set((float)args.params[2].f);
    weight.set((float)args.params[3].f);
    /* Adams2019 insists on an estimate for every scalar parameter too. */
    threshold.set_estimate((float)args.params[2].f);
    weight.set_estimate((float)args.params[3].f);
    Var x("x"), y("y"), c("c");

    /* 1-4-6-4-1 / 16 with the constants folded and summed left to right, as generated. */
    Func blurx("blurx"), blury("blury"), sharpen("sharpen"), mask("mask"), res("unsharp");
    blurx(y, x, c) = img(y, x - 2, c) * 0.0625f + img(y, x - 1, c) * 0.25f +
                     img(y, x, c) * 0.375f + img(y, x + 1, c) * 0.25f +
                     img(y, x + 2, c) * 0.0625f;
    blury(y, x, c) = blurx(y - 2, x, c) * 0.0625f + blurx(y - 1, x, c) * 0.25f +
                     blurx(y, x, c) * 0.375f + blurx(y + 1, x, c) * 0.25f +
                     blurx(y + 2, x, c) * 0.0625f;
    sharpen(y, x, c) = img(y, x, c) * (1 + weight) - blury(y, x, c) * weight;
    mask(y, x, c) = select(abs(img(y, x, c) - blury(y, x, c)) < threshold, img(y, x, c),
                           sharpen(y, x, c));
    /* The output buffer is indexed from 0: out[c][x-2][y-2]. */
    res(y, x, c) = mask(y + 2, x + 2, c);

    out->inputs = {img};
    out->outputs = {res};
    out->out_regions = {{}};
    /* Hand schedule. Halide's own apps/unsharp CPU schedule (strips of 32 rows, the
     * channels inside each row, the blur across rows computed a whole row at a time)
     * measured 1.04-1.17x (1 thread) and 1.08-1.83x (2 threads) Adams2019's time here:
     * every row is 8 KiB, and the five input rows, blurx's and the output's overflow
     * Zen 4's 32 KiB L1 for every output row. This one works in blocks as Adams2019 does:
     *  - the output in parallel strips of 64 rows, each channel in turn within a strip
     *    (the channels are separate planes: one plane's rows stream at a time), each row
     *    in pieces of 512 columns, vectorized along the columns;
     *  - the blur across rows (blurx) computed per piece (one row, 516 columns: each
     *    value once, no sliding window needed since an output row reads one blurx row),
     *    the blur along the row, sharpen and the threshold test inlined into the output;
     *    5 input pieces + blurx + output = 14 KiB, within L1.
     * Measured against 256 columns (Adams2019's choice): 512 was 4-20% faster.
     * Halide's app blurs a grey image and scales the colour by a ratio; PolyMage's unsharp
     * mask blurs each channel. */
    out->schedule_hand = [=](const Target &, int vec) mutable {
        Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
        int64_t R = args.out_shapes[0][1], C = args.out_shapes[0][2];
        int tx = (int)std::min<int64_t>(64, R), ty = (int)std::min<int64_t>(512, C);
        int v = (int)std::min<int64_t>(vec, ty);
        res.bound(c, 0, 3).split(x, xo, xi, tx).split(y, yo, yi, ty).reorder(yi, yo, xi, c, xo)
            .parallel(xo).vectorize(yi, v);
        blurx.compute_at(res, yo).vectorize(y, v);
    };
    return true;
}

static void standalone_unsharp(int64_t rows, int64_t cols, HalideAppArgs *a) {
    a->params = {PM_I(rows), PM_I(cols), PM_F(0.001), PM_F(3.0)};
    a->in_shapes = {{3, rows + 4, cols + 4}};
    a->out_shapes = {{3, rows, cols}};
}

static double spot_unsharp(const HalideAppArgs &args, const std::vector<pm_buffer> &in,
                           const std::vector<pm_buffer> &out) {
    int64_t R = args.params[0].i, C = args.params[1].i;
    double thr = args.params[2].f, w = args.params[3].f;
    auto I = [&](int64_t c, int64_t x, int64_t y) { return pm_buffer_get(in[0], {c, x, y}); };
    const double k[5] = {1 / 16.0, 4 / 16.0, 6 / 16.0, 4 / 16.0, 1 / 16.0};
    int64_t pts[][3] = {{0, 2, 2}, {1, R + 1, C + 1}, {2, 2, C + 1}, {2, R / 2 + 1, C / 3 + 2}};
    double worst = 0;
    for (auto &p : pts) {
        double bl = 0;
        for (int j = 0; j < 5; j++) {
            double bx = 0;
            for (int i = 0; i < 5; i++) bx += k[i] * I(p[0], p[1] + i - 2, p[2] + j - 2);
            bl += k[j] * bx;
        }
        double v = I(p[0], p[1], p[2]);
        double want = std::fabs(v - bl) < thr ? v : v * (1 + w) - bl * w;
        worst = std::max(worst, std::fabs(want - pm_buffer_get(out[0], {p[0], p[1] - 2, p[2] - 2})));
    }
    return worst;
}

extern const HalideAppEntry halide_app_unsharp_mask = {"unsharp_mask", build_unsharp,
                                                       standalone_unsharp, spot_unsharp, 256,
                                                       256};
