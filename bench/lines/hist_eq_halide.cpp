/* hist_eq_halide.cpp — samples/examples/hist_eq.c in Halide: the histogram, its running
 * sum (an update over 1..255), the cdf of the darkest pixel present (a reduction to a
 * single value) and the equalized pixel in i64, rounded down. The three reductions are
 * computed whole (HalideLines.root), which Halide needs as a schedule, not a definition. */
#include "halide_lines.h"

using namespace Halide;
using namespace Halide::ConciseCasts;

HalideLines halide_hist_eq()
{
    ImageParam in(UInt(8), 2, "in");
    Var x("x"), y("y"), v("v");
    RDom r(in), b(1, 255);
    Func hist("hist"), cdf("cdf"), cmin("cmin"), out("out");
    hist(v) = 0;
    hist(in(r.x, r.y)) += 1;
    cdf(v) = hist(v);
    cdf(b) = cdf(b-1) + hist(b);
    cmin() = Int(32).max();
    cmin() = min(cmin(), cdf(in(r.x, r.y)));
    Expr lo = i64(cmin()), n = i64(in.width())*in.height();
    out(x, y) = u8((i64(cdf(in(x, y))) - lo)*255 / max(n - lo, 1));
    return {in, out, {hist, cdf, cmin}};
}
