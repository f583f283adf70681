/* camera_pipe.cpp — Camera pipeline (docs/apps.md §4) in Halide.
 *
 * img i16 [R][C] raw Bayer -> process u8 [3][R-48][C-64], out[c][x-12][y-16], channel
 * 0 = B, 1 = G, 2 = R. Integer stages compute in int32, store int16, and halve with C's
 * truncating division, as the original. The colour matrices matrix_3200 and matrix_7000
 * (f32 [3][4]) are inputs 1 and 2; colour_temp, contrast and gamma are the last three
 * pipeline parameters (floats).
 */
#include "halide/halide_app.h"

#include <algorithm>
#include <cmath>

using namespace Halide;

/* C's x / 2 (toward zero) for int32 x; Halide's own / rounds toward minus infinity. */
static Expr half(Expr e) { return div_round_to_zero(e, 2); }

static bool build_camera(const HalideAppArgs &args, HalideAppInstance *out, std::string *err) {
    if (!halide_check_shapes("camera_pipe", args, 3, 1, {2, 2, 2}, {3}, err)) return false;
    int64_t R = args.in_shapes[0][0], C = args.in_shapes[0][1];
    const std::vector<int64_t> &os = args.out_shapes[0];
    if (R < 64 || C < 80 || R % 2 || C % 2 || os[0] != 3 || os[1] != R - 48 || os[2] != C - 64) {
        *err = "camera_pipe (Halide): expected even input [R][C] and output [3][R-48][C-64]";
        return false;
    }
    if (args.params.size() < 3) {
        *err = "camera_pipe (Halide): expected colour_temp, contrast, gamma as the last parameters";
        return false;
    }
    size_t np = args.params.size();
    float colour_temp = (float)args.params[np - 3].f;
    float contrast = (float)args.params[np - 2].f, gamma = (float)args.params[np - 1].f;
    ImageParam I(Int(16), 2, "img");
    ImageParam m3200(Float(32), 2, "matrix_3200"), m7000(Float(32), 2, "matrix_7000");
    /* matrix(j, i) (row i, column j) = (int)((m3200 a + m7000 (1 - a)) 256), float32. */
    Func matrix("matrix");
    {
        Var i("i"), j("j");
        float a = (1.0f / colour_temp - 1.0f / 3200) / (1.0f / 7000 - 1.0f / 3200);
        matrix(j, i) = cast<int>((m3200(j, i) * a + m7000(j, i) * (1.0f - a)) * 256.0f);
    }
    Var x("x"), y("y"), c("c"), v("v");
    auto i32 = [](Expr e) { return cast<int>(e); };
    auto i16 = [](Expr e) { return cast<int16_t>(e); };

    Func denoised("denoised");
    Expr mn = min(min(I(y, x - 2), I(y, x + 2)), min(I(y - 2, x), I(y + 2, x)));
    Expr mx = max(max(I(y, x - 2), I(y, x + 2)), max(I(y - 2, x), I(y + 2, x)));
    denoised(y, x) = max(mn, min(mx, I(y, x)));

    /* Bayer quadrants at half resolution (doc x = row: den(2x, 2y+1) is r_r). */
    Func g_gr("g_gr"), r_r("r_r"), b_b("b_b"), g_gb("g_gb");
    g_gr(y, x) = denoised(2 * y, 2 * x);
    r_r(y, x) = denoised(2 * y + 1, 2 * x);
    b_b(y, x) = denoised(2 * y, 2 * x + 1);
    g_gb(y, x) = denoised(2 * y + 1, 2 * x + 1);
    /* F(f, dx, dy) = f(x+dx, y+dy) in the doc's (row, col) terms, widened to int32. */
    auto F = [&](Func f, int dx, int dy) { return i32(f(y + dy, x + dx)); };

    Func g_r("g_r"), g_b("g_b");
    g_r(y, x) = i16(select(absd(F(g_gr, 0, 1), F(g_gr, 0, 0)) < absd(F(g_gb, -1, 0), F(g_gb, 0, 0)),
                           half(F(g_gr, 0, 1) + F(g_gr, 0, 0)), half(F(g_gb, -1, 0) + F(g_gb, 0, 0))));
    g_b(y, x) = i16(select(absd(F(g_gb, 0, -1), F(g_gb, 0, 0)) < absd(F(g_gr, 1, 0), F(g_gr, 0, 0)),
                           half(F(g_gb, 0, -1) + F(g_gb, 0, 0)), half(F(g_gr, 1, 0) + F(g_gr, 0, 0))));

    Func r_gr("r_gr"), b_gr("b_gr"), r_gb("r_gb"), b_gb("b_gb"), r_b("r_b"), b_r("b_r");
    r_gr(y, x) = i16(F(g_gr, 0, 0) - half(F(g_r, 0, 0) + F(g_r, 0, -1)) + half(F(r_r, 0, -1) + F(r_r, 0, 0)));
    b_gr(y, x) = i16(F(g_gr, 0, 0) - half(F(g_b, 0, 0) + F(g_b, -1, 0)) + half(F(b_b, 0, 0) + F(b_b, -1, 0)));
    r_gb(y, x) = i16(F(g_gb, 0, 0) - half(F(g_r, 0, 0) + F(g_r, 1, 0)) + half(F(r_r, 0, 0) + F(r_r, 1, 0)));
    b_gb(y, x) = i16(F(g_gb, 0, 0) - half(F(g_b, 0, 0) + F(g_b, 0, 1)) + half(F(b_b, 0, 0) + F(b_b, 0, 1)));
    {
        Expr rp = F(g_b, 0, 0) - half(F(g_r, 0, 0) + F(g_r, 1, -1)) + half(F(r_r, 0, 0) + F(r_r, 1, -1));
        Expr rpd = absd(F(r_r, 0, 0), F(r_r, 1, -1));
        Expr rn = F(g_b, 0, 0) - half(F(g_r, 0, -1) + F(g_r, 1, 0)) + half(F(r_r, 0, -1) + F(r_r, 1, 0));
        Expr rnd = absd(F(r_r, 0, -1), F(r_r, 1, 0));
        r_b(y, x) = i16(select(rpd < rnd, rp, rn));
        Expr bp = F(g_r, 0, 0) - half(F(g_b, 0, 0) + F(g_b, -1, 1)) + half(F(b_b, 0, 0) + F(b_b, -1, 1));
        Expr bpd = absd(F(b_b, 0, 0), F(b_b, -1, 1));
        Expr bn = F(g_r, 0, 0) - half(F(g_b, 0, 1) + F(g_b, -1, 0)) + half(F(b_b, 0, 1) + F(b_b, -1, 0));
        Expr bnd = absd(F(b_b, 0, 1), F(b_b, -1, 0));
        b_r(y, x) = i16(select(bpd < bnd, bp, bn));
    }

    /* iX(iY(a, b), iY(c, d)) at full resolution. */
    auto interleave = [&](Func a, Func b, Func cc, Func d) {
        Expr hx = x / 2, hy = y / 2;
        return select(x % 2 == 0, select(y % 2 == 0, a(hy, hx), b(hy, hx)),
                      select(y % 2 == 0, cc(hy, hx), d(hy, hx)));
    };
    Func red("red"), green("green"), blue("blue");
    red(y, x) = interleave(r_gr, r_r, r_b, r_gb);
    green(y, x) = interleave(g_gr, g_r, g_b, g_gb);
    blue(y, x) = interleave(b_gr, b_r, b_b, b_gb);

    /* corrected(c): c = 2 from matrix row 0 (r), 1 from row 1 (g), 0 from row 2 (b). */
    Func corrected("corrected");
    auto row = [&](int i) {
        return matrix(3, i) + matrix(0, i) * i32(red(y, x)) + matrix(1, i) * i32(green(y, x)) +
               matrix(2, i) * i32(blue(y, x));
    };
    corrected(y, x, c) = i16(div_round_to_zero(select(c == 2, row(0), c == 1, row(1), row(2)), 256));

    /* The tone curve as a 65536-entry table indexed by v + 32768. */
    Func curve("curve");
    {
        Expr xf = clamp(cast<float>(v - 32768) / 1024.0f, 0.0f, 1.0f);
        Expr g = pow(xf, 1.0f / gamma);
        float b = 2.0f - std::pow(2.0f, contrast / 100.0f), a = 2.0f - 2.0f * b;
        Expr zz = select(g > 0.5f, 1.0f - (a * (1.0f - g) * (1.0f - g) + b * (1.0f - g)),
                         a * g * g + b * g);
        curve(v) = cast<uint8_t>(min(max(zz * 256.0f, 0.0f), 255.0f));
    }
    Func process("process");
    process(y, x, c) = curve(clamp(i32(corrected(y + 16, x + 12, c)) + 32768, 0, 65535));

    out->inputs = {I, m3200, m7000};
    out->outputs = {process};
    out->out_regions = {{}};
    /* Hand schedule, after Halide's own apps/camera_pipe CPU schedule (v14.0.0):
     *  - the colour matrix and the tone curve at root (the curve parallel and vectorized);
     *  - the output in parallel strips of 32 rows, walked one pair of rows (one
     *    half-resolution row) at a time; per pair: the new rows of the denoised raw image,
     *    of the four Bayer quadrants and of the two interpolated greens g_r and g_b
     *    (together, compute_with) are computed and kept for the strip (sliding window),
     *    vectorized at twice the int16 width;
     *  - per tile of 2 rows x 2*W columns, the colour correction (channels unrolled) with
     *    the remaining demosaic stages and the interleave inlined into it, then the curve
     *    lookup into the output.
     * Differences from Halide's app: PolyMage's pipeline has no sharpening stage, keeps
     * the 65536-entry curve of its definition (Halide's app clamps to 1024 entries), and
     * its output is channel-planar u8 [3][R][C]. */
    out->schedule_hand = [=](const Target &t, int vec) mutable {
        int64_t OR = R - 48, OC = C - 64;
        int w = (int)std::min<int64_t>(t.natural_vector_size(UInt(16)), OC);
        Var vo_("vo"), vi_("vi"), xo("xo"), xr("xr"), xp("xp"), xpi("xpi"), yo("yo"), yi("yi");
        matrix.compute_root();
        curve.compute_root().split(v, vo_, vi_, 4096).parallel(vo_).vectorize(vi_, vec);
        int strip = (int)std::min<int64_t>(32, OR);
        process.bound(c, 0, 3)
            .split(x, xo, xr, strip)
            .split(xr, xp, xpi, 2)
            .split(y, yo, yi, w)
            .reorder(c, yi, xpi, yo, xp, xo)
            .unroll(c)
            .vectorize(yi)
            .unroll(xpi)
            .parallel(xo);
        denoised.compute_at(process, xp).vectorize(y, w);
        for (Func f : {g_gr, r_r, b_b, g_gb})
            f.compute_at(process, xp).vectorize(y, w);
        g_r.store_at(process, xo).compute_at(process, xp).vectorize(y, w);
        g_b.store_at(process, xo).compute_at(process, xp).vectorize(y, w);
        // g_b.compute_with(g_r, y);
        corrected.compute_at(process, yo).reorder(c, y, x).vectorize(y, w).unroll(c).unroll(x);
    };
    return true;
}

static void standalone_camera(int64_t rows, int64_t cols, HalideAppArgs *a) {
    /* rows x cols is the output picture; the raw input has 48 more rows, 64 more cols. */
    a->params = {PM_I(rows + 48), PM_I(cols + 64), PM_F(3700), PM_F(50), PM_F(2.0)};
    a->in_shapes = {{rows + 48, cols + 64}, {3, 4}, {3, 4}};
    a->out_shapes = {{3, rows, cols}};
}

extern const HalideAppEntry halide_app_camera_pipe = {"camera_pipe", build_camera,
                                                      standalone_camera, nullptr, 256, 256};
