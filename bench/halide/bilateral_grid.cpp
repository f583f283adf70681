/* bilateral_grid.cpp — Bilateral grid (docs/apps.md §2, the generated-code version).
 *
 * input f32 [R][C], the picture padded by 24 (top/left) and 32 (bottom/right) with
 * clamp-to-edge -> filtered f32 [R-56][C-56], out(x-24, y-24). sigma_s = 8, 1/sigma_r =
 * 10, as hard-coded in the original. Sizes come from the buffer shapes.
 */
#include "halide/halide_app.h"

#include <algorithm>

using namespace Halide;

static bool build_bilateral(const HalideAppArgs &args, HalideAppInstance *out, std::string *err) {
    if (!halide_check_shapes("bilateral_grid", args, 1, 1, {2}, {2}, err)) return false;
    int64_t R = args.in_shapes[0][0], C = args.in_shapes[0][1];
    if (R < 72 || C < 72 || args.out_shapes[0][0] != R - 56 || args.out_shapes[0][1] != C - 56) {
        *err = "bilateral_grid (Halide): expected input [R][C] (R, C >= 72) and output [R-56][C-56]";
        return false;
    }
    ImageParam input(Float(32), 2, "input");
    Var x("x"), y("y"), gx("gx"), gy("gy"), z("z"), c("c");

    /* grid: a 9x9 window centred on padded pixel (8gx, 8gy); z bin with +0.5 rounding.
     * Channel 0 sums the values, channel 1 counts them. The bin is clamped to the grid
     * only so Halide can bound the update; for inputs in [0, 1] it is 2..12 anyway. */
    Func grid("grid");
    grid(gy, gx, z, c) = 0.0f;
    RDom r(0, 9, 0, 9, "r"); /* r.y = i (rows, outer), r.x = j (cols, inner) */
    Expr p = input(8 * gy - 4 + r.x, 8 * gx - 4 + r.y);
    Expr zb = clamp(2 + cast<int>(p * 10.0f + 0.5f), 0, 14);
    grid(gy, gx, zb, c) += select(c == 0, p, 1.0f);

    /* 1-4-6-4-1, not normalised, over z, then gx, then gy. */
    Func blurz("blurz"), blurx("blurx"), blury("blury");
    blurz(gy, gx, z, c) = grid(gy, gx, z - 2, c) + 4.0f * grid(gy, gx, z - 1, c) +
                          6.0f * grid(gy, gx, z, c) + 4.0f * grid(gy, gx, z + 1, c) +
                          grid(gy, gx, z + 2, c);
    blurx(gy, gx, z, c) = blurz(gy, gx - 2, z, c) + 4.0f * blurz(gy, gx - 1, z, c) +
                          6.0f * blurz(gy, gx, z, c) + 4.0f * blurz(gy, gx + 1, z, c) +
                          blurz(gy, gx + 2, z, c);
    blury(gy, gx, z, c) = blurx(gy - 2, gx, z, c) + 4.0f * blurx(gy - 1, gx, z, c) +
                          6.0f * blurx(gy, gx, z, c) + 4.0f * blurx(gy + 1, gx, z, c) +
                          blurx(gy + 2, gx, z, c);

    /* Trilinear interpolation; no rounding of z here. zi is clamped to 0..10 only to
     * bound the reads (p in [0, 1] gives exactly that); at p = 1 the z = 13 read has
     * weight zf = 0, as in the original. */
    Func interpolated("interpolated");
    Expr v = input(y, x);
    Expr zv = v * 10.0f;
    Expr zi = clamp(cast<int>(zv), 0, 10);
    Expr zf = zv - cast<float>(zi);
    Expr xi = x / 8, yi = y / 8;
    Expr xf = cast<float>(x % 8) / 8.0f, yf = cast<float>(y % 8) / 8.0f;
    auto V = [&](int a, int b, int d) { return blury(yi + b, xi + a, 2 + zi + d, c); };
    auto lerp3 = [](Expr u, Expr w, Expr t) { return u + t * (w - u); };
    interpolated(y, x, c) =
        lerp3(lerp3(lerp3(V(0, 0, 0), V(1, 0, 0), xf), lerp3(V(0, 1, 0), V(1, 1, 0), xf), yf),
              lerp3(lerp3(V(0, 0, 1), V(1, 0, 1), xf), lerp3(V(0, 1, 1), V(1, 1, 1), xf), yf), zf);

    Func filtered("filtered");
    Expr X = x + 24, Y = y + 24;
    filtered(y, x) = select(interpolated(Y, X, 1) > 0.0f,
                            interpolated(Y, X, 0) / interpolated(Y, X, 1), input(Y, X));

    out->inputs = {input};
    out->outputs = {filtered};
    out->out_regions = {{}};
    /* Hand schedule. Halide's own apps/bilateral_grid CPU schedule (histogram per grid row
     * of blurz with a scalar 9x9 accumulation, blurx and blury at root parallel over z)
     * measured 1.14-1.56x slower than Halide 14's autoschedulers here; this one follows
     * the placement Mullapudi2016 chooses for this algorithm:
     *  - blurz at root, parallel over grid rows gx, vectorized along the grid columns gy;
     *    the histogram (grid) computed per grid row of blurz, its update vectorized along
     *    gy too: the 16 lanes are 16 grid columns, so their scattered bins never collide;
     *    the 9x9 window is walked with r.x (columns) inside r.y (rows) and the two
     *    channels unrolled innermost, so both scatters share one bin computation
     *    (Mullapudi2016 loops over the channels outermost: 0.98x against 1.03-1.07x of
     *    Mullapudi2016's time in one run);
     *  - blurx and blury computed per 256x256 tile of the output (a 33x33-cell piece of
     *    the grid plus its 2-cell halo, which stays in L2) instead of whole grids
     *    written to and read back from memory;
     *  - the output in 256x256 tiles parallel over tile rows, vectorized along the
     *    columns, the trilinear interpolation inlined (data-dependent gathers);
     *  - everything in vectors of at most 8 lanes (below). */
    out->schedule_hand = [=](const Target &, int vec) mutable {
        int64_t OR = R - 56, OC = C - 56;
        Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
        int tx = (int)std::min<int64_t>(256, OR), ty = (int)std::min<int64_t>(256, OC);
        /* At most 8 lanes: on Zen 4 (AVX-512) the 16-lane gathers and scatters of the
         * histogram and the output measured slower than 8-lane ones (profile, 1 thread:
         * histogram 14.5 -> 9.5 ms, output 27-35 -> 24-27 ms); 4 lanes were slower again. */
        int v = (int)std::min<int64_t>(std::min(vec, 8), ty);
        int gv = (int)std::min<int64_t>(std::min(vec, 8), OC / 8); /* within a grid row */
        filtered.compute_root().split(y, yo, yi, ty).split(x, xo, xi, tx).reorder(yi, xi, yo, xo)
            .vectorize(yi, v).parallel(xo);
        blurz.compute_root().bound(c, 0, 2).reorder(gy, z, c, gx).vectorize(gy, gv).parallel(gx);
        grid.compute_at(blurz, gx).bound(c, 0, 2).vectorize(gy, gv);
        Var gyo("gyo"), gyi("gyi");
        grid.update().split(gy, gyo, gyi, gv, TailStrategy::GuardWithIf)
            .reorder(gyi, c, gyo, r.x, gx, r.y).vectorize(gyi).unroll(c);
        blurx.compute_at(filtered, yo).bound(c, 0, 2).vectorize(gy, gv);
        blury.compute_at(filtered, yo).bound(c, 0, 2).vectorize(gy, gv);
    };
    return true;
}

static void standalone_bilateral(int64_t rows, int64_t cols, HalideAppArgs *a) {
    a->params = {PM_I(rows + 56), PM_I(cols + 56)};
    a->in_shapes = {{rows + 56, cols + 56}};
    a->out_shapes = {{rows, cols}};
}

extern const HalideAppEntry halide_app_bilateral_grid = {"bilateral_grid", build_bilateral,
                                                         standalone_bilateral, nullptr, 256, 256};
