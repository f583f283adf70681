/* local_laplacian.cpp — Local Laplacian filter (docs/apps.md §7, the spec's
 * semantics, not the generated code's border defects) in Halide.
 *
 * img_colour u16 [3][R+4][C+4] (BGR, 2-pixel zero ghost border) -> u16 [3][R][C].
 * L = 8 pyramid levels, K = 8 intensity levels; alpha, beta are the last two pipeline
 * parameters (floats). Every level-l stage covers [0,R_l+3]x[0,C_l+3] and is 0 outside
 * its Case box, written here as selects on the coordinates.
 */
#include "halide/halide_app.h"

#include <algorithm>
#include <map>

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
    std::map<std::string, Func> passes; /* the pyrDown/pyrUp passes by name, for the schedule */
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
        passes[dx.name()] = dx;
        passes["E_" + n] = e;
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
        passes[ux.name()] = ux;
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
    /* Hand schedule. Halide's own apps/local_laplacian CPU schedule (pyramid levels 1..4
     * at root with every x-pass and gP_0 inlined, the output pyramid per output row in
     * strips) measured 1.2-1.5x slower than Halide 14's Mullapudi2016 here: inlining both
     * passes of the 4x4 pyrDown evaluates gP_0 (eight LUT lookups per pixel) four times
     * per pixel. This one takes the placement Mullapudi2016 chooses, plus a sliding
     * window for gP_0:
     *  - the remap LUT and the grey image at root;
     *  - every pyrDown at root with its row pass (Dx) computed per output row; gP_1 in
     *    parallel strips of 16 rows with gP_0 computed one row at a time into a buffer
     *    kept for the strip, so each gP_0 value is computed once (Mullapudi2016 inlines
     *    it into Dx_gP1: twice, rows 2x-3..2x for row x); the processed pyramid loops
     *    over k inside each row (one row of the finer level feeds all eight k),
     *    parallel over rows; the small levels 5..7 parallel over k;
     *  - the Laplacian levels lP and the upsampled gP levels inlined into outL (two
     *    data-dependent gathers per level), the output pyramid levels 2..6 at root;
     *  - the output in 256x256 tiles parallel over tile rows, the channels inside a tile
     *    (so outG_0 and outG_1, computed per tile with their row passes, are shared by
     *    the three channels), vectorized along the columns. */
    out->schedule_hand = [=](const Target &, int vec) mutable {
        Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
        auto lanes = [&](int l) { return (int)std::min<int64_t>(vec, (C >> l) + 4); };
        auto P = [&](const std::string &n) { return passes.at(n); };
        remap.compute_root().bound(r, -2048, 4096).vectorize(r, vec);
        gray.compute_root().parallel(x).vectorize(y, vec);
        for (int j = 1; j < L; j++) {
            std::string in = "inG" + std::to_string(j), gp = "gP" + std::to_string(j);
            Func dxi = P("Dx_" + in), dxg = P("Dx_" + gp);
            inG[j].compute_root().parallel(x).vectorize(y, lanes(j));
            dxi.compute_at(inG[j], x).vectorize(y, lanes(j - 1));
            /* Built with implicit arguments: the k dimension is named _0. */
            Var kk = gP[j].args()[2];
            if (j == 1) {
                /* gP_0 (through a wrapper: outL_0 reads it inlined too) computed one row at
                 * a time for strips of 16 rows of gP_1, in a buffer of 4 rows (folded: Halide
                 * does not fold it itself through the edge clamp; unfolded it was a 1.7 MB
                 * allocation per strip, 81 a run): each value once,
                 * not twice (4-row windows at stride 2) or four times (inlined). */
                gP[j].compute_root().reorder(y, kk, x).split(x, xo, xi, std::min<int>(16, (int)(R >> 1)))
                    .parallel(xo).vectorize(y, lanes(j));
                dxg.compute_at(gP[j], xi).reorder(y, kk, x).vectorize(y, lanes(j - 1));
                gP[0].in(P("E_gP1")).store_at(gP[j], xo).compute_at(gP[j], xi).reorder(y, k, x)
                    .fold_storage(x, 4).vectorize(y, lanes(0));
            } else if (j <= 4) {
                gP[j].compute_root().reorder(y, kk, x).parallel(x).vectorize(y, lanes(j));
                dxg.compute_at(gP[j], x).reorder(y, kk, x).vectorize(y, lanes(j - 1));
            } else {
                gP[j].compute_root().parallel(kk).vectorize(y, lanes(j));
                dxg.compute_root().parallel(kk).vectorize(y, lanes(j - 1));
            }
        }
        for (int j = 4; j < L - 1; j++) {
            Func ux = P("Ux_gP" + std::to_string(j));
            ux.compute_root().parallel(ux.args()[2]).vectorize(y, lanes(j));
        }
        outL[L - 1].compute_root().parallel(x).vectorize(y, lanes(L - 1));
        for (int j = 2; j < L - 1; j++) {
            Func ux = P("Ux_outG" + std::to_string(j));
            outG[j].compute_root().parallel(x).vectorize(y, lanes(j));
            if (j == 2)
                ux.compute_at(outG[j], x).vectorize(y, lanes(j));
            else
                ux.compute_root().parallel(x).vectorize(y, lanes(j));
        }
        int tx = (int)std::min<int64_t>(256, R), ty = (int)std::min<int64_t>(256, C);
        res.compute_root().bound(c, 0, 3).split(y, yo, yi, ty).split(x, xo, xi, tx)
            .reorder(yi, xi, c, yo, xo).vectorize(yi, std::min(2 * vec, ty)).parallel(xo);
        for (int j = 0; j < 2; j++) {
            outG[j].compute_at(res, yo).vectorize(y, lanes(j));
            P("Ux_outG" + std::to_string(j)).compute_at(res, yo).vectorize(y, lanes(j));
        }
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
