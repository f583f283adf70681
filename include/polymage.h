/* polymage.h — the one public header of PolyMage-JIT.
 *
 * Promise: a pipeline is a DAG of functions over integer grids, built with this API. The
 * reference interpreter (pm_interpret) evaluates it, and pm_jit_compile compiles it to
 * native code in-process. Builder objects belong to their context and go with it;
 * buffers always belong to the caller. The library never aborts or exits on user input:
 * errors are values. A compiled kernel may be run from several threads at once.
 */

/* The builder API speaks in the terms of the PolyMage language: Parameter, Image,
 * Variable, Interval, Condition, Case, Function, Reduction, Stencil.
 *
 * Ownership
 *   Every builder object (expression, interval, function, image, pipeline) belongs to the
 *   pm_ctx it was made in. pm_ctx_free frees them all together; none has a free function
 *   of its own. Objects may be shared freely between definitions of one context; mixing
 *   objects of two contexts is an error. Buffers (pm_buffer) always belong to the
 *   caller: the library reads and writes their memory only inside a call.
 *   A pm_jit and the pm_kernels it compiled are freed by pm_jit_free / pm_kernel_free in
 *   any order. A kernel keeps its jit's machine-code session alive, and the memory goes
 *   with whichever is freed last. Kernels are reference-counted: every pm_kernel that
 *   pm_jit_compile returns is one reference, dropped by one pm_kernel_free. The jit's
 *   kernel cache holds one more while the kernel is cached. A kernel keeps nothing of
 *   its pipeline, so the pipeline's context may be freed while the kernel is still used.
 *
 * Errors are values
 *   The library never aborts or exits on user input. Builder calls that return a handle
 *   return NULL on misuse (a NULL argument, an object of another context, a wrong type).
 *   They record the first such error in the context ("sticky", like a stream's error
 *   bit). So a whole pipeline can be built and checked once, at pm_pipeline_new, whose
 *   status and pm_ctx_errmsg tell what went wrong first.
 *   pm_pipeline_new, pm_interpret and pm_pipeline_buffer_shape return their status and
 *   leave their message in the context too (replacing an older one: the message is
 *   about this call). Their refusal is not sticky: a later valid pipeline in the same
 *   context is built, compiled and run as if the refused one had never been tried.
 *   pm_jit_new, pm_jit_compile and pm_kernel_run write status and message into the
 *   caller's pm_error (which may be NULL), never into the jit or kernel. So concurrent
 *   runs do not share one. Messages name the object and the cause.
 *   Nothing is printed on stderr except the phase dumps asked for (PM_DUMP,
 *   pm_jit_options.dump): isl's and LLVM's own errors become the message of the call.
 *
 * Threads
 *   A context and its objects are used by one thread at a time. A compiled pm_kernel may
 *   be run from several threads at once. A pm_jit (pm_jit_compile, pm_jit_run,
 *   pm_jit_stats, pm_jit_set_policy) may be used from several threads at once, each with
 *   its own pipelines. pm_jit_free must come after every other call on the jit returned.
 */
#ifndef POLYMAGE_H
#define POLYMAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every function declared here is the library's exported API. The library is compiled
 * with hidden visibility by default (-fvisibility=hidden), so these declarations are the
 * only symbols a shared libpolymage exports. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* The library's version (semantic: the minor number grows with every API addition while
 * the major is 0). */
#define PM_VERSION_MAJOR 0
#define PM_VERSION_MINOR 1
#define PM_VERSION_PATCH 0
#define PM_VERSION "0.1.0"
/* The version of the library linked in ("0.1.0"); equal to PM_VERSION unless the header
 * and the library come from different releases. */
const char *pm_version(void);
/* The build ID of the library linked in: 32 hex digits hashed at build time from every
 * source and header of the library, the compiler and the flags. Two builds of the same
 * code with the same flags share it; any change gives another. Kernel cache keys include
 * it. */
const char *pm_build_id(void);

/* ---------------------------------------------------------------------------------- */
/* Status, types, values                                                               */
/* ---------------------------------------------------------------------------------- */

typedef enum pm_status {
    PM_OK = 0,
    PM_ERR_MISUSE,      /* NULL handle, object of another context, call out of order    */
    PM_ERR_TYPE,        /* an expression's type does not fit where it is used            */
    PM_ERR_INVALID,     /* the pipeline is not valid (cycle, arity, ambiguity, bounds...) */
    PM_ERR_ARGUMENT,    /* a run-time argument (buffer, parameter value) is rejected      */
    PM_ERR_UNSUPPORTED, /* valid, but this version cannot do it yet (message says what)   */
    PM_ERR_NOMEM,       /* out of memory, or a buffer too large to allocate at all          */
    PM_ERR_INTERNAL,    /* a bug in the library: please report the message                */
    PM_ERR_COMPILE      /* a compile could not finish: its helper process died or hit a
                           limit (pm_jit_options.isolate_compiles; the message says which) */
} pm_status;

/* Element types. PM_BOOL is the type of conditions; it is not a storage type. */
typedef enum pm_type {
    PM_BOOL = 0,
    PM_U8, PM_I8, PM_U16, PM_I16, PM_U32, PM_I32, PM_I64,
    PM_F32, PM_F64
} pm_type;

/* Size in bytes of one element of a storage type (0 for PM_BOOL). */
size_t pm_type_size(pm_type type);
/* "u8", "f32", ... */
const char *pm_type_name(pm_type type);
/* Name of a status ("PM_ERR_INVALID"). */
const char *pm_status_name(pm_status status);

/* A run-time scalar: the value of a Parameter. Integer parameters read .i, float
 * parameters read .f. Use PM_I(v) and PM_F(v) to write one. */
typedef union pm_value {
    int64_t i;
    double f;
} pm_value;
#define PM_I(v) ((pm_value){.i = (int64_t)(v)})
#define PM_F(v) ((pm_value){.f = (double)(v)})

/* ---------------------------------------------------------------------------------- */
/* Context                                                                             */
/* ---------------------------------------------------------------------------------- */

typedef struct pm_ctx pm_ctx;

/* A new, empty context, or NULL when out of memory. */
pm_ctx *pm_ctx_new(void);
/* Frees the context and every object made in it. NULL is allowed. */
void pm_ctx_free(pm_ctx *ctx);
/* The latest error: the builders' first one since the context was made or last cleared
 * (sticky), or the last pm_pipeline_new / pm_interpret / pm_pipeline_buffer_shape
 * refusal, whichever came last; PM_OK if none. */
pm_status pm_ctx_status(const pm_ctx *ctx);
/* Its message ("" when none). Valid until the next call on the context. */
const char *pm_ctx_errmsg(const pm_ctx *ctx);
/* Forget the recorded error. */
void pm_ctx_clear_error(pm_ctx *ctx);

/* ---------------------------------------------------------------------------------- */
/* Expressions                                                                         */
/* ---------------------------------------------------------------------------------- */

/* Every value in a definition is a pm_expr: constants, variables, parameters, arithmetic,
 * conditions (type PM_BOOL) and calls of images and functions.
 *
 * Typing, the same rules everywhere (interpreter and compiled code):
 *  - An integer literal (pm_int) or float literal (pm_float) is "weak": it takes the type
 *    of the other operand (a float literal next to an integer becomes f32). Two weak
 *    literals give i32 / f32. pm_f64 makes a strong f64 constant.
 *  - Otherwise, for operands of types A and B: a float beats an integer, the wider float
 *    wins; between integers the wider wins, and at equal width the unsigned one.
 *  - Arithmetic happens in the result type, with wrap-around for integers: u8 + u8 is u8.
 *    Use pm_cast to widen first.
 *  - Integer pm_div and pm_mod round toward minus infinity (floor), so x/2 and x%2 stay
 *    right for negative x; pm_mod's result has the divisor's sign. Integer division by
 *    zero gives 0. Float pm_div is ordinary division; pm_mod on floats is x - y*floor(x/y).
 *  - pm_cdiv/pm_cmod are C's truncating division and remainder, for pipelines that need
 *    them (camera pipeline).
 *  - Casts float -> integer truncate toward zero and saturate at the target's range;
 *    integer -> narrower integer wraps (keeps the low bits).
 *  - Comparisons give PM_BOOL; pm_and/pm_or/pm_not take and give PM_BOOL.
 *  - A value stored into a function is converted to the function's type like pm_cast.
 */
typedef struct pm_expr pm_expr;

pm_expr *pm_int(pm_ctx *ctx, int64_t value);        /* weak integer literal */
pm_expr *pm_float(pm_ctx *ctx, double value);       /* weak float literal   */
pm_expr *pm_f64(pm_ctx *ctx, double value);         /* strong f64 constant  */
pm_expr *pm_const(pm_ctx *ctx, pm_type type, double value); /* constant of a given type */

/* Variable: an integer label for a function dimension (type i32). */
pm_expr *pm_var(pm_ctx *ctx, const char *name);
/* Parameter: a scalar given at run time. Integer parameters may appear in domains and
 * image extents; float parameters only in values (threshold, weight, ...). */
pm_expr *pm_param(pm_ctx *ctx, pm_type type, const char *name);

/* Arithmetic. */
pm_expr *pm_add(pm_expr *a, pm_expr *b);
pm_expr *pm_sub(pm_expr *a, pm_expr *b);
pm_expr *pm_mul(pm_expr *a, pm_expr *b);
pm_expr *pm_div(pm_expr *a, pm_expr *b);   /* floor for integers */
pm_expr *pm_mod(pm_expr *a, pm_expr *b);   /* floor for integers */
pm_expr *pm_cdiv(pm_expr *a, pm_expr *b);  /* truncating (C) for integers */
pm_expr *pm_cmod(pm_expr *a, pm_expr *b);  /* truncating (C) for integers */
pm_expr *pm_neg(pm_expr *a);
/* With a literal right operand: pm_addi(x, -1) is x - 1, pm_mulf(v, 0.25) is v * 0.25. */
pm_expr *pm_addi(pm_expr *a, int64_t b);
pm_expr *pm_muli(pm_expr *a, int64_t b);
pm_expr *pm_divi(pm_expr *a, int64_t b);
pm_expr *pm_modi(pm_expr *a, int64_t b);
pm_expr *pm_addf(pm_expr *a, double b);
pm_expr *pm_mulf(pm_expr *a, double b);

pm_expr *pm_min(pm_expr *a, pm_expr *b);
pm_expr *pm_max(pm_expr *a, pm_expr *b);
pm_expr *pm_clamp(pm_expr *a, pm_expr *lo, pm_expr *hi); /* min(max(a, lo), hi) */
pm_expr *pm_abs(pm_expr *a);      /* same type; wraps for the most negative integer */
pm_expr *pm_absd(pm_expr *a, pm_expr *b); /* |a - b| computed without overflow, same type */
pm_expr *pm_cast(pm_type type, pm_expr *a);
pm_expr *pm_select(pm_expr *cond, pm_expr *then_value, pm_expr *else_value);

/* Bitwise (integers only). */
pm_expr *pm_band(pm_expr *a, pm_expr *b);
pm_expr *pm_bor(pm_expr *a, pm_expr *b);
pm_expr *pm_bxor(pm_expr *a, pm_expr *b);
pm_expr *pm_shl(pm_expr *a, pm_expr *b);
pm_expr *pm_shr(pm_expr *a, pm_expr *b);   /* arithmetic for signed, logical for unsigned */
/* Shift amounts are taken modulo the bit width of the type (x << 33 on i32 is x << 1). */

/* Math functions on floats (an integer argument is converted to f32 first). Results have
 * the argument's float type. pm_pow takes two. */
typedef enum pm_math_fn {
    PM_EXP, PM_LOG, PM_SQRT, PM_SIN, PM_COS, PM_TAN, PM_ATAN, PM_TANH,
    PM_FLOOR, PM_CEIL, PM_ROUND, PM_TRUNC
} pm_math_fn;
pm_expr *pm_math(pm_math_fn fn, pm_expr *a);
pm_expr *pm_exp(pm_expr *a);
pm_expr *pm_log(pm_expr *a);
pm_expr *pm_sqrt(pm_expr *a);
pm_expr *pm_sin(pm_expr *a);
pm_expr *pm_cos(pm_expr *a);
pm_expr *pm_floor(pm_expr *a);
pm_expr *pm_ceil(pm_expr *a);
pm_expr *pm_pow(pm_expr *base, pm_expr *exponent);
pm_expr *pm_atan2(pm_expr *y, pm_expr *x);

/* Conditions (PolyMage's Condition): PM_BOOL expressions. */
pm_expr *pm_lt(pm_expr *a, pm_expr *b);
pm_expr *pm_le(pm_expr *a, pm_expr *b);
pm_expr *pm_eq(pm_expr *a, pm_expr *b);
pm_expr *pm_ne(pm_expr *a, pm_expr *b);
pm_expr *pm_ge(pm_expr *a, pm_expr *b);
pm_expr *pm_gt(pm_expr *a, pm_expr *b);
pm_expr *pm_and(pm_expr *a, pm_expr *b);
pm_expr *pm_or(pm_expr *a, pm_expr *b);
pm_expr *pm_not(pm_expr *a);
/* lo <= a && a <= hi, the common box condition. */
pm_expr *pm_between(pm_expr *a, pm_expr *lo, pm_expr *hi);

/* ---------------------------------------------------------------------------------- */
/* Intervals, images, functions, reductions                                            */
/* ---------------------------------------------------------------------------------- */

/* Interval(lb, ub, step): the points lb, lb+step, ... <= ub. lb and ub are affine
 * integer expressions of parameters and constants; step >= 1. The upper bound is
 * INCLUSIVE: Interval(0, R-1, 1) has R points (while an image takes the extent R). */
typedef struct pm_interval pm_interval;
pm_interval *pm_interval_new(pm_expr *lb, pm_expr *ub, int64_t step);

/* Images, functions and reductions are all "functions": they have a name, a type and a
 * number of dimensions, and are called with pm_call. */
typedef struct pm_func pm_func;

/* Image(type, extents): an input; dimension d covers 0 .. extents[d]-1. Extents are
 * affine integer expressions of parameters. */
pm_func *pm_image_new(pm_ctx *ctx, const char *name, pm_type type, int ndims,
                      pm_expr *const *extents);

/* Function(varDom = (vars, intervals), type). Define it with pm_func_define. The value
 * at a point of the domain covered by no case is undefined (never written). */
pm_func *pm_func_new(pm_ctx *ctx, const char *name, pm_type type, int ndims,
                     pm_expr *const *vars, pm_interval *const *intervals);

/* Case(condition, value). A NULL condition covers the whole domain (the Case-less form
 * Function.defn = [expr]). */
typedef struct pm_case pm_case;
pm_case *pm_case_new(pm_expr *cond, pm_expr *value);

/* Function.defn = [cases]. May be called once per function. Cases must not overlap. */
pm_status pm_func_define(pm_func *f, int ncases, pm_case *const *cases);
/* Function.defn = [value]: one value over the whole domain. */
pm_status pm_func_define_expr(pm_func *f, pm_expr *value);

/* Reduction(redDom = (rvars, rintervals), varDom = (vars, intervals), type, initial).
 * Every point of varDom starts at `initial` (NULL means 0); then for every point of
 * redDom in lexicographic order, f(index...) = op(f(index...), value).
 * ndims 0 (vars and intervals NULL) makes a zero-dimensional reduction: one value (a
 * total, a minimum), defined with no index (pm_reduction_define(f, 0, NULL, value)),
 * called as pm_call_n(f, 0, NULL), and as an output a buffer of ndims 0, one element. */
typedef enum pm_reduce_op {
    PM_REDUCE_SUM, PM_REDUCE_PRODUCT, PM_REDUCE_MIN, PM_REDUCE_MAX,
    PM_REDUCE_AND, PM_REDUCE_OR   /* bitwise on integers, logical on bools */
} pm_reduce_op;
pm_func *pm_reduction_new(pm_ctx *ctx, const char *name, pm_type type,
                          int ndims, pm_expr *const *vars, pm_interval *const *intervals,
                          int nrdims, pm_expr *const *rvars, pm_interval *const *rintervals,
                          pm_reduce_op op, pm_expr *initial);
/* Reduce(f(index...), value, op). index and value are expressions of the reduction
 * variables; index may be data-dependent (hist(I(x,y)) += 1). An index outside the
 * variable domain is skipped (the update does not happen). */
pm_status pm_reduction_define(pm_func *f, int nindex, pm_expr *const *index, pm_expr *value);

/* f(args...): a call. An image or function is called with one integer expression per
 * dimension: affine (x-1), scaled (2*x+1, x/2) or data-dependent (lut(I(x,y))).
 * A function may call itself at earlier points (time-iterated stencils).
 * A (data-dependent) index outside the callee's domain box is clamped into it.
 * Affine reads must stay inside the callee's domain wherever the calling case holds
 * (checked by pm_pipeline_new). Both arms of a pm_select are evaluated everywhere, so
 * guard a boundary read with a case condition, not a select. */
pm_expr *pm_call_n(pm_func *f, int nargs, pm_expr *const *args);

/* Stencil(f(x, y), scale, kernel), as in PolyMage: (sum over the kernel of
 * k[i][j] * f(x + j - cols/2, y + i - rows/2)) * scale. Note the kernel is written as a
 * picture of the (y, x) plane: its column index j moves the first coordinate x, its row
 * index i the second coordinate y, so Figure 1's Ix kernel [[-1,0,1],[-2,0,2],[-1,0,1]]
 * differentiates along x. weights is rows*cols values, row-major; zero weights are
 * skipped. `at` are the centre's coordinates (usually the function's variables). */
pm_expr *pm_stencil(pm_func *f, pm_expr *const at[2], double scale, int rows, int cols,
                    const double *weights);

/* Accessors (for tools, dumps and the samples). */
const char *pm_func_name(const pm_func *f);
pm_type pm_func_type(const pm_func *f);
int pm_func_ndims(const pm_func *f);

/* ---------------------------------------------------------------------------------- */
/* Variadic conveniences: pm_call(f, x, y), pm_exprs(x, y), pm_intervals(r, c),        */
/* pm_define(f, case1, case2), pm_image(ctx, "I", PM_F32, R, C).                         */
/* ---------------------------------------------------------------------------------- */

#define PM_COUNT_(...) (int)(sizeof((void *[]){__VA_ARGS__}) / sizeof(void *))
#define pm_exprs(...) ((pm_expr *const[]){__VA_ARGS__})
#define pm_intervals(...) ((pm_interval *const[]){__VA_ARGS__})
#define pm_call(f, ...) pm_call_n((f), PM_COUNT_(__VA_ARGS__), pm_exprs(__VA_ARGS__))
#define pm_define(f, ...) \
    pm_func_define((f), PM_COUNT_(__VA_ARGS__), ((pm_case *const[]){__VA_ARGS__}))
#define pm_image(ctx, name, type, ...) \
    pm_image_new((ctx), (name), (type), PM_COUNT_(__VA_ARGS__), pm_exprs(__VA_ARGS__))

/* ---------------------------------------------------------------------------------- */
/* Helpers: domains, boundary conditions, crop, N-D stencils, down/up-sampling          */
/* ---------------------------------------------------------------------------------- */

/* These build ordinary functions (cases, calls, intervals) with the calls above: the
 * validator checks them and the optimizer splits their cases like any other. Every
 * helper that makes a function names it `name` and returns NULL on misuse (recorded in
 * the context, as for every builder). Dimensions are numbered from 0 in the order of
 * pm_call's arguments; `dims` lists the dimensions a helper acts on (distinct, any
 * order), e.g. {1, 2}, the two spatial dimensions of an RGB image I(c, x, y).
 *
 * Domains: a dimension of a function covers its interval [lb, ub] (INCLUSIVE upper
 * bound); a dimension of an image covers 0 .. extent-1 (an image takes an EXTENT, the
 * number of points). An output buffer's index starts at the domain's lower bound. */

/* f's domain in dimension d as an interval: the function's own, or [0, extent-1] for an
 * image. */
pm_interval *pm_func_interval(pm_func *f, int d);
/* The variable of dimension d of a function or reduction (NULL for an image: it has
 * none). */
pm_expr *pm_func_var(pm_func *f, int d);
/* A new, undefined function of the given type over f's domain, with f's variables (an
 * image's are made: "x0", "x1", ...); define it with pm_func_define and read its
 * variables with pm_func_var. */
pm_func *pm_func_like(pm_func *f, const char *name, pm_type type);

/* Boundary conditions: a function over a wider (or any) domain that reads f inside f's
 * domain and extends it outside, in the dimensions that get the condition. Shown on one
 * dimension whose domain is a b c d:
 *   PM_BOUNDARY_CLAMP            ... a a | a b c d | d d ...   (repeat the edge)
 *   PM_BOUNDARY_MIRROR           ... b a | a b c d | d c ...   (mirror, edge repeated)
 *   PM_BOUNDARY_MIRROR_INTERIOR  ... c b | a b c d | c b ...   (mirror about the edge)
 *   PM_BOUNDARY_WRAP             ... c d | a b c d | a b ...   (periodic)
 *   PM_BOUNDARY_CONSTANT         ... v v | a b c d | v v ...   (the value given)
 * Mirror and wrap repeat as far as the domain reaches (a 1-point dimension gives that
 * point everywhere). The result is defined by cases: one interior case (every chosen
 * dimension inside f's domain) reading f directly, with no clamp, and 2 border cases
 * per chosen dimension (below / above f's domain); the compiler runs each case as its
 * own loop nest, so the interior loop does no per-point boundary arithmetic. f's
 * chosen dimensions must have step 1 and at least one point. */
typedef enum pm_boundary {
    PM_BOUNDARY_CLAMP,
    PM_BOUNDARY_MIRROR,
    PM_BOUNDARY_MIRROR_INTERIOR,
    PM_BOUNDARY_WRAP,
    PM_BOUNDARY_CONSTANT
} pm_boundary;
/* Over any domain: domain[d] is the new interval of dimension d, or NULL to keep f's
 * interval with no condition (e.g. the colour dimension). value: the constant of
 * PM_BOUNDARY_CONSTANT (NULL = 0), converted to f's type; NULL for the others. */
pm_func *pm_boundary_new(pm_func *f, const char *name, pm_boundary kind, pm_expr *value,
                         pm_interval *const *domain);
/* Pad: f's domain widened by `pad` points on both sides of each chosen dimension
 * ([lb - pad, ub + pad]), e.g. pm_pad(I, "E", PM_BOUNDARY_CLAMP, NULL, 2, (int[]){1, 2}, 2)
 * for a 5x5 stencil over an RGB image I(c, x, y) with clamped edges. */
pm_func *pm_pad(pm_func *f, const char *name, pm_boundary kind, pm_expr *value, int ndims,
                const int *dims, int64_t pad);
/* Crop: f over a window of its domain (window[d] NULL = f's interval), coordinates
 * unchanged (so the output buffer of a crop starts at the window's lower bound).
 * pm_pipeline_new rejects a window reaching outside f. Point-wise: the optimizer inlines
 * it into its consumers. */
pm_func *pm_crop(pm_func *f, const char *name, pm_interval *const *window);

/* Stencil over any dimensions: scale * sum over the kernel of w * f(at + offset), where
 * the kernel has nk axes and axis k (size[k] points) moves dimension dims[k] of f:
 * offset_k = i_k - size[k]/2 for i_k = 0 .. size[k]-1 (the centre is i_k = size[k]/2;
 * an even size reaches one point further below than above). weights hold
 * size[0] * ... * size[nk-1] values, row-major: the LAST axis varies fastest, so a 2-D
 * kernel written as rows of text has its rows along dims[0] and its columns along
 * dims[1]. at: f's ndims centre coordinates (usually a function's variables).
 * For a float f, pm_stencil(f, at, s, rows, cols, w) is pm_stencil_nd(f, at, s, 2,
 * (int[]){1, 0}, (int[]){rows, cols}, w): PolyMage's kernel moves y (dimension 1) down its
 * rows and x (dimension 0) along them.
 * Arithmetic: a float f is summed in its type; an integer f is converted to f32 (8- and
 * 16-bit types) or f64 (32- and 64-bit) before it is weighted, so sums never wrap and
 * are exact while they stay below 2^24 (f32) / 2^53 (f64); the result has that float
 * type (storing it into an integer function truncates toward zero and saturates). Zero
 * weights are skipped. */
pm_expr *pm_stencil_nd(pm_func *f, pm_expr *const *at, double scale, int nk, const int *dims,
                       const int *size, const double *weights);
/* A new function of `type` defined by pm_stencil_nd at its variables, over f's domain
 * shrunk in each moved dimension by the kernel's reach (the points where every tap is
 * inside f: [lb + size/2, ub - (size-1-size/2)]). Pad f first (pm_pad) to keep the
 * size.
 * Integer form: when f is an integer of 8 or 16 bits, `type` an integer, every weight an
 * integer and scale 2^-k (k >= 0, with no negative sum possible when k > 0), the sum is
 * taken in the narrowest of u16, i16, u32, i32 that holds every value f's type allows,
 * shifted right by k and clamped into `type`: the values of the float sum truncated and
 * saturated, computed in integer lanes (a 5x5 blur of u8 ran 2.1x faster). */
pm_func *pm_stencil_func(pm_func *f, const char *name, pm_type type, double scale, int nk,
                         const int *dims, const int *size, const double *weights);

/* 2x down-sampling in each chosen dimension: g(x) = scale * sum_i w[i] * f(2x + i - (n-1)/2)
 * for i = 0 .. n-1, the same 1-D kernel w applied in every chosen dimension (the weights
 * of several dimensions multiply). weights NULL: the binomial kernel of n taps,
 * normalized ([1 2 1]/4 for n = 3, [1 3 3 1]/8 for n = 4, ...) and scale is ignored.
 * Domain: every point whose taps are all inside f (pad f first for the full size). The
 * arithmetic is pm_stencil_nd's. */
pm_func *pm_downsample(pm_func *f, const char *name, pm_type type, int ndims, const int *dims,
                       int n, const double *weights, double scale);
/* 2x up-sampling by linear interpolation in each chosen dimension, samples at pixel
 * centres: g(2i) = 3/4 f(i) + 1/4 f(i-1), g(2i+1) = 3/4 f(i) + 1/4 f(i+1) (products of
 * these weights over several dimensions), written as one case per parity so each case
 * reads f at affine points. Domain: [2 lb + 1, 2 ub] in each chosen dimension (pad f by
 * 1 first for [2 lb - 1, 2 ub + 2]). The arithmetic is pm_stencil_nd's. */
pm_func *pm_upsample(pm_func *f, const char *name, pm_type type, int ndims, const int *dims);

/* ---------------------------------------------------------------------------------- */
/* Pipelines                                                                           */
/* ---------------------------------------------------------------------------------- */

typedef struct pm_pipeline pm_pipeline;

/* A pipeline: its signature (parameters and input images, in the order run-time values
 * and buffers are passed) and its live-out functions; it holds everything the outputs
 * reach. Validates the whole pipeline (types, arity, cycles, affine bounds, overlapping
 * cases, static out-of-domain reads); on failure returns the status, sets *out to NULL
 * and leaves a message in the context naming the function, the access and one
 * offending point. Every parameter and image the outputs use must be listed. Names are
 * unique within a pipeline: the functions, images and parameters it reaches have
 * distinct names (a duplicate is PM_ERR_INVALID, naming both definitions); different
 * functions may reuse variable names, but one function's variables are distinct. */
pm_status pm_pipeline_new(pm_ctx *ctx, const char *name,
                          int nparams, pm_expr *const *params,
                          int ninputs, pm_func *const *inputs,
                          int noutputs, pm_func *const *outputs,
                          pm_pipeline **out);

const char *pm_pipeline_name(const pm_pipeline *p);
int pm_pipeline_nparams(const pm_pipeline *p);
int pm_pipeline_ninputs(const pm_pipeline *p);
int pm_pipeline_noutputs(const pm_pipeline *p);
pm_func *pm_pipeline_input(const pm_pipeline *p, int i);
pm_func *pm_pipeline_output(const pm_pipeline *p, int i);

/* The canonical text (docs/canonical-text.md): the whole pipeline as versioned plain text
 * ("pm-canon 2" on its first line), with no pointers or context ids in it, so pipelines
 * built the same way in any two contexts have byte-equal texts. It is the pipeline's
 * kernel cache key, and the way to store a pipeline or hand it to another process.
 * NUL-terminated, owned by the pipeline's context; *len (len may be NULL) its length.
 * Computed on the first call, then the same. NULL when out of memory (message in the
 * context). */
const char *pm_pipeline_text(pm_pipeline *p, size_t *len);
/* Builds in ctx the pipeline whose canonical text is text[0..len), with the builders
 * and pm_pipeline_new, so it is validated like any pipeline; pm_pipeline_text of the
 * result is byte-equal to text, and it compiles to the same kernels (a pm_jit_compile of
 * either finds the other's kernel in the cache). The text is input and trusted in
 * nothing: anything else (another version, a malformed, non-canonical or invalid
 * pipeline, a NUL byte, text past the last line, or beyond the reader's limits on
 * nesting, size and counts) returns PM_ERR_ARGUMENT, sets *out to NULL and leaves a
 * message naming the line and the cause ("canonical text line 12: e7 refers to e9, not
 * yet defined"); PM_ERR_NOMEM when out of memory; PM_ERR_MISUSE for a NULL ctx, out, or
 * text with len > 0. An error recorded in ctx before the call is forgotten: the status
 * and message are this call's. On failure, what was built stays in ctx (unused) until
 * pm_ctx_free. */
pm_status pm_pipeline_from_text(pm_ctx *ctx, const char *text, size_t len, pm_pipeline **out);

/* ---------------------------------------------------------------------------------- */
/* Buffers                                                                             */
/* ---------------------------------------------------------------------------------- */

#define PM_MAX_DIMS 8

/* A view of caller-owned memory. Element (i0, i1, ...) lives at
 * data + sum(i_d * stride[d]) elements. For an image, index i_d is the coordinate; for
 * a function output, i_d = (coordinate - lb_d) / step_d over the function's domain box,
 * so the buffer's extents are the interval sizes at the given parameter values. */
typedef struct pm_buffer {
    void *data;
    pm_type type;
    int ndims;
    int64_t extent[PM_MAX_DIMS];
    int64_t stride[PM_MAX_DIMS]; /* in elements; 0 means dense row-major */
} pm_buffer;

/* A dense row-major buffer description over `data` (not copied, not owned). */
pm_buffer pm_buffer_dense(void *data, pm_type type, int ndims, const int64_t *extents);

/* The extents an output (or input) buffer must have for given parameter values. */
pm_status pm_pipeline_buffer_shape(pm_pipeline *p, int is_output, int index,
                                   const pm_value *params, int *ndims, int64_t *extents);

/* Windows: a pipeline's outputs over part of an image, with the whole image's semantics
 * (docs/python.md "Dask"; frontend/window.h).
 *
 * pm_pipeline_window makes p's window form in p's context (made once; later calls return
 * the same): p's parameters followed by window_lo<d> and window_n<d> (i64) for each
 * output dimension d, the window's offset and extent in output indices. Its outputs are
 * the window's points only; its inputs are blocks of the whole inputs: along a dimension
 * tied to output dimension d (inputs and outputs aligned from the innermost dimension;
 * one of constant extent is not tied) from max(0, lo - halo_lo[d]) to
 * min(extent, lo + n + halo_hi[d]) - 1, and whole along the others. Every clamp, border
 * case and reduction still refers to the whole image p's parameters describe: a window's
 * values equal the same points of a whole run, bit for bit, at any offset. Each stage is
 * computed only where the window reads it (the exact demand, found with isl), and sized
 * so. Compile the window form like any pipeline; its canonical text is p's and a line
 * `window`. PM_ERR_UNSUPPORTED naming the stage when p reads an input at no fixed distance
 * from the window (a reduction over the whole image, a data-dependent index), or its
 * outputs differ in rank.
 *
 * pm_pipeline_halo: for each of p's ndims output dimensions, how far outside an output
 * window the pipeline reads its inputs (lo: before the window, hi: after it), the most
 * over every window and image size; the same refusals. p may be the window form. */
pm_status pm_pipeline_window(pm_pipeline *p, pm_pipeline **window);
pm_status pm_pipeline_halo(pm_pipeline *p, int ndims, int64_t *lo, int64_t *hi);

/* The coordinate of each dimension's first element of that buffer: 0 for an input, an
 * output's lower bounds; for a window form's input, where its block starts inside the
 * whole input. */
pm_status pm_pipeline_buffer_origin(pm_pipeline *p, int is_output, int index,
                                    const pm_value *params, int *ndims, int64_t *origin);

/* ---------------------------------------------------------------------------------- */
/* The reference interpreter                                                           */
/* ---------------------------------------------------------------------------------- */

/* Evaluates the pipeline stage by stage, straight from the definitions, the oracle for
 * compiled code. params: one value per pipeline parameter; inputs / outputs: one buffer
 * per pipeline input / output. Checks parameters and buffers first, exactly as
 * pm_kernel_run does (same statuses and messages); PM_ERR_NOMEM when an intermediate
 * function's buffer cannot be allocated. */
pm_status pm_interpret(pm_pipeline *p, const pm_value *params,
                       const pm_buffer *inputs, pm_buffer *outputs);

/* ---------------------------------------------------------------------------------- */
/* Dumps                                                                               */
/* ---------------------------------------------------------------------------------- */

/* Writes a readable listing of the pipeline's definitions (the "graph" dump) into a
 * malloc'd string the caller frees. */
char *pm_pipeline_to_string(pm_pipeline *p);

/* ---------------------------------------------------------------------------------- */
/* The JIT: compile a pipeline to native code in this process                          */
/* ---------------------------------------------------------------------------------- */

/* The result of a call that may fail: the status and a message naming the object and the
 * cause. Caller-owned, so runs of one kernel from several threads each get their own. */
typedef struct pm_error {
    pm_status status;
    char message[1024];
} pm_error;

typedef struct pm_jit pm_jit;
typedef struct pm_kernel pm_kernel;

/* Optimization levels: PM_OPT_TUNED, LLVM's passes chosen for this compiler's
 * (already vectorized) IR, at the least compile time that loses no speed; 0..3 mean
 * LLVM's default<O0> .. default<O3>; PM_OPT_JIT (compile options only) the jit's. */
#define PM_OPT_TUNED (-1)
#define PM_OPT_JIT (-2)

/* Versioned structs and the ABI
 *   pm_jit_options, pm_compile_options and pm_cache_policy will grow. Each begins with
 *   `size`, which its _default() function sets to sizeof the struct as the caller's
 *   header declares it. Always start from the _default() function, then change fields:
 *
 *       pm_compile_options o = pm_compile_options_default();
 *       o.fusion = 0;
 *
 *   New fields are only ever added at the end, so a program built against an older
 *   header passes a smaller size: the library reads just those `size` bytes and gives
 *   every later field its default. The structs the library fills (pm_cache_stats,
 *   pm_compile_stats, and pm_cache_policy for pm_jit_get_policy) take their size as an
 *   argument: pass sizeof the struct, and the library writes just those bytes.
 *   One rule for every such size, in every call: a size that is not the size of some
 *   release's struct (0 from an initializer such as {.threads = 4} or {0}, SIZE_MAX, an
 *   uninitialized struct, or a struct from a newer header than the library) is rejected
 *   before any other field is read or written: PM_ERR_ARGUMENT, the message naming the
 *   call, the struct, the size and the sizes this library reads. */

/* The most threads a kernel may be given (pm_jit_options.threads,
 * pm_compile_options.threads); more is PM_ERR_ARGUMENT. */
#define PM_MAX_THREADS 1024

typedef struct pm_jit_options {
    size_t size;        /* sizeof(pm_jit_options), set by pm_jit_options_default()        */
    int threads;        /* worker threads for kernels; 0 = number of cores; at most
                           PM_MAX_THREADS                                                 */
    int opt_level;      /* PM_OPT_TUNED (default) or 0..3                                 */
    const char *dump;   /* phases to print to stderr: step names ("poly,tile,ast,llvm"), text
                           names ("domains,groups,asm") or "all" (docs/dumps.md); an
                           unknown name is PM_ERR_ARGUMENT. NULL = read the PM_DUMP
                           environment variable at each compile                         */
    int compile_threads; /* threads that make one kernel: its groups' isl ASTs are built
                           at once, and its module is split into that many parts (up to
                           16) compiled at once, each by a thread of its own (same
                           outputs); 1 = one AST and one module,
                           serially; 0 = the PM_COMPILE_THREADS environment variable if
                           set, else the online cores up to 8; at most 64. (Not
                           pm_cache_policy.compile_threads: how many kernels compile at
                           once in the background.)                                     */
    int isolate_compiles; /* 1: every compile runs in a helper process (docs/jit.md,
                           "Isolated compiles"), so that LLVM or isl running out of
                           memory, crashing or hanging fails that compile with
                           PM_ERR_COMPILE or PM_ERR_NOMEM and never takes this process
                           down; 0 (default): in this process                           */
    int compile_seconds; /* an isolated compile's time limit; 0 = 300                      */
    int64_t compile_memory_bytes; /* an isolated compile's address-space limit (setrlimit
                           RLIMIT_AS); 0 = 8 GiB                                          */
} pm_jit_options;
/* Defaults: size sizeof(pm_jit_options), threads 0, opt_level PM_OPT_TUNED, dump NULL,
 * compile_threads 0, isolate_compiles 0, compile_seconds 0, compile_memory_bytes 0. */
pm_jit_options pm_jit_options_default(void);

typedef struct pm_compile_options {
    size_t size;        /* sizeof(pm_compile_options), set by pm_compile_options_default() */
    int vector_width;   /* lanes of 32-bit elements; 0 = from the host (16 on AVX-512)   */
    int threads;        /* 0 = the jit's; at most PM_MAX_THREADS                          */
    int opt_level;      /* PM_OPT_JIT (default), PM_OPT_TUNED or 0..3                     */
    const char *dump;   /* NULL = the jit's                                                */
    /* The optimizer (inlining, grouping, overlapped tiles, scratchpads). Every setting
     * gives the same results; they only change speed. */
    int fusion;         /* 1 = inline, group and tile (default); 0 = every stage alone over
                           full buffers (the unfused baseline)                            */
    int tile_size[PM_MAX_DIMS]; /* per dimension of a group's space, outermost first;
                           0 = from the cost model                                        */
    double overlap_threshold; /* max redundant computation a fused group may add, as a
                           fraction of its work (0.4 = 40%); < 0 = the model's default    */
    int group_limit;    /* max stages in one group; 0 = the default, 24                     */
    const char *keep;   /* phases whose text the kernel keeps for pm_kernel_dump (names as
                           for dump, or "all"); phases in dump are kept too. NULL = none:
                           a compile makes no text nobody asked for                      */
    int stream_outputs; /* the pipeline's outputs written with non-temporal stores, past
                           the caches (a cached store first reads the line it writes):
                           1 = always, 0 = never, -1 = when an output at the estimates is
                           larger than the L2 caches of the kernel's threads (default).
                           Results are the same                                          */
    int reserved_;      /* the 104-byte version's tail padding: not read                  */
    int prefetch_reads; /* rows of inputs and of buffers between groups read with software
                           prefetches ahead of the leading reads: 1 = always, 0 = never,
                           -1 = when the buffer at the estimates is larger than the L2
                           caches of the kernel's threads (default). Results are the same */
    int grouping;       /* how stages are grouped (results are the same):
                           PM_GROUPING_DEFAULT (0): the capped DP, and pm_jit_run's
                           background compiles upgrade a kernel that keeps serving to
                           the full DP (docs/server.md, "Tiers");
                           PM_GROUPING_GREEDY: PolyMage's greedy merging;
                           PM_GROUPING_DP_CAPPED: the dynamic program over groupings of
                           the fusion and tile-size paper, priced by the tile model, with
                           groups of at most 16 stages and a small budget (a synchronous
                           compile's);
                           PM_GROUPING_DP: the same with the group limit and a large
                           budget. The DP keeps greedy's grouping when that is cheaper */
    int dp_budget;      /* the groups the DP prices before it merges greedily; 0 = the
                           grouping's default (150 capped, 50000 full)                   */
} pm_compile_options;
#define PM_GROUPING_DEFAULT 0
#define PM_GROUPING_GREEDY 1
#define PM_GROUPING_DP_CAPPED 2
#define PM_GROUPING_DP 3
pm_compile_options pm_compile_options_default(void);

/* A JIT session: an LLVM ORC LLJIT for the host CPU. NULL options mean defaults.
 * Returns NULL and fills *error on failure (error may be NULL). */
pm_jit *pm_jit_new(const pm_jit_options *options, pm_error *error);
/* Frees the JIT. Kernels it compiled stay valid; the jit's memory goes with the last of
 * them (pm_kernel_free). NULL is allowed. */
void pm_jit_free(pm_jit *jit);

/* Compiles the pipeline for parameter estimates (one value per pipeline parameter, the
 * sizes it is optimized for; NULL = no estimates), or finds it compiled already: the jit
 * keeps a cache of kernels (see "The kernel cache" below), and a hit returns the cached
 * kernel with one more reference (pm_kernel_free drops it). The kernel is valid for any
 * parameter values; it does not keep the pipeline or its context. NULL options mean the
 * jit's. Returns NULL and fills *error on failure. Threads may compile at once, each
 * with its own pipeline (its own context); a thread asking for a kernel another thread
 * is compiling waits for that compile instead of repeating it. */
pm_kernel *pm_jit_compile(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                          const pm_compile_options *options, pm_error *error);

/* Runs the kernel. Before any code runs, checks every parameter value (it fits its type,
 * and every extent it gives a buffer or a stage fits int64) and every buffer: type,
 * extents, data, strides whose byte span fits, an output whose elements do not alias
 * each other and that shares no element with another buffer (PM_ERR_ARGUMENT). An
 * intermediate buffer that cannot be allocated (a size beyond 2^63 bytes included) gives
 * PM_ERR_NOMEM naming the function, before any output is written. Never reads or writes
 * outside the buffers. Safe to call from several threads at once. */
pm_status pm_kernel_run(pm_kernel *k, const pm_value *params, const pm_buffer *inputs,
                        pm_buffer *outputs, pm_error *error);

/* Runs a kernel of a window form (pm_pipeline_window) on the window of the whole image
 * that `params` (the base pipeline's parameters) describe at `offset` (one output index per
 * output dimension), as large as the output buffers: the window's parameters are filled in
 * and the run is pm_kernel_run's, with its checks. The inputs are the blocks around the
 * window (see pm_pipeline_window); PM_ERR_ARGUMENT when the window is not inside the
 * outputs or the kernel is not of a window form. */
pm_status pm_kernel_run_window(pm_kernel *k, const pm_value *params, const int64_t *offset,
                               const pm_buffer *inputs, pm_buffer *outputs, pm_error *error);

/* Drops the caller's reference to the kernel (one per kernel pm_jit_compile returned).
 * The machine code is freed when no reference is left: the jit's cache holds one while
 * the kernel is cached, so a cached kernel stays for the next pm_jit_compile hit. NULL
 * is allowed. */
void pm_kernel_free(pm_kernel *k);

/* ---------------------------------------------------------------------------------- */
/* The kernel cache and the serving call (docs/server.md)                              */
/* ---------------------------------------------------------------------------------- */

/* The kernel cache
 *   Key: the pipeline's canonical form (its definitions written without pointers or
 *   context ids: equal for pipelines built the same way in any contexts; computed once
 *   per pipeline object), the compile options with every default resolved, the host
 *   target (triple, CPU name, features), PM_VERSION, pm_build_id(), the LLVM version,
 *   and the estimate bucket: each integer parameter that appears in an image extent or a
 *   domain bound is mapped to floor(log(v) / log(ratio)) for v >= 1 and to a bucket of
 *   its own for v <= 0 (other parameters do not matter); NULL estimates make a generic
 *   kernel, a key of its own. Lookups hash the key and compare it in full. Nearby sizes
 *   share one kernel, optimized for the estimates of the call that compiled it. A hit
 *   prints no dumps and reports the original compile's pm_kernel_compile_ms.
 *   Eviction: when the cached kernels exceed max_kernels or max_code_bytes (their object
 *   code), the least recently used kernel that nobody else holds leaves the cache; a
 *   kernel that is referenced (pm_jit_compile's caller, or a pm_jit_run in progress) is
 *   never freed, and the cache may stay over budget until such kernels are released.
 *
 * The serving call, pm_jit_run
 *   Runs the pipeline on the actual parameter values with the kernel of their bucket.
 *   On a miss where a kernel of the same pipeline and options is cached (every kernel is
 *   valid for every size), it runs the one of the nearest bucket at once and queues a
 *   compile of the bucket's own kernel on a background compile thread (unless one is
 *   queued or running already, or the queue holds max_queued compiles); later calls find
 *   it. With no kernel of the pipeline at all, or with background = 0, it compiles
 *   synchronously, like pm_jit_compile with the actual values as estimates; but with
 *   background = 1, a call that finds no kernel of its pipeline while another call is
 *   compiling one waits for that compile and then runs as above (the nearest kernel, its
 *   own bucket queued), so concurrent first calls at several sizes compile once, not
 *   once each (stats shared_compile_waits).
 *   Before pm_jit_run returns, whatever a queued compile needs has been copied (the
 *   pipeline into a context of the jit's own): the caller may free its context at once.
 *   pm_jit_run may be called from several threads at once, each with its own pipeline
 *   object (a context is one thread's); pipelines built the same way in different
 *   contexts share their kernels.
 *   pm_jit_free cancels the queued compiles and waits for those running.
 *
 * The on-disk object cache (opt-in: disk_dir, or PM_CACHE_DIR)
 *   A kernel compiled by the jit is also written to the folder as its object code plus
 *   metadata, under its full key (the environment included: another host, library
 *   build or LLVM version never matches). A compile whose key has a file there loads it
 *   instead (stats disk_hits; no phase texts: pm_kernel_dump gives NULL), so a restarted
 *   process starts warm. Writes are atomic (a temporary file renamed over the name);
 *   several processes may share the folder; a truncated, corrupted or mismatched file is
 *   ignored, compiled afresh and replaced, never trusted. Kernels compiled with dumps are
 *   not written or read.
 */
typedef struct pm_cache_policy {
    size_t size;            /* sizeof(pm_cache_policy), set by pm_cache_policy_default
                               (the versioned-struct rule above pm_jit_options)           */
    double bucket_ratio;    /* geometric bucket ratio, 1.01 .. 1024; default 2^(1/4)      */
    int max_kernels;        /* kernels kept; default 64; 0 = keep none unreferenced        */
    int64_t max_code_bytes; /* their object code; default 256 MiB                          */
    int background;         /* 1 (default): compile a missing bucket in the background;
                               0: pm_jit_run compiles it synchronously                    */
    int compile_threads;    /* background compile threads, 1 .. 64; default 1 (kernels
                               compiled at once; each may use pm_jit_options.
                               compile_threads threads for its own machine code)          */
    int max_queued;         /* queued background compiles at most; default 16             */
    const char *disk_dir;   /* the on-disk object cache's folder (made if missing; shared
                               safely by processes); NULL or "" = none. Default: the
                               PM_CACHE_DIR environment variable, else none. Copied by
                               pm_jit_set_policy                                         */
    int64_t disk_max_bytes; /* the folder's kernel files at most (least recently used
                               removed first); default 1 GiB                              */
    int64_t max_scratch_bytes; /* scratch memory the cached kernels keep between runs (the
                               intermediate buffers of pm_kernel_run); over it, the least
                               recently used kernels' idle scratch is freed after a run.
                               Default 1 GiB; 0 = keep none                               */
    int scratch_idle_ms;    /* a kernel not run for this long has its idle scratch freed
                               (a compile thread looks every half of it, at least every
                               100 ms); default 5000; 0 = never for idleness              */
    int background_nice;    /* background compile threads (and the compile helpers they
                               start) run this much nicer than the process, 0 .. 19, so
                               the requests served meanwhile keep the cores; default 10
                               (Linux; elsewhere ignored)                                */
} pm_cache_policy;
pm_cache_policy pm_cache_policy_default(void);
/* Sets the jit's policy (policy->size bytes of it are read; error may be NULL). Budgets
 * apply at once (evicting), the ratio to later lookups, the rest to later serving calls;
 * compile threads already started stay. PM_ERR_ARGUMENT naming the field when a value is
 * out of range. */
pm_status pm_jit_set_policy(pm_jit *jit, const pm_cache_policy *policy, pm_error *error);
/* The jit's current policy (size bytes of it are written, size a release's
 * sizeof(pm_cache_policy), else PM_ERR_ARGUMENT; disk_dir points to the jit's copy, the
 * folder's canonical path, valid until the policy is set again). */
pm_status pm_jit_get_policy(pm_jit *jit, pm_cache_policy *policy, size_t size);

/* Runs pipeline p on params / inputs / outputs (as pm_kernel_run) with the kernel the
 * cache picks for the parameter values (see above). NULL options mean the jit's. Returns
 * the run's status; a compile failure's status and message when it had to compile and
 * could not. */
pm_status pm_jit_run(pm_jit *jit, pm_pipeline *p, const pm_compile_options *options,
                     const pm_value *params, const pm_buffer *inputs, pm_buffer *outputs,
                     pm_error *error);

/* The scratch memory a pm_jit_run of p (with these options; NULL = the jit's) at these
 * parameter values is expected to hold, for admission control (a service's memory
 * budget): the largest run seen of any cached kernel of p and its options, scaled by the
 * product of the size parameters (those bucketed: see "The kernel cache"; each at least
 * 1). An estimate, linear in the image's size: a kernel's per-thread tiles do not grow
 * with it, so it errs high for sizes above the run seen and low (by the tiles) below.
 * *bytes = -1 when no run of p has been seen. PM_OK, or the status and message of a bad
 * argument. */
pm_status pm_jit_scratch_estimate(pm_jit *jit, pm_pipeline *p, const pm_compile_options *options,
                                  const pm_value *params, int64_t *bytes, pm_error *error);

/* Blocks until no background compile is queued or running (for tests and orderly
 * shutdowns; serving never needs it). */
void pm_jit_wait_idle(pm_jit *jit);

typedef struct pm_cache_stats {
    uint64_t hits;                /* lookups that found their bucket's kernel ready       */
    uint64_t misses;              /* lookups that did not                                  */
    uint64_t fallback_runs;       /* pm_jit_run calls served by another bucket's kernel   */
    uint64_t sync_compiles;       /* compiles in the caller's thread                       */
    uint64_t background_compiles; /* compiles on a compile thread                          */
    uint64_t failed_compiles;     /* background compiles that failed (not retried)        */
    uint64_t queue_full;          /* background compiles not queued: max_queued reached   */
    uint64_t evictions;           /* kernels that left the cache for its budgets          */
    double compile_ms_total, compile_ms_max;
    int64_t code_bytes;           /* object code of the cached kernels                     */
    int kernels;                  /* cached kernels                                        */
    int queued, compiling;        /* background compiles waiting / running now             */
    uint64_t disk_hits;           /* kernels loaded from the disk cache instead of compiled */
    uint64_t disk_writes;         /* kernels written to it                                   */
    uint64_t disk_rejected;       /* files found for a key but not valid (truncated,
                                     corrupted, another version): compiled and replaced    */
    uint64_t disk_untrusted;      /* things found at a key's file name and never read: not
                                     a regular file (a link, a FIFO, a device), another
                                     owner's, writable by others, or too large             */
    uint64_t isolated_compiles;   /* compiles done in a helper process (isolate_compiles)  */
    uint64_t isolated_failures;   /* of those, helpers that died, hit a limit or could not
                                     start: the compile failed, this process went on       */
    uint64_t shared_compile_waits; /* pm_jit_run calls that found no kernel of their
                                      pipeline and waited for another call's compile of
                                      one instead of compiling their own                  */
    int64_t scratch_bytes;        /* scratch memory the cached kernels hold now            */
    uint64_t scratch_released;    /* bytes of idle scratch freed (max_scratch_bytes,
                                     scratch_idle_ms)                                      */
    uint64_t upgrades;            /* kernels of the default grouping replaced by their
                                     full-DP compile in the background (pm_jit_run)        */
} pm_cache_stats;
/* A snapshot of the jit's counters since pm_jit_new (size bytes of *stats written, size
 * a release's sizeof(pm_cache_stats), else PM_ERR_ARGUMENT). */
pm_status pm_jit_stats(pm_jit *jit, pm_cache_stats *stats, size_t size);

/* Text of a compiled phase for tools and tests, by one dump name: a step's name ("poly",
 * "tile", "ast", "llvm" for the optimized IR, ...) or a text's ("domains", "groups",
 * "asm", ...; docs/dumps.md). NULL if the text was not kept. Valid as long as the
 * kernel. */
const char *pm_kernel_dump(const pm_kernel *k, const char *phase);
/* Milliseconds the compile took (or the load, for a kernel from the on-disk cache). */
double pm_kernel_compile_ms(const pm_kernel *k);

/* Where a kernel's compile time went (wall milliseconds) and how big its code is. The
 * parts, in the order they run, add up to total_ms up to other_ms (the signature, the
 * module's preparation, the cache's bookkeeping); LLVM's passes and machine code count
 * as llvm_wall_ms there (see below). A kernel loaded from the disk cache has only
 * total_ms (the load), code_bytes and compile_parts, with from_disk set. PM_TIME=1
 * prints these for every compile on stderr. */
typedef struct pm_compile_stats {
    double total_ms;
    /* the compiler's phases (codegen/driver.c): isl scheduling, then the isl AST */
    double poly_ms, inline_ms, group_ms, align_ms, tile_ms, storage_ms, schedule_ms;
    double isl_schedule_ms;   /* poly_ms .. schedule_ms together                          */
    double isl_ast_ms;
    double ir_build_ms;       /* LLVM IR from the AST: the lower, llvm and merge steps    */
    double dump_ms;           /* phase texts kept or printed (0 unless asked for)         */
    double llvm_opt_ms;       /* LLVM's optimization passes                               */
    double machine_code_ms;   /* instruction selection, register allocation, object file  */
    double link_ms;           /* linking the object into the process                      */
    double other_ms;          /* total_ms minus all of the above                          */
    int64_t ir_instructions_before; /* IR instructions the compiler built                 */
    int64_t ir_instructions_after;  /* after LLVM's passes                                */
    int64_t ir_functions;     /* defined functions after the passes                       */
    int64_t code_bytes;       /* object code linked                                       */
    int from_disk;            /* 1: loaded from the disk cache, not compiled              */
    /* Appended to the first layout. With compile_parts > 1 the module was split and its
     * parts optimized and compiled at once (pm_jit_options.compile_threads): llvm_opt_ms
     * and machine_code_ms are then sums over the parts (thread time, overlapping) and
     * llvm_wall_ms the wall time of that parallel section, the split included; serially
     * llvm_wall_ms = llvm_opt_ms + machine_code_ms. other_ms counts llvm_wall_ms, not the
     * sums. */
    double llvm_wall_ms;
    int64_t compile_parts;    /* modules (objects) the kernel was compiled as; 1: serial  */
} pm_compile_stats;
/* Fills the first size bytes of *stats (sizeof(pm_compile_stats); an older caller's
 * shorter struct gets its own fields). PM_ERR_MISUSE for a NULL kernel or stats;
 * PM_ERR_ARGUMENT for a size that is not a release's (the rule above pm_jit_options). */
pm_status pm_kernel_compile_stats(const pm_kernel *k, pm_compile_stats *stats, size_t size);
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* POLYMAGE_H */
