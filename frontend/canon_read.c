/* canon_read.c — pm_pipeline_from_text: a pipeline rebuilt from its canonical text
 * (canon.h; the grammar is docs/canonical-text.md).
 *
 * One pass over the text, without recursion: each line is read in the exact form the
 * writer (canon.c) gives it and rebuilt at once through the builders of expr.c and
 * func.c, whose own checks (types, arity, domains) apply; the node a builder makes is
 * then compared with what the line says, so a line is accepted only if the builders make
 * exactly that node of those operands. pm_pipeline_new then validates the pipeline, and
 * the rebuilt pipeline's canonical text must equal the input byte for byte: that catches
 * whatever the line checks let through (a line nothing uses, another stage order).
 *
 * The text is input: every count is bounded before anything is allocated for it (by the
 * limits of canon.h and by the number of lines, so memory stays linear in the text), a
 * reference may name only what an earlier line defined, and nesting and tree sizes are
 * bounded because the rest of the library recurses over expressions and walks a shared
 * node once per use. Every failure goes through fail(): a status and a message naming
 * the line, nothing else (the objects built so far stay in the context's arena).
 */
#include "frontend/canon.h"

#include "frontend/ir.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A node of the text: the expression rebuilt, and what bounds the work it causes. */
typedef struct node_info {
    pm_expr *e;
    int depth;          /* nesting; 1 for a leaf                                        */
    int64_t tree;       /* nodes written out as a tree, saturating past PM_CANON_MAX_TREE */
} node_info;

/* A domain or rdomain line, waiting for its function's line. */
typedef struct domain_line {
    bool present;
    int n;
    pm_expr *vars[PM_MAX_DIMS];
    pm_interval *ivs[PM_MAX_DIMS];
} domain_line;

typedef struct reader {
    pm_ctx *ctx;
    const char *s;
    size_t len, pos;
    int64_t line;         /* line of pos, from 1                                        */
    int64_t item_line;    /* line where the current item starts: messages name it       */
    int64_t nlines;       /* newlines in the text: no count of lines may exceed it      */
    bool failed;
    char *scratch;        /* the last name read, NUL-terminated (malloc)                */
    size_t scratch_cap;
    char shown[80];       /* a quoted piece of the text, for a message                  */
    /* the pipeline line and the parameters */
    const char *name;     /* ctx-owned                                                  */
    int nparams, ninputs, noutputs, nfuncs;
    pm_expr **params;     /* malloc'd, nparams                                          */
    bool *param_seen;     /* its e-line was read                                        */
    /* what the lines so far defined */
    node_info *nodes;     /* malloc'd, e0 .. e(nnodes-1); moves as it grows, so a pointer
                             into it lives for one line only                            */
    int64_t nnodes, nodes_cap;
    pm_func **funcs;      /* malloc'd, f0 .. f(nmade-1)                                 */
    int nmade;
    pm_func **outputs;    /* malloc'd                                                   */
    int noutputs_read;
    int64_t tree_total;   /* all definitions written out as trees                       */
    domain_line dom, rdom;
    /* the definition in progress: a function's cases, or a reduction's index and value */
    pm_func *open;
    int ncases, cases_read;
    pm_case **cases;      /* malloc'd, ncases                                           */
    int nindex;
    int64_t index[PM_MAX_DIMS]; /* node numbers: nodes may move as lines add more     */
} reader;

/* ---- failures ------------------------------------------------------------------------------- */

static bool fail(reader *r, pm_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records the first failure: "canonical text line N: <cause>". Returns false. */
static bool fail(reader *r, pm_status status, const char *fmt, ...)
{
    if (r->failed)
        return false;
    r->failed = true;
    char cause[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cause, sizeof cause, fmt, ap);
    va_end(ap);
    pm_ctx_set_error(r->ctx, status, "canonical text line %" PRId64 ": %s", r->item_line, cause);
    return false;
}

#define BAD(r, ...) fail((r), PM_ERR_ARGUMENT, __VA_ARGS__)

/* A builder refused what the line describes: its message, under the line's. */
static bool fail_builder(reader *r, const char *who)
{
    char msg[1024];
    pm_status status = pm_ctx_status(r->ctx);
    snprintf(msg, sizeof msg, "%s", *pm_ctx_errmsg(r->ctx) ? pm_ctx_errmsg(r->ctx)
                                                           : "the builder refused it");
    return fail(r, status == PM_ERR_NOMEM ? PM_ERR_NOMEM : PM_ERR_ARGUMENT, "%s: %s", who, msg);
}

static bool fail_nomem(reader *r)
{
    return fail(r, PM_ERR_NOMEM, "out of memory");
}

/* n bytes of the text, quoted, unprintable bytes escaped, long pieces cut. */
static const char *show(reader *r, const char *p, size_t n)
{
    size_t at = 0, cap = sizeof r->shown;
    r->shown[at++] = '"';
    for (size_t i = 0; i < n && at + 8 < cap; i++) {
        unsigned char c = (unsigned char)p[i];
        if (i == 24) {
            at += (size_t)snprintf(r->shown + at, cap - at, "...");
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            r->shown[at++] = (char)c;
        else
            at += (size_t)snprintf(r->shown + at, cap - at, "\\x%02x", c);
    }
    snprintf(r->shown + at, cap - at, "\"");
    return r->shown;
}

/* ---- tokens: single spaces between them, a newline after each line -------------------------- */

static size_t token_len(const reader *r)
{
    size_t n = 0;
    while (r->pos + n < r->len && r->s[r->pos + n] != ' ' && r->s[r->pos + n] != '\n')
        n++;
    return n;
}

/* What the text holds at pos, for "expected X, found Y". */
static const char *found(reader *r)
{
    if (r->pos >= r->len)
        return "the end of the text";
    if (r->s[r->pos] == '\n')
        return "the end of the line";
    if (r->s[r->pos] == ' ')
        return "another space";
    return show(r, r->s + r->pos, token_len(r));
}

static bool expect_char(reader *r, char c, const char *what)
{
    if (r->pos < r->len && r->s[r->pos] == c) {
        r->pos++;
        r->line += c == '\n';
        return true;
    }
    return BAD(r, "expected %s, found %s", what, found(r));
}

static bool sep(reader *r) { return expect_char(r, ' ', "a space"); }
static bool eol(reader *r) { return expect_char(r, '\n', "the end of the line"); }

static bool peek(const reader *r, char c)
{
    return r->pos < r->len && r->s[r->pos] == c;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The exact word w. */
static bool expect_word(reader *r, const char *w)
{
    size_t n = token_len(r);
    if (n == strlen(w) && memcmp(r->s + r->pos, w, n) == 0) {
        r->pos += n;
        return true;
    }
    char want[40];
    snprintf(want, sizeof want, "\"%s\"", w);
    return BAD(r, "expected %s, found %s", want, found(r));
}

/* The run of digits at pos: its length; its value in *v, *over when it passes 2^64-1. */
static size_t scan_digits(const reader *r, uint64_t *v, bool *over)
{
    size_t n = 0;
    *v = 0;
    *over = false;
    while (r->pos + n < r->len && is_digit(r->s[r->pos + n])) {
        unsigned d = (unsigned)(r->s[r->pos + n] - '0');
        *over |= *v > (UINT64_MAX - d) / 10;
        *v = *over ? *v : *v * 10 + d;
        n++;
    }
    return n;
}

/* A decimal number as the writer spells it (digits, no leading zero, no sign) of at most
 * max. what names it in messages. */
static bool read_magnitude(reader *r, const char *what, uint64_t max, uint64_t *out)
{
    uint64_t v;
    bool over;
    size_t n = scan_digits(r, &v, &over);
    if (n == 0)
        return BAD(r, "expected %s (a number), found %s", what, found(r));
    const char *digits = show(r, r->s + r->pos, n);
    if (n > 1 && r->s[r->pos] == '0')
        return BAD(r, "%s %s has a leading zero", what, digits);
    if (over || v > max)
        return BAD(r, "%s %s is too large (at most %" PRIu64 ")", what, digits, max);
    r->pos += n;
    *out = v;
    return true;
}

static bool read_count(reader *r, const char *what, int64_t max, int64_t *out)
{
    uint64_t v;
    if (!read_magnitude(r, what, (uint64_t)max, &v))
        return false;
    *out = (int64_t)v;
    return true;
}

/* A count that is bounded twice: by the reader's limit, and by the lines left in the
 * text, each item needing one (so nothing is allocated for items the text cannot hold). */
static bool read_bounded(reader *r, const char *what, int64_t limit, int64_t *out)
{
    if (!read_count(r, what, limit, out))
        return false;
    if (*out > r->nlines)
        return BAD(r, "%s %" PRId64 " is more than the text's %" PRId64 " lines can hold", what,
                   *out, r->nlines);
    return true;
}

/* A letter, then a count: e12, f3, n2, s0. */
static bool read_prefixed(reader *r, char prefix, const char *what, int64_t max, int64_t *out)
{
    if (!peek(r, prefix) || r->pos + 1 >= r->len || !is_digit(r->s[r->pos + 1]))
        return BAD(r, "expected %s (%c<n>), found %s", what, prefix, found(r));
    r->pos++;
    return read_count(r, what, max, out);
}

/* "i" and a signed 64-bit decimal, spelt as PRId64 spells it. */
static bool read_int(reader *r, int64_t *out)
{
    if (!expect_char(r, 'i', "an integer (i<n>)"))
        return false;
    bool neg = peek(r, '-');
    r->pos += neg;
    uint64_t mag;
    if (!read_magnitude(r, "integer", neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX, &mag))
        return false;
    if (neg && mag == 0)
        return BAD(r, "the integer -0 is written 0");
    /* -(mag - 1) - 1: -2^63 has no positive int64 to negate */
    *out = neg ? -(int64_t)(mag - 1) - 1 : (int64_t)mag;
    return true;
}

/* "x" and 16 lower-case hex digits: a double's bits. */
static bool read_bits(reader *r, uint64_t *out)
{
    if (!expect_char(r, 'x', "a float's bits (x and 16 hex digits)"))
        return false;
    uint64_t v = 0;
    for (int i = 0; i < 16; i++, r->pos++) {
        char c = r->pos < r->len ? r->s[r->pos] : '\0';
        int d = is_digit(c) ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return BAD(r, "a float's bits are 16 lower-case hex digits, found %s", found(r));
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

/* A name from the table (canon.c) of field. */
static bool read_named(reader *r, pm_canon_field field, const char *what, int *out)
{
    size_t n = token_len(r);
    if (n > 0 && pm_canon_value(field, r->s + r->pos, n, out)) {
        r->pos += n;
        return true;
    }
    return BAD(r, "expected %s, found %s%s", what, n ? "the unknown name " : "", found(r));
}

/* <length>:<bytes>, into r->scratch (NUL-terminated). Names may hold any byte but NUL
 * (refused before reading), spaces and newlines included. */
static bool read_name(reader *r, const char *what)
{
    int64_t n;
    if (!read_count(r, what, (int64_t)(r->len - r->pos), &n) || !expect_char(r, ':', "':'"))
        return false;
    if ((size_t)n > r->len - r->pos)
        return BAD(r, "%s of %" PRId64 " bytes runs past the end of the text", what, n);
    if ((size_t)n + 1 > r->scratch_cap) {
        char *grown = realloc(r->scratch, (size_t)n + 1);
        if (!grown)
            return fail_nomem(r);
        r->scratch = grown;
        r->scratch_cap = (size_t)n + 1;
    }
    memcpy(r->scratch, r->s + r->pos, (size_t)n);
    r->scratch[n] = '\0';
    for (int64_t i = 0; i < n; i++)
        r->line += r->s[r->pos + (size_t)i] == '\n';
    r->pos += (size_t)n;
    return true;
}

/* <prefix><n> naming node e<n>, which an earlier line defined: e<n> itself, or an operand
 * a<n>, b<n>, c<n>. who names the line's item in messages. */
static bool read_ref(reader *r, char prefix, const char *who, node_info **out)
{
    int64_t n;
    if (!read_prefixed(r, prefix, prefix == 'e' ? "a node" : "an operand", INT64_MAX, &n))
        return false;
    if (n >= r->nnodes)
        return BAD(r, "%s refers to e%" PRId64 ", not yet defined", who, n);
    *out = &r->nodes[n];
    return true;
}

static bool read_node(reader *r, const char *who, node_info **out)
{
    return read_ref(r, 'e', who, out);
}

/* f<k>, a function an earlier line (or this function's own line) made. */
static bool read_func(reader *r, const char *who, pm_func **out)
{
    int64_t k;
    if (!read_prefixed(r, 'f', "a function", INT64_MAX, &k))
        return false;
    if (k >= r->nmade)
        return BAD(r, "%s refers to f%" PRId64 ", not yet defined", who, k);
    *out = r->funcs[k];
    return true;
}

/* A definition's root expression: its tree counts towards the pipeline's total. */
static bool add_root(reader *r, const node_info *n)
{
    r->tree_total += n->tree;
    if (r->tree_total > PM_CANON_MAX_TREE)
        return BAD(r, "the definitions have more than %d nodes written out as trees (each "
                   "use of a shared node counts, as the library's walks see it)",
                   PM_CANON_MAX_TREE);
    return true;
}

static bool read_root(reader *r, const char *who, node_info **out)
{
    return read_node(r, who, out) && add_root(r, *out);
}

/* ---- expression lines: e<n> <kind> <type> w<0|1> [op] [payload] [a<n>] [b<n>] [c<n>] -------- */

/* What an e-line says about its node. */
typedef struct claim {
    int kind, type, op;
    bool weak;
    int64_t ival;                 /* int                                               */
    uint64_t bits;                /* float                                             */
    pm_func *callee;              /* call                                              */
    int nargs;
    node_info *args[PM_MAX_DIMS];
    node_info *opnd[3];           /* a, b, c; NULL when absent                         */
} claim;

static bool read_weak(reader *r, bool *weak)
{
    const char *t = r->s + r->pos;
    if (token_len(r) == 2 && t[0] == 'w' && (t[1] == '0' || t[1] == '1')) {
        *weak = t[1] == '1';
        r->pos += 2;
        return true;
    }
    return BAD(r, "expected w0 or w1, found %s", found(r));
}

/* The parameter of an e-line's s<slot>: each parameter is one node, so one line. */
static pm_expr *param_node(reader *r, const char *who, int64_t slot)
{
    if (r->param_seen[slot]) {
        BAD(r, "%s is parameter %" PRId64 " again (a parameter is one node)", who, slot);
        return NULL;
    }
    r->param_seen[slot] = true;
    return r->params[slot];
}

/* f<k> n<nargs> e.. e..: nargs is bounded before the arguments are read. */
static bool read_call(reader *r, const char *who, claim *c)
{
    int64_t nargs;
    if (!read_func(r, who, &c->callee) || !sep(r) ||
        !read_prefixed(r, 'n', "an argument count", PM_MAX_DIMS, &nargs))
        return false;
    c->nargs = (int)nargs;
    for (int i = 0; i < c->nargs; i++)
        if (!sep(r) || !read_node(r, who, &c->args[i]))
            return false;
    return true;
}

static bool read_payload(reader *r, const char *who, claim *c, pm_expr **param)
{
    int64_t slot;
    switch (c->kind) {
    case PM_EXPR_INT: return sep(r) && read_int(r, &c->ival);
    case PM_EXPR_FLOAT: return sep(r) && read_bits(r, &c->bits);
    case PM_EXPR_VAR: return sep(r) && read_name(r, "a variable's name");
    case PM_EXPR_PARAM:
        if (!sep(r) || !read_prefixed(r, 's', "a parameter slot", INT64_MAX, &slot))
            return false;
        if (slot >= r->nparams)
            return BAD(r, "%s refers to parameter %" PRId64 ", but the pipeline has %d", who,
                       slot, r->nparams);
        return (*param = param_node(r, who, slot)) != NULL;
    case PM_EXPR_CALL: return sep(r) && read_call(r, who, c);
    default: return true;
    }
}

/* Operands a, b, c, each optional, in that order. */
static bool read_operands(reader *r, const char *who, claim *c)
{
    static const char letters[] = "abc";
    int next = 0;
    while (peek(r, ' ')) {
        r->pos++;
        const char *at = NULL;
        if (r->pos < r->len)
            at = memchr(letters + next, r->s[r->pos], (size_t)(3 - next));
        if (!at)
            return BAD(r, "%s: expected an operand a, b or c (in that order) or the end of the "
                       "line, found %s", who, found(r));
        int i = (int)(at - letters);
        if (!read_ref(r, letters[i], who, &c->opnd[i]))
            return false;
        next = i + 1;
    }
    return true;
}

/* Operands each kind has: bit 0 a, bit 1 b, bit 2 c. */
static int operand_mask(const claim *c)
{
    switch (c->kind) {
    case PM_EXPR_UNARY: case PM_EXPR_CAST: return 1;
    case PM_EXPR_BINARY: return 3;
    case PM_EXPR_SELECT: return 7;
    case PM_EXPR_MATH: return c->op == PM_MATH_POW || c->op == PM_MATH_ATAN2 ? 3 : 1;
    default: return 0;
    }
}

static bool check_operands(reader *r, const char *who, const claim *c)
{
    static const char *lists[] = {"none", "a", "?", "a and b", "?", "?", "?", "a, b and c"};
    int want = operand_mask(c), have = 0;
    for (int i = 0; i < 3; i++)
        have |= c->opnd[i] ? 1 << i : 0;
    if (have == want)
        return true;
    return BAD(r, "%s: a %s node has operands %s", who, pm_canon_name(PM_CANON_KIND, c->kind),
               lists[want]);
}

/* Nesting and tree size of the node, from its operands', bounded before it is built
 * (the builders print operands in their messages, recursively). */
static bool check_size(reader *r, const char *who, const claim *c, node_info *n)
{
    n->depth = 0;
    n->tree = 1;
    node_info *const *parts[2] = {c->opnd, c->args};
    int counts[2] = {3, c->nargs};
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < counts[p]; i++) {
            const node_info *o = parts[p][i];
            if (!o)
                continue;
            n->depth = o->depth > n->depth ? o->depth : n->depth;
            n->tree += o->tree; /* each <= PM_CANON_MAX_TREE: no overflow */
        }
    n->depth++;
    if (n->depth > PM_CANON_MAX_DEPTH)
        return BAD(r, "%s nests %d levels deep; the reader takes at most %d (the library "
                   "recurses over expressions)", who, n->depth, PM_CANON_MAX_DEPTH);
    if (n->tree > PM_CANON_MAX_TREE)
        return BAD(r, "%s has more than %d nodes written out as a tree (each use of a shared "
                   "node counts, as the library's walks see it)", who, PM_CANON_MAX_TREE);
    return true;
}

/* The builder of each binary operator, by pm_binop. */
static pm_expr *(*const binary_builders[])(pm_expr *, pm_expr *) = {
    [PM_OP_ADD] = pm_add,   [PM_OP_SUB] = pm_sub,   [PM_OP_MUL] = pm_mul,
    [PM_OP_DIV] = pm_div,   [PM_OP_MOD] = pm_mod,   [PM_OP_CDIV] = pm_cdiv,
    [PM_OP_CMOD] = pm_cmod, [PM_OP_MIN] = pm_min,   [PM_OP_MAX] = pm_max,
    [PM_OP_ABSD] = pm_absd, [PM_OP_BAND] = pm_band, [PM_OP_BOR] = pm_bor,
    [PM_OP_BXOR] = pm_bxor, [PM_OP_SHL] = pm_shl,   [PM_OP_SHR] = pm_shr,
    [PM_OP_LT] = pm_lt,     [PM_OP_LE] = pm_le,     [PM_OP_EQ] = pm_eq,
    [PM_OP_NE] = pm_ne,     [PM_OP_GE] = pm_ge,     [PM_OP_GT] = pm_gt,
    [PM_OP_AND] = pm_and,   [PM_OP_OR] = pm_or,
};

/* A constant as the builders make it: pm_int / pm_float (weak), pm_f64 and pm_const
 * (strong), or a weak integer literal converted to a strong integer type (how
 * pm_add(x, pm_int(ctx, v)) stores v next to an i64 or u8 x: any int64 value). */
static pm_expr *build_constant(reader *r, const char *who, const claim *c)
{
    pm_ctx *ctx = r->ctx;
    if (c->kind == PM_EXPR_INT) {
        if (c->weak)
            return pm_int(ctx, c->ival);
        if (!pm_type_is_int((pm_type)c->type)) {
            BAD(r, "%s: an int node of type %s (integer constants have an integer type)", who,
                pm_type_name((pm_type)c->type));
            return NULL;
        }
        return pm_expr_convert(pm_int(ctx, c->ival), (pm_type)c->type);
    }
    double v;
    memcpy(&v, &c->bits, sizeof v);
    if (c->weak)
        return pm_float(ctx, v);
    if (c->type == PM_F64)
        return pm_f64(ctx, v);
    if (c->type == PM_F32)
        return pm_const(ctx, PM_F32, v);
    BAD(r, "%s: a float node of type %s (float constants are f32 or f64)", who,
        pm_type_name((pm_type)c->type));
    return NULL;
}

/* The node the builders make of the claim's operands (NULL after a failure). */
static pm_expr *build_node(reader *r, const char *who, const claim *c)
{
    pm_expr *a = c->opnd[0] ? c->opnd[0]->e : NULL, *b = c->opnd[1] ? c->opnd[1]->e : NULL;
    pm_expr *args[PM_MAX_DIMS];
    pm_expr *e = NULL;
    switch (c->kind) {
    case PM_EXPR_INT: case PM_EXPR_FLOAT:
        if (!(e = build_constant(r, who, c)))
            return NULL;
        break;
    case PM_EXPR_VAR: e = pm_var(r->ctx, r->scratch); break;
    case PM_EXPR_UNARY:
        e = c->op == PM_OP_NEG ? pm_neg(a) : c->op == PM_OP_NOT ? pm_not(a) : pm_abs(a);
        break;
    case PM_EXPR_BINARY: e = binary_builders[c->op](a, b); break;
    case PM_EXPR_CAST: e = pm_cast((pm_type)c->type, a); break;
    case PM_EXPR_SELECT: e = pm_select(a, b, c->opnd[2]->e); break;
    case PM_EXPR_MATH:
        e = c->op == PM_MATH_POW ? pm_pow(a, b) : c->op == PM_MATH_ATAN2 ? pm_atan2(a, b)
                                                : pm_math((pm_math_fn)c->op, a);
        break;
    case PM_EXPR_CALL:
        for (int i = 0; i < c->nargs; i++)
            args[i] = c->args[i]->e;
        e = pm_call_n(c->callee, c->nargs, args);
        break;
    }
    if (!e)
        fail_builder(r, who);
    return e;
}

/* Could x be what the builders store for a weak operand (frontend/expr.c's convert)? A
 * weak node kept as it is, a strong constant copied from a weak literal, or a cast of a
 * weak node. */
static bool from_weak(const pm_expr *x)
{
    return x->is_weak || x->kind == PM_EXPR_INT || x->kind == PM_EXPR_FLOAT ||
           (x->kind == PM_EXPR_CAST && x->a->is_weak);
}

/* A binary arithmetic node or a select of two weak values is weak, but the builders store
 * the converted operands, which may be strong: the weakness is the line's to tell. */
static bool may_be_weak(const pm_expr *e)
{
    if (e->kind == PM_EXPR_BINARY)
        return e->op < PM_OP_LT && from_weak(e->a) && from_weak(e->b);
    if (e->kind == PM_EXPR_SELECT)
        return e->type != PM_BOOL && from_weak(e->b) && from_weak(e->c);
    return false;
}

static int64_t node_number(const reader *r, const node_info *n)
{
    return (int64_t)(n - r->nodes);
}

/* The stored operand is the node the line names, not a conversion of it. */
static bool same_operand(reader *r, const char *who, const char *which, const node_info *named,
                         const pm_expr *stored)
{
    if (!named || stored == named->e)
        return true;
    return BAD(r, "%s: the builders store %s e%" PRId64 " converted to %s; the text must name "
               "that conversion as a node of its own", who, which, node_number(r, named),
               pm_type_name(stored ? stored->type : PM_BOOL));
}

/* The node built is the node the line describes. */
static bool same_node(reader *r, const char *who, const claim *c, pm_expr *e)
{
    for (int i = 0; i < 3; i++)
        if (c->opnd[i] && e == c->opnd[i]->e)
            return BAD(r, "%s: the builders make no node of this: they return its operand %c, "
                       "e%" PRId64, who, "abc"[i], node_number(r, c->opnd[i]));
    if (c->weak && !e->is_weak && may_be_weak(e))
        e->is_weak = true; /* e is new: nothing else holds it yet */
    if ((int)e->kind != c->kind || (int)e->type != c->type || e->is_weak != c->weak)
        return BAD(r, "%s: the builders make it %s %s w%d, not %s %s w%d", who,
                   pm_canon_name(PM_CANON_KIND, e->kind), pm_type_name(e->type), e->is_weak,
                   pm_canon_name(PM_CANON_KIND, c->kind), pm_type_name((pm_type)c->type),
                   c->weak);
    if (c->kind == PM_EXPR_FLOAT && memcmp(&e->fval, &c->bits, sizeof c->bits) != 0)
        return BAD(r, "%s: x%016" PRIx64 " is not an f32 value", who, c->bits);
    const pm_expr *stored[3] = {e->a, e->b, e->c};
    static const char *names[3] = {"operand a", "operand b", "operand c"};
    for (int i = 0; i < 3; i++)
        if (!same_operand(r, who, names[i], c->opnd[i], stored[i]))
            return false;
    for (int i = 0; i < c->nargs; i++)
        if (!same_operand(r, who, "an argument", c->args[i], e->args[i]))
            return false;
    return true;
}

static bool add_node(reader *r, const node_info *n)
{
    if (r->nnodes == r->nodes_cap) {
        int64_t cap = r->nodes_cap ? 2 * r->nodes_cap : 256;
        node_info *grown = realloc(r->nodes, sizeof *grown * (size_t)cap);
        if (!grown)
            return fail_nomem(r);
        r->nodes = grown;
        r->nodes_cap = cap;
    }
    r->nodes[r->nnodes++] = *n;
    return true;
}

/* The rest of e<n>'s line, after "e<n>". */
static bool read_expr_line(reader *r, int64_t n)
{
    char who[32];
    snprintf(who, sizeof who, "e%" PRId64, n);
    if (n < r->nnodes)
        return BAD(r, "%s is defined twice", who);
    if (n > r->nnodes)
        return BAD(r, "%s is out of order: the next node is e%" PRId64, who, r->nnodes);
    claim c = {0};
    pm_expr *param = NULL;
    if (!sep(r) || !read_named(r, PM_CANON_KIND, "a kind", &c.kind) || !sep(r) ||
        !read_named(r, PM_CANON_TYPE, "a type", &c.type) || !sep(r) || !read_weak(r, &c.weak))
        return false;
    int op_field = pm_canon_op_field(c.kind);
    if (op_field >= 0 &&
        (!sep(r) || !read_named(r, (pm_canon_field)op_field, "an operator", &c.op)))
        return false;
    node_info info;
    if (!read_payload(r, who, &c, &param) || !read_operands(r, who, &c) || !eol(r) ||
        !check_operands(r, who, &c) || !check_size(r, who, &c, &info))
        return false;
    if (c.kind == PM_EXPR_PARAM) {
        if ((int)param->type != c.type || c.weak)
            return BAD(r, "%s: parameter %s is %s w0, not %s w%d", who, param->name,
                       pm_type_name(param->type), pm_type_name((pm_type)c.type), c.weak);
        info.e = param;
    } else if (!(info.e = build_node(r, who, &c)) || !same_node(r, who, &c, info.e)) {
        return false;
    }
    return add_node(r, &info);
}

/* ---- domains and functions ------------------------------------------------------------------ */

/* The definition in progress must be complete before a domain, function or output line. */
static bool nothing_open(reader *r)
{
    if (!r->open)
        return true;
    if (r->open->kind == PM_FUNC_FUNCTION)
        return BAD(r, "%s has %d cases, but only %d case lines come before this line",
                   r->open->name, r->ncases, r->cases_read);
    return BAD(r, "reduction %s needs %d index lines and a value line before this line",
               r->open->name, r->open->ndims);
}

/* (e<var> e<lb> e<ub> <step>) */
static bool read_dimension(reader *r, const char *who, domain_line *d, int i)
{
    node_info *var, *lb, *ub;
    int64_t step;
    if (!expect_char(r, '(', "'('") || !read_node(r, who, &var) || !sep(r) ||
        !read_root(r, who, &lb) || !sep(r) || !read_root(r, who, &ub) || !sep(r) ||
        !read_count(r, "a step", INT64_MAX, &step) || !expect_char(r, ')', "')'"))
        return false;
    d->vars[i] = var->e;
    d->ivs[i] = pm_interval_new(lb->e, ub->e, step);
    return d->ivs[i] || fail_builder(r, who);
}

/* domain <n> (...)... and rdomain <n> (...)...: held for the function line after them. */
static bool read_domain_line(reader *r, bool reduction)
{
    const char *who = reduction ? "rdomain" : "domain";
    domain_line *d = reduction ? &r->rdom : &r->dom;
    if (!nothing_open(r))
        return false;
    if (reduction ? !r->dom.present || r->rdom.present : r->dom.present)
        return BAD(r, "%s: %s", who, reduction ? "an rdomain line comes after a domain line, "
                   "before its reduction's line" : "a domain line comes before its function's "
                   "line, one per function");
    int64_t n;
    if (!sep(r) || !read_count(r, "a dimension count", PM_MAX_DIMS, &n))
        return false;
    d->n = (int)n;
    for (int i = 0; i < d->n; i++)
        if (!sep(r) || !read_dimension(r, who, d, i))
            return false;
    d->present = true;
    return eol(r);
}

/* f<k> image <type> n<ndims> <name> e<extent>... */
static bool read_image(reader *r, const char *who, int k)
{
    if (k >= r->ninputs)
        return BAD(r, "%s is an image, but the pipeline's %d inputs are f0..f%d and every image "
                   "it reads is an input", who, r->ninputs, r->ninputs - 1);
    if (r->dom.present)
        return BAD(r, "%s: an image has no domain line", who);
    int type;
    int64_t nd;
    pm_expr *ext[PM_MAX_DIMS];
    if (!sep(r) || !read_named(r, PM_CANON_TYPE, "a type", &type) || !sep(r) ||
        !read_prefixed(r, 'n', "a dimension count", PM_MAX_DIMS, &nd) || !sep(r) ||
        !read_name(r, "an image's name"))
        return false;
    for (int d = 0; d < nd; d++) {
        node_info *e;
        if (!sep(r) || !read_root(r, who, &e))
            return false;
        ext[d] = e->e;
    }
    if (!eol(r))
        return false;
    r->funcs[k] = pm_image_new(r->ctx, r->scratch, (pm_type)type, (int)nd, ext);
    return r->funcs[k] || fail_builder(r, who);
}

/* The dimension counts of a function line and the domain lines before it agree. */
static bool same_dims(reader *r, const char *who, const char *what, int64_t n, const domain_line *d)
{
    if (d->present && d->n == n)
        return true;
    if (!d->present)
        return BAD(r, "%s: no %s line before it", who, what);
    return BAD(r, "%s has %" PRId64 " dimensions, but its %s line %d", who, n, what, d->n);
}

/* f<k> function <type> n<ndims> <name> cases <ncases>; the case lines follow. */
static bool read_function(reader *r, const char *who, int k)
{
    int type;
    int64_t nd, ncases;
    if (!sep(r) || !read_named(r, PM_CANON_TYPE, "a type", &type) || !sep(r) ||
        !read_prefixed(r, 'n', "a dimension count", PM_MAX_DIMS, &nd) ||
        !same_dims(r, who, "domain", nd, &r->dom) || !sep(r) ||
        !read_name(r, "a function's name") || !sep(r) || !expect_word(r, "cases") || !sep(r) ||
        !read_bounded(r, "a case count", PM_CANON_MAX_CASES, &ncases) || !eol(r))
        return false;
    if (r->rdom.present)
        return BAD(r, "%s: a function has no rdomain line", who);
    r->dom.present = false;
    pm_func *f = pm_func_new(r->ctx, r->scratch, (pm_type)type, (int)nd, r->dom.vars, r->dom.ivs);
    if (!(r->funcs[k] = f))
        return fail_builder(r, who);
    if (ncases == 0)
        return true; /* undefined: pm_pipeline_new says so if anything uses it */
    r->cases = calloc((size_t)ncases, sizeof *r->cases);
    if (!r->cases)
        return fail_nomem(r);
    r->open = f;
    r->ncases = (int)ncases;
    r->cases_read = 0;
    return true;
}

/* f<k> reduction <type> n<ndims> r<nrdims> <op> <name> initial e<n> defined <0|1> */
static bool read_reduction(reader *r, const char *who, int k)
{
    int type, op;
    int64_t nd, nrd, defined;
    node_info *initial;
    if (!sep(r) || !read_named(r, PM_CANON_TYPE, "a type", &type) || !sep(r) ||
        !read_prefixed(r, 'n', "a dimension count", PM_MAX_DIMS, &nd) ||
        !same_dims(r, who, "domain", nd, &r->dom) || !sep(r) ||
        !read_prefixed(r, 'r', "a reduction dimension count", PM_MAX_DIMS, &nrd) ||
        !same_dims(r, who, "rdomain", nrd, &r->rdom) || !sep(r) ||
        !read_named(r, PM_CANON_REDUCE, "a reduction operator", &op) || !sep(r) ||
        !read_name(r, "a reduction's name") || !sep(r) || !expect_word(r, "initial") ||
        !sep(r) || !read_root(r, who, &initial) || !sep(r) || !expect_word(r, "defined") ||
        !sep(r) || !read_count(r, "defined (0 or 1)", 1, &defined) || !eol(r))
        return false;
    r->dom.present = r->rdom.present = false;
    pm_func *f = pm_reduction_new(r->ctx, r->scratch, (pm_type)type, (int)nd, r->dom.vars,
                                  r->dom.ivs, (int)nrd, r->rdom.vars, r->rdom.ivs,
                                  (pm_reduce_op)op, initial->e);
    if (!(r->funcs[k] = f))
        return fail_builder(r, who);
    if (!same_operand(r, who, "its initial value", initial, f->initial))
        return false;
    r->open = defined ? f : NULL;
    r->nindex = 0;
    return true;
}

/* f<k> <kind> ...: functions are made in the order of their lines. */
static bool read_func_line(reader *r, int64_t k)
{
    char who[32];
    snprintf(who, sizeof who, "f%" PRId64, k);
    if (k < r->nmade)
        return BAD(r, "%s is defined twice", who);
    if (k > r->nmade)
        return BAD(r, "%s is out of order: the next function is f%d", who, r->nmade);
    if (k >= r->nfuncs)
        return BAD(r, "%s: the pipeline line says %d functions", who, r->nfuncs);
    int kind;
    if (!nothing_open(r) || !sep(r) || !read_named(r, PM_CANON_FUNC, "image, function or "
                                                   "reduction", &kind))
        return false;
    if (kind != PM_FUNC_IMAGE && k < r->ninputs)
        return BAD(r, "%s is a %s, but f0..f%d are the pipeline's inputs, which are images", who,
                   pm_canon_name(PM_CANON_FUNC, kind), r->ninputs - 1);
    bool ok = kind == PM_FUNC_IMAGE ? read_image(r, who, (int)k)
              : kind == PM_FUNC_FUNCTION ? read_function(r, who, (int)k)
                                         : read_reduction(r, who, (int)k);
    r->nmade += ok;
    return ok;
}

/* ---- definitions: case, index and value lines ----------------------------------------------- */

/* After the last case line: the definition, whose stored values must be the nodes named. */
static bool define_function(reader *r)
{
    pm_func *f = r->open;
    pm_expr *values[PM_CANON_MAX_CASES];
    for (int i = 0; i < r->ncases; i++)
        values[i] = r->cases[i]->value;
    if (pm_func_define(f, r->ncases, r->cases) != PM_OK)
        return fail_builder(r, f->name);
    for (int i = 0; i < r->ncases; i++)
        if (f->cases[i]->value != values[i])
            return BAD(r, "%s: the builders store the value of case %d converted to %s; the text "
                       "must name that conversion as a node of its own", f->name, i,
                       pm_type_name(f->type));
    free(r->cases);
    r->cases = NULL;
    r->open = NULL;
    return true;
}

/* case <e<cond>|-> e<value> */
static bool read_case_line(reader *r)
{
    if (!r->open || r->open->kind != PM_FUNC_FUNCTION)
        return BAD(r, "a case line outside a function's definition");
    node_info *cond = NULL, *value;
    if (!sep(r))
        return false;
    if (peek(r, '-'))
        r->pos++; /* no condition: the whole domain */
    else if (!read_root(r, "case", &cond))
        return false;
    if (!sep(r) || !read_root(r, "case", &value) || !eol(r))
        return false;
    pm_case *c = pm_case_new(cond ? cond->e : NULL, value->e);
    if (!c)
        return fail_builder(r, "case");
    r->cases[r->cases_read++] = c;
    return r->cases_read < r->ncases || define_function(r);
}

/* index e<n>: one per dimension of the reduction being defined. */
static bool read_index_line(reader *r)
{
    if (!r->open || r->open->kind != PM_FUNC_REDUCTION || r->nindex == r->open->ndims)
        return BAD(r, "an index line outside a reduction's definition (a reduction has one per "
                   "dimension, before its value line)");
    node_info *n;
    if (!sep(r) || !read_root(r, "index", &n) || !eol(r))
        return false;
    r->index[r->nindex++] = node_number(r, n);
    return true;
}

/* value e<n>: the reduction's definition, whose stored parts must be the nodes named. */
static bool read_value_line(reader *r)
{
    pm_func *f = r->open;
    if (!f || f->kind != PM_FUNC_REDUCTION || r->nindex != f->ndims)
        return BAD(r, "a value line outside a reduction's definition (it follows the "
                   "reduction's line and its index lines, one per dimension)");
    node_info *value;
    pm_expr *index[PM_MAX_DIMS];
    if (!sep(r) || !read_root(r, "value", &value) || !eol(r))
        return false;
    for (int d = 0; d < f->ndims; d++)
        index[d] = r->nodes[r->index[d]].e;
    if (pm_reduction_define(f, f->ndims, index, value->e) != PM_OK)
        return fail_builder(r, f->name);
    for (int d = 0; d < f->ndims; d++)
        if (!same_operand(r, f->name, "an index", &r->nodes[r->index[d]], f->rindex[d]))
            return false;
    r->open = NULL;
    return same_operand(r, f->name, "the reduced value", value, f->rvalue);
}

/* output f<k>: after every function's line and definition. */
static bool read_output_line(reader *r)
{
    if (r->nmade < r->nfuncs)
        return BAD(r, "output lines come after all %d functions; f%d has no line", r->nfuncs,
                   r->nmade);
    if (r->dom.present)
        return BAD(r, "a domain line without its function's line");
    pm_func *f;
    if (!nothing_open(r) || !sep(r) || !read_func(r, "output", &f) || !eol(r))
        return false;
    r->outputs[r->noutputs_read++] = f;
    return true;
}

/* ---- the text: version, pipeline and parameter lines, the body, the outputs ----------------- */

/* One line of the body, by its first token. */
static bool read_item(reader *r)
{
    size_t n = token_len(r);
    const char *t = r->s + r->pos;
    int64_t k;
    if (n >= 2 && (t[0] == 'e' || t[0] == 'f') && is_digit(t[1])) {
        bool node = t[0] == 'e';
        if (!read_prefixed(r, t[0], node ? "a node" : "a function", INT64_MAX, &k))
            return false;
        return node ? read_expr_line(r, k) : read_func_line(r, k);
    }
    static const char *words[] = {"domain", "rdomain", "case", "index", "value", "output"};
    int w = 0;
    while (w < 6 && !(strlen(words[w]) == n && memcmp(t, words[w], n) == 0))
        w++;
    r->pos += w < 6 ? n : 0;
    switch (w) {
    case 0: case 1: return read_domain_line(r, w == 1);
    case 2: return read_case_line(r);
    case 3: return read_index_line(r);
    case 4: return read_value_line(r);
    case 5: return read_output_line(r);
    default: return BAD(r, "a line cannot begin with %s", found(r));
    }
}

static bool read_body(reader *r)
{
    while (r->noutputs_read < r->noutputs) {
        r->item_line = r->line;
        if (r->pos >= r->len)
            return BAD(r, "the text ends early: %d of its %d functions and %d of its %d outputs "
                       "were read", r->nmade, r->nfuncs, r->noutputs_read, r->noutputs);
        if (!read_item(r))
            return false;
    }
    r->item_line = r->line;
    if (r->pos < r->len)
        return BAD(r, "text after the last output line: %s", found(r));
    return true;
}

/* pm-canon <version> */
static bool read_version(reader *r)
{
    size_t n = token_len(r);
    if (n != 8 || memcmp(r->s, "pm-canon", 8) != 0)
        return BAD(r, "not a canonical text: it begins with %s, not \"pm-canon %d\"",
                   r->len ? show(r, r->s, n ? n : 1) : "nothing", PM_CANON_VERSION);
    r->pos = n;
    int64_t version;
    if (!sep(r) || !read_count(r, "a version", INT32_MAX, &version) || !eol(r))
        return false;
    if (version != PM_CANON_VERSION)
        return BAD(r, "version %" PRId64 "; this library reads version %d", version,
                   PM_CANON_VERSION);
    return true;
}

/* pipeline <name> <nparams> <ninputs> <noutputs> <nfuncs>, then what the counts size. */
static bool read_pipeline_line(reader *r)
{
    r->item_line = r->line;
    int64_t np, ni, no, nf;
    if (!expect_word(r, "pipeline") || !sep(r) || !read_name(r, "the pipeline's name"))
        return false;
    if (!(r->name = pm_ctx_strdup(r->ctx, r->scratch)))
        return fail_nomem(r);
    if (!sep(r) || !read_bounded(r, "a parameter count", PM_CANON_MAX_PARAMS, &np) || !sep(r) ||
        !read_bounded(r, "an input count", PM_CANON_MAX_FUNCS, &ni) || !sep(r) ||
        !read_bounded(r, "an output count", PM_CANON_MAX_FUNCS, &no) || !sep(r) ||
        !read_bounded(r, "a function count", PM_CANON_MAX_FUNCS, &nf) || !eol(r))
        return false;
    if (ni > nf || no < 1 || no > nf - ni)
        return BAD(r, "%" PRId64 " inputs and %" PRId64 " outputs among %" PRId64 " functions "
                   "(inputs are images, outputs are other functions, at least one)", ni, no, nf);
    r->nparams = (int)np;
    r->ninputs = (int)ni;
    r->noutputs = (int)no;
    r->nfuncs = (int)nf;
    r->params = calloc((size_t)np + 1, sizeof *r->params);
    r->param_seen = calloc((size_t)np + 1, sizeof *r->param_seen);
    r->funcs = calloc((size_t)nf + 1, sizeof *r->funcs);
    r->outputs = calloc((size_t)no + 1, sizeof *r->outputs);
    return (r->params && r->param_seen && r->funcs && r->outputs) || fail_nomem(r);
}

/* param <slot> <type> <name>, in slot order. */
static bool read_param_line(reader *r, int slot)
{
    r->item_line = r->line;
    int64_t k;
    int type;
    if (!expect_word(r, "param") || !sep(r) || !read_count(r, "a slot", INT32_MAX, &k))
        return false;
    if (k != slot)
        return BAD(r, "param %" PRId64 " is out of order: the next is param %d", k, slot);
    if (!sep(r) || !read_named(r, PM_CANON_TYPE, "a type", &type) || !sep(r) ||
        !read_name(r, "a parameter's name") || !eol(r))
        return false;
    r->params[slot] = pm_param(r->ctx, (pm_type)type, r->scratch);
    return r->params[slot] || fail_builder(r, "param");
}

/* No NUL byte anywhere (names become C strings); counts the lines. */
static bool scan_text(reader *r)
{
    for (size_t i = 0; i < r->len; i++) {
        if (r->s[i] == '\0') {
            r->item_line = r->nlines + 1;
            return BAD(r, "a NUL byte (at offset %zu): a canonical text is text", i);
        }
        r->nlines += r->s[i] == '\n';
    }
    return true;
}

/* Every stage line names a stage the outputs reach: pm_pipeline_new keeps only those. */
static bool all_reached(reader *r, const pm_pipeline *p)
{
    for (int k = r->ninputs; k < r->nfuncs; k++) {
        bool reached = false;
        for (int i = 0; i < p->nstages && !reached; i++)
            reached = p->stages[i] == r->funcs[k];
        if (!reached)
            return BAD(r, "f%d (%s) is not reached from any output", k, r->funcs[k]->name);
    }
    return true;
}

/* The rebuilt pipeline's canonical text is the text read, byte for byte; else the
 * message shows the first line that differs as the pipeline it describes writes it. */
static bool same_text(reader *r, pm_pipeline *p)
{
    size_t len;
    const char *t = pm_pipeline_text(p, &len);
    if (!t)
        return fail_nomem(r);
    if (len == r->len && memcmp(t, r->s, len) == 0)
        return true;
    size_t i = 0, start = 0;
    r->item_line = 1;
    while (i < len && i < r->len && t[i] == r->s[i]) {
        if (t[i] == '\n') {
            r->item_line++;
            start = i + 1;
        }
        i++;
    }
    if (start >= len)
        return BAD(r, "not in canonical form: the pipeline it describes ends before this line");
    const char *end = memchr(t + start, '\n', len - start);
    size_t n = end ? (size_t)(end - (t + start)) : len - start;
    return BAD(r, "not in canonical form: the pipeline it describes writes %s here",
               show(r, t + start, n));
}

static pm_pipeline *read_text(reader *r)
{
    if (!scan_text(r) || !read_version(r) || !read_pipeline_line(r))
        return NULL;
    for (int i = 0; i < r->nparams; i++)
        if (!read_param_line(r, i))
            return NULL;
    if (!read_body(r))
        return NULL;
    pm_pipeline *p;
    r->item_line = 2; /* the pipeline line: what pm_pipeline_new reports is about it all */
    if (pm_pipeline_new(r->ctx, r->name, r->nparams, r->params, r->ninputs, r->funcs,
                        r->noutputs, r->outputs, &p) != PM_OK) {
        fail_builder(r, "the pipeline is not valid");
        return NULL;
    }
    return all_reached(r, p) && same_text(r, p) ? p : NULL;
}

static void reader_free(reader *r)
{
    free(r->scratch);
    free(r->params);
    free(r->param_seen);
    free(r->nodes);
    free(r->funcs);
    free(r->outputs);
    free(r->cases);
}

pm_status pm_pipeline_from_text(pm_ctx *ctx, const char *text, size_t len, pm_pipeline **out)
{
    if (out)
        *out = NULL;
    if (!ctx)
        return PM_ERR_MISUSE;
    if (!out || (!text && len > 0))
        return pm_ctx_set_error(ctx, PM_ERR_MISUSE, "pm_pipeline_from_text: %s is NULL",
                                out ? "text" : "out");
    pm_ctx_clear_error(ctx); /* the text uses nothing built before: its errors are its own */
    /* A window form's text: its base's, then a last line `window` (frontend/window.h). */
    static const char window_line[] = "\nwindow\n";
    size_t wl = sizeof window_line - 1;
    bool window = text && len > wl && memcmp(text + len - wl, window_line, wl) == 0;
    reader r = {.ctx = ctx, .s = text ? text : "", .len = window ? len - wl + 1 : len,
                .line = 1, .item_line = 1};
    pm_pipeline *p = read_text(&r);
    reader_free(&r);
    if (!p)
        return pm_ctx_status(ctx) != PM_OK ? pm_ctx_status(ctx) : PM_ERR_INTERNAL;
    if (window) {
        pm_status st = pm_pipeline_window(p, &p);
        if (st != PM_OK)
            return st;
    }
    *out = p;
    return PM_OK;
}
