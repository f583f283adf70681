/* fuzz.c — random pipelines, compiled vs the interpreter.
 *
 * One case is one seed: a random DAG of 2-15 stages (point-wise arithmetic over every
 * element type, casts, select/min/max, stencils, up- and down-sampling, case pieces with
 * boundary conditions, reductions and histograms with data-dependent indices, reads
 * at a data-dependent level and the level above it (inlined when read once, else grouped
 * with the reader: stages of 2-8 levels read at exact levels and a neighbour),
 * time-iterated self-references, interval steps other than 1, non-zero lower bounds,
 * domains of different sizes; in 30% of the cases 1-2 lookup tables: 1-D u8/i16/i32/f32
 * stages over constant domains, mostly flat outside a range (clamps of monotone
 * expressions of their variable: frontend/flat.h), read at data-dependent indices below,
 * inside and above that range and outside the domain — stage_table, table_read), in
 * 15% a pyramid of 3-4 levels down-sampling a 2-D image as the first stages, each level
 * the same code over other bounds (stage_level: their bodies merge, llvm/merge.c), half
 * of them followed by a band of two levels (stage_band: levels read after the next
 * level, which the DP may export), compiled once by pm_jit_compile with random options
 * (vector width, opt level, and the optimizer's fusion / tile sizes / overlap threshold /
 * group limit; estimates = the first run size, or a quarter of the time large ones with
 * rows of 1024-4096 points; compile_threads 1 + seed % 3, a jit each), then run at 3-4
 * random sizes (1x1, 1xN, Nx1, odd, smaller than a vector)
 * with 1-3 threads and compared with pm_interpret on the same inputs. Output buffers
 * start with the same garbage on both sides and may have padded rows.
 *
 * Comparison: integers exactly; floats within |a - b| <= 1e-3 * (1 + max |reference|)
 * over the output buffer (the stated tolerance: reductions may sum in another order, FMA
 * may contract). The generator keeps floats away from anything that turns a rounding
 * difference into a different integer (no float -> integer casts, float comparisons,
 * data-dependent indices from floats; an integer lookup table's float curve is exact in
 * every step before its cast: stage_table), so integer stages are exact by construction.
 *
 * A failing case prints its seed, the options, the sizes and the pipeline as C builder
 * code that reproduces it. Usage:
 *   pm_fuzz [--seed S] [--cases N] [--seconds T] [--verbose] [--canon-roundtrip]
 * --canon-roundtrip compiles nothing: each case's pipeline is written as its canonical
 * text, read back into a new context (pm_pipeline_from_text), and must give byte-equal
 * text and, interpreted at the case's first size, the same bytes in every output; then
 * 16 seeded mutations of the text (a byte flipped, deleted or doubled) must each be
 * refused with PM_ERR_ARGUMENT or read back to their own text, and never crash.
 * Case i uses seed S + i; the same seed always gives the same pipeline, inputs, sizes and
 * options. --seconds stops early (after the running case) and says how many ran.
 */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "frontend/ir.h"
#include "runtime/kernel.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- random numbers ------------------------------------------------------------------ */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnext(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rint_(rng *r, int lo, int hi) /* inclusive */
{
    return lo + (int)(rnext(r) % (uint64_t)(hi - lo + 1));
}

static bool rchance(rng *r, int percent)
{
    return rint_(r, 0, 99) < percent;
}

/* ---- strings kept for the case (freed together) ---------------------------------------- */

typedef struct strpool {
    char **items;
    int n, cap;
} strpool;

static strpool pool;

static const char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static const char *fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(NULL, 0, f, ap);
    va_end(ap);
    char *s = malloc((size_t)n + 1);
    va_start(ap, f);
    vsnprintf(s, (size_t)n + 1, f, ap);
    va_end(ap);
    if (pool.n == pool.cap) {
        pool.cap = pool.cap ? 2 * pool.cap : 256;
        pool.items = realloc(pool.items, (size_t)pool.cap * sizeof *pool.items);
    }
    pool.items[pool.n++] = s;
    return s;
}

static void pool_clear(void)
{
    for (int i = 0; i < pool.n; i++)
        free(pool.items[i]);
    pool.n = 0;
}

/* The reproducer, line by line. */
static char *code;
static size_t code_len, code_cap;

static void emit(const char *f, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(NULL, 0, f, ap);
    va_end(ap);
    if (code_len + (size_t)n + 2 > code_cap) {
        code_cap = (code_len + (size_t)n + 2) * 2;
        code = realloc(code, code_cap);
    }
    va_start(ap, f);
    vsnprintf(code + code_len, (size_t)n + 1, f, ap);
    va_end(ap);
    code_len += (size_t)n;
    code[code_len++] = '\n';
    code[code_len] = '\0';
}

/* ---- expressions with their C spelling --------------------------------------------------- */

typedef struct G {
    pm_expr *e;
    const char *c;
} G;

static G g_(pm_expr *e, const char *c) { return (G){e, c}; }
static pm_type ty(G a) { return a.e ? a.e->type : PM_I32; }
static bool is_float(G a) { return ty(a) == PM_F32 || ty(a) == PM_F64; }

static const char *type_c(pm_type t)
{
    static const char *names[] = {"PM_BOOL", "PM_U8", "PM_I8", "PM_U16", "PM_I16",
                                  "PM_U32", "PM_I32", "PM_I64", "PM_F32", "PM_F64"};
    return names[t];
}

#define BIN(fn) static G b_##fn(G a, G b) { return g_(pm_##fn(a.e, b.e), fmt("pm_" #fn "(%s, %s)", a.c, b.c)); }
BIN(add) BIN(sub) BIN(mul) BIN(div) BIN(mod) BIN(min) BIN(max) BIN(absd) BIN(band) BIN(bor)
BIN(bxor) BIN(shl) BIN(shr) BIN(lt) BIN(le) BIN(eq) BIN(ne) BIN(ge) BIN(gt) BIN(and) BIN(or)
BIN(cdiv) BIN(cmod)
#undef BIN

static G u_neg(G a) { return g_(pm_neg(a.e), fmt("pm_neg(%s)", a.c)); }
static G u_abs(G a) { return g_(pm_abs(a.e), fmt("pm_abs(%s)", a.c)); }
static G u_not(G a) { return g_(pm_not(a.e), fmt("pm_not(%s)", a.c)); }
static G u_sqrt(G a) { return g_(pm_sqrt(a.e), fmt("pm_sqrt(%s)", a.c)); }
static G cast(pm_type t, G a) { return g_(pm_cast(t, a.e), fmt("pm_cast(%s, %s)", type_c(t), a.c)); }
static G sel(G c, G a, G b)
{
    return g_(pm_select(c.e, a.e, b.e), fmt("pm_select(%s, %s, %s)", c.c, a.c, b.c));
}

static pm_ctx *ctx;

static G lit(int64_t v) { return g_(pm_int(ctx, v), fmt("pm_int(ctx, %lld)", (long long)v)); }
static G flit(double v) { return g_(pm_float(ctx, v), fmt("pm_float(ctx, %.17g)", v)); }
static G addi(G a, int64_t v)
{
    return v == 0 ? a : g_(pm_addi(a.e, v), fmt("pm_addi(%s, %lld)", a.c, (long long)v));
}
static G muli(G a, int64_t v) { return g_(pm_muli(a.e, v), fmt("pm_muli(%s, %lld)", a.c, (long long)v)); }
static G divi(G a, int64_t v) { return g_(pm_divi(a.e, v), fmt("pm_divi(%s, %lld)", a.c, (long long)v)); }

static G call(pm_func *f, const char *fname, int n, G *args)
{
    pm_expr *a[PM_MAX_DIMS];
    const char *c = fmt("pm_call(%s", fname);
    for (int i = 0; i < n; i++) {
        a[i] = args[i].e;
        c = fmt("%s, %s", c, args[i].c);
    }
    return g_(pm_call_n(f, n, a), fmt("%s)", c));
}

static G and_all(G *cs, int n)
{
    G r = cs[0];
    for (int i = 1; i < n; i++)
        r = b_and(r, cs[i]);
    return r;
}

/* ---- the generated pipeline ------------------------------------------------------------ */

enum { MAX_STAGES = 15, MAX_IMAGES = 3, MAX_FUNCS = MAX_STAGES + MAX_IMAGES, GUARDS = 96 };

typedef struct dim {
    G lb, ub;         /* the interval's bounds (images: 0 and extent - 1)      */
    int64_t step;
} dim;

typedef struct node {
    pm_func *f;
    const char *name;
    pm_type type;
    bool is_image;
    int ndims;
    dim d[3];
    bool exact;       /* an integer computed from integers only: may index, compare */
    bool table;       /* a lookup table (stage_table): 1-D, constant domain        */
    int64_t flat_a, flat_b; /* the range its clamps were aimed at (indices go around) */
} node;

typedef struct gen {
    rng r;
    G R, C;
    G var[3];         /* x, y, z */
    G rvar[3];        /* r0, r1, r2 */
    int nnodes;
    node nodes[MAX_FUNCS];
    int nimages;
    bool *reads;      /* reads[i * MAX_FUNCS + j]: node i reads node j */
    /* guards collected while building one value */
    G guards[GUARDS];
    int nguards;
    /* lookup tables (stage_table) and their reads draw from a generator of their own,
     * so that a case without tables makes the draws it made before they existed */
    rng t;
    int ntables, tables[MAX_STAGES];
    int pending;      /* a table no stage has read yet, or -1 */
    bool table_reader[MAX_FUNCS]; /* the first stage to read a table (made an output) */
    bool reader;      /* building the stage after a table (stage_function) */
} gen;

static const pm_type int_types[] = {PM_U8, PM_I8, PM_U16, PM_I16, PM_U32, PM_I32, PM_I64};
static const pm_type all_types[] = {PM_U8, PM_I8, PM_U16, PM_I16, PM_U32, PM_I32, PM_I64,
                                    PM_F32, PM_F64};

static pm_type random_type(gen *g)
{
    return rchance(&g->r, 35) ? (rchance(&g->r, 70) ? PM_F32 : PM_F64)
                              : int_types[rint_(&g->r, 0, 6)];
}

/* An upper bound: R or C (or R/2) plus a small offset, or a small constant. */
static G random_ub(gen *g, int which)
{
    G P = which ? g->C : g->R;
    switch (rint_(&g->r, 0, 9)) {
    case 0: return lit(rint_(&g->r, 0, 5));
    case 1: return addi(divi(P, 2), rint_(&g->r, -1, 1));
    default: return addi(P, rint_(&g->r, -3, 1));
    }
}

static void random_dim(gen *g, dim *d, int which)
{
    int lb = rchance(&g->r, 60) ? 0 : rint_(&g->r, -2, 3);
    d->lb = lit(lb);
    d->ub = random_ub(g, which);
    d->step = rchance(&g->r, 80) ? 1 : rint_(&g->r, 2, 3);
}

static pm_interval *interval_of(const dim *d)
{
    return pm_interval_new(d->lb.e, d->ub.e, d->step);
}

static const char *interval_c(const dim *d)
{
    return fmt("pm_interval_new(%s, %s, %lld)", d->lb.c, d->ub.c, (long long)d->step);
}

/* A coordinate of producer dimension pd read from the consumer's variable v: aligned to
 * the producer's step by construction (lb + step * e), guarded by a case condition that
 * keeps it inside the producer's box. */
static G read_coord(gen *g, const node *p, int pd, G v, bool constant)
{
    const dim *d = &p->d[pd];
    G e;
    if (constant) {
        e = lit(rint_(&g->r, 0, 2));
    } else {
        switch (rint_(&g->r, 0, 5)) {
        case 0: e = addi(divi(v, 2), rint_(&g->r, -1, 1)); break;      /* upsampling */
        case 1: e = addi(muli(v, 2), rint_(&g->r, -1, 1)); break;      /* downsampling */
        default: e = addi(v, rint_(&g->r, -2, 2)); break;              /* stencil-like */
        }
    }
    G c = d->step == 1 ? (rchance(&g->r, 50) ? e : addi(e, 0))
                       : b_add(d->lb, muli(e, d->step));
    g->guards[g->nguards++] = b_le(d->lb, c); /* value() keeps room for these */
    g->guards[g->nguards++] = b_le(c, d->ub);
    return c;
}

/* A guarded affine read of node p by consumer node `self` (with nv variables). */
static G affine_read(gen *g, int self, int pi, int nv)
{
    node *p = &g->nodes[pi];
    g->reads[self * MAX_FUNCS + pi] = true;
    G args[3];
    for (int d = 0; d < p->ndims; d++) {
        bool constant = nv == 0 || rchance(&g->r, 10);
        G v = g->var[nv ? (p->ndims == nv && rchance(&g->r, 85) ? d : rint_(&g->r, 0, nv - 1)) : 0];
        args[d] = read_coord(g, p, d, v, constant);
    }
    return call(p->f, p->name, p->ndims, args);
}

/* An exact integer producer before `self` to take an index from (8 tries), or -1. */
static int exact_source(gen *g, int self)
{
    for (int tries = 0; tries < 8; tries++) {
        int j = rint_(&g->r, 0, self - 1);
        if (g->nodes[j].exact)
            return j;
    }
    return -1;
}

/* A data-dependent read: an index taken from an exact integer producer (clamped into the
 * callee's box by the language's rule). */
static G indirect_read(gen *g, int self, int pi, int nv)
{
    node *p = &g->nodes[pi];
    int src = exact_source(g, self);
    if (src < 0)
        return affine_read(g, self, pi, nv);
    G args[3];
    G idx = affine_read(g, self, src, nv);
    for (int d = 0; d < p->ndims; d++) {
        if (d == 0)
            args[d] = rchance(&g->r, 50) ? b_mod(cast(PM_I32, idx), lit(rint_(&g->r, 1, 9)))
                                         : cast(PM_I32, idx);
        else
            args[d] = read_coord(g, p, d, g->var[nv ? rint_(&g->r, 0, nv - 1) : 0], nv == 0);
    }
    g->reads[self * MAX_FUNCS + pi] = true;
    return call(p->f, p->name, p->ndims, args);
}

/* Two reads one apart at a data-dependent level (local Laplacian's lookups of the two
 * intensity levels around a pixel's): the level, from an exact integer producer,
 * clamped into [lb, ub - 1] of the producer's first dimension, so both reads are
 * provably inside it when it has two points or more (else the language's clamp); the
 * other coordinates shared by both reads. */
static G level_pair_read(gen *g, int self, int pi, int nv)
{
    node *p = &g->nodes[pi];
    int src = exact_source(g, self);
    if (src < 0 || p->d[0].step != 1 || p->is_image)
        return indirect_read(g, self, pi, nv);
    G lev = b_min(b_max(cast(PM_I32, affine_read(g, self, src, nv)), p->d[0].lb),
                  addi(p->d[0].ub, -1));
    G args[2][3];
    args[0][0] = lev;
    args[1][0] = addi(lev, 1);
    for (int d = 1; d < p->ndims; d++)
        args[0][d] = args[1][d] = read_coord(g, p, d, g->var[nv ? rint_(&g->r, 0, nv - 1) : 0], nv == 0);
    g->reads[self * MAX_FUNCS + pi] = true;
    return b_add(call(p->f, p->name, p->ndims, args[0]), call(p->f, p->name, p->ndims, args[1]));
}

/* A guarded read of node p whose last coordinate moves with the reader's innermost
 * variable (so an index read from it differs from lane to lane), the others with its
 * outer ones. */
static G lane_read(gen *g, int self, int pi, int nv)
{
    node *p = &g->nodes[pi];
    g->reads[self * MAX_FUNCS + pi] = true;
    G args[3];
    for (int d = 0; d < p->ndims; d++) {
        int od = p->ndims - 1 - d; /* counted from the innermost */
        int v = nv - 1 - od < 0 ? 0 : nv - 1 - od;
        args[d] = read_coord(g, p, d, g->var[v], od > 0 && nv - 1 - od < 0);
    }
    return call(p->f, p->name, p->ndims, args);
}

/* A lookup table's read at a data-dependent index (stage_table; llvm/access.c's small
 * tables, or a gather): an index from an exact integer producer, cast to i32, taken
 * modulo a span and offset (sometimes scaled by -2..3) so that it falls below, inside
 * and above the range the table's clamps aim at and outside its domain (the language
 * clamps such an index to the box), or the index as it is (mostly clamped to an end). */
static G table_read(gen *g, int self, int ti, int nv)
{
    rng *t = &g->t;
    node *p = &g->nodes[ti];
    if (g->pending == ti) {
        g->pending = -1;
        g->table_reader[self] = true;
    }
    /* mostly an integer image (read at shifts of x and y, the reader's case mostly
     * holds), else any exact producer, a table last */
    int src = -1, images[MAX_IMAGES], nimages = 0;
    for (int j = 0; j < g->nimages; j++)
        if (g->nodes[j].exact)
            images[nimages++] = j;
    if (nimages > 0 && rchance(t, 60))
        src = images[rint_(t, 0, nimages - 1)];
    for (int tries = 0; tries < 12 && src < 0; tries++) {
        int j = rint_(t, 0, self - 1);
        if (g->nodes[j].exact && (!g->nodes[j].table || tries >= 8))
            src = j;
    }
    if (src < 0)
        return affine_read(g, self, ti, nv);
    G idx = cast(PM_I32, rchance(t, 80) ? lane_read(g, self, src, nv) : affine_read(g, self, src, nv));
    G e;
    int mode = rint_(t, 0, 9);
    if (mode == 9) {
        e = addi(idx, rint_(t, -40, 40));
    } else {
        int64_t margin = rchance(t, 50) ? rint_(t, 0, 40) : rint_(t, 41, 300);
        int64_t a = mode < 5 ? p->d[0].lb.e->ival : p->flat_a;
        int64_t b = mode < 5 ? p->d[0].ub.e->ival : p->flat_b;
        a -= margin;
        b += margin;
        static const int scales[] = {-2, -1, 2, 3};
        int scale = rchance(t, 70) ? 1 : scales[rint_(t, 0, 3)];
        e = b_mod(idx, lit((b - a) / (scale < 0 ? -scale : scale) + 1));
        if (scale != 1)
            e = muli(e, scale);
        e = addi(e, scale > 0 ? a : b);
    }
    g->reads[self * MAX_FUNCS + ti] = true;
    return call(p->f, p->name, 1, &e);
}

/* A value of stage `self`: integer stages read and compute integers only. */
static G value(gen *g, int self, int nv, bool want_int, int depth)
{
    rng *r = &g->r;
    /* a lookup table: the one no stage has read yet, first (its own draws: none at all
     * in a case without tables) */
    if (g->ntables > 0 && self > 0 && g->nguards + 12 <= GUARDS) {
        int ti = -1;
        /* the unread one in a stage whose innermost variable steps by 1 (its reads may
         * run in vectors) */
        const node *n = &g->nodes[self];
        bool lanes = n->ndims == nv && n->d[nv - 1].step == 1;
        if (g->pending >= 0 && depth > 0 && lanes && (!want_int || g->nodes[g->pending].exact)) {
            ti = g->pending;
        } else if (rchance(&g->t, 10)) {
            ti = g->tables[rint_(&g->t, 0, g->ntables - 1)];
            if (want_int && !g->nodes[ti].exact)
                ti = -1;
        }
        if (ti >= 0) {
            G read = table_read(g, self, ti, nv);
            if (depth > 0 && rchance(&g->t, 50))
                read = b_add(read, value(g, self, nv, want_int, depth - 1));
            return read;
        }
    }
    int k = rint_(r, 0, depth <= 0 ? 3 : 13);
    /* read a producer (an indirect read needs guards for two reads of 3 dimensions) */
    if (k <= 2 && self > 0 && g->nguards + 12 <= GUARDS) {
        for (int tries = 0; tries < 10; tries++) {
            int pi = rint_(r, 0, self - 1);
            node *p = &g->nodes[pi];
            if (want_int && !p->exact)
                continue;
            if (k == 2 && p->ndims >= 1) {
                bool levels = p->ndims == 3 && p->d[0].ub.e->kind == PM_EXPR_INT;
                return rchance(r, levels ? 80 : 30) ? level_pair_read(g, self, pi, nv)
                                                    : indirect_read(g, self, pi, nv);
            }
            return affine_read(g, self, pi, nv);
        }
    }
    if (k <= 3) {
        switch (rint_(r, 0, 3)) {
        case 0: return want_int ? lit(rint_(r, -20, 300)) : flit(rint_(r, -50, 50) / 8.0);
        case 1: return nv ? g->var[rint_(r, 0, nv - 1)] : lit(7);
        case 2: return rchance(r, 50) ? g->R : g->C;
        default: return want_int ? cast(int_types[rint_(r, 0, 6)], lit(rint_(r, -300, 300)))
                                 : cast(PM_F64, lit(rint_(r, 0, 9)));
        }
    }
    G a = value(g, self, nv, want_int, depth - 1);
    G b = value(g, self, nv, want_int, depth - 1);
    bool fl = is_float(a) || is_float(b);
    switch (k) {
    case 4: return b_add(a, b);
    case 5: return b_sub(a, b);
    case 6: return b_mul(a, b);
    case 7: return rchance(r, 50) ? b_min(a, b) : b_max(a, b);
    case 8: /* select on an exact condition */
        {
            G x = value(g, self, nv, true, depth - 1), y = value(g, self, nv, true, 0);
            G c;
            switch (rint_(r, 0, 3)) {
            case 0: c = b_lt(x, y); break;
            case 1: c = b_or(b_gt(x, y), b_eq(y, lit(3))); break;
            case 2: c = b_ge(x, y); break;
            default: c = b_ne(b_band(cast(PM_I32, x), lit(1)), lit(0)); break;
            }
            return sel(c, a, b);
        }
    case 9:
        if (fl)
            return b_div(a, b_add(u_abs(b), flit(1.0)));
        return rchance(r, 50) ? (rchance(r, 50) ? b_div(a, b) : b_mod(a, b))
                              : (rchance(r, 50) ? b_cdiv(a, b) : b_cmod(a, b));
    case 10:
        if (fl)
            return rchance(r, 50) ? u_sqrt(u_abs(a)) : u_neg(a);
        switch (rint_(r, 0, 4)) {
        case 0: return b_band(a, b);
        case 1: return b_bor(a, b);
        case 2: return b_bxor(a, b);
        case 3: return b_shl(a, lit(rint_(r, 0, 40)));
        default: return b_shr(a, b);
        }
    case 11:
        return fl ? b_absd(a, b) : (rchance(r, 50) ? b_absd(a, b) : u_abs(a));
    case 12: /* casts */
        if (want_int)
            return cast(int_types[rint_(r, 0, 6)], a);
        return cast(rchance(r, 50) ? PM_F32 : PM_F64, a);
    default:
        /* a cast to the left operand's type, never float -> integer */
        return rchance(r, 30) ? u_neg(a) : b_add(a, is_float(b) && !is_float(a) ? b : cast(ty(a), b));
    }
}

static pm_func *new_func(gen *g, node *n, int nv)
{
    pm_expr *vars[3];
    pm_interval *ivs[3];
    const char *vc = "", *ic = "";
    for (int d = 0; d < nv; d++) {
        vars[d] = g->var[d].e;
        ivs[d] = interval_of(&n->d[d]);
        vc = fmt("%s%s%s", vc, d ? ", " : "", g->var[d].c);
        ic = fmt("%s%s%s", ic, d ? ", " : "", interval_c(&n->d[d]));
    }
    emit("    pm_func *%s = pm_func_new(ctx, \"%s\", %s, %d, pm_exprs(%s), pm_intervals(%s));",
         n->name, n->name, type_c(n->type), nv, vc, ic);
    return pm_func_new(ctx, n->name, n->type, nv, vars, ivs);
}

/* Case pieces: the guarded value where every read is inside, a fallback elsewhere, and
 * sometimes a split of the guarded part at a boundary x < k or by a residue of the
 * innermost variable; or, when nothing needs a guard, a split of the whole domain by a
 * residue of the outermost variable. */
static void define_cases(gen *g, node *n, int self, int nv, bool want_int)
{
    g->nguards = 0;
    G v = value(g, self, nv, want_int, rint_(&g->r, 1, 3));
    int nguards = g->nguards;
    G guards[GUARDS];
    memcpy(guards, g->guards, sizeof guards);
    pm_case *cases[4];
    const char *cc[4];
    int nc = 0;
    G fallback = want_int ? lit(rint_(&g->r, -5, 5))
                          : (nv ? cast(n->type, g->var[0]) : flit(0.5));
    if (nguards == 0 && nv >= 2 && rchance(&g->r, 15)) {
        /* by residue of the outermost variable (even/odd or mod 3 rows: poly.c makes the
         * cases one statement that branches per row) */
        int m = rint_(&g->r, 2, 3);
        G split = b_eq(b_mod(g->var[0], lit(m)), lit(rint_(&g->r, 0, m - 1)));
        G other = value(g, self, nv, want_int, 0);
        if (g->nguards > nguards)
            other = fallback;
        G rest = u_not(split);
        cases[nc] = pm_case_new(split.e, v.e);
        cc[nc++] = fmt("pm_case_new(%s, %s)", split.c, v.c);
        cases[nc] = pm_case_new(rest.e, other.e);
        cc[nc++] = fmt("pm_case_new(%s, %s)", rest.c, other.c);
    } else if (nguards == 0 && !rchance(&g->r, 25)) {
        cases[nc] = pm_case_new(NULL, v.e);
        cc[nc++] = fmt("pm_case_new(NULL, %s)", v.c);
    } else {
        G cond = nguards ? and_all(guards, nguards) : b_lt(g->var[0], addi(g->R, -2));
        if (nv && rchance(&g->r, 30)) {
            /* at a boundary, or by residue of the innermost variable (even/odd or mod 3:
             * poly.c merges such cases into one statement where reads stay inside) */
            G split;
            if (rchance(&g->r, 50) || g->reader) { /* a table's reader: not x < 0 */
                int m = rint_(&g->r, 2, 3);
                split = b_eq(b_mod(g->var[nv - 1], lit(m)), lit(rint_(&g->r, 0, m - 1)));
            } else {
                split = b_lt(g->var[0], lit(rint_(&g->r, 0, 4)));
            }
            G other = value(g, self, nv, want_int, 0); /* no reads */
            if (g->nguards > nguards) /* the other value read something: keep it simple */
                other = fallback;
            G c1 = b_and(cond, split), c2 = b_and(cond, u_not(split));
            cases[nc] = pm_case_new(c1.e, v.e);
            cc[nc++] = fmt("pm_case_new(%s, %s)", c1.c, v.c);
            cases[nc] = pm_case_new(c2.e, other.e);
            cc[nc++] = fmt("pm_case_new(%s, %s)", c2.c, other.c);
        } else {
            cases[nc] = pm_case_new(cond.e, v.e);
            cc[nc++] = fmt("pm_case_new(%s, %s)", cond.c, v.c);
        }
        G nc_ = u_not(cond);
        cases[nc] = pm_case_new(nc_.e, fallback.e);
        cc[nc++] = fmt("pm_case_new(%s, %s)", nc_.c, fallback.c);
    }
    const char *all = "";
    for (int i = 0; i < nc; i++)
        all = fmt("%s,\n        %s", all, cc[i]);
    emit("    pm_define(%s%s);", n->name, all);
    pm_func_define(n->f, nc, cases);
}

/* Point-wise / stencil / sampling stage: 1-3 dimensions. */
static void stage_function(gen *g, int self)
{
    node *n = &g->nodes[self];
    int nv = rchance(&g->r, 75) ? 2 : rchance(&g->r, 60) ? 1 : 3;
    n->ndims = nv;
    n->type = random_type(g);
    bool want_int = n->type != PM_F32 && n->type != PM_F64;
    n->exact = want_int;
    for (int d = 0; d < nv; d++)
        random_dim(g, &n->d[d], d % 2);
    /* half the 3-D stages with a first dimension of 2-8 levels (local Laplacian's
     * intensity levels): read at data-dependent levels proven inside (level_pair_read),
     * such a stage may join its reader's group, computed whole along them (align.h) */
    if (nv == 2 && rchance(&g->r, 15)) { /* more 3-D stages, for levels */
        nv = n->ndims = 3;
        random_dim(g, &n->d[2], 0);
    }
    if (nv == 3 && rchance(&g->r, 50)) {
        n->d[0].lb = lit(0);
        n->d[0].ub = lit(rint_(&g->r, 1, 7));
        n->d[0].step = 1;
    }
    /* the stage after a lookup table: 2-D, unit steps, rows of R or C points, so its
     * read of the table (value's first) may run in vectors */
    bool reader = g->pending >= 0 && g->pending == self - 1;
    if (reader) {
        if (nv == 1)
            random_dim(g, &n->d[1], 1);
        nv = n->ndims = 2;
        for (int d = 0; d < 2; d++) {
            n->d[d].step = 1;
            if (n->d[d].ub.e->kind == PM_EXPR_INT)
                n->d[d].ub = addi(d ? g->C : g->R, -1);
        }
    }
    n->f = new_func(g, n, nv);
    /* a stencil of a float-free 2-D producer with unit steps, into a float stage */
    if (!reader && !want_int && nv == 2 && rchance(&g->r, 30)) {
        int pi = rint_(&g->r, 0, self - 1);
        node *p = &g->nodes[pi];
        if (p->ndims == 2 && p->d[0].step == 1 && p->d[1].step == 1) {
            int rows = rint_(&g->r, 1, 3) | 1, cols = rint_(&g->r, 1, 3) | 1;
            double w[9];
            const char *wc = "";
            for (int i = 0; i < rows * cols; i++) {
                w[i] = rint_(&g->r, -2, 3);
                wc = fmt("%s%s%g", wc, i ? ", " : "", w[i]);
            }
            double scale = 1.0 / rint_(&g->r, 1, 16);
            G at[2] = {g->var[0], g->var[1]};
            pm_expr *ate[2] = {at[0].e, at[1].e};
            G s = g_(pm_stencil(p->f, ate, scale, rows, cols, w),
                     fmt("pm_stencil(%s, pm_exprs(%s, %s), %.17g, %d, %d, (const double[]){%s})",
                         p->name, at[0].c, at[1].c, scale, rows, cols, wc));
            g->reads[self * MAX_FUNCS + pi] = true;
            G guards[4] = {b_le(addi(p->d[0].lb, cols / 2), g->var[0]),
                           b_le(addi(g->var[0], cols / 2), p->d[0].ub),
                           b_le(addi(p->d[1].lb, rows / 2), g->var[1]),
                           b_le(addi(g->var[1], rows / 2), p->d[1].ub)};
            G cond = and_all(guards, 4), ncond = u_not(cond);
            G fb = cast(n->type, g->var[1]);
            emit("    pm_define(%s,\n        pm_case_new(%s, %s),\n        pm_case_new(%s, %s));",
                 n->name, cond.c, s.c, ncond.c, fb.c);
            pm_define(n->f, pm_case_new(cond.e, s.e), pm_case_new(ncond.e, fb.e));
            return;
        }
    }
    /* local Laplacian's lookup in small: a 2-D float stage reading an integer stage of
     * levels P(k, x, y) at l and l + 1, l = clamp(P(0, x, y), 0, K - 2) (exact, proven
     * inside), and at (l, x + 1, y), so P, read twice, is not inlined: it may join this
     * stage's group, whole along k (align.h) */
    int levels[MAX_FUNCS], nlevels = 0;
    for (int i = 0; i < self; i++) {
        const node *q = &g->nodes[i];
        if (!q->is_image && q->exact && q->ndims == 3 && q->d[0].ub.e->kind == PM_EXPR_INT &&
            q->d[0].ub.e->ival >= 1 && q->d[1].step == 1 && q->d[2].step == 1)
            levels[nlevels++] = i;
    }
    if (!reader && !want_int && nv == 2 && nlevels > 0 && rchance(&g->r, 50)) {
        int pi = levels[rint_(&g->r, 0, nlevels - 1)];
        node *p = &g->nodes[pi];
        {
            G x = g->var[0], y = g->var[1];
            G a0[3] = {lit(0), x, y};
            G l = b_min(b_max(cast(PM_I32, call(p->f, p->name, 3, a0)), lit(0)),
                        addi(p->d[0].ub, -1));
            G a1[3] = {l, x, y}, a2[3] = {addi(l, 1), x, y}, a3[3] = {l, addi(x, 1), y};
            G v = b_add(b_add(call(p->f, p->name, 3, a1), call(p->f, p->name, 3, a2)),
                        call(p->f, p->name, 3, a3));
            v = cast(n->type, v);
            g->reads[self * MAX_FUNCS + pi] = true;
            G guards[4] = {b_le(p->d[1].lb, x), b_le(addi(x, 1), p->d[1].ub),
                           b_le(p->d[2].lb, y), b_le(y, p->d[2].ub)};
            G cond = and_all(guards, 4), ncond = u_not(cond);
            G fb = cast(n->type, y);
            emit("    pm_define(%s,\n        pm_case_new(%s, %s),\n        pm_case_new(%s, %s));",
                 n->name, cond.c, v.c, ncond.c, fb.c);
            pm_define(n->f, pm_case_new(cond.e, v.e), pm_case_new(ncond.e, fb.e));
            return;
        }
    }
    g->reader = reader;
    define_cases(g, n, self, nv, want_int);
    g->reader = false;
}

/* A level of a pyramid: a 2-D stage of type t, src down-sampled by 2 in both dimensions
 * (the sum of a 3x3 block, a ninth: the blocks overlap, so no level is inlined as read
 * once), over [0, (ub - 2) / 2] of src's [0, ub] per dimension. Every level after the first reads a level of the same type with the same
 * code, so their compiled bodies differ only in constants (bounds, extents, scratchpad
 * strides): the merge step (codegen/llvm/merge.c) makes them one function. */
static void stage_level(gen *g, int self, int src, pm_type t)
{
    node *n = &g->nodes[self];
    const node *p = &g->nodes[src];
    n->ndims = 2;
    n->type = t;
    n->exact = t != PM_F32 && t != PM_F64;
    for (int d = 0; d < 2; d++)
        n->d[d] = (dim){lit(0), divi(addi(p->d[d].ub, -2), 2), 1};
    n->f = new_func(g, n, 2);
    G x2 = muli(g->var[0], 2), y2 = muli(g->var[1], 2), v = {0};
    for (int k = 0; k < 9; k++) {
        G at[2] = {addi(x2, k % 3), addi(y2, k / 3)};
        G r = cast(t, call(p->f, p->name, 2, at));
        v = k ? b_add(v, r) : r;
    }
    v = cast(t, n->exact ? divi(v, 9) : b_mul(v, cast(t, flit(1.0 / 9))));
    g->reads[self * MAX_FUNCS + src] = true;
    G inside = b_le(lit(0), g->var[0]);
    emit("    pm_define(%s, pm_case_new(%s, %s));", n->name, inside.c, v.c);
    pm_define(n->f, pm_case_new(inside.e, v.e));
}

/* Node k becomes an output (outi, *nout), and it and every node it reaches are marked
 * in `reached`. */
static void add_output(const gen *g, bool *reached, int *outi, int *nout, int k)
{
    outi[(*nout)++] = k;
    reached[k] = true;
    for (int i = k; i >= 0; i--)
        if (reached[i])
            for (int j = 0; j < i; j++)
                if (g->reads[i * MAX_FUNCS + j])
                    reached[j] = true;
}

/* A pyramid's band: fine minus coarse up-sampled, a 2-D stage of type t over
 * [0, 2 * coarse's ub] per dimension (coarse = fine down-sampled by stage_level). Both
 * levels are then read after the level that reads fine: the DP may fuse a level and
 * export it (plan.h's pm_group.exported). */
static void stage_band(gen *g, int self, int fine, int coarse, pm_type t)
{
    node *n = &g->nodes[self];
    const node *f = &g->nodes[fine], *c = &g->nodes[coarse];
    n->ndims = 2;
    n->type = t;
    n->exact = t != PM_F32 && t != PM_F64;
    for (int d = 0; d < 2; d++)
        n->d[d] = (dim){lit(0), muli(c->d[d].ub, 2), 1};
    n->f = new_func(g, n, 2);
    G at[2] = {g->var[0], g->var[1]}, half[2] = {divi(g->var[0], 2), divi(g->var[1], 2)};
    G v = cast(t, b_sub(cast(t, call(f->f, f->name, 2, at)), cast(t, call(c->f, c->name, 2, half))));
    g->reads[self * MAX_FUNCS + fine] = true;
    g->reads[self * MAX_FUNCS + coarse] = true;
    G inside = b_le(lit(0), g->var[0]);
    emit("    pm_define(%s, pm_case_new(%s, %s));", n->name, inside.c, v.c);
    pm_define(n->f, pm_case_new(inside.e, v.e));
}

/* A monotone expression of the table's variable v (frontend/flat.h's A), by form, with
 * its value at a point (in double: enough to aim a clamp's bounds at a range of v). */
typedef struct mono {
    int form;
    int64_t m, c, d, m2, c2;
    double k, fc;
} mono;

static mono random_mono(rng *t, bool fl, bool exact)
{
    mono a = {0};
    static const int64_t ms[] = {1, 2, 3, 5, -1, -2, -3};
    a.m = ms[rint_(t, 0, 6)];
    a.c = rint_(t, -100, 100);
    if (fl) {
        /* exact: v / 2^j and whole constants (an integer table's curve: every f32 step
         * exact, so rounding cannot differ) */
        static const double ek[] = {1, 2, 4, 8, 0.5}, ik[] = {3, 5, 2.5, 0.3, 7, 1.5};
        a.form = 10 + rint_(t, 0, 1);
        a.k = exact || rchance(t, 40) ? ek[rint_(t, 0, 4)] : ik[rint_(t, 0, 5)];
        a.fc = rint_(t, -100, 100) / (exact ? 1.0 : 4.0);
        return a;
    }
    a.form = rint_(t, 0, 5);
    static const int64_t ds[] = {2, 3, 4, -2};
    a.d = a.form == 3 ? rint_(t, 0, 1) : ds[rint_(t, 0, 3)];
    a.m2 = a.m > 0 ? rint_(t, 1, 4) : -rint_(t, 1, 4); /* the same direction */
    a.c2 = rint_(t, -100, 100);
    return a;
}

static double mono_at(const mono *a, double v)
{
    switch (a->form) {
    case 0: return v * a->m + a->c;
    case 1: return floor((v + a->c) / a->d);
    case 2: return a->c - v;
    case 3: {
        double p = v * a->m + a->c, q = v * a->m2 + a->c2;
        return a->d ? fmax(p, q) : fmin(p, q);
    }
    case 4: return v * a->m + a->c + a->c2;
    case 5: return -(v * a->m) + a->c;
    case 10: return v / a->k + a->fc;
    default: return (a->fc - v) * a->k;
    }
}

static G mono_build(const mono *a, G v)
{
    switch (a->form) {
    case 0: return addi(muli(v, a->m), a->c);
    case 1: return divi(addi(v, a->c), a->d);
    case 2: return b_sub(lit(a->c), v);
    case 3: {
        G p = addi(muli(v, a->m), a->c), q = addi(muli(v, a->m2), a->c2);
        return a->d ? b_max(p, q) : b_min(p, q);
    }
    case 4: /* an order-keeping cast: the line fits i16 on every domain drawn */
        return addi(cast(a->c2 & 1 ? PM_I64 : PM_I16, addi(muli(v, a->m), a->c)), a->c2);
    case 5: return addi(u_neg(muli(v, a->m)), a->c);
    case 10: return b_add(b_div(cast(PM_F32, v), flit(a->k)), flit(a->fc));
    default: return b_mul(b_sub(flit(a->fc), cast(PM_F32, v)), flit(a->k));
    }
}

/* A clamp of a monotone expression whose bounds are its values at va and vb: constant
 * below and above [va, vb] (flat.c's zones), in one of the four spellings flat.c knows;
 * float (exact or not) or integer. */
static G flat_clamp(gen *g, bool fl, bool exact, int64_t va, int64_t vb)
{
    rng *t = &g->t;
    mono a = random_mono(t, fl, exact);
    G A = mono_build(&a, g->var[0]);
    double y1 = mono_at(&a, (double)va), y2 = mono_at(&a, (double)vb);
    double lo = fmin(y1, y2), hi = fmax(y1, y2);
    G c1, c2;
    if (fl) {
        c1 = flit(floor(lo * 4) / 4);
        c2 = flit(ceil(hi * 4) / 4);
    } else {
        c1 = lit((int64_t)lo);
        c2 = rchance(t, 10) ? b_add(lit((int64_t)hi - 5), lit(5)) : lit((int64_t)hi);
    }
    switch (rint_(t, 0, 3)) {
    case 0: return b_min(b_max(A, c1), c2);
    case 1: return b_min(c2, b_max(c1, A));
    case 2: return b_max(b_min(A, c2), c1);
    default: return b_max(c1, b_min(c2, A));
    }
}

/* The width in v a table's clamp is flat inside of: mostly at most what small tables
 * take for the type (12 permutes of 128 bytes: 1536 u8, 768 16-bit, 384 32-bit
 * entries) in whole permutes that fit in the domain (else access.c gathers), sometimes
 * a few, sometimes more (gathered), sometimes the whole domain (flat nowhere); and
 * where it starts: inside the domain, or up to 30 points off either end (flat on one
 * side only). */
static int64_t flat_width(rng *t, pm_type type, int64_t size)
{
    int64_t per = 128 / (int64_t)pm_type_size(type), cap = 12 * per;
    int64_t fits = size / per * per - per / 4; /* room for the bounds' rounding */
    int w = rint_(t, 0, 19);
    if (w < 2)
        return rint_(t, 1, 48);
    if (w < 16)
        return rint_(t, 1, (int)(fits < 1 ? size : fits < cap ? fits : cap));
    if (w < 18)
        return rint_(t, (int)cap + 1, 2 * (int)cap);
    return size + rint_(t, 0, 60);
}

static int64_t flat_start(rng *t, int64_t lo, int64_t size, int64_t w)
{
    int64_t slack = size - w;
    if (slack >= 0)
        return lo + (rchance(t, 80) ? rint_(t, 0, (int)slack) : rint_(t, -30, (int)slack + 30));
    return lo + rint_(t, (int)slack - 30, 30);
}

/* A lookup table (camera pipe's tone curve): a 1-D stage of u8, i16, i32 or f32 over a
 * constant domain lo .. hi (lo in [-300, 50], 1-1500 points), mostly flat outside a
 * range (frontend/flat.h: one or two clamps of monotone expressions of v, integer or
 * float, inside arithmetic free of v, cast to the type), else not (v outside any clamp,
 * a clamp of v * v, two cases): read by later stages at data-dependent indices
 * (table_read). An integer table is exact: integer arithmetic, or float curves whose
 * every step is exact (v / 2^j, whole constants, products by 2, 3, 1/2), truncated to
 * i32 inside its range. Draws from g->t only. */
static void stage_table(gen *g, int self)
{
    rng *t = &g->t;
    node *n = &g->nodes[self];
    static const pm_type types[] = {PM_U8, PM_I16, PM_I32, PM_F32};
    n->type = types[rint_(t, 0, 3)];
    bool fl_table = n->type == PM_F32;
    n->exact = !fl_table;
    n->table = true;
    n->ndims = 1;
    int64_t lo = rint_(t, -300, 50), size = rchance(t, 15) ? rint_(t, 1, 40) : rint_(t, 1, 1500);
    n->d[0] = (dim){lit(lo), lit(lo + size - 1), 1};
    n->f = new_func(g, n, 1);
    G v = g->var[0];
    int64_t w = flat_width(t, n->type, size);
    n->flat_a = flat_start(t, lo, size, w);
    n->flat_b = n->flat_a + w - 1;
    G X = flat_clamp(g, rchance(t, 40), !fl_table, n->flat_a, n->flat_b);
    if (rchance(t, 30)) { /* a second clamp: mostly inside the first's range, else anywhere */
        int64_t w2, a2;
        if (rchance(t, 70)) {
            a2 = n->flat_a + rint_(t, 0, (int)(w - 1));
            w2 = rint_(t, 1, (int)(n->flat_b - a2 + 1));
        } else {
            w2 = flat_width(t, n->type, size);
            a2 = flat_start(t, lo, size, w2);
        }
        G Y = flat_clamp(g, rchance(t, 40), !fl_table, a2, a2 + w2 - 1);
        switch (rint_(t, 0, 3)) {
        case 0: X = b_add(X, Y); break;
        case 1: X = b_sub(X, Y); break;
        case 2: X = b_min(X, Y); break;
        default: X = b_max(X, Y); break;
        }
    }
    for (int i = rint_(t, 0, 2); i > 0; i--) { /* arithmetic free of v around the clamps */
        bool fl = is_float(X);
        switch (rint_(t, 0, 5)) {
        case 0: X = fl ? b_mul(X, flit(rchance(t, 50) ? 2 : 0.5)) : muli(X, rint_(t, -3, 3) | 1); break;
        case 1: X = fl ? b_add(X, flit(rint_(t, -50, 50))) : addi(X, rint_(t, -50, 50)); break;
        case 2: X = u_neg(X); break;
        case 3: {
            G c = fl ? flit(rint_(t, -20, 200)) : lit(rint_(t, -20, 200));
            X = rchance(t, 50) ? b_min(X, c) : b_max(c, X);
            break;
        }
        case 4:
            X = fl ? b_add(X, cast(PM_F32, g->R))
                   : (rchance(t, 50) ? b_shr(X, lit(rint_(t, 1, 3))) : b_band(X, lit(rint_(t, 1, 255))));
            break;
        default: X = fl ? b_mul(X, flit(3)) : b_add(X, g->C); break;
        }
    }
    /* not flat: v outside the clamps, or a clamp of a non-monotone expression */
    int nonflat = rchance(t, 20) ? rint_(t, 0, 3) : -1;
    if (nonflat == 0)
        X = b_add(X, is_float(X) ? cast(PM_F32, v) : v);
    else if (nonflat == 1)
        X = b_add(X, b_mod(b_mul(v, v), lit(97)));
    else if (nonflat == 2)
        X = b_add(X, b_min(b_max(b_mul(v, v), lit(0)), lit(rint_(t, 100, 5000))));
    if (is_float(X) && !fl_table)
        X = cast(PM_I32, X);
    X = cast(n->type, X);
    pm_case *cases[2];
    const char *cc[2];
    int nc = 0;
    if (nonflat == 3) { /* two cases: X below a point of the domain, X + 1 from it */
        G split = b_lt(v, lit(lo + rint_(t, 0, (int)size))), rest = u_not(split);
        G X1 = fl_table ? b_add(X, flit(1)) : cast(n->type, addi(cast(PM_I32, X), 1));
        cases[nc] = pm_case_new(split.e, X.e);
        cc[nc++] = fmt("pm_case_new(%s, %s)", split.c, X.c);
        cases[nc] = pm_case_new(rest.e, X1.e);
        cc[nc++] = fmt("pm_case_new(%s, %s)", rest.c, X1.c);
    } else {
        cases[nc] = pm_case_new(NULL, X.e);
        cc[nc++] = fmt("pm_case_new(NULL, %s)", X.c);
    }
    const char *all = "";
    for (int i = 0; i < nc; i++)
        all = fmt("%s,\n        %s", all, cc[i]);
    emit("    pm_define(%s%s);", n->name, all);
    pm_func_define(n->f, nc, cases);
    g->tables[g->ntables++] = self;
    g->pending = self;
}

/* Time-iterated: f(t, x), t in [0, T]; f(0, x) from a producer, then
 * f(t, x) = f(t-1, x-s) + f(t-1, x) + f(t-1, x+s) inside, f(t-1, x) at the edges. */
static void stage_iterated(gen *g, int self)
{
    node *n = &g->nodes[self];
    n->ndims = 2;
    n->type = random_type(g);
    bool want_int = n->type != PM_F32 && n->type != PM_F64;
    n->exact = want_int;
    n->d[0] = (dim){lit(0), lit(rint_(&g->r, 1, 4)), 1};
    random_dim(g, &n->d[1], rint_(&g->r, 0, 1));
    n->f = new_func(g, n, 2);
    G t = g->var[0], x = g->var[1];
    int64_t s = n->d[1].step;
    /* t == 0: any value of x (reads guarded) */
    g->nguards = 0;
    G init;
    {
        /* the value's reads use variable x only: make variable 0 stand for x */
        G saved = g->var[0];
        g->var[0] = x;
        init = value(g, self, 1, want_int, 1);
        g->var[0] = saved;
    }
    G first = b_eq(t, lit(0));
    G c0 = g->nguards ? and_all(g->guards, g->nguards) : lit(1);
    bool guarded = g->nguards > 0;
    G inside = b_and(b_le(b_add(n->d[1].lb, lit(s)), x), b_le(addi(x, s), n->d[1].ub));
    G later = b_ge(t, lit(1));
    G tm1 = addi(t, -1);
    G args0[2] = {tm1, addi(x, -s)}, args1[2] = {tm1, x}, args2[2] = {tm1, addi(x, s)};
    G sum = b_add(b_add(call(n->f, n->name, 2, args0), call(n->f, n->name, 2, args1)),
                  call(n->f, n->name, 2, args2));
    if (!want_int)
        sum = b_div(sum, flit(3.0));
    G edge = call(n->f, n->name, 2, args1);
    pm_case *cs[4];
    const char *cc[4];
    int nc = 0;
    if (guarded) {
        G a = b_and(first, c0), b = b_and(first, u_not(c0));
        G fb = lit(1);
        cs[nc] = pm_case_new(a.e, init.e);
        cc[nc++] = fmt("pm_case_new(%s, %s)", a.c, init.c);
        cs[nc] = pm_case_new(b.e, fb.e);
        cc[nc++] = fmt("pm_case_new(%s, %s)", b.c, fb.c);
    } else {
        cs[nc] = pm_case_new(first.e, init.e);
        cc[nc++] = fmt("pm_case_new(%s, %s)", first.c, init.c);
    }
    G ci = b_and(later, inside), ce = b_and(later, u_not(inside));
    cs[nc] = pm_case_new(ci.e, sum.e);
    cc[nc++] = fmt("pm_case_new(%s, %s)", ci.c, sum.c);
    cs[nc] = pm_case_new(ce.e, edge.e);
    cc[nc++] = fmt("pm_case_new(%s, %s)", ce.c, edge.c);
    const char *all = "";
    for (int i = 0; i < nc; i++)
        all = fmt("%s,\n        %s", all, cc[i]);
    emit("    pm_define(%s%s);", n->name, all);
    pm_func_define(n->f, nc, cs);
}

/* A windowed histogram of an exact 2-D producer q (bilateral grid's shape): for each
 * row r0 of q, cell column r1 collects the K pixels q(r0, lb + K*r1 + r2), r2 < K, into
 * a data-dependent bin (out-of-range bins skipped); the output keeps the rows (x, c, b)
 * or sums them (c, b). The cell column runs inside the window, in blocks whose rows of
 * bins accumulate in registers when there are at most W bins (schedule.c,
 * private_rows), starting from the initial value when the rows are kept, from the
 * cells' values when every row adds to them. */
static void window_histogram(gen *g, int self, int src)
{
    node *n = &g->nodes[self], *q = &g->nodes[src];
    /* mostly few bins and narrow windows: blocks of W columns then fit the run sizes */
    int K = rchance(&g->r, 60) ? rint_(&g->r, 1, 2) : rint_(&g->r, 3, 4);
    int nb = rchance(&g->r, 70) ? rint_(&g->r, 1, 8) : rint_(&g->r, 9, 20);
    bool rows = rchance(&g->r, 80);
    n->type = rchance(&g->r, 70) ? PM_I32 : int_types[rint_(&g->r, 0, 6)];
    n->exact = true;
    G ncells = divi(addi(b_sub(q->d[1].ub, q->d[1].lb), 1), K);
    dim cells = {lit(0), addi(ncells, -1), 1}, bins = {lit(0), lit(nb - 1), 1};
    dim window = {lit(0), lit(K - 1), 1};
    n->ndims = rows ? 3 : 2;
    if (rows)
        n->d[0] = q->d[0];
    n->d[rows ? 1 : 0] = cells;
    n->d[rows ? 2 : 1] = bins;
    G col = b_add(q->d[1].lb, b_add(muli(g->rvar[1], K), g->rvar[2]));
    G args[2] = {g->rvar[0], col};
    G read = call(q->f, q->name, 2, args);
    G bin = b_sub(b_mod(cast(PM_I32, read), lit(nb + rint_(&g->r, 0, 2))), lit(rint_(&g->r, 0, 1)));
    G val = rchance(&g->r, 60) ? lit(1) : cast(n->type, read);
    pm_reduce_op op = rchance(&g->r, 70) ? PM_REDUCE_SUM : (pm_reduce_op)rint_(&g->r, 0, 5);
    static const char *op_c[] = {"PM_REDUCE_SUM", "PM_REDUCE_PRODUCT", "PM_REDUCE_MIN",
                                 "PM_REDUCE_MAX", "PM_REDUCE_AND", "PM_REDUCE_OR"};
    G init = rchance(&g->r, 50) ? lit(rint_(&g->r, 0, 3)) : g_(NULL, "NULL");
    G index[3];
    pm_expr *vars[3], *rv[3], *ix[3];
    pm_interval *ivs[3], *ri[3];
    const char *vc = "", *ivc = "", *ixc = "";
    int k = 0;
    if (rows)
        index[k++] = g->rvar[0];
    index[k++] = g->rvar[1];
    index[k++] = bin;
    for (int d = 0; d < n->ndims; d++) {
        vars[d] = g->var[d].e;
        ivs[d] = interval_of(&n->d[d]);
        ix[d] = index[d].e;
        vc = fmt("%s%s%s", vc, d ? ", " : "", g->var[d].c);
        ivc = fmt("%s%s%s", ivc, d ? ", " : "", interval_c(&n->d[d]));
        ixc = fmt("%s%s%s", ixc, d ? ", " : "", index[d].c);
    }
    const dim *rd[3] = {&q->d[0], &cells, &window};
    const char *rvc = "", *ric = "";
    for (int d = 0; d < 3; d++) {
        rv[d] = g->rvar[d].e;
        ri[d] = interval_of(rd[d]);
        rvc = fmt("%s%s%s", rvc, d ? ", " : "", g->rvar[d].c);
        ric = fmt("%s%s%s", ric, d ? ", " : "", interval_c(rd[d]));
    }
    emit("    pm_func *%s = pm_reduction_new(ctx, \"%s\", %s, %d, pm_exprs(%s), pm_intervals(%s),\n"
         "        3, pm_exprs(%s), pm_intervals(%s), %s, %s);",
         n->name, n->name, type_c(n->type), n->ndims, vc, ivc, rvc, ric, op_c[op], init.c);
    n->f = pm_reduction_new(ctx, n->name, n->type, n->ndims, vars, ivs, 3, rv, ri, op, init.e);
    emit("    pm_reduction_define(%s, %d, pm_exprs(%s), %s);", n->name, n->ndims, ixc, val.c);
    pm_reduction_define(n->f, n->ndims, ix, val.e);
}

/* Reductions: a histogram of an exact producer (data-dependent index, out-of-range
 * indices skipped), windowed (window_histogram) or not, or a reduction of a producer
 * along its first dimension. */
static void stage_reduction(gen *g, int self)
{
    node *n = &g->nodes[self];
    int src = -1;
    for (int tries = 0; tries < 10 && src < 0; tries++) {
        int j = rint_(&g->r, 0, self - 1);
        if (g->nodes[j].ndims >= 1 && g->nodes[j].ndims <= 2)
            src = j;
    }
    if (src < 0) {
        stage_function(g, self);
        return;
    }
    node *q = &g->nodes[src];
    bool hist = q->exact && rchance(&g->r, 50);
    g->reads[self * MAX_FUNCS + src] = true;
    if (hist && q->ndims == 2 && q->d[1].step == 1 && rchance(&g->r, 75)) {
        window_histogram(g, self, src);
        return;
    }
    /* reduction domain = q's domain */
    int nr = q->ndims;
    pm_expr *rv[2];
    pm_interval *ri[2];
    const char *rvc = "", *ric = "";
    G rargs[2];
    for (int d = 0; d < nr; d++) {
        rv[d] = g->rvar[d].e;
        ri[d] = interval_of(&q->d[d]);
        rargs[d] = g->rvar[d];
        rvc = fmt("%s%s%s", rvc, d ? ", " : "", g->rvar[d].c);
        ric = fmt("%s%s%s", ric, d ? ", " : "", interval_c(&q->d[d]));
    }
    G read = call(q->f, q->name, nr, rargs);
    n->ndims = 1;
    pm_reduce_op op;
    G index, val;
    static const char *op_c[] = {"PM_REDUCE_SUM", "PM_REDUCE_PRODUCT", "PM_REDUCE_MIN",
                                 "PM_REDUCE_MAX", "PM_REDUCE_AND", "PM_REDUCE_OR"};
    if (hist) {
        int nb = rint_(&g->r, 1, 12);
        n->type = rchance(&g->r, 70) ? PM_I32 : int_types[rint_(&g->r, 0, 6)];
        n->d[0] = (dim){lit(0), lit(nb - 1), 1};
        index = b_sub(b_mod(cast(PM_I32, read), lit(nb + rint_(&g->r, 0, 2))),
                      lit(rint_(&g->r, 0, 1)));
        val = rchance(&g->r, 60) ? lit(1) : cast(n->type, read);
        op = rchance(&g->r, 70) ? PM_REDUCE_SUM : (pm_reduce_op)rint_(&g->r, 0, 5);
    } else {
        n->type = q->exact ? int_types[rint_(&g->r, 0, 6)]
                           : (rchance(&g->r, 50) ? PM_F32 : PM_F64);
        if (!q->exact && !(n->type == PM_F32 || n->type == PM_F64))
            n->type = PM_F64;
        bool fl = n->type == PM_F32 || n->type == PM_F64;
        int along = nr == 2 ? 1 : 0; /* output indexed by q's last dimension */
        n->d[0] = q->d[along];
        index = g->rvar[along];
        val = fl ? b_mul(read, flit(0.125)) : read;
        op = fl ? (pm_reduce_op)rint_(&g->r, 0, 3) : (pm_reduce_op)rint_(&g->r, 0, 5);
        if (fl && op == PM_REDUCE_PRODUCT)
            op = PM_REDUCE_SUM;
    }
    n->exact = n->type != PM_F32 && n->type != PM_F64 && (hist || q->exact);
    pm_interval *iv = interval_of(&n->d[0]);
    G init = rchance(&g->r, 50) ? lit(rint_(&g->r, 0, 3)) : g_(NULL, "NULL");
    emit("    pm_func *%s = pm_reduction_new(ctx, \"%s\", %s, 1, pm_exprs(%s), pm_intervals(%s),\n"
         "        %d, pm_exprs(%s), pm_intervals(%s), %s, %s);",
         n->name, n->name, type_c(n->type), g->var[0].c, interval_c(&n->d[0]), nr, rvc, ric,
         op_c[op], init.c);
    n->f = pm_reduction_new(ctx, n->name, n->type, 1, &g->var[0].e, &iv, nr, rv, ri, op, init.e);
    emit("    pm_reduction_define(%s, 1, pm_exprs(%s), %s);", n->name, index.c, val.c);
    pm_reduction_define(n->f, 1, &index.e, val.e);
}

/* ---- one case ------------------------------------------------------------------------------ */

typedef struct options_pick {
    pm_compile_options co;
    int nthreads, threads[3];
    int nsizes;
    int64_t sizes[4][2];
    int64_t est[2]; /* the estimates compiled for: the first size, or large ones */
} options_pick;

static void pick_options(rng *r, options_pick *o)
{
    o->co = pm_compile_options_default();
    static const int widths[] = {0, 1, 2, 4, 8, 16};
    o->co.vector_width = widths[rint_(r, 0, 5)];
    o->co.opt_level = rint_(r, -1, 3); /* PM_OPT_TUNED or default<O0..3> */
    o->co.threads = 3;
    o->co.fusion = rint_(r, 0, 1);
    static const int tiles[] = {0, 1, 2, 3, 8, 16, 32, 64, 256};
    for (int d = 0; d < PM_MAX_DIMS; d++)
        o->co.tile_size[d] = rchance(r, 40) ? 0 : tiles[rint_(r, 0, 8)];
    static const double thresholds[] = {-1, 0, 0.1, 0.4, 1.0, 4.0};
    o->co.overlap_threshold = thresholds[rint_(r, 0, 5)];
    o->co.group_limit = rint_(r, 0, 6);
    o->nthreads = rint_(r, 1, 3);
    for (int i = 0; i < o->nthreads; i++)
        o->threads[i] = rint_(r, 1, 3);
    o->nsizes = rint_(r, 3, 4);
    for (int i = 0; i < o->nsizes; i++) {
        int64_t a, b;
        switch (rint_(r, 0, 7)) {
        case 0: a = 1; b = 1; break;
        case 1: a = 1; b = rint_(r, 2, 40); break;
        case 2: a = rint_(r, 2, 40); b = 1; break;
        case 3: a = rint_(r, 1, 7); b = rint_(r, 1, 7); break;           /* < a vector */
        case 4: a = 2 * rint_(r, 1, 20) + 1; b = 2 * rint_(r, 1, 20) + 1; break; /* odd */
        default: a = rint_(r, 1, 70); b = rint_(r, 1, 70); break;
        }
        o->sizes[i][0] = a;
        o->sizes[i][1] = b;
    }
    /* a quarter compiled for large estimates with long rows, far from the run sizes:
     * other tile sizes, strips of whole rows in row blocks (tile.c) */
    o->est[0] = o->sizes[0][0];
    o->est[1] = o->sizes[0][1];
    /* drawn from a copy of the generator, so the draws after these (inputs, padding) and
     * the regression seeds' cases with small estimates stay as they were */
    rng er = {r->s ^ 0x9E3779B97F4A7C15ull};
    /* non-temporal stores of the outputs: the model's choice (off at small estimates),
     * forced on (misaligned row starts, rows shorter than two vectors) or off */
    o->co.stream_outputs = rint_(&er, -1, 1);
    /* prefetched reads: the model's (off at small estimates), forced on (prefetches past
     * the ends of short rows and buffers) or off; from a generator copy of its own, so
     * the draws above and after stay as older seeds had them */
    rng pr = {r->s ^ 0xD1B54A32D192ED03ull};
    o->co.prefetch_reads = rint_(&pr, -1, 1);
    /* the grouping: greedy, the capped DP or the full DP (group_dp.c), with the default
     * budget or one so small that the search finishes greedily; a generator of its own */
    rng gr = {r->s ^ 0x94D049BB133111EBull};
    static const int budgets[] = {0, 0, 1, 3, 20};
    o->co.grouping = rint_(&gr, 0, 3);
    o->co.dp_budget = budgets[rint_(&gr, 0, 4)];
    if (rchance(&er, 25)) {
        o->est[0] = rint_(&er, 16, 300);
        o->est[1] = rint_(&er, 1024, 4096);
        if (rchance(&er, 50)) { /* strips of whole rows, run in row blocks where they apply */
            static const int strip[] = {16, 24, 32, 64};
            o->co.tile_size[0] = strip[rint_(&er, 0, 3)];
            o->co.tile_size[1] = 4096;
            o->co.fusion = 1;
            o->co.group_limit = 0;
        }
    }
}

typedef struct buffers {
    int n;
    pm_buffer b[MAX_FUNCS];
    void *mem[MAX_FUNCS];
} buffers;

/* A buffer of the given shape with rows padded by 0-3 elements (strides explicit). */
static pm_buffer alloc_buffer(rng *r, pm_type t, int nd, const int64_t *ext, void **mem)
{
    pm_buffer b = pm_buffer_dense(NULL, t, nd, ext);
    int64_t stride = 1, total = 1;
    for (int d = nd - 1; d >= 0; d--) {
        int64_t pad = d == nd - 1 ? 0 : (rchance(r, 30) ? rint_(r, 1, 3) : 0);
        b.stride[d] = stride;
        stride *= ext[d] + pad;
        total = stride;
    }
    size_t bytes = (size_t)(total > 0 ? total : 1) * pm_type_size(t);
    *mem = malloc(bytes);
    memset(*mem, 0xA5, bytes); /* the same garbage on both sides */
    b.data = *mem;
    return b;
}

static void buffers_free(buffers *bs)
{
    for (int i = 0; i < bs->n; i++)
        free(bs->mem[i]);
    bs->n = 0;
}

static int64_t offset_of(const pm_buffer *b, int64_t flat)
{
    int64_t off = 0;
    for (int d = b->ndims - 1; d >= 0; d--) {
        int64_t e = b->extent[d] > 0 ? b->extent[d] : 1;
        off += (flat % e) * b->stride[d];
        flat /= e;
    }
    return off;
}

static double as_double(pm_type t, const char *p)
{
    switch (t) {
    case PM_F32: return *(const float *)p;
    case PM_F64: return *(const double *)p;
    default: return 0;
    }
}

/* 0 when equal by the rule above; else prints the first difference and returns 1. */
static int compare(const pm_buffer *want, const pm_buffer *got, const char *name)
{
    int64_t n = check_buffer_count(want);
    size_t es = pm_type_size(want->type);
    bool fl = want->type == PM_F32 || want->type == PM_F64;
    double scale = 0;
    if (fl)
        for (int64_t i = 0; i < n; i++) {
            double v = fabs(as_double(want->type, (const char *)want->data + offset_of(want, i) * (int64_t)es));
            if (isfinite(v) && v > scale)
                scale = v;
        }
    double tol = 1e-3 * (1 + scale);
    for (int64_t i = 0; i < n; i++) {
        const char *a = (const char *)want->data + offset_of(want, i) * (int64_t)es;
        const char *b = (const char *)got->data + offset_of(got, i) * (int64_t)es;
        bool ok;
        if (fl) {
            double x = as_double(want->type, a), y = as_double(want->type, b);
            ok = (isnan(x) && isnan(y)) || x == y || fabs(x - y) <= tol;
        } else {
            ok = memcmp(a, b, es) == 0;
        }
        if (!ok) {
            char wa[64], gb[64];
            if (fl) {
                snprintf(wa, sizeof wa, "%.9g", as_double(want->type, a));
                snprintf(gb, sizeof gb, "%.9g", as_double(want->type, b));
            } else {
                int64_t x = 0, y = 0;
                memcpy(&x, a, es);
                memcpy(&y, b, es);
                snprintf(wa, sizeof wa, "0x%llx", (unsigned long long)x);
                snprintf(gb, sizeof gb, "0x%llx", (unsigned long long)y);
            }
            fprintf(stderr, "  output %s element %lld: interpreter %s, compiled %s (tolerance %g)\n",
                    name, (long long)i, wa, gb, fl ? tol : 0.0);
            return 1;
        }
    }
    return 0;
}

typedef struct stats {
    long cases, runs, mismatches, skipped;
} stats;

static pm_jit *jit;      /* the case's: one of jits[], by its seed                  */
/* By compile_threads 1..3 (a jit option, so one jit each): case `seed` compiles with
 * 1 + seed % 3, taken from the seed rather than drawn so that every seed keeps the
 * pipeline and options it had before (the regression seeds in test/CMakeLists.txt). */
static pm_jit *jits[4];
static bool verbose;
static bool canon_roundtrip;

static void report(uint64_t seed, const options_pick *o, const char *why)
{
    fprintf(stderr, "\n=== fuzz case seed %llu FAILED: %s\n", (unsigned long long)seed, why);
    fprintf(stderr, "options: vector_width %d, opt_level %d, fusion %d, tile_size {%d, %d, %d}, "
            "overlap_threshold %g, group_limit %d, stream_outputs %d, prefetch_reads %d, "
            "grouping %d, dp_budget %d; compile_threads %d; threads",
            o->co.vector_width, o->co.opt_level, o->co.fusion, o->co.tile_size[0],
            o->co.tile_size[1], o->co.tile_size[2], o->co.overlap_threshold,
            o->co.group_limit, o->co.stream_outputs, o->co.prefetch_reads, o->co.grouping,
            o->co.dp_budget, (int)(1 + seed % 3));
    for (int i = 0; i < o->nthreads; i++)
        fprintf(stderr, " %d", o->threads[i]);
    fprintf(stderr, "; estimates %lldx%lld; sizes", (long long)o->est[0], (long long)o->est[1]);
    for (int i = 0; i < o->nsizes; i++)
        fprintf(stderr, " %lldx%lld", (long long)o->sizes[i][0], (long long)o->sizes[i][1]);
    fprintf(stderr, "\nreproduce: build/test/fuzz/pm_fuzz --seed %llu --cases 1\n"
            "/* the pipeline, as builder code */\n%s\n", (unsigned long long)seed, code);
}

/* ---- --canon-roundtrip ----------------------------------------------------------------- */

/* Dense inputs of p at params, filled from the seed; NULL data on failure. */
static void canon_inputs(pm_pipeline *p, const pm_value *params, uint64_t seed, pm_buffer *in)
{
    for (int i = 0; i < pm_pipeline_ninputs(p); i++) {
        int nd;
        int64_t ext[PM_MAX_DIMS];
        pm_pipeline_buffer_shape(p, 0, i, params, &nd, ext);
        in[i] = check_buffer_new(pm_func_type(pm_pipeline_input(p, i)), nd, ext);
        check_fill(&in[i], (unsigned)(seed * 31 + (uint64_t)i), false);
    }
}

/* Outputs of p interpreted at params (zeroed first: points no case covers stay 0). */
static bool canon_outputs(pm_pipeline *p, const pm_value *params, const pm_buffer *in,
                          pm_buffer *out)
{
    for (int i = 0; i < pm_pipeline_noutputs(p); i++) {
        int nd;
        int64_t ext[PM_MAX_DIMS];
        pm_pipeline_buffer_shape(p, 1, i, params, &nd, ext);
        out[i] = check_buffer_new(pm_func_type(pm_pipeline_output(p, i)), nd, ext);
    }
    return pm_interpret(p, params, in, out) == PM_OK;
}

static bool same_bytes(const pm_buffer *a, const pm_buffer *b)
{
    size_t n = (size_t)check_buffer_count(a) * pm_type_size(a->type);
    return check_buffer_count(a) == check_buffer_count(b) && memcmp(a->data, b->data, n) == 0;
}

/* A mutation of text: one byte flipped, deleted or doubled. malloc'd, *len its length. */
static char *canon_mutant(rng *r, const char *text, size_t len, size_t *out_len)
{
    char *m = malloc(len + 2);
    if (!m)
        return NULL;
    size_t at = (size_t)(rnext(r) % len);
    memcpy(m, text, len);
    *out_len = len;
    switch (rint_(r, 0, 2)) {
    case 0: m[at] = (char)(rchance(r, 50) ? m[at] ^ (1 << rint_(r, 0, 7)) : rint_(r, 0, 255)); break;
    case 1: memmove(m + at, m + at + 1, len - at - 1); (*out_len)--; break;
    default: memmove(m + at + 1, m + at, len - at); (*out_len)++; break;
    }
    return m;
}

/* A mutant is refused with PM_ERR_ARGUMENT and a message, or read back to itself. */
static bool canon_mutants(uint64_t seed, const char *text, size_t len)
{
    rng r = {seed * 0x9E3779B97F4A7C15ull + 7};
    for (int i = 0; i < 16; i++) {
        size_t mlen;
        char *m = canon_mutant(&r, text, len, &mlen);
        pm_ctx *c = pm_ctx_new();
        pm_pipeline *q = NULL;
        pm_status s = m && c ? pm_pipeline_from_text(c, m, mlen, &q) : PM_ERR_NOMEM;
        size_t qlen = 0;
        const char *qt = q ? pm_pipeline_text(q, &qlen) : NULL;
        bool ok = s == PM_OK ? qt && qlen == mlen && memcmp(qt, m, mlen) == 0
                             : s == PM_ERR_ARGUMENT && strstr(pm_ctx_errmsg(c), "canonical text");
        if (!ok)
            fprintf(stderr, "seed %llu mutant %d: %s: %s\n", (unsigned long long)seed, i,
                    pm_status_name(s), c ? pm_ctx_errmsg(c) : "");
        pm_ctx_free(c);
        free(m);
        if (!ok)
            return false;
    }
    return true;
}

/* The case's pipeline through its canonical text and back (see the header). */
static bool canon_case(uint64_t seed, pm_pipeline *p, const options_pick *o)
{
    size_t len;
    const char *text = pm_pipeline_text(p, &len);
    pm_ctx *c = pm_ctx_new();
    pm_pipeline *q = NULL;
    if (!text || pm_pipeline_from_text(c, text, len, &q) != PM_OK) {
        report(seed, o, text ? pm_ctx_errmsg(c) : "pm_pipeline_text failed");
        pm_ctx_free(c);
        return false;
    }
    size_t qlen;
    const char *qtext = pm_pipeline_text(q, &qlen);
    bool ok = qtext && qlen == len && memcmp(qtext, text, len) == 0;
    if (!ok)
        report(seed, o, "the text read back writes another text");
    pm_value params[2] = {PM_I(o->sizes[0][0]), PM_I(o->sizes[0][1])};
    pm_buffer in[MAX_IMAGES], want[8], got[8];
    int nin = pm_pipeline_ninputs(p), nout = pm_pipeline_noutputs(p);
    canon_inputs(p, params, seed, in);
    bool ran = canon_outputs(p, params, in, want) && canon_outputs(q, params, in, got);
    for (int i = 0; i < nout && ok; i++)
        if (!ran || !same_bytes(&want[i], &got[i])) {
            report(seed, o, ran ? "the pipeline read back interprets to other bytes"
                                : "pm_interpret failed");
            ok = false;
        }
    for (int i = 0; i < nout; i++) {
        check_buffer_free(&want[i]);
        check_buffer_free(&got[i]);
    }
    for (int i = 0; i < nin; i++)
        check_buffer_free(&in[i]);
    pm_ctx_free(c);
    return ok && canon_mutants(seed, text, len);
}

/* Builds, compiles once and runs one case. Returns false on a mismatch or error. */
static bool run_case(uint64_t seed, stats *st)
{
    jit = jits[1 + seed % 3];
    gen g;
    memset(&g, 0, sizeof g);
    g.r.s = seed * 0x2545F4914F6CDD1Dull + 1;
    code_len = 0;
    if (code)
        code[0] = '\0';
    ctx = pm_ctx_new();
    g.reads = calloc(MAX_FUNCS * MAX_FUNCS, sizeof(bool));
    emit("    pm_ctx *ctx = pm_ctx_new();");
    emit("    pm_expr *R = pm_param(ctx, PM_I32, \"R\"), *C = pm_param(ctx, PM_I32, \"C\");");
    emit("    pm_expr *x = pm_var(ctx, \"x\"), *y = pm_var(ctx, \"y\"), *z = pm_var(ctx, \"z\");");
    emit("    pm_expr *r0 = pm_var(ctx, \"r0\"), *r1 = pm_var(ctx, \"r1\"), *r2 = pm_var(ctx, \"r2\");");
    g.R = g_(pm_param(ctx, PM_I32, "R"), "R");
    g.C = g_(pm_param(ctx, PM_I32, "C"), "C");
    const char *vn[3] = {"x", "y", "z"};
    for (int i = 0; i < 3; i++)
        g.var[i] = g_(pm_var(ctx, vn[i]), vn[i]);
    g.rvar[0] = g_(pm_var(ctx, "r0"), "r0");
    g.rvar[1] = g_(pm_var(ctx, "r1"), "r1");
    g.rvar[2] = g_(pm_var(ctx, "r2"), "r2");

    /* images */
    g.nimages = rint_(&g.r, 1, MAX_IMAGES);
    for (int i = 0; i < g.nimages; i++) {
        node *n = &g.nodes[g.nnodes++];
        n->is_image = true;
        n->name = fmt("I%d", i);
        n->type = all_types[rint_(&g.r, 0, 8)];
        n->exact = n->type != PM_F32 && n->type != PM_F64;
        n->ndims = rchance(&g.r, 80) ? 2 : 1;
        pm_expr *ext[2];
        const char *ec = "";
        for (int d = 0; d < n->ndims; d++) {
            G e = addi(d ? g.C : g.R, rint_(&g.r, 0, 2));
            n->d[d] = (dim){lit(0), addi(e, -1), 1};
            ext[d] = e.e;
            ec = fmt("%s, %s", ec, e.c);
        }
        emit("    pm_func *%s = pm_image(ctx, \"%s\", %s%s);", n->name, n->name, type_c(n->type), ec);
        n->f = pm_image_new(ctx, n->name, n->type, n->ndims, ext);
    }
    /* stages */
    int nstages = rint_(&g.r, 2, MAX_STAGES);
    /* lookup tables in 30% of the cases, 1-2 stages before the last: decided, built and
     * read with draws of their own (g.t), so the other cases are what they were */
    g.t = (rng){g.r.s ^ 0xA0761D6478BD642Full};
    g.pending = -1;
    bool table_at[MAX_STAGES] = {false};
    if (rchance(&g.t, 30))
        for (int i = rchance(&g.t, 75) ? 1 : 2; i > 0; i--)
            table_at[rint_(&g.t, 0, nstages - 2)] = true;
    /* a pyramid of 3-4 levels from a 2-D image in 15% of the cases, its first stages:
     * decided with draws of its own, so the other cases are what they were */
    rng pr = {g.r.s ^ 0x5851F42D4C957F2Dull};
    int pyr_levels = 0, pyr_src = -1, pyr_last = -1, pyr_band = -1;
    pm_type pyr_type = PM_F32;
    if (rchance(&pr, 15))
        for (int i = 0; i < g.nimages && pyr_src < 0; i++)
            if (g.nodes[i].ndims == 2) {
                pyr_src = i;
                pyr_levels = rint_(&pr, 3, 4);
                static const pm_type lt[] = {PM_F32, PM_I32, PM_U16};
                pyr_type = lt[rint_(&pr, 0, 2)];
                /* in half of them, a band of two levels right after the pyramid */
                if (rchance(&pr, 50) && pyr_levels < nstages)
                    pyr_band = rint_(&pr, 0, pyr_levels - 2);
            }
    for (int s = 0; s < nstages; s++) {
        int self = g.nnodes++;
        node *n = &g.nodes[self];
        n->name = fmt("f%d", s);
        if (s < pyr_levels) {
            stage_level(&g, self, pyr_src, pyr_type);
            pyr_src = pyr_last = self;
            continue;
        }
        if (s == pyr_levels && pyr_band >= 0) { /* levels pyr_band and pyr_band + 1 */
            int first = self - pyr_levels;
            stage_band(&g, self, first + pyr_band, first + pyr_band + 1, pyr_type);
            continue;
        }
        if (table_at[s]) {
            stage_table(&g, self);
            continue;
        }
        if (g.pending >= 0 && g.pending == self - 1) { /* its reader */
            stage_function(&g, self);
            continue;
        }
        int kind = rint_(&g.r, 0, 99);
        if (kind < 12)
            stage_reduction(&g, self);
        else if (kind < 20)
            stage_iterated(&g, self);
        else
            stage_function(&g, self);
    }
    /* outputs: the last stage and maybe others; inputs: the images they reach */
    pm_func *outs[8];
    int outi[8], nout = 0; /* 1-3 drawn, up to 2 tables' readers, a pyramid's last level
                              and its band */
    outi[nout++] = g.nnodes - 1;
    for (int k = 0; k < 2; k++) {
        int j = rint_(&g.r, g.nimages, g.nnodes - 1);
        bool dup = false;
        for (int i = 0; i < nout; i++)
            dup |= outi[i] == j;
        if (!dup && rchance(&g.r, 40))
            outi[nout++] = j;
    }
    bool reached[MAX_FUNCS] = {false};
    for (int i = 0; i < nout; i++)
        reached[outi[i]] = true;
    for (int i = g.nnodes - 1; i >= 0; i--)
        if (reached[i])
            for (int j = 0; j < i; j++)
                if (g.reads[i * MAX_FUNCS + j])
                    reached[j] = true;
    /* a case with tables: the first stage to read each table is an output too when no
     * output reaches it (no draw: the other cases keep their outputs) */
    for (int r = 0; r < g.nnodes; r++)
        if (g.table_reader[r] && !reached[r])
            add_output(&g, reached, outi, &nout, r);
    /* a case with a pyramid: its band and its last level are outputs too when no output
     * reaches them */
    int band_at = pyr_band >= 0 ? g.nimages + pyr_levels : -1;
    if (band_at >= 0 && !reached[band_at])
        add_output(&g, reached, outi, &nout, band_at);
    if (pyr_last >= 0 && !reached[pyr_last])
        add_output(&g, reached, outi, &nout, pyr_last);
    pm_func *ins[MAX_IMAGES];
    int ini[MAX_IMAGES], nin = 0;
    const char *inc = "", *outc = "";
    for (int i = 0; i < g.nimages; i++)
        if (reached[i]) {
            ini[nin] = i;
            ins[nin++] = g.nodes[i].f;
            inc = fmt("%s%s%s", inc, nin > 1 ? ", " : "", g.nodes[i].name);
        }
    for (int i = 0; i < nout; i++) {
        outs[i] = g.nodes[outi[i]].f;
        outc = fmt("%s%s%s", outc, i ? ", " : "", g.nodes[outi[i]].name);
    }
    emit("    pm_pipeline *p;");
    emit("    pm_pipeline_new(ctx, \"fuzz\", 2, pm_exprs(R, C), %d, (pm_func *[]){%s}, %d, "
         "(pm_func *[]){%s}, &p);", nin, nin ? inc : "NULL", nout, outc);

    options_pick o;
    pick_options(&g.r, &o);
    /* a case with tables: 16 lanes more often (small tables need them) */
    if (g.ntables > 0 && rchance(&g.t, 50))
        o.co.vector_width = 16;
    bool ok = true;
    pm_pipeline *p = NULL;
    pm_status s = pm_pipeline_new(ctx, "fuzz", 2, pm_exprs(g.R.e, g.C.e), nin, ins, nout, outs, &p);
    if (s != PM_OK) {
        /* The generator aims for valid pipelines; one it got wrong is skipped, not failed,
         * unless the library reports an internal error. */
        if (s == PM_ERR_INTERNAL || verbose) {
            report(seed, &o, pm_ctx_errmsg(ctx));
            ok = s != PM_ERR_INTERNAL;
        }
        st->skipped++;
        goto out;
    }
    if (canon_roundtrip) {
        ok = canon_case(seed, p, &o);
        st->cases++;
        goto out;
    }
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(o.est[0]), PM_I(o.est[1])},
                                  &o.co, &err);
    if (!k) {
        char why[1200];
        snprintf(why, sizeof why, "pm_jit_compile: %s: %s", pm_status_name(err.status), err.message);
        report(seed, &o, why);
        ok = false;
        goto out;
    }
    st->cases++;
    for (int si = 0; si < o.nsizes && ok; si++) {
        pm_value params[2] = {PM_I(o.sizes[si][0]), PM_I(o.sizes[si][1])};
        buffers in = {0}, want = {0}, got = {0};
        for (int i = 0; i < nin; i++) {
            node *n = &g.nodes[ini[i]];
            int nd;
            int64_t ext[PM_MAX_DIMS];
            pm_pipeline_buffer_shape(p, 0, i, params, &nd, ext);
            in.b[i] = alloc_buffer(&g.r, n->type, nd, ext, &in.mem[i]);
            pm_buffer dense = in.b[i];
            /* fill through a dense copy so padding stays garbage */
            pm_buffer tmp = check_buffer_new(n->type, nd, ext);
            check_fill(&tmp, (unsigned)(seed * 31 + (uint64_t)si * 7 + (uint64_t)i), rchance(&g.r, 30));
            int64_t cnt = check_buffer_count(&tmp);
            size_t es = pm_type_size(n->type);
            for (int64_t e = 0; e < cnt; e++)
                memcpy((char *)dense.data + offset_of(&dense, e) * (int64_t)es,
                       (char *)tmp.data + e * (int64_t)es, es);
            check_buffer_free(&tmp);
            in.n++;
        }
        for (int i = 0; i < nout; i++) {
            node *n = &g.nodes[outi[i]];
            int nd;
            int64_t ext[PM_MAX_DIMS];
            pm_pipeline_buffer_shape(p, 1, i, params, &nd, ext);
            uint64_t save = g.r.s;
            want.b[i] = alloc_buffer(&g.r, n->type, nd, ext, &want.mem[i]);
            g.r.s = save; /* the same padding for both */
            got.b[i] = alloc_buffer(&g.r, n->type, nd, ext, &got.mem[i]);
            want.n++;
            got.n++;
        }
        s = pm_interpret(p, params, in.b, want.b);
        if (s != PM_OK) {
            char why[2200];
            snprintf(why, sizeof why, "pm_interpret at %lldx%lld: %s", (long long)params[0].i,
                     (long long)params[1].i, pm_ctx_errmsg(ctx));
            report(seed, &o, why);
            ok = false;
        }
        for (int ti = 0; ti < o.nthreads && ok; ti++) {
            /* One kernel for every thread count: it was compiled for 3 (scratch for 3
             * workers), and a run may use fewer. runtime/kernel.h's field is the count
             * pm_rt_threads gives the entry. */
            k->threads = o.threads[ti];
            s = pm_kernel_run(k, params, in.b, got.b, &err);
            st->runs++;
            if (s != PM_OK) {
                char why[1200];
                snprintf(why, sizeof why, "pm_kernel_run at %lldx%lld, %d threads: %s",
                         (long long)params[0].i, (long long)params[1].i, o.threads[ti],
                         err.message);
                report(seed, &o, why);
                ok = false;
                break;
            }
            for (int i = 0; i < nout && ok; i++) {
                if (compare(&want.b[i], &got.b[i], g.nodes[outi[i]].name)) {
                    char why[200];
                    snprintf(why, sizeof why, "mismatch at %lldx%lld, %d threads",
                             (long long)params[0].i, (long long)params[1].i, o.threads[ti]);
                    report(seed, &o, why);
                    st->mismatches++;
                    ok = false;
                }
            }
        }
        buffers_free(&in);
        buffers_free(&want);
        buffers_free(&got);
    }
    pm_kernel_free(k);
out:
    if (verbose && ok)
        fprintf(stderr, "seed %llu: %d stages, ok\n%s\n", (unsigned long long)seed, nstages, code);
    free(g.reads);
    pm_ctx_free(ctx);
    pool_clear();
    return ok;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    uint64_t seed = 1;
    long ncases = 50;
    double seconds = 0;
    uint64_t list[256];
    int nlist = 0; /* --seeds a,b,c: exactly these cases (regressions) */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
            for (char *p = argv[++i]; *p && nlist < 256;) {
                list[nlist++] = strtoull(p, &p, 10);
                if (*p == ',')
                    p++;
                else if (*p)
                    break;
            }
        else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
            ncases = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = true;
        else if (strcmp(argv[i], "--canon-roundtrip") == 0)
            canon_roundtrip = true;
        else {
            fprintf(stderr, "usage: %s [--seed S] [--cases N] [--seeds S1,S2,...] [--seconds T] "
                            "[--verbose] [--canon-roundtrip]\n", argv[0]);
            return 2;
        }
    }
    pm_jit_options jo = pm_jit_options_default();
    jo.dump = getenv("PM_DUMP") ? NULL : ""; /* PM_DUMP=ast,... shows a case's phases */
    pm_error err;
    for (int ct = 1; ct <= 3; ct++) {
        jo.compile_threads = ct;
        if (!(jits[ct] = pm_jit_new(&jo, &err))) {
            fprintf(stderr, "pm_jit_new: %s\n", err.message);
            return 1;
        }
    }
    stats st = {0};
    long failed = 0, tried = 0;
    double t0 = now_s();
    if (nlist > 0)
        ncases = nlist;
    for (long i = 0; i < ncases; i++) {
        if (seconds > 0 && now_s() - t0 > seconds)
            break;
        tried++;
        if (!run_case(nlist > 0 ? list[i] : seed + (uint64_t)i, &st))
            failed++;
    }
    for (int ct = 1; ct <= 3; ct++)
        pm_jit_free(jits[ct]);
    free(code);
    free(pool.items);
    if (nlist > 0)
        printf("fuzz: %d listed seeds (first %llu): %ld tried, %ld compiled and run (%ld runs), "
               "%ld skipped (invalid), %ld failed (%ld mismatches), %.1f s\n", nlist,
               (unsigned long long)list[0], tried, st.cases, st.runs, st.skipped, failed,
               st.mismatches, now_s() - t0);
    else
        printf("fuzz: seeds %llu..%llu: %ld tried, %ld compiled and run (%ld runs), %ld skipped "
               "(invalid), %ld failed (%ld mismatches), %.1f s\n",
               (unsigned long long)seed, (unsigned long long)(seed + (uint64_t)tried - 1),
               tried, st.cases, st.runs, st.skipped, failed, st.mismatches, now_s() - t0);
    return failed ? 1 : 0;
}
