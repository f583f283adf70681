/* local_laplacian.cpp — Local Laplacian filter (polymage-apps.md §7, the spec's
 * semantics, not the generated code's border defects) in Halide.
 *
 * img_colour u16 [3][R+4][C+4] (BGR, 2-pixel zero ghost border) -> u16 [3][R][C].
 * L = 8 pyramid levels, K = 8 intensity levels; alpha, beta are the last two pipeline
 * parameters (floats). Every level-l stage covers [0,R_l+3]x[0,C_l+3] and is 0 outside
 * its Case box, written here as selects on the coordinates.
 */
#include "halide/halide_app.h"

#include <algorithm>

using namespace Halide;

static bool build_laplacian(const HalideAppArgs &args, HalideAppInstance *out, std::string *err) {
    if (!halide_check_shapes("local_laplacian", args, 1, 1, {3}, {3}, err)) return false;
    const int L = 8, K = 8;
    int64_t R = args.in_shapes[0][1] - 4, C = args.in_shapes[0][2] - 4;
    if (args.in_shapes[0][0] != 3 || (R >> (L - 1)) < 1 || (C >> (L - 1)) < 1 ||
        args.out_shapes[0] != std::vector<int64_t>{3, R, C} || args.params.size() < 2) {
        *err = "local_laplacian (Halide): expected img [3][R+4][C+4] (R, C >= 128), out [3][R][C], "
               "and alpha, beta as the last parameters";
        return false;
    }
    size_t np = args.params.size();
    float alpha = (float)args.params[np - 2].f, beta = (float)args.params[np - 1].f;

    ImageParam ic(UInt(16), 3, "img_colour");
    Var x("x"), y("y"), c("c"), k("k"), r("r");
    auto box = [&](int64_t rlo, int64_t rhi, int64_t clo, int64_t chi) {
        return x >= (int)rlo && x <= (int)rhi && y >= (int)clo && y <= (int)chi;
    };

    /* Grey, on [0,R+3]x[0,C+3] (the whole input; every read of it goes through an edge
     * clamp below, so no clamp here: a clamp of the vectorized coordinate would turn
     * every load of the input into a gather).
     * strict_float: the LUT index (int)(grey * 1792) is a step function of grey, so a
     * one-ulp change from a fused multiply-add in some vectorized schedules flipped
     * indices and moved outputs by ~50 LSB against the interpreter. */
    Func gray("img");
    gray(y, x) = strict_float((0.299f * cast<float>(ic(y, x, 2)) + 0.587f * cast<float>(ic(y, x, 1)) +
                               0.114f * cast<float>(ic(y, x, 0))) / 65535.0f);
    /* pyrDown / pyrUp with implicit trailing arguments (_) so they serve 2-D and k-indexed
     * 3-D pyramids alike. l is the level produced.
     * pyrDown reads rows and columns 2x-3..2x of the finer level; at the discarded borders
     * of its box that falls outside the finer level's domain [0,R_l+3]x[0,C_l+3]. Those
     * reads go through an edge clamp (Halide's repeat_edge, free in loop interiors):
     * unclamped, Halide would widen every finer level by them, doubling level by level.
     * No kept value changes. */
    auto pyr_down = [&](Func f, int l, const std::string &n) {
        int64_t Rl = R >> l, Cl = C >> l, Cp = C >> (l - 1), Rp = R >> (l - 1);
        Region dom = {Range(0, (int)Cp + 4), Range(0, (int)Rp + 4)};
        while ((int)dom.size() < f.dimensions()) dom.push_back(Range(Expr(), Expr()));
        Func e = BoundaryConditions::repeat_edge(f, dom);
        Func dx("Dx_" + n), d("D_" + n);
        dx(y, x, _) = select(box(2, Rl + 1, 2, Cp + 1),
                             (e(y, 2 * x - 3, _) + 3.0f * e(y, 2 * x - 2, _) +
                              3.0f * e(y, 2 * x - 1, _) + e(y, 2 * x, _)) * 0.125f,
                             0.0f);
        d(y, x, _) = select(box(2, Rl + 1, 2, Cl + 1),
                            (dx(2 * y - 3, x, _) + 3.0f * dx(2 * y - 2, x, _) +
                             3.0f * dx(2 * y - 1, x, _) + dx(2 * y, x, _)) * 0.125f,
                            0.0f);
        return d;
    };
    auto pyr_up = [&](Func f, int l, const std::string &n) {
        int64_t Rl = R >> l, Cl = C >> l, Cn = C >> (l + 1);
        Func ux("Ux_" + n), u("U_" + n);
        Expr hx = x / 2, hy = y / 2;
        ux(y, x, _) = select(box(2, Rl + 1, 2, Cn + 1),
                             select(x % 2 == 0, 0.25f * f(y, hx, _) + 0.75f * f(y, hx + 1, _),
                                    0.25f * f(y, hx + 2, _) + 0.75f * f(y, hx + 1, _)),
                             0.0f);
        u(y, x, _) = select(box(2, Rl + 1, 2, Cl + 1),
                            select(y % 2 == 0, 0.25f * ux(hy, x, _) + 0.75f * ux(hy + 1, x, _),
                                   0.25f * ux(hy + 2, x, _) + 0.75f * ux(hy + 1, x, _)),
                            0.0f);
        return u;
    };

    std::vector<Func> inG(L), gP(L), lP(L), outL(L), outG(L);
    inG[0] = gray;
    for (int l = 1; l < L; l++) inG[l] = pyr_down(inG[l - 1], l, "inG" + std::to_string(l));

    Func remap("remapLUT");
    {
        Expr fr = cast<float>(r) / 256.0f;
        remap(r) = alpha * fr * exp(-fr * fr / 2.0f);
    }
    gP[0] = Func("gP_0");
    {
        Expr idx = clamp(cast<int>(strict_float(gray(y, x) * 1792.0f)), 0, 1792);
        Expr kf = cast<float>(k) / 7.0f;
        gP[0](y, x, k) = beta * (gray(y, x) - kf) + kf + remap(idx - 256 * k);
    }
    for (int l = 1; l < L; l++) gP[l] = pyr_down(gP[l - 1], l, "gP" + std::to_string(l));
    lP[L - 1] = gP[L - 1];
    for (int l = 0; l < L - 1; l++) {
        Func up = pyr_up(gP[l + 1], l, "gP" + std::to_string(l));
        lP[l] = Func("lP_" + std::to_string(l));
        lP[l](y, x, k) = gP[l](y, x, k) - up(y, x, k);
    }
    for (int l = 0; l < L; l++) {
        outL[l] = Func("outL_" + std::to_string(l));
        Expr lev = 7.0f * inG[l](y, x);
        Expr li = clamp(cast<int>(lev), 0, K - 2);
        Expr lf = lev - cast<float>(li);
        outL[l](y, x) = (1.0f - lf) * lP[l](y, x, li) + lf * lP[l](y, x, li + 1);
    }
    outG[L - 1] = outL[L - 1];
    for (int l = L - 2; l >= 0; l--) {
        Func up = pyr_up(outG[l + 1], l, "outG" + std::to_string(l));
        outG[l] = Func("outG_" + std::to_string(l));
        outG[l](y, x) = up(y, x) + outL[l](y, x);
    }
    Func res("laplacian");
    {
        Expr X = x + 2, Y = y + 2;
        Expr v = outG[0](Y, X) * (cast<float>(ic(Y, X, c)) / 65535.0f + 0.01f) / (gray(Y, X) + 0.01f);
        res(y, x, c) = cast<uint16_t>(clamp(v, 0.0f, 1.0f) * 65535.0f);
    }

    out->inputs = {ic};
    out->outputs = {res};
    out->out_regions = {{}};
    /* Hand schedule, after Halide's own apps/local_laplacian CPU schedule (v14.0.0),
     * which has the same pyramids (8 levels, 8 intensity levels here):
     *  - the remap LUT and the grey image at root;
     *  - levels 1..4 of the input and processed Gaussian pyramids at root, parallel over
     *    strips of rows, the processed one stored with the intensity level k between the
     *    columns and the rows (k loops inside each row), vectorized along the columns;
     *    every x-pass (Dx) and gP_0 inlined;
     *  - levels 5..7 (a few thousand pixels) at root, the processed pyramid parallel
     *    over k;
     *  - the output in parallel strips of 64 rows; the output pyramid levels 1..4
     *    computed per output row and kept for the strip (sliding window), level 0 per
     *    output row; the Laplacians, outL and the upsampling passes inlined.
     * Differences from Halide's app: PolyMage's definition pads every level by two
     * pixels with zero-valued Case borders (the selects), uses a 4-tap (1 3 3 1)/8
     * pyrDown and a 2-tap (1/4, 3/4) pyrUp, and its output keeps the colour ratio
     * against the grey image; the Halide app's 2 threads-per-core and AVX2 choices
     * are machine-specific and not copied (this schedule uses the target's vectors). */
    out->schedule_hand = [=](const Target &, int vec) mutable {
        Var xo("xo"), xi("xi");
        auto lanes = [&](int l) { return (int)std::min<int64_t>(vec, (C >> l) + 4); };
        remap.compute_root().bound(r, -2048, 4096).vectorize(r, vec);
        gray.compute_root().split(x, xo, xi, 32).parallel(xo).vectorize(y, vec);
        for (int j = 1; j < L; j++) {
            if (j <= 4) {
                inG[j].compute_root().split(x, xo, xi, 32).parallel(xo).vectorize(y, lanes(j));
                /* Built with implicit arguments: the k dimension is named _0. */
                Var kk = gP[j].args()[2];
                gP[j].compute_root().reorder_storage(y, kk, x).reorder(y, kk, x).split(x, xo, xi, 8)
                    .parallel(xo).vectorize(y, lanes(j));
            } else {
                inG[j].compute_root().vectorize(y, lanes(j));
                gP[j].compute_root().parallel(gP[j].args()[2]).vectorize(y, lanes(j));
            }
        }
        for (int j = 1; j < L; j++) {
            if (j <= 4)
                outG[j].store_at(res, xo).compute_at(res, xi).vectorize(y, lanes(j));
            else if (j < L - 1)
                outG[j].compute_root().vectorize(y, lanes(j));
        }
        res.bound(c, 0, 3).reorder(c, y, x).split(x, xo, xi, 64).parallel(xo).unroll(c)
            .vectorize(y, std::min<int>(vec, (int)C));
        outG[0].compute_at(res, xi).vectorize(y, lanes(0));
    };
    return true;
}

static void standalone_laplacian(int64_t rows, int64_t cols, HalideAppArgs *a) {
    a->params = {PM_I(rows), PM_I(cols), PM_F(1.0 / 7), PM_F(1.0)};
    a->in_shapes = {{3, rows + 4, cols + 4}};
    a->out_shapes = {{3, rows, cols}};
}

extern const HalideAppEntry halide_app_local_laplacian = {"local_laplacian", build_laplacian,
                                                          standalone_laplacian, nullptr, 256, 256};
