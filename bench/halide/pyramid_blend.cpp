/* pyramid_blend.cpp — Pyramid blending (docs/apps.md §5) in Halide.
 *
 * img1, img2 f32 [3][R][C], mask f32 [R][C] (R, C padded: 31 before, 29 after) ->
 * blend f32 [3][R-60][C-60], out[c][x-31][y-31]. L = 4 levels: Gaussian pyramids of both
 * images and the mask, Laplacian pyramids of the images, a per-level blend, a collapse.
 * No Case conditions: the output region only reads where every level is defined.
 */
#include "halide/halide_app.h"

#include <algorithm>

using namespace Halide;

static bool build_pyramid(const HalideAppArgs &args, HalideAppInstance *out, std::string *err) {
    if (!halide_check_shapes("pyramid_blend", args, 3, 1, {3, 3, 2}, {3}, err)) return false;
    int64_t R = args.in_shapes[0][1], C = args.in_shapes[0][2];
    const std::vector<int64_t> &os = args.out_shapes[0];
    if (R < 128 || C < 128 || args.in_shapes[1] != args.in_shapes[0] ||
        args.in_shapes[2] != std::vector<int64_t>{R, C} || os != std::vector<int64_t>{3, R - 60, C - 60}) {
        *err = "pyramid_blend (Halide): expected img1, img2 [3][R][C], mask [R][C], out [3][R-60][C-60]";
        return false;
    }
    const int L = 4;
    ImageParam img1(Float(32), 3, "img1"), img2(Float(32), 3, "img2"), mask(Float(32), 2, "mask");
    Var x("x"), y("y"), c("c");

    /* The helpers use Halide's implicit arguments (_) so one definition serves the
     * three-channel images and the one-channel mask. */
    auto down = [&](Func f, const std::string &n, std::vector<Func> *stages) {
        Func dx("Dx_" + n), dy("Dy_" + n);
        dx(y, x, _) = (f(y, 2 * x - 2, _) + 4.0f * f(y, 2 * x - 1, _) + 6.0f * f(y, 2 * x, _) +
                       4.0f * f(y, 2 * x + 1, _) + f(y, 2 * x + 2, _)) * 0.0625f;
        dy(y, x, _) = (dx(2 * y - 2, x, _) + 4.0f * dx(2 * y - 1, x, _) + 6.0f * dx(2 * y, x, _) +
                       4.0f * dx(2 * y + 1, x, _) + dx(2 * y + 2, x, _)) * 0.0625f;
        stages->push_back(dx);
        stages->push_back(dy);
        return dy;
    };
    auto up = [&](Func fd, const std::string &n, std::vector<Func> *stages) {
        Func ux("Ux_" + n), uy("Up_" + n);
        Expr hx = x / 2;
        ux(y, x, c) = select(x % 2 == 0,
                             (fd(y, hx - 1, c) + 6.0f * fd(y, hx, c) + fd(y, hx + 1, c)) * 0.125f,
                             (4.0f * fd(y, hx, c) + 4.0f * fd(y, hx + 1, c)) * 0.125f);
        Expr hy = y / 2;
        uy(y, x, c) = select(y % 2 == 0,
                             (ux(hy - 1, x, c) + 6.0f * ux(hy, x, c) + ux(hy + 1, x, c)) * 0.125f,
                             (4.0f * ux(hy, x, c) + 4.0f * ux(hy + 1, x, c)) * 0.125f);
        stages->push_back(ux);
        stages->push_back(uy);
        return uy;
    };

    std::vector<Func> downs, ups, others;
    /* Level 0 of each pyramid: the inputs, wrapped in Funcs so the helpers can call them. */
    std::vector<Func> G1(1, Func("G1_0")), G2(1, Func("G2_0")), GM(1, Func("M_0"));
    G1[0](y, x, c) = img1(y, x, c);
    G2[0](y, x, c) = img2(y, x, c);
    GM[0](y, x) = mask(y, x);
    for (int l = 1; l < L; l++) {
        G1.push_back(down(G1[l - 1], "1_" + std::to_string(l), &downs));
        G2.push_back(down(G2[l - 1], "2_" + std::to_string(l), &downs));
        GM.push_back(down(GM[l - 1], "m_" + std::to_string(l), &downs));
    }
    std::vector<Func> res(L);
    for (int l = 0; l < L; l++) {
        Func lap1("Lap1_" + std::to_string(l)), lap2("Lap2_" + std::to_string(l));
        if (l == L - 1) {
            lap1 = G1[l];
            lap2 = G2[l];
        } else {
            Func u1 = up(G1[l + 1], "1_" + std::to_string(l), &ups);
            Func u2 = up(G2[l + 1], "2_" + std::to_string(l), &ups);
            lap1(y, x, c) = G1[l](y, x, c) - u1(y, x, c);
            lap2(y, x, c) = G2[l](y, x, c) - u2(y, x, c);
        }
        res[l] = Func("Res_" + std::to_string(l));
        res[l](y, x, c) = lap1(y, x, c) * GM[l](y, x) + lap2(y, x, c) * (1.0f - GM[l](y, x));
        others.push_back(res[l]);
    }
    std::vector<Func> col(L);
    col[L - 1] = res[L - 1];
    for (int l = L - 2; l >= 0; l--) {
        Func u = up(col[l + 1], "col_" + std::to_string(l), &ups);
        col[l] = Func("Col_" + std::to_string(l));
        col[l](y, x, c) = res[l](y, x, c) + u(y, x, c);
    }
    Func blend("blend");
    blend(y, x, c) = col[0](y + 31, x + 31, c);

    out->inputs = {img1, img2, mask};
    out->outputs = {blend};
    out->out_regions = {{}};
    /* Hand schedule. Halide ships no pyramid-blending app; this one uses the techniques
     * of its local_laplacian and interpolate schedules, which have the same pyramid
     * structure:
     *  - every Gaussian level (both images and the mask) at root, parallel over strips
     *    of 8 rows with the channels inside each row, vectorized along the columns; its
     *    x-pass Dx computed one row at a time and kept for the strip (sliding window);
     *  - the output in parallel strips of 32 rows, channels inside each row; the
     *    collapse levels 1 and 2 computed per output row and kept for the strip (sliding
     *    window), their upsampling, Laplacians and blends inlined; at level 0 the x-pass
     *    of each upsampling computed per output row, everything else inlined into the
     *    output. */
    out->schedule_hand = [=](const Target &, int vec) mutable {
        Var xo("xo"), xi("xi");
        int v = std::min<int>(vec, (int)(C - 60));
        for (size_t i = 0; i + 1 < downs.size(); i += 2) {
            Func dx = downs[i], dy = downs[i + 1];
            dy.compute_root();
            if (dy.dimensions() == 3) dy.reorder(y, dy.args()[2], x);
            dy.split(x, xo, xi, 8).parallel(xo).vectorize(y, vec);
            dx.store_at(dy, xo).compute_at(dy, xi).vectorize(y, vec);
        }
        blend.bound(c, 0, 3).reorder(y, c, x).split(x, xo, xi, 32).parallel(xo).vectorize(y, v);
        for (int l = 1; l <= 2; l++) col[l].store_at(blend, xo).compute_at(blend, xi).vectorize(y, vec);
        for (Func f : ups) {
            const std::string &n = f.name();
            bool level0 = n.size() > 2 && n.compare(n.size() - 2, 2, "_0") == 0;
            if (level0 && n.compare(0, 3, "Ux_") == 0) f.compute_at(blend, xi).vectorize(y, vec);
        }
        (void)others;
    };
    return true;
}

static void standalone_pyramid(int64_t rows, int64_t cols, HalideAppArgs *a) {
    a->params = {PM_I(rows + 60), PM_I(cols + 60)};
    a->in_shapes = {{3, rows + 60, cols + 60}, {3, rows + 60, cols + 60}, {rows + 60, cols + 60}};
    a->out_shapes = {{3, rows, cols}};
}

extern const HalideAppEntry halide_app_pyramid_blend = {"pyramid_blend", build_pyramid,
                                                        standalone_pyramid, nullptr, 256, 256};
