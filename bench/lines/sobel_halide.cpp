/* sobel_halide.cpp — samples/examples/sobel.c in Halide: the 3x3 Sobel derivatives across
 * the columns (x here) and down the rows in f32 on the edge-repeated image, and the
 * magnitude truncated and saturated into u8. */
#include "halide_lines.h"

using namespace Halide;
using namespace Halide::ConciseCasts;

HalideLines halide_sobel()
{
    ImageParam in(UInt(8), 2, "in");
    Var x("x"), y("y");
    Func e = BoundaryConditions::repeat_edge(in);
    Func f("f"), gx("gx"), gy("gy"), mag("mag");
    f(x, y) = f32(e(x, y));
    gx(x, y) = f(x+1, y-1) + 2*f(x+1, y) + f(x+1, y+1) - f(x-1, y-1) - 2*f(x-1, y) - f(x-1, y+1);
    gy(x, y) = f(x-1, y+1) + 2*f(x, y+1) + f(x+1, y+1) - f(x-1, y-1) - 2*f(x, y-1) - f(x+1, y-1);
    mag(x, y) = u8_sat(sqrt(gx(x, y)*gx(x, y) + gy(x, y)*gy(x, y)));
    return {in, mag, {}};
}
