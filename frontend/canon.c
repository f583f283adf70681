/* canon.c — a pipeline's canonical text and its hash (see canon.h), and the name table
 * the text's reader shares (canon_read.c). The grammar, line by line, with an example, is
 * docs/canonical-text.md; in short, one item per line:
 *   pm-canon 2                              format version (PM_CANON_VERSION)
 *   pipeline <name> <nparams> <ninputs> <noutputs> <nfuncs>
 *   param <slot> <type> <name>              signature order
 *   e<n> <kind> <type> w<0|1> ...           expression nodes, each after its operands
 *   domain / rdomain / f<k> / case / index / value
 *                                           images (inputs, in signature order), then the
 *                                           stages in the pipeline's (topological) order
 *   output f<k>
 * Functions are numbered f0.. in that order; expression nodes e0.. in the order a
 * depth-first walk first meets them (operands before the node). Both orders come from the
 * definitions alone, so they are the same in every context.
 */
#include "frontend/canon.h"

#include "frontend/ir.h"
#include "frontend/ptrmap.h"
#include "frontend/window.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t pm_hash_bytes(uint64_t h, const void *data, size_t len)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* ---- the name table: every enum value the text names, and its name -------------------------- */

typedef struct canon_name {
    pm_canon_field field;
    int value;
    const char *name;
} canon_name;

/* Names are single tokens of lower-case letters and digits; a name is unique within its
 * field. A new enum value needs a row here (the writer refuses a value without a name,
 * PM_ERR_INTERNAL) and one in docs/canonical-text.md; renaming a row is a new version. */
static const canon_name canon_names[] = {
    {PM_CANON_KIND, PM_EXPR_INT, "int"},        {PM_CANON_KIND, PM_EXPR_FLOAT, "float"},
    {PM_CANON_KIND, PM_EXPR_VAR, "var"},        {PM_CANON_KIND, PM_EXPR_PARAM, "param"},
    {PM_CANON_KIND, PM_EXPR_UNARY, "unary"},    {PM_CANON_KIND, PM_EXPR_BINARY, "binary"},
    {PM_CANON_KIND, PM_EXPR_CAST, "cast"},      {PM_CANON_KIND, PM_EXPR_SELECT, "select"},
    {PM_CANON_KIND, PM_EXPR_MATH, "math"},      {PM_CANON_KIND, PM_EXPR_CALL, "call"},

    {PM_CANON_TYPE, PM_BOOL, "bool"}, {PM_CANON_TYPE, PM_U8, "u8"},
    {PM_CANON_TYPE, PM_I8, "i8"},     {PM_CANON_TYPE, PM_U16, "u16"},
    {PM_CANON_TYPE, PM_I16, "i16"},   {PM_CANON_TYPE, PM_U32, "u32"},
    {PM_CANON_TYPE, PM_I32, "i32"},   {PM_CANON_TYPE, PM_I64, "i64"},
    {PM_CANON_TYPE, PM_F32, "f32"},   {PM_CANON_TYPE, PM_F64, "f64"},

    {PM_CANON_UNOP, PM_OP_NEG, "neg"}, {PM_CANON_UNOP, PM_OP_NOT, "not"},
    {PM_CANON_UNOP, PM_OP_ABS, "abs"},

    {PM_CANON_BINOP, PM_OP_ADD, "add"},   {PM_CANON_BINOP, PM_OP_SUB, "sub"},
    {PM_CANON_BINOP, PM_OP_MUL, "mul"},   {PM_CANON_BINOP, PM_OP_DIV, "div"},
    {PM_CANON_BINOP, PM_OP_MOD, "mod"},   {PM_CANON_BINOP, PM_OP_CDIV, "cdiv"},
    {PM_CANON_BINOP, PM_OP_CMOD, "cmod"}, {PM_CANON_BINOP, PM_OP_MIN, "min"},
    {PM_CANON_BINOP, PM_OP_MAX, "max"},   {PM_CANON_BINOP, PM_OP_ABSD, "absd"},
    {PM_CANON_BINOP, PM_OP_BAND, "band"}, {PM_CANON_BINOP, PM_OP_BOR, "bor"},
    {PM_CANON_BINOP, PM_OP_BXOR, "bxor"}, {PM_CANON_BINOP, PM_OP_SHL, "shl"},
    {PM_CANON_BINOP, PM_OP_SHR, "shr"},   {PM_CANON_BINOP, PM_OP_LT, "lt"},
    {PM_CANON_BINOP, PM_OP_LE, "le"},     {PM_CANON_BINOP, PM_OP_EQ, "eq"},
    {PM_CANON_BINOP, PM_OP_NE, "ne"},     {PM_CANON_BINOP, PM_OP_GE, "ge"},
    {PM_CANON_BINOP, PM_OP_GT, "gt"},     {PM_CANON_BINOP, PM_OP_AND, "and"},
    {PM_CANON_BINOP, PM_OP_OR, "or"},

    {PM_CANON_MATH, PM_EXP, "exp"},     {PM_CANON_MATH, PM_LOG, "log"},
    {PM_CANON_MATH, PM_SQRT, "sqrt"},   {PM_CANON_MATH, PM_SIN, "sin"},
    {PM_CANON_MATH, PM_COS, "cos"},     {PM_CANON_MATH, PM_TAN, "tan"},
    {PM_CANON_MATH, PM_ATAN, "atan"},   {PM_CANON_MATH, PM_TANH, "tanh"},
    {PM_CANON_MATH, PM_FLOOR, "floor"}, {PM_CANON_MATH, PM_CEIL, "ceil"},
    {PM_CANON_MATH, PM_ROUND, "round"}, {PM_CANON_MATH, PM_TRUNC, "trunc"},
    {PM_CANON_MATH, PM_MATH_POW, "pow"}, {PM_CANON_MATH, PM_MATH_ATAN2, "atan2"},

    {PM_CANON_REDUCE, PM_REDUCE_SUM, "sum"}, {PM_CANON_REDUCE, PM_REDUCE_PRODUCT, "product"},
    {PM_CANON_REDUCE, PM_REDUCE_MIN, "min"}, {PM_CANON_REDUCE, PM_REDUCE_MAX, "max"},
    {PM_CANON_REDUCE, PM_REDUCE_AND, "and"}, {PM_CANON_REDUCE, PM_REDUCE_OR, "or"},

    {PM_CANON_FUNC, PM_FUNC_IMAGE, "image"}, {PM_CANON_FUNC, PM_FUNC_FUNCTION, "function"},
    {PM_CANON_FUNC, PM_FUNC_REDUCTION, "reduction"},
};

const char *pm_canon_name(pm_canon_field field, int value)
{
    for (size_t i = 0; i < sizeof canon_names / sizeof canon_names[0]; i++)
        if (canon_names[i].field == field && canon_names[i].value == value)
            return canon_names[i].name;
    return NULL;
}

bool pm_canon_value(pm_canon_field field, const char *name, size_t len, int *value)
{
    for (size_t i = 0; i < sizeof canon_names / sizeof canon_names[0]; i++) {
        const canon_name *n = &canon_names[i];
        if (n->field == field && strlen(n->name) == len && memcmp(n->name, name, len) == 0) {
            *value = n->value;
            return true;
        }
    }
    return false;
}

int pm_canon_op_field(int kind)
{
    switch (kind) {
    case PM_EXPR_UNARY: return PM_CANON_UNOP;
    case PM_EXPR_BINARY: return PM_CANON_BINOP;
    case PM_EXPR_MATH: return PM_CANON_MATH;
    default: return -1;
    }
}

/* A growing text that remembers running out of memory (a truncated text must never be
 * mistaken for a complete one: it would be a key). */
typedef struct canon_writer {
    pm_pipeline *p;
    char *data;
    size_t len, cap;
    bool failed;
    pm_ptrmap funcs;   /* pm_func * -> f<k>                                            */
    pm_ptrmap nodes;   /* pm_expr * -> e<n>                                            */
    int64_t next_node;
    bool *sized;       /* by slot                                                      */
    bool unnamed;      /* a value the name table lacks: a bug, not memory                */
} canon_writer;

static void put(canon_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(canon_writer *w, const char *fmt, ...)
{
    if (w->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        w->failed = true;
        return;
    }
    if (w->len + (size_t)n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 1024;
        while (w->len + (size_t)n + 1 > cap) {
            if (cap > SIZE_MAX / 2) {
                w->failed = true;
                return;
            }
            cap *= 2;
        }
        char *grown = realloc(w->data, cap);
        if (!grown) {
            w->failed = true;
            return;
        }
        w->data = grown;
        w->cap = cap;
    }
    if ((size_t)n < sizeof small) {
        memcpy(w->data + w->len, small, (size_t)n + 1);
    } else {
        va_start(ap, fmt);
        vsnprintf(w->data + w->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    w->len += (size_t)n;
}

/* A kind, type or operator by its name in the table (never its enum number, so the format
 * does not depend on enum order). */
static void put_named(canon_writer *w, pm_canon_field field, int value)
{
    const char *name = pm_canon_name(field, value);
    if (!name) {
        w->failed = w->unnamed = true;
        return;
    }
    put(w, " %s", name);
}

/* Names are user text: written with their length so no name can imitate the layout. */
static void put_name(canon_writer *w, const char *name)
{
    put(w, " %zu:%s", strlen(name), name);
}

static int64_t func_index(const canon_writer *w, const pm_func *f)
{
    int64_t k = -1;
    pm_ptrmap_get(&w->funcs, f, &k);
    return k;
}

static int param_slot(const canon_writer *w, const pm_expr *e)
{
    return e->id >= 0 && e->id < pm_ctx_nparams(w->p->ctx) ? w->p->param_slot[e->id] : -1;
}

/* Writes e's node (and first its operands' nodes) unless written already; returns its
 * number, -1 for NULL. Recursion depth is the expression's depth, as everywhere else in
 * the frontend (printing, validation, interpretation). */
static int64_t put_expr(canon_writer *w, const pm_expr *e)
{
    if (!e || w->failed)
        return -1;
    int64_t n;
    if (pm_ptrmap_get(&w->nodes, e, &n))
        return n;
    int64_t a = put_expr(w, e->a), b = put_expr(w, e->b), c = put_expr(w, e->c);
    int64_t *args = NULL;
    if (e->kind == PM_EXPR_CALL && e->nargs > 0) {
        args = malloc(sizeof *args * (size_t)e->nargs);
        if (!args) {
            w->failed = true;
            return -1;
        }
        for (int i = 0; i < e->nargs; i++)
            args[i] = put_expr(w, e->args[i]);
    }
    n = w->next_node++;
    put(w, "e%" PRId64, n);
    put_named(w, PM_CANON_KIND, e->kind);
    put_named(w, PM_CANON_TYPE, e->type);
    put(w, " w%d", e->is_weak ? 1 : 0);
    int op_field = pm_canon_op_field(e->kind);
    if (op_field >= 0)
        put_named(w, (pm_canon_field)op_field, e->op);
    switch (e->kind) {
    case PM_EXPR_INT:
        put(w, " i%" PRId64, e->ival);
        break;
    case PM_EXPR_FLOAT: {
        uint64_t bits;
        memcpy(&bits, &e->fval, sizeof bits); /* bit-exact: -0.0 and NaN payloads too */
        put(w, " x%016" PRIx64, bits);
        break;
    }
    case PM_EXPR_VAR:
        put_name(w, e->name);
        break;
    case PM_EXPR_PARAM:
        put(w, " s%d", param_slot(w, e));
        break;
    case PM_EXPR_CALL:
        put(w, " f%" PRId64 " n%d", func_index(w, e->callee), e->nargs);
        for (int i = 0; i < e->nargs; i++)
            put(w, " e%" PRId64, args[i]);
        break;
    default:
        break;
    }
    if (a >= 0)
        put(w, " a%" PRId64, a);
    if (b >= 0)
        put(w, " b%" PRId64, b);
    if (c >= 0)
        put(w, " c%" PRId64, c);
    put(w, "\n");
    free(args);
    if (!pm_ptrmap_put(&w->nodes, e, n))
        w->failed = true;
    return n;
}

/* Records the parameters an extent or a bound uses: their estimates matter. */
static bool mark_sized(const pm_expr *e, void *user)
{
    canon_writer *w = user;
    if (e->kind == PM_EXPR_PARAM) {
        int slot = param_slot(w, e);
        if (slot >= 0 && slot < w->p->nparams)
            w->sized[slot] = true;
    }
    return true;
}

/* The nodes of a domain first, then the line naming them. */
static void put_domain(canon_writer *w, const char *what, int n, pm_expr **vars,
                       pm_interval **ivs)
{
    int64_t (*refs)[3] = malloc(sizeof *refs * (size_t)(n > 0 ? n : 1));
    if (!refs) {
        w->failed = true;
        return;
    }
    for (int d = 0; d < n; d++) {
        pm_expr_walk(ivs[d]->lb, mark_sized, w);
        pm_expr_walk(ivs[d]->ub, mark_sized, w);
        refs[d][0] = put_expr(w, vars[d]);
        refs[d][1] = put_expr(w, ivs[d]->lb);
        refs[d][2] = put_expr(w, ivs[d]->ub);
    }
    put(w, "%s %d", what, n);
    for (int d = 0; d < n; d++)
        put(w, " (e%" PRId64 " e%" PRId64 " e%" PRId64 " %" PRId64 ")", refs[d][0], refs[d][1],
            refs[d][2], ivs[d]->step);
    put(w, "\n");
    free(refs);
}

static void put_func(canon_writer *w, const pm_func *f, int64_t k)
{
    switch (f->kind) {
    case PM_FUNC_IMAGE: {
        int64_t ext[PM_MAX_DIMS];
        for (int d = 0; d < f->ndims && d < PM_MAX_DIMS; d++) {
            pm_expr_walk(f->extents[d], mark_sized, w);
            ext[d] = put_expr(w, f->extents[d]);
        }
        put(w, "f%" PRId64 " image", k);
        put_named(w, PM_CANON_TYPE, f->type);
        put(w, " n%d", f->ndims);
        put_name(w, f->name);
        for (int d = 0; d < f->ndims && d < PM_MAX_DIMS; d++)
            put(w, " e%" PRId64, ext[d]);
        put(w, "\n");
        return;
    }
    case PM_FUNC_FUNCTION:
        put_domain(w, "domain", f->ndims, f->vars, f->intervals);
        put(w, "f%" PRId64 " function", k);
        put_named(w, PM_CANON_TYPE, f->type);
        put(w, " n%d", f->ndims);
        put_name(w, f->name);
        put(w, " cases %d\n", f->ncases);
        for (int i = 0; i < f->ncases; i++) {
            int64_t cond = put_expr(w, f->cases[i]->cond);
            int64_t value = put_expr(w, f->cases[i]->value);
            if (cond < 0) /* no condition: the whole domain */
                put(w, "case - e%" PRId64 "\n", value);
            else
                put(w, "case e%" PRId64 " e%" PRId64 "\n", cond, value);
        }
        return;
    case PM_FUNC_REDUCTION: {
        put_domain(w, "domain", f->ndims, f->vars, f->intervals);
        put_domain(w, "rdomain", f->nrdims, f->rvars, f->rintervals);
        int64_t initial = put_expr(w, f->initial);
        put(w, "f%" PRId64 " reduction", k);
        put_named(w, PM_CANON_TYPE, f->type);
        put(w, " n%d r%d", f->ndims, f->nrdims);
        put_named(w, PM_CANON_REDUCE, f->reduce_op);
        put_name(w, f->name);
        put(w, " initial e%" PRId64 " defined %d\n", initial, f->defined ? 1 : 0);
        if (f->defined) {
            for (int d = 0; d < f->ndims; d++)
                put(w, "index e%" PRId64 "\n", put_expr(w, f->rindex[d]));
            put(w, "value e%" PRId64 "\n", put_expr(w, f->rvalue));
        }
        return;
    }
    }
}

/* A window form's: its base's text and a last line `window`; the window's extents are
 * sizes, its offsets are not (frontend/window.h). */
static const pm_canon *window_canon(pm_pipeline *p)
{
    const pm_window *win = p->window;
    const pm_canon *base = pm_pipeline_canon(win->base);
    if (!base)
        return NULL;
    static const char line[] = "window\n";
    pm_canon *c = pm_ctx_alloc(p->ctx, sizeof *c);
    char *text = c ? pm_ctx_alloc(p->ctx, base->len + sizeof line) : NULL;
    bool *sized = text ? pm_ctx_alloc(p->ctx, sizeof(bool) * (size_t)(p->nparams + 1)) : NULL;
    if (!sized)
        return NULL;
    memcpy(text, base->text, base->len);
    memcpy(text + base->len, line, sizeof line);
    memcpy(sized, base->sized, sizeof(bool) * (size_t)base->nparams);
    for (int d = 0; d < win->ndims; d++) {
        sized[base->nparams + 2 * d] = false;
        sized[base->nparams + 2 * d + 1] = true;
    }
    c->text = text;
    c->len = base->len + sizeof line - 1;
    c->hash = pm_hash_bytes(PM_HASH_SEED, text, c->len);
    c->nparams = p->nparams;
    c->sized = sized;
    p->canon = c;
    return c;
}

const pm_canon *pm_pipeline_canon(pm_pipeline *p)
{
    if (!p)
        return NULL;
    if (p->canon)
        return p->canon;
    pm_ctx *ctx = p->ctx;
    if (p->window)
        return window_canon(p);
    canon_writer w = {.p = p};
    w.sized = pm_ctx_alloc(ctx, sizeof(bool) * (size_t)(p->nparams + 1));
    if (!w.sized)
        return NULL;

    /* Function numbers first: calls may refer to any function, earlier or later. */
    int64_t k = 0;
    for (int i = 0; i < p->ninputs && !w.failed; i++)
        w.failed = !pm_ptrmap_put(&w.funcs, p->inputs[i], k++);
    for (int i = 0; i < p->nstages && !w.failed; i++)
        w.failed = !pm_ptrmap_put(&w.funcs, p->stages[i], k++);

    put(&w, "pm-canon %d\npipeline", PM_CANON_VERSION);
    put_name(&w, p->name);
    put(&w, " %d %d %d %" PRId64 "\n", p->nparams, p->ninputs, p->noutputs, k);
    for (int i = 0; i < p->nparams; i++) {
        put(&w, "param %d", i);
        put_named(&w, PM_CANON_TYPE, p->params[i]->type);
        put_name(&w, p->params[i]->name);
        put(&w, "\n");
    }
    for (int i = 0; i < p->ninputs; i++)
        put_func(&w, p->inputs[i], func_index(&w, p->inputs[i]));
    for (int i = 0; i < p->nstages; i++)
        put_func(&w, p->stages[i], func_index(&w, p->stages[i]));
    for (int i = 0; i < p->noutputs; i++)
        put(&w, "output f%" PRId64 "\n", func_index(&w, p->outputs[i]));

    pm_canon *c = NULL;
    char *text = NULL;
    if (!w.failed) {
        c = pm_ctx_alloc(ctx, sizeof *c);
        text = c ? pm_ctx_alloc(ctx, w.len + 1) : NULL;
    } else if (w.unnamed) {
        pm_ctx_error(ctx, PM_ERR_INTERNAL, "%s: a kind, type or operator has no name in the "
                     "canonical text's table (frontend/canon.c)", p->name);
    } else {
        pm_ctx_error(ctx, PM_ERR_NOMEM, "%s: out of memory writing its canonical form", p->name);
    }
    if (c && text) {
        memcpy(text, w.data, w.len);
        text[w.len] = '\0';
        c->text = text;
        c->len = w.len;
        c->hash = pm_hash_bytes(PM_HASH_SEED, text, w.len);
        c->nparams = p->nparams;
        c->sized = w.sized;
        p->canon = c;
    }
    free(w.data);
    pm_ptrmap_free(&w.funcs);
    pm_ptrmap_free(&w.nodes);
    return p->canon;
}

const char *pm_pipeline_text(pm_pipeline *p, size_t *len)
{
    const pm_canon *c = pm_pipeline_canon(p);
    if (len)
        *len = c ? c->len : 0;
    return c ? c->text : NULL;
}
