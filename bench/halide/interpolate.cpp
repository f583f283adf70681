/* interpolate.cpp — Multiscale interpolation (polymage-apps.md §6) in Halide.
 *
 * img f32 [4][R+2][C+2] (RGBA, 1-pixel ghost border) -> out f32 [3][R][C]. L = 10 levels
 * of premultiplied-alpha downsampling, then upsampling that fills each level's holes from
 * the coarser one, then division by alpha. Every stage follows the spec's Case
 * conditions (value 0 outside the box), written as selects on the coordinates.
 */
#include "halide/halide_app.h"

#include <algorithm>

using namespace Halide;

static bool build_interpolate(const HalideAppArgs &args, HalideAppInstance *out, std::string *err) {
    if (!halide_check_shapes("interpolate", args, 1, 1, {3}, {3}, err)) return false;
    int64_t R = args.in_shapes[0][1] - 2, C = args.in_shapes[0][2] - 2;
    const int L = 10;
    if (args.in_shapes[0][0] != 4 || (R >> (L - 1)) < 1 || (C >> (L - 1)) < 1 ||
        args.out_shapes[0] != std::vector<int64_t>{3, R, C}) {
        *err = "interpolate (Halide): expected img [4][R+2][C+2] with R, C >= 512 and out [3][R][C]";
        return false;
    }
    ImageParam img(Float(32), 3, "img");
    Var x("x"), y("y"), c("c");
    auto box = [&](int64_t rmax, int64_t cmax) {
        return x >= 1 && x <= (int)rmax && y >= 1 && y <= (int)cmax;
    };

    /* D_0 is defined on [0,R+1]x[0,C+1]; the clamp only keeps the reads that the selects
     * below throw away inside the buffer (Halide evaluates both sides of a select). */
    Func D0("D_0");
    Expr cx = clamp(x, 0, (int)R + 1), cy = clamp(y, 0, (int)C + 1);
    D0(y, x, c) = img(cy, cx, c) * img(cy, cx, 3);

    std::vector<Func> D(L), Dx(L), Ux(L), I(L);
    D[0] = D0;
    for (int l = 1; l < L; l++) {
        int64_t Rl = R >> l, Cl = C >> l, Cp = C >> (l - 1);
        Dx[l] = Func("Dx_" + std::to_string(l));
        D[l] = Func("D_" + std::to_string(l));
        Func f = D[l - 1];
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
        int64_t Rl = R >> l, Cl = C >> l, Cn = C >> (l + 1);
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
    /* Hand schedule: each level's D and I at root (channels fused with rows for
     * parallelism), the x-passes Dx/Ux computed per row of their consumer, D_0 inlined
     * into Dx_1 and I_0, the division a pass of its own. */
    out->schedule_hand = [=](const Target &, int vec) mutable {
        Var t("t");
        auto root = [&](Func f, int64_t cols) {
            int v = (int)std::min<int64_t>(vec, std::max<int64_t>(cols, 1));
            f.compute_root().bound(c, 0, 4).fuse(x, c, t).parallel(t).vectorize(y, v);
        };
        for (int l = 1; l < L; l++) {
            root(D[l], C >> l);
            Dx[l].compute_at(D[l], t).vectorize(y, (int)std::min<int64_t>(vec, C >> (l - 1)));
        }
        /* Level 0 too: the output reads its alpha channel once per colour channel. */
        for (int l = L - 2; l >= 0; l--) {
            root(I[l], C >> l);
            Ux[l].compute_at(I[l], t).vectorize(y, (int)std::min<int64_t>(vec, C >> (l + 1)));
        }
        res.bound(c, 0, 3).fuse(x, c, t).parallel(t).vectorize(y, (int)std::min<int64_t>(vec, C));
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
