/* interpolate.cpp — Multiscale interpolation (docs/apps.md §6) in Halide.
 *
 * img f32 [4][R+2][C+2] (RGBA, 1-pixel ghost border) -> out f32 [3][R][C]. L = 10 levels
 * of premultiplied-alpha downsampling, then upsampling that fills each level's holes from
 * the coarser one, then division by alpha. Every stage follows the spec's Case
 * conditions (value 0 outside the box), written as selects on the coordinates. Level l
 * has R_l = ceil(R / 2^l) rows and C_l = ceil(C / 2^l) columns, as in
 * samples/interpolate: any size from 1 x 1 is valid and fills every pixel.
 */
#include "halide/halide_app.h"

#include <algorithm>

using namespace Halide;

static bool build_interpolate(const HalideAppArgs &args, HalideAppInstance *out, std::string *err) {
    if (!halide_check_shapes("interpolate", args, 1, 1, {3}, {3}, err)) return false;
    int64_t R = args.in_shapes[0][1] - 2, C = args.in_shapes[0][2] - 2;
    const int L = 10;
    if (args.in_shapes[0][0] != 4 || R < 1 || C < 1 ||
        args.out_shapes[0] != std::vector<int64_t>{3, R, C}) {
        *err = "interpolate (Halide): expected img [4][R+2][C+2] with R, C >= 1 and out [3][R][C]";
        return false;
    }
    /* n / 2^l rounded up: the size of level l (docs/apps.md §6) */
    auto level = [](int64_t n, int l) { return (n + ((int64_t)1 << l) - 1) >> l; };
    ImageParam img(Float(32), 3, "img");
    Var x("x"), y("y"), c("c");
    auto box = [&](int64_t rmax, int64_t cmax) {
        return x >= 1 && x <= (int)rmax && y >= 1 && y <= (int)cmax;
    };

    /* D_0 is defined on [0,R+1]x[0,C+1], the whole img; every read of it below goes
     * through E[0], so Halide never asks for img outside the buffer. */
    Func D0("D_0");
    D0(y, x, c) = img(y, x, c) * img(y, x, 3);

    /* E[l]: level l seen through an edge clamp to its domain [0,R_l+1]x[0,C_l+1]. The
     * downsampling reads rows and columns 2x-2..2x, which at the discarded borders (x = 0,
     * x = R_l+1) fall outside the finer level; unclamped, Halide would widen every finer
     * level by those reads, and the widening doubles level by level (D_1 came out 1537 x
     * 1025 instead of 1282 x 770). The clamp changes no value the selects keep, and as
     * Halide's repeat_edge it costs nothing in the loops' interiors. */
    std::vector<Func> D(L), Dx(L), Ux(L), I(L), E(L);
    D[0] = D0;
    for (int l = 1; l < L; l++) {
        int64_t Rl = level(R, l), Cl = level(C, l), Cp = level(C, l - 1), Rp = level(R, l - 1);
        Dx[l] = Func("Dx_" + std::to_string(l));
        D[l] = Func("D_" + std::to_string(l));
        E[l - 1] = BoundaryConditions::repeat_edge(D[l - 1], {Range(0, (int)Cp + 2), Range(0, (int)Rp + 2),
                                                             Range(Expr(), Expr())});
        Func f = E[l - 1];
        Dx[l](y, x, c) = select(box(Rl, Cp),
                                (f(y, 2 * x - 2, c) + 2.0f * f(y, 2 * x - 1, c) + f(y, 2 * x, c)) * 0.25f,
                                0.0f);
        D[l](y, x, c) = select(box(Rl, Cl),
                               (Dx[l](2 * y - 2, x, c) + 2.0f * Dx[l](2 * y - 1, x, c) +
                                Dx[l](2 * y, x, c)) * 0.25f,
                               0.0f);
    }
    I[L - 1] = D[L - 1];
    for (int l = L - 2; l >= 0; l--) {
        int64_t Rl = level(R, l), Cl = level(C, l), Cn = level(C, l + 1);
        Ux[l] = Func("Ux_" + std::to_string(l));
        I[l] = Func("interpolated_" + std::to_string(l));
        Func f = I[l + 1];
        Ux[l](y, x, c) = select(box(Rl, Cn), (f(y, (x + 1) / 2, c) + f(y, (x + 2) / 2, c)) / 2.0f, 0.0f);
        I[l](y, x, c) = select(box(Rl, Cl),
                               D[l](y, x, c) + (1.0f - D[l](y, x, 3)) *
                                                   (Ux[l]((y + 1) / 2, x, c) + Ux[l]((y + 2) / 2, x, c)) / 2.0f,
                               0.0f);
    }
    Func res("interpolate");
    res(y, x, c) = I[0](y + 1, x + 1, c) / I[0](y + 1, x + 1, 3);

    out->inputs = {img};
    out->outputs = {res};
    out->out_regions = {{}};
    /* Hand schedule, after Halide's own apps/interpolate CPU schedule (v14.0.0), which has
     * the same level-by-level structure:
     *  - the downsampled levels 1..L-2 at root, in parallel strips of 8 rows, channels
     *    inside the rows, vectorized along the columns; their x-pass Dx inlined;
     *  - D_0 (the premultiply) is not stored whole: a clone of it feeds Dx_1 and is
     *    recomputed per row of D_1 (sliding window over the strip);
     *  - the output in parallel strips of 32 rows, channels unrolled inside a vector of
     *    columns; every interpolated level 1..L-1 (and the coarsest D, which is it) is
     *    computed per output row and kept for the strip (sliding window), Ux inlined,
     *    interpolated_0 inlined into the division.
     * Differences from Halide's app: PolyMage's definition has a 1-pixel ghost frame and
     * zero-valued Case borders at every level (the selects), and its coarsest level is D
     * itself; neither changes where things are computed. */
    out->schedule_hand = [=](const Target &, int vec) mutable {
        Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
        auto lanes = [&](int64_t cols) { return (int)std::min<int64_t>(vec, cols + 2); };
        for (int l = 1; l < L - 1; l++)
            D[l].compute_root().bound(c, 0, 4).reorder(y, c, x).split(x, xo, xi, 8).parallel(xo)
                .vectorize(y, lanes(level(C, l)));
        D[0].clone_in(E[0]).store_at(D[1], xo).compute_at(D[1], xi).reorder(c, y, x).unroll(c)
            .vectorize(y, lanes(C));
        int strip = (int)std::min<int64_t>(32, R);
        int v = (int)std::min<int64_t>(vec, C);
        res.bound(c, 0, 3).split(y, yo, yi, v).split(x, xo, xi, strip).reorder(yi, c, yo, xi, xo)
            .unroll(c).vectorize(yi).parallel(xo);
        for (int l = 1; l < L; l++)
            I[l].store_at(res, xo).compute_at(res, xi).vectorize(y, lanes(level(C, l)));
    };
    return true;
}

static void standalone_interpolate(int64_t rows, int64_t cols, HalideAppArgs *a) {
    a->params = {PM_I(rows), PM_I(cols)};
    a->in_shapes = {{4, rows + 2, cols + 2}};
    a->out_shapes = {{3, rows, cols}};
}

extern const HalideAppEntry halide_app_interpolate = {"interpolate", build_interpolate,
                                                      standalone_interpolate, nullptr, 512, 512};
