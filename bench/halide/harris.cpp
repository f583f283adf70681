/* harris.cpp — Harris corner detection (docs/apps.md §3) in Halide.
 *
 * img f32 [R+2][C+2] -> harris f32 [R+2][C+2]; only x in [2,R-1], y in [2,C-1] is
 * written (the 2-pixel frame stays as it was), exactly like the PolyMage pipeline.
 * Every stage reads only inside the Case domains of the spec when the output is that
 * interior, so no boundary selects are needed.
 */
#include "halide/halide_app.h"

#include <algorithm>
#include <cmath>

using namespace Halide;

static bool build_harris(const HalideAppArgs &args, HalideAppInstance *out, std::string *err) {
    if (!halide_check_shapes("harris", args, 1, 1, {2}, {2}, err)) return false;
    int64_t R = args.in_shapes[0][0] - 2, C = args.in_shapes[0][1] - 2;
    if (R < 3 || C < 3) {
        *err = "harris (Halide): the image must be at least 5x5";
        return false;
    }
    ImageParam I(Float(32), 2, "img");
    Var x("x"), y("y");

    /* The spec's /12 folded into per-term constants, as in PolyMage's generated code. */
    const float a = 0.0833333333333f, b = 0.166666666667f;
    Func Iy("Iy"), Ix("Ix");
    Iy(y, x) = -a * I(y - 1, x - 1) + a * I(y + 1, x - 1) - b * I(y - 1, x) + b * I(y + 1, x) -
               a * I(y - 1, x + 1) + a * I(y + 1, x + 1);
    Ix(y, x) = -a * I(y - 1, x - 1) - b * I(y, x - 1) - a * I(y + 1, x - 1) + a * I(y - 1, x + 1) +
               b * I(y, x + 1) + a * I(y + 1, x + 1);
    Func Ixx("Ixx"), Iyy("Iyy"), Ixy("Ixy");
    Ixx(y, x) = Ix(y, x) * Ix(y, x);
    Iyy(y, x) = Iy(y, x) * Iy(y, x);
    Ixy(y, x) = Ix(y, x) * Iy(y, x);
    Func Sxx("Sxx"), Syy("Syy"), Sxy("Sxy");
    Expr sxx = 0.0f, syy = 0.0f, sxy = 0.0f;
    for (int i = -1; i <= 1; i++)
        for (int j = -1; j <= 1; j++) {
            sxx += Ixx(y + j, x + i);
            syy += Iyy(y + j, x + i);
            sxy += Ixy(y + j, x + i);
        }
    Sxx(y, x) = sxx;
    Syy(y, x) = syy;
    Sxy(y, x) = sxy;
    Func det("det"), trace("trace"), harris("harris");
    det(y, x) = Sxx(y, x) * Syy(y, x) - Sxy(y, x) * Sxy(y, x);
    trace(y, x) = Sxx(y, x) + Syy(y, x);
    harris(y, x) = det(y, x) - 0.04f * trace(y, x) * trace(y, x);

    out->inputs = {I};
    out->outputs = {harris};
    out->out_regions = {{{2, C - 2}, {2, R - 2}}};
    /* Hand schedule, after Halide's own apps/harris CPU schedule (v14.0.0): the output in
     * parallel strips of 32 rows, vectorized along the columns; Ix and Iy computed one row
     * at a time and kept for the strip (a sliding window of 3 rows each, in L1/L2), both
     * in one loop nest (compute_with); the products, box sums, det and trace inlined
     * into the output. Halide's app first converts RGB to gray (computed the same way);
     * PolyMage's harris reads a gray image, so that stage is absent here. */
    out->schedule_hand = [=](const Target &, int vec) mutable {
        Var xo("xo"), xi("xi");
        int strip = (int)std::min<int64_t>(32, R - 2), v = (int)std::min<int64_t>(vec, C - 2);
        harris.split(x, xo, xi, strip).parallel(xo).vectorize(y, v);
        Ix.store_at(harris, xo).compute_at(harris, xi).vectorize(y, v);
        Iy.store_at(harris, xo).compute_at(harris, xi).vectorize(y, v);
        Ix.compute_with(Iy, y);
    };
    return true;
}

static void standalone_harris(int64_t rows, int64_t cols, HalideAppArgs *a) {
    /* The benchmark passes rows-2 and cols-2: no padding around the picture. */
    a->params = {PM_I(rows - 2), PM_I(cols - 2)};
    a->in_shapes = {{rows, cols}};
    a->out_shapes = {{rows, cols}};
}

/* Direct formulas in double at a few points, including the interior's corners. */
static double spot_harris(const HalideAppArgs &args, const std::vector<pm_buffer> &in,
                          const std::vector<pm_buffer> &out) {
    int64_t R = args.in_shapes[0][0] - 2, C = args.in_shapes[0][1] - 2;
    auto I = [&](int64_t x, int64_t y) { return pm_buffer_get(in[0], {x, y}); };
    auto Ix = [&](int64_t x, int64_t y) {
        return (-I(x - 1, y - 1) - 2 * I(x - 1, y) - I(x - 1, y + 1) + I(x + 1, y - 1) +
                2 * I(x + 1, y) + I(x + 1, y + 1)) / 12.0;
    };
    auto Iy = [&](int64_t x, int64_t y) {
        return (-I(x - 1, y - 1) + I(x - 1, y + 1) - 2 * I(x, y - 1) + 2 * I(x, y + 1) -
                I(x + 1, y - 1) + I(x + 1, y + 1)) / 12.0;
    };
    int64_t pts[][2] = {{2, 2}, {2, C - 1}, {R - 1, 2}, {R - 1, C - 1}, {R / 2, C / 3}, {3, 7}};
    double worst = 0;
    for (auto &p : pts) {
        double sxx = 0, syy = 0, sxy = 0;
        for (int i = -1; i <= 1; i++)
            for (int j = -1; j <= 1; j++) {
                double gx = Ix(p[0] + i, p[1] + j), gy = Iy(p[0] + i, p[1] + j);
                sxx += gx * gx, syy += gy * gy, sxy += gx * gy;
            }
        double want = sxx * syy - sxy * sxy - 0.04 * (sxx + syy) * (sxx + syy);
        worst = std::max(worst, std::fabs(want - pm_buffer_get(out[0], {p[0], p[1]})));
    }
    /* The frame must be untouched (the harness zeroes outputs before a run). */
    worst = std::max(worst, std::fabs(pm_buffer_get(out[0], {0, 0})));
    worst = std::max(worst, std::fabs(pm_buffer_get(out[0], {R + 1, C})));
    return worst;
}

extern const HalideAppEntry halide_app_harris = {"harris", build_harris, standalone_harris,
                                                 spot_harris, 256, 256};
