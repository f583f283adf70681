/* blur_rgb_halide.cpp — samples/examples/blur_rgb.c in Halide: [1 4 6 4 1] down the rows
 * summed in u16, then along the columns, / 256 rounded down into u8; edges repeated. */
#include "halide_lines.h"

using namespace Halide;
using namespace Halide::ConciseCasts;

HalideLines halide_blur_rgb()
{
    ImageParam in(UInt(8), 3, "in");
    Var x("x"), y("y"), c("c");
    Func e = BoundaryConditions::repeat_edge(in);
    Func bx("bx"), by("by");
    bx(x, y, c) = u16(e(x, y-2, c)) + 4*u16(e(x, y-1, c)) + 6*u16(e(x, y, c)) +
                  4*u16(e(x, y+1, c)) + u16(e(x, y+2, c));
    by(x, y, c) = u8((bx(x-2, y, c) + 4*bx(x-1, y, c) + 6*bx(x, y, c) + 4*bx(x+1, y, c) +
                      bx(x+2, y, c)) / 256);
    return {in, by, {}};
}
