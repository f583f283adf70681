/* lower.c — the lowering phase (see lower.h).
 *
 * Shape: the AST queries first (shared with the emitter), then the loop decisions
 * (decide_loop: which loops run with vectors and in which shape), the read decisions
 * (decide_read: the strategy of one read at given lanes), the walk that records both for
 * every loop of the AST and of each box run, and the dump.
 */
#include "codegen/lower.h"

#include "codegen/costs.h"
#include "codegen/schedule.h"
#include "frontend/ir.h"

#include <isl/aff.h>
#include <isl/id.h>
#include <isl/printer.h>
#include <isl/val.h>
#include <limits.h>
#include <llvm-c/Core.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_USERS 32

/* ---- the target ----------------------------------------------------------------------- */

static bool has_feature(const char *features, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = features; p && *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len + 1 && p[0] == '+' && strncmp(p + 1, name, len) == 0)
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

pm_target pm_target_of(LLVMTargetMachineRef tm, int vector_width)
{
    pm_target t = {.vector_width = vector_width > 1 ? vector_width : 1};
    if (!tm)
        return t;
    char *feat = LLVMGetTargetMachineFeatureString(tm);
    char *arch = LLVMGetTargetMachineTriple(tm);
    bool x86 = strncmp(arch, "x86_64", 6) == 0;
    t.avx512f = x86 && has_feature(feat, "avx512f");
    t.avx512vl = t.avx512f && has_feature(feat, "avx512vl");
    t.avx512bw = t.avx512f && has_feature(feat, "avx512bw");
    t.avx512vbmi = t.avx512bw && has_feature(feat, "avx512vbmi");
    LLVMDisposeMessage(feat);
    LLVMDisposeMessage(arch);
    return t;
}

/* ---- AST queries ------------------------------------------------------------------------ */

static bool mentions(__isl_keep isl_ast_expr *e, __isl_keep isl_id *id)
{
    switch (isl_ast_expr_get_type(e)) {
    case isl_ast_expr_id: {
        isl_id *x = isl_ast_expr_id_get_id(e);
        bool same = x == id;
        isl_id_free(x);
        return same;
    }
    case isl_ast_expr_op: {
        int n = isl_ast_expr_op_get_n_arg(e);
        bool any = false;
        for (int i = 0; i < n && !any; i++) {
            isl_ast_expr *a = isl_ast_expr_op_get_arg(e, i);
            any = mentions(a, id);
            isl_ast_expr_free(a);
        }
        return any;
    }
    default:
        return false;
    }
}

static bool is_id(__isl_keep isl_ast_expr *e, __isl_keep isl_id *id)
{
    if (isl_ast_expr_get_type(e) != isl_ast_expr_id)
        return false;
    isl_id *x = isl_ast_expr_id_get_id(e);
    bool same = x == id;
    isl_id_free(x);
    return same;
}

const pm_poly_stmt *pm_lower_call_stmt(const pm_poly *poly, const pm_ast_box *box,
                                       __isl_keep isl_ast_expr *call)
{
    if (!box)
        return pm_ast_stmt(poly, call);
    isl_ast_expr *fn = isl_ast_expr_op_get_arg(call, 0);
    isl_id *id = isl_ast_expr_id_get_id(fn);
    isl_ast_expr_free(fn);
    const char *name = id ? isl_id_get_name(id) : NULL;
    int k = name && strncmp(name, "pm_box", 6) == 0 ? atoi(name + 6) : -1;
    isl_id_free(id);
    return k >= 0 && k < box->nstmts ? box->stmts[k] : NULL;
}

static int body_users_at(__isl_keep isl_ast_node *body, isl_ast_node **users, int k, int max)
{
    if (isl_ast_node_get_type(body) == isl_ast_node_user) {
        if (k == max)
            return -1;
        users[k] = isl_ast_node_copy(body);
        return k + 1;
    }
    if (isl_ast_node_get_type(body) != isl_ast_node_block)
        return -1;
    /* isl nests blocks (a box template's statements, ast.h): flattened */
    isl_ast_node_list *list = isl_ast_node_block_get_children(body);
    int n = isl_ast_node_list_n_ast_node(list);
    for (int i = 0; i < n && k >= 0; i++) {
        isl_ast_node *c = isl_ast_node_list_get_ast_node(list, i);
        k = body_users_at(c, users, k, max);
        isl_ast_node_free(c);
    }
    isl_ast_node_list_free(list);
    return k;
}

int pm_lower_body_users(__isl_keep isl_ast_node *body, isl_ast_node **users, int max)
{
    for (int i = 0; i < max; i++)
        users[i] = NULL;
    int k = body_users_at(body, users, 0, max);
    if (k < 0)
        for (int i = 0; i < max; i++)
            users[i] = isl_ast_node_free(users[i]);
    return k < 0 ? 0 : k;
}

int pm_lower_lane_dim(__isl_keep isl_ast_expr *call, const pm_poly_stmt *s,
                      __isl_keep isl_id *id)
{
    if (isl_ast_expr_op_get_n_arg(call) != s->ndims + 1)
        return -1;
    int k = -1;
    for (int d = 0; d < s->ndims; d++) {
        isl_ast_expr *a = isl_ast_expr_op_get_arg(call, d + 1);
        if (is_id(a, id))
            k = k < 0 ? d : -2;
        else if (mentions(a, id))
            k = -2;
        isl_ast_expr_free(a);
    }
    return k < 0 ? -1 : k;
}

bool pm_lower_unit_inc(__isl_keep isl_ast_node *node)
{
    isl_ast_expr *inc = isl_ast_node_for_get_inc(node);
    bool one = false;
    if (isl_ast_expr_get_type(inc) == isl_ast_expr_int) {
        isl_val *v = isl_ast_expr_int_get_val(inc);
        one = isl_val_is_one(v);
        isl_val_free(v);
    }
    isl_ast_expr_free(inc);
    return one;
}

bool pm_lower_upper_bound_cond(__isl_keep isl_ast_expr *cond, __isl_keep isl_id *id)
{
    if (isl_ast_expr_get_type(cond) != isl_ast_expr_op)
        return false;
    enum isl_ast_expr_op_type op = isl_ast_expr_op_get_type(cond);
    if (op != isl_ast_expr_op_le && op != isl_ast_expr_op_lt)
        return false;
    isl_ast_expr *a = isl_ast_expr_op_get_arg(cond, 0), *b = isl_ast_expr_op_get_arg(cond, 1);
    bool ok = is_id(a, id) && !mentions(b, id);
    isl_ast_expr_free(a);
    isl_ast_expr_free(b);
    return ok;
}

/* Does the call of statement s run along iterator id: its innermost argument is the
 * iterator and no other argument mentions it? */
static bool call_along(__isl_keep isl_ast_expr *call, const pm_poly_stmt *s,
                       __isl_keep isl_id *id)
{
    bool ok = isl_ast_expr_op_get_n_arg(call) == s->ndims + 1;
    for (int d = 0; ok && d < s->ndims; d++) {
        isl_ast_expr *a = isl_ast_expr_op_get_arg(call, d + 1);
        ok = d == s->ndims - 1 ? is_id(a, id) : !mentions(a, id);
        isl_ast_expr_free(a);
    }
    return ok;
}

pm_for_node pm_lower_for_node(__isl_keep isl_ast_node *node)
{
    isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
    pm_for_node f = {isl_ast_expr_id_get_id(it), isl_ast_node_for_get_cond(node),
                  isl_ast_node_for_get_body(node)};
    isl_ast_expr_free(it);
    return f;
}

void pm_lower_for_node_clear(pm_for_node *f)
{
    isl_ast_node_free(f->body);
    isl_ast_expr_free(f->cond);
    isl_id_free(f->id);
}

/* The loop's trip count when its start and bound are integer constants, else -1. */
static long long constant_trip(__isl_keep isl_ast_node *node, __isl_keep isl_ast_expr *cond)
{
    isl_ast_expr *init = isl_ast_node_for_get_init(node);
    isl_ast_expr *bound = isl_ast_expr_op_get_arg(cond, 1);
    long long trip = -1;
    if (init && bound && isl_ast_expr_get_type(init) == isl_ast_expr_int &&
        isl_ast_expr_get_type(bound) == isl_ast_expr_int) {
        isl_val *a = isl_ast_expr_int_get_val(init), *b = isl_ast_expr_int_get_val(bound);
        if (isl_val_is_int(a) && isl_val_is_int(b)) {
            long long lo = isl_val_get_num_si(a), hi = isl_val_get_num_si(b);
            if (isl_ast_expr_op_get_type(cond) == isl_ast_expr_op_lt)
                hi -= 1;
            trip = hi >= lo ? hi - lo + 1 : 0;
        }
        isl_val_free(a);
        isl_val_free(b);
    }
    isl_ast_expr_free(init);
    isl_ast_expr_free(bound);
    return trip;
}

/* ---- the tables ------------------------------------------------------------------------ */

typedef struct loop_entry {
    const isl_ast_node *node;
    const pm_ast_box *box;
    bool block;                /* a privatized block's plan, apart from the loop's       */
    pm_loop_plan plan;
} loop_entry;

typedef struct read_entry {
    const pm_expr *call;
    pm_lane_shape shape;
    int loop;                  /* the loop entry whose code reads it first, or -1       */
    pm_read_plan plan;
} read_entry;

struct pm_lower {
    const pm_poly *poly;
    const pm_ast *ast;
    const pm_options *o;
    pm_target target;
    /* growable arrays with open-addressing indices (hash -> entry + 1) */
    loop_entry *loops;
    int nloops, cap_loops;
    int *loop_index;
    size_t loop_slots;
    read_entry *reads;
    int nreads, cap_reads;
    int *read_index;
    size_t read_slots;
    const pm_ast_box *walk_box; /* the run being walked                                  */
    bool walking;               /* in pm_lower_new: else a decision is the emitter's     */
    int walk_loop;              /* the loop entry whose reads are being walked, or -1    */
    bool failed;                /* out of memory                                         */
};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t loop_hash(const isl_ast_node *node, const pm_ast_box *box, bool block)
{
    return mix(mix(1 + block, (uint64_t)(uintptr_t)node), (uint64_t)(uintptr_t)box);
}

static uint64_t shape_hash(const pm_expr *call, const pm_lane_shape *s)
{
    uint64_t h = mix(mix(mix(2, (uint64_t)(uintptr_t)call), (uint64_t)(uintptr_t)s->stmt),
                     (uint64_t)(s->W * 4 + s->where));
    for (int d = 0; d < PM_MAX_DIMS; d++)
        h = mix(h, (uint64_t)(uint32_t)s->lane_step[d] * 2u + s->lanes[d]);
    return h;
}

static bool same_shape(const pm_lane_shape *a, const pm_lane_shape *b)
{
    if (a->stmt != b->stmt || a->W != b->W || a->where != b->where)
        return false;
    for (int d = 0; d < PM_MAX_DIMS; d++)
        if (a->lane_step[d] != b->lane_step[d] || a->lanes[d] != b->lanes[d])
            return false;
    return true;
}

/* Grows an index of `slots` ints to twice the entries, rehashing them. */
static bool grow_index(int **index, size_t *slots, int n, uint64_t (*hash_of)(const void *, int),
                       const void *entries)
{
    size_t size = *slots ? 2 * *slots : 64;
    while (size < 2 * (size_t)(n + 1))
        size *= 2;
    int *fresh = calloc(size, sizeof *fresh);
    if (!fresh)
        return false;
    for (int i = 0; i < n; i++) {
        size_t at = (size_t)hash_of(entries, i) & (size - 1);
        while (fresh[at])
            at = (at + 1) & (size - 1);
        fresh[at] = i + 1;
    }
    free(*index);
    *index = fresh;
    *slots = size;
    return true;
}

static uint64_t loop_hash_at(const void *entries, int i)
{
    const loop_entry *e = &((const loop_entry *)entries)[i];
    return loop_hash(e->node, e->box, e->block);
}

static uint64_t read_hash_at(const void *entries, int i)
{
    const read_entry *e = &((const read_entry *)entries)[i];
    return shape_hash(e->call, &e->shape);
}

static loop_entry *find_loop(const pm_lower *lw, const isl_ast_node *node, const pm_ast_box *box,
                             bool block)
{
    if (!lw->loop_slots)
        return NULL;
    for (size_t at = (size_t)loop_hash(node, box, block) & (lw->loop_slots - 1);
         lw->loop_index[at]; at = (at + 1) & (lw->loop_slots - 1)) {
        loop_entry *e = &lw->loops[lw->loop_index[at] - 1];
        if (e->node == node && e->box == box && e->block == block)
            return e;
    }
    return NULL;
}

static read_entry *find_read(const pm_lower *lw, const pm_expr *call, const pm_lane_shape *s)
{
    if (!lw->read_slots)
        return NULL;
    for (size_t at = (size_t)shape_hash(call, s) & (lw->read_slots - 1); lw->read_index[at];
         at = (at + 1) & (lw->read_slots - 1)) {
        read_entry *e = &lw->reads[lw->read_index[at] - 1];
        if (e->call == call && same_shape(&e->shape, s))
            return e;
    }
    return NULL;
}

/* Appends an entry to (*items, *n, *cap) of `size` bytes each; NULL when out of memory. */
static void *append(void **items, int *n, int *cap, size_t size)
{
    if (*n == *cap) {
        int cap2 = *cap ? 2 * *cap : 64;
        void *grown = realloc(*items, (size_t)cap2 * size);
        if (!grown)
            return NULL;
        *items = grown;
        *cap = cap2;
    }
    return (char *)*items + (size_t)(*n)++ * size;
}

static loop_entry *add_loop(pm_lower *lw, const isl_ast_node *node, const pm_ast_box *box,
                            bool block)
{
    if ((size_t)(lw->nloops + 1) * 2 > lw->loop_slots &&
        !grow_index(&lw->loop_index, &lw->loop_slots, lw->nloops, loop_hash_at, lw->loops))
        return NULL;
    loop_entry *e = append((void **)&lw->loops, &lw->nloops, &lw->cap_loops, sizeof *e);
    if (!e)
        return NULL;
    *e = (loop_entry){.node = node, .box = box, .block = block};
    size_t at = (size_t)loop_hash(node, box, block) & (lw->loop_slots - 1);
    while (lw->loop_index[at])
        at = (at + 1) & (lw->loop_slots - 1);
    lw->loop_index[at] = lw->nloops;
    return e;
}

static read_entry *add_read(pm_lower *lw, const pm_expr *call, const pm_lane_shape *s)
{
    if ((size_t)(lw->nreads + 1) * 2 > lw->read_slots &&
        !grow_index(&lw->read_index, &lw->read_slots, lw->nreads, read_hash_at, lw->reads))
        return NULL;
    read_entry *e = append((void **)&lw->reads, &lw->nreads, &lw->cap_reads, sizeof *e);
    if (!e)
        return NULL;
    *e = (read_entry){.call = call, .shape = *s, .loop = lw->walking ? lw->walk_loop : -1};
    size_t at = (size_t)shape_hash(call, s) & (lw->read_slots - 1);
    while (lw->read_index[at])
        at = (at + 1) & (lw->read_slots - 1);
    lw->read_index[at] = lw->nreads;
    return e;
}

/* ---- loops: which run with vectors -------------------------------------------------------- */

/* May statement s run with vectors along its innermost dimension: a case (no reduction
 * update) free of dependences along it, of unit step, not merged (its parts run as
 * loops of their own) and not a border strip? A border strip (a few rows or columns of
 * a split case) runs scalar: a tiny share of the points, while its vector, tail and
 * scalar bodies were most of local Laplacian's IR. */
static bool stmt_vector_ok(const pm_poly *poly, const pm_poly_stmt *s, const char **why)
{
    *why = !s                            ? "an unknown statement"
           : s->kind == PM_STMT_UPDATE   ? "a reduction update"
           : !s->vectorizable            ? "a dependence along the innermost dimension"
           : s->ndims < 1                ? "no dimension"
           : s->border_dims              ? "a border strip (scalar code)"
           : s->nparts > 0               ? "a merged statement (its parts)"
                                         : NULL;
    if (*why)
        return false;
    const pm_poly_storage *st = pm_poly_storage_of(poly, poly->stages[s->stage].func);
    if (!st || st->step[s->ndims - 1] != 1) {
        *why = "a stored dimension of step other than 1";
        return false;
    }
    return true;
}

static bool calls_func(const pm_expr *e, const pm_func *f)
{
    if (!e)
        return false;
    if (e->kind == PM_EXPR_CALL && e->callee == f)
        return true;
    for (int i = 0; e->kind == PM_EXPR_CALL && i < e->nargs; i++)
        if (calls_func(e->args[i], f))
            return true;
    return calls_func(e->a, f) || calls_func(e->b, f) || calls_func(e->c, f);
}

/* May reduction update s run with vectors along iterator id? The iterator is one
 * dimension k of the reduction domain along which no two updates share a cell (a
 * histogram's cell column), so the lanes write W different cells and a gather, the
 * operation and a scatter give each cell its updates in their order; and the update
 * reads nothing of its own reduction. */
static bool update_vector_ok(const pm_poly *poly, __isl_keep isl_ast_expr *call,
                             const pm_poly_stmt *s, __isl_keep isl_id *id)
{
    const pm_func *f = poly->stages[s->stage].func;
    int k = pm_lower_lane_dim(call, s, id);
    if (k < 0 || k >= 32 || !(s->distinct_cell_dims & (1u << k)) || s->border_dims ||
        s->nparts > 0 || calls_func(f->rvalue, f))
        return false;
    for (int d = 0; d < f->ndims; d++)
        if (calls_func(f->rindex[d], f))
            return false;
    return true;
}

/* Does the user node's statement qualify along iterator id? *why when not. */
static bool user_ok(const pm_lower *lw, __isl_keep isl_ast_node *user, const pm_ast_box *box,
                    __isl_keep isl_id *id, const char **why)
{
    isl_ast_expr *call = isl_ast_node_user_get_expr(user);
    const pm_poly_stmt *s = pm_lower_call_stmt(lw->poly, box, call);
    bool ok;
    if (s && s->kind == PM_STMT_UPDATE) {
        ok = update_vector_ok(lw->poly, call, s, id);
        *why = ok ? NULL : "an update whose cells may repeat along the loop";
    } else {
        ok = stmt_vector_ok(lw->poly, s, why);
        if (ok && !call_along(call, s, id)) {
            ok = false;
            *why = "the loop is not the statement's innermost dimension";
        }
    }
    isl_ast_expr_free(call);
    return ok;
}

/* A body of updates runs with vectors only when they are all instances of one update
 * statement (its unrolled channels): running each for all lanes before the next keeps
 * every cell's updates in order. Returns whether the body has updates; *ok false when
 * it mixes. */
static bool body_updates(const pm_lower *lw, isl_ast_node **users, int n, const pm_ast_box *box,
                         bool *ok)
{
    const pm_poly_stmt *first = NULL;
    bool any = false, all = true;
    for (int i = 0; i < n; i++) {
        isl_ast_expr *call = isl_ast_node_user_get_expr(users[i]);
        const pm_poly_stmt *s = pm_lower_call_stmt(lw->poly, box, call);
        isl_ast_expr_free(call);
        bool upd = s && s->kind == PM_STMT_UPDATE;
        any |= upd;
        all &= upd && (!first || first == s);
        if (!first)
            first = s;
    }
    *ok = !any || all;
    return any;
}

/* What a vector loop's statements do, for the choice of its shape. */
typedef struct body_traits {
    bool start_dependent; /* some lanes follow a pattern set by the start's parity     */
    bool exhausted;       /* the budget ran out: reads is a lower bound                 */
    bool data_index;      /* some call's argument reads a buffer (a data-dependent index) */
    bool not_halves;      /* a variable divided other than by 2 (x / 8, x % 3, x & m)    */
    int reads;            /* buffer reads (calls not inlined), through inlined callees  */
    int budget;           /* nodes left to visit; running out counts as start_dependent */
} body_traits;

/* Integer division, residue or shift (upsampling's x / 2, cases merged by residue): the
 * lanes follow the parity of the vector's start, invariant while every vector starts W
 * after the previous one, varying if the last one moved back to end at the last point. */
static bool is_call(const pm_expr *e, void *user)
{
    *(bool *)user |= e->kind == PM_EXPR_CALL;
    return !*(bool *)user;
}

static bool is_var(const pm_expr *e, void *user)
{
    *(bool *)user |= e->kind == PM_EXPR_VAR;
    return !*(bool *)user;
}

/* Whether start-dependent operation e of a variable has a period other than 2. */
static bool other_than_halves(const pm_expr *e)
{
    bool var = false;
    pm_expr_walk(e->a, is_var, &var);
    if (!var)
        return false;
    int64_t c = e->b && e->b->kind == PM_EXPR_INT ? e->b->ival : 0;
    if (e->op == PM_OP_SHR)
        return c != 1;
    return e->op == PM_OP_BAND || (c != 2 && c != -2);
}

static void walk_traits(const pm_plan *plan, const pm_expr *e, body_traits *t)
{
    if (!e || t->exhausted)
        return;
    if (--t->budget < 0) {
        t->start_dependent = t->exhausted = true;
        return;
    }
    if (e->kind == PM_EXPR_BINARY && pm_type_is_int(e->a->type) &&
        (e->op == PM_OP_DIV || e->op == PM_OP_MOD || e->op == PM_OP_CDIV ||
         e->op == PM_OP_CMOD || e->op == PM_OP_SHR || e->op == PM_OP_BAND)) {
        t->start_dependent = true;
        t->not_halves |= other_than_halves(e);
    }
    walk_traits(plan, e->a, t);
    walk_traits(plan, e->b, t);
    walk_traits(plan, e->c, t);
    for (int i = 0; i < e->nargs; i++)
        walk_traits(plan, e->args[i], t);
    if (e->kind != PM_EXPR_CALL)
        return;
    for (int i = 0; i < e->nargs && !t->data_index; i++)
        pm_expr_walk(e->args[i], is_call, &t->data_index);
    if (!pm_plan_call_inlined(plan, e)) {
        t->reads++;
        return;
    }
    for (int c = 0; c < e->callee->ncases; c++) {
        walk_traits(plan, e->callee->cases[c]->cond, t);
        walk_traits(plan, e->callee->cases[c]->value, t);
    }
}

static void stmt_traits(const pm_plan *plan, const pm_poly_stmt *s, body_traits *t)
{
    const pm_func *f = plan->poly->stages[s->stage].func;
    for (int r = 0; r < s->nresidual; r++)
        walk_traits(plan, s->residual[r], t);
    for (int c = s->case_index; c < s->case_index + s->ncases && c < f->ncases; c++) {
        walk_traits(plan, f->cases[c]->cond, t);
        walk_traits(plan, f->cases[c]->value, t);
    }
}

/* The bytes a streamed loop aligns its stores to, or 0 when it does not stream: its one
 * statement writes an output the storage phase marked streamed, a vector is 16 bytes or
 * more, and no lane pattern depends on the parity of a vector's start (the aligned
 * vectors start where the row's address says). */
static int stream_alignment(const pm_plan *plan, const pm_poly_stmt *s, int W, body_traits t,
                            int *elem)
{
    if (t.start_dependent || !s)
        return 0;
    const pm_func *f = plan->poly->stages[s->stage].func;
    const pm_storage_plan *st = pm_plan_storage_of(plan, f);
    if (!st || st->kind != PM_STORAGE_OUTPUT || !st->streamed)
        return 0;
    *elem = pm_type_size(f->type);
    int bytes = W * *elem;
    return bytes < 16 ? 0 : bytes > 64 ? 64 : bytes;
}

/* The shape of a qualifying vector loop at an unknown (or long) trip count, from its
 * statements' traits; s is its one statement, or NULL when it has several. */
static void choose_shape(const pm_lower *lw, pm_vector_plan *v, const pm_poly_stmt *s,
                         body_traits t)
{
    if (v->updates) {
        v->shape = PM_SHAPE_LOOP_THEN_SCALAR;
        v->reason = "reduction updates: each lane once";
    } else if ((v->stream_align = stream_alignment(lw->ast->plan, s, v->W, t, &v->stream_elem)) > 0) {
        v->shape = PM_SHAPE_STREAMED;
        v->reason = "an output written past the caches";
    } else if (t.start_dependent && (t.exhausted || !t.data_index || t.not_halves ||
                                     t.reads < pm_costs.one_body_min_reads)) {
        v->shape = PM_SHAPE_LOOP_AND_TAIL;
        v->reason = "lanes follow the start's parity";
    } else if (t.reads < pm_costs.one_body_min_reads) {
        v->shape = PM_SHAPE_LOOP_AND_TAIL;
        v->reason = "few reads: memory-bound";
    } else if (t.start_dependent) {
        /* The last vector, moved back to end at the last point, may start at the other
         * parity: its lanes' pattern is computed from its own start (correct, as the
         * tail's is), no longer invariant in the loop. That cost interpolate's
         * up-sampling loops (few reads) 3-17%, pyramid blending's (18-37 reads,
         * stencils) about 1% and bilateral grid's interpolation (x / 8) 2.5%. A body
         * of many reads at data-dependent indices whose pattern is a half's (level
         * rows, gathers, y / 2: local Laplacian's output pyramid) ran as fast, and its
         * tail copies were 8% of local Laplacian's optimized IR (30.7k -> 28.3k
         * instructions; machine code ~650 -> ~570 ms summed over the parts). */
        v->shape = PM_SHAPE_ONE_BODY;
        v->reason = "enough reads for one body, lanes set by each vector's start";
    } else {
        v->shape = PM_SHAPE_ONE_BODY;
        v->reason = "enough reads for one body";
    }
}

pm_loop_shape pm_lower_shape_at(const pm_vector_plan *v, long long trip, int *w)
{
    *w = 0;
    if (!v->vector)
        return PM_SHAPE_SCALAR;
    if (trip < 0)
        return v->shape;
    if (trip < pm_costs.short_loop_min || (v->updates && trip < v->W))
        return PM_SHAPE_SCALAR;
    if (!v->updates && trip < v->W) {
        int lanes = 4;
        while (2 * lanes <= trip)
            lanes *= 2;
        *w = lanes;
        return PM_SHAPE_SHORT;
    }
    return v->shape;
}

/* The plan of a for node whose body is user nodes only. */
static void decide_vector_loop(const pm_lower *lw, __isl_keep isl_ast_node *node,
                               const pm_ast_box *box, pm_loop_plan *lp)
{
    int W = lw->target.vector_width;
    pm_for_node f = pm_lower_for_node(node);
    isl_ast_node *users[MAX_USERS] = {0};
    int n = 0;
    const char *why = NULL;
    if (W <= 1 || W > 64)
        why = "no vectors on this target";
    else if (!pm_lower_unit_inc(node))
        why = "a step other than 1";
    else if (!pm_lower_upper_bound_cond(f.cond, f.id))
        why = "a bound that moves with the loop";
    else if ((n = pm_lower_body_users(f.body, users, MAX_USERS)) == 0)
        why = "a body that is not only statements";
    /* a constant trip too short for vectors, or for an update's full vector, makes the
     * loop scalar where it is emitted whole (pm_lower_shape_at), not in a thread's share */
    lp->trip = n > 0 ? constant_trip(node, f.cond) : -1;
    for (int i = 0; !why && i < n; i++)
        user_ok(lw, users[i], box, f.id, &why);
    bool mixed_ok = true;
    bool updates = !why && body_updates(lw, users, n, box, &mixed_ok);
    if (!why && !mixed_ok)
        why = "updates mixed with other statements";
    if (why) {
        lp->kind = PM_LOOP_SCALAR;
        lp->reason = why;
    } else {
        body_traits t = {.budget = 20000};
        const pm_poly_stmt *one = NULL;
        for (int k = 0; k < n; k++) {
            isl_ast_expr *call = isl_ast_node_user_get_expr(users[k]);
            const pm_poly_stmt *s = pm_lower_call_stmt(lw->poly, box, call);
            isl_ast_expr_free(call);
            stmt_traits(lw->ast->plan, s, &t);
            if (n == 1)
                one = s;
        }
        lp->kind = PM_LOOP_VECTOR;
        lp->v = (pm_vector_plan){.vector = true, .W = W, .updates = updates};
        choose_shape(lw, &lp->v, one, t);
    }
    for (int k = 0; k < n; k++)
        isl_ast_node_free(users[k]);
    pm_lower_for_node_clear(&f);
}

/* Do two scalar parts of a merged statement compute the same thing at every point: the
 * pieces of one case (or of one run of merged cases) whose reads have the same proofs?
 * Their points can then run through one copy of the body. */
static bool same_scalar_body(const pm_poly_stmt *a, const pm_poly_stmt *b)
{
    if (a->kind != PM_STMT_CASE || b->kind != PM_STMT_CASE || a->stage != b->stage ||
        a->case_index != b->case_index || a->ncases != b->ncases ||
        a->branch_cases != b->branch_cases || a->nresidual != b->nresidual ||
        a->naccesses != b->naccesses || a->nparts > 0 || b->nparts > 0)
        return false;
    for (int r = 0; r < a->nresidual; r++)
        if (a->residual[r] != b->residual[r])
            return false;
    for (int i = 0; i < a->naccesses; i++)
        if (a->accesses[i].call != b->accesses[i].call ||
            a->accesses[i].in_bounds != b->accesses[i].in_bounds)
            return false;
    return true;
}

/* Each scalar part's body_part: the first scalar part before it with the same body.
 * Local Laplacian's output pyramid levels have a border case in four pieces, each a
 * scalar copy of the level interpolation (about 100 instructions after LLVM's passes):
 * one copy instead of four cut the module by 7% and its compile with it. */
static void share_scalar_bodies(const pm_poly_stmt *s, pm_loop_plan *lp)
{
    for (int p = 0; p < lp->nparts; p++) {
        pm_vector_plan *v = &lp->parts[p];
        v->body_part = p;
        for (int q = 0; q < p && !v->vector; q++) {
            if (lp->parts[q].vector || lp->parts[q].body_part != q ||
                !same_scalar_body(&s->parts[q], &s->parts[p]))
                continue;
            int members = 0;
            for (int r = q; r < p; r++)
                members += !lp->parts[r].vector && lp->parts[r].body_part == q;
            if (members < PM_LOWER_MAX_SHARED_PARTS) {
                v->body_part = q;
                break;
            }
        }
    }
}

/* A merged statement's row: each part a vector loop where it qualifies. */
static bool decide_parts_loop(const pm_lower *lw, __isl_keep isl_ast_node *node,
                              const pm_ast_box *box, pm_loop_plan *lp)
{
    if (!pm_lower_unit_inc(node))
        return false;
    pm_for_node f = pm_lower_for_node(node);
    isl_ast_node *user = NULL;
    bool ok = pm_lower_upper_bound_cond(f.cond, f.id) &&
              pm_lower_body_users(f.body, &user, 1) == 1;
    isl_ast_expr *call = ok ? isl_ast_node_user_get_expr(user) : NULL;
    const pm_poly_stmt *s = call ? pm_lower_call_stmt(lw->poly, box, call) : NULL;
    ok = s && s->nparts > 0 && call_along(call, s, f.id);
    if (ok) {
        lp->kind = PM_LOOP_PARTS;
        lp->trip = -1;
        lp->reason = "a merged statement: a loop per part";
        lp->nparts = s->nparts;
        lp->parts = calloc((size_t)s->nparts, sizeof *lp->parts);
        int W = lw->target.vector_width;
        for (int p = 0; lp->parts && p < s->nparts; p++) {
            pm_vector_plan *v = &lp->parts[p];
            const char *why = NULL;
            if (W <= 1 || W > 64)
                why = "no vectors on this target";
            else
                stmt_vector_ok(lw->poly, &s->parts[p], &why);
            if (why) {
                *v = (pm_vector_plan){.reason = why};
                continue;
            }
            body_traits t = {.budget = 20000};
            stmt_traits(lw->ast->plan, &s->parts[p], &t);
            *v = (pm_vector_plan){.vector = true, .W = W};
            choose_shape(lw, v, &s->parts[p], t);
        }
        if (lp->parts)
            share_scalar_bodies(s, lp);
    }
    isl_ast_expr_free(call);
    isl_ast_node_free(user);
    pm_lower_for_node_clear(&f);
    return ok;
}

/* ---- privatized blocks ---------------------------------------------------------------- */

void pm_lower_private_shape_clear(pm_private_shape *sh)
{
    for (int w = 0; w < sh->nwindow; w++) {
        isl_id_free(sh->window[w]);
        isl_ast_expr_free(sh->winit[w]);
    }
    for (int k = 0; k < sh->n; k++)
        isl_ast_node_free(sh->users[k]);
    isl_ast_node_free(sh->lanes);
    isl_id_free(sh->id);
    isl_ast_expr_free(sh->init);
    isl_ast_expr_free(sh->cond);
    memset(sh, 0, sizeof *sh);
}

/* The window's loops, outermost first, down to the first loop whose body is no loop. */
static isl_ast_node *window_loops(__isl_keep isl_ast_node *node, pm_private_shape *sh)
{
    isl_ast_node *cur = isl_ast_node_copy(node);
    while (isl_ast_node_get_type(cur) == isl_ast_node_for) {
        isl_ast_node *body = isl_ast_node_for_get_body(cur);
        if (isl_ast_node_get_type(body) != isl_ast_node_for || sh->nwindow == 2 * PM_MAX_DIMS) {
            isl_ast_node_free(body);
            break;
        }
        isl_ast_expr *it = isl_ast_node_for_get_iterator(cur);
        sh->window[sh->nwindow] = isl_ast_expr_id_get_id(it);
        sh->winit[sh->nwindow++] = isl_ast_node_for_get_init(cur);
        isl_ast_expr_free(it);
        isl_ast_node_free(cur);
        cur = body;
    }
    return cur;
}

bool pm_lower_private_shape(const pm_lower *lw, const pm_ast_box *box,
                            __isl_keep isl_ast_node *node, pm_private_shape *sh)
{
    int W = lw->target.vector_width;
    memset(sh, 0, sizeof *sh);
    sh->lanes = window_loops(node, sh);
    isl_ast_node *cur = sh->lanes;
    if (isl_ast_node_get_type(cur) != isl_ast_node_for || !pm_lower_unit_inc(cur))
        return false;
    pm_for_node f = pm_lower_for_node(cur);
    sh->id = isl_id_copy(f.id);
    sh->init = isl_ast_node_for_get_init(cur);
    sh->cond = isl_ast_expr_copy(f.cond);
    bool ok = pm_lower_upper_bound_cond(f.cond, f.id);
    for (int w = 0; ok && w < sh->nwindow; w++)
        ok = !mentions(sh->init, sh->window[w]) && !mentions(sh->cond, sh->window[w]);
    sh->n = ok ? pm_lower_body_users(f.body, sh->users, PM_PRIVATE_MAX_USERS) : 0;
    ok = ok && sh->n > 0;
    for (int k = 0; ok && k < sh->n; k++) {
        isl_ast_expr *call = isl_ast_node_user_get_expr(sh->users[k]);
        const pm_poly_stmt *s = pm_lower_call_stmt(lw->poly, box, call);
        ok = s && (!sh->s || s == sh->s) && s->kind == PM_STMT_UPDATE && s->bin_extent > 0 &&
             s->bin_extent <= W && update_vector_ok(lw->poly, call, s, f.id);
        sh->s = s;
        isl_ast_expr_free(call);
    }
    const pm_poly_storage *st =
        ok ? pm_poly_storage_of(lw->poly, lw->poly->stages[sh->s->stage].func) : NULL;
    ok = ok && st;
    for (int d = 0; ok && d < st->ndims; d++)
        ok = st->step[d] == 1;
    pm_lower_for_node_clear(&f);
    return ok;
}

/* A privatized block's plan: its update instances' accumulators per pass fit the vector
 * registers (AVX-512's 32, else 16) beside the bins' compare constants and a few values
 * of the point; with more, the window runs once per pass. */
static bool decide_private(const pm_lower *lw, __isl_keep isl_ast_node *node,
                           const pm_ast_box *box, pm_loop_plan *lp)
{
    int W = lw->target.vector_width;
    pm_private_shape sh;
    bool ok = W > 1 && W <= 64 && pm_lower_private_shape(lw, box, node, &sh);
    if (ok) {
        const pm_func *f = lw->poly->stages[sh.s->stage].func;
        int E = sh.s->bin_extent;
        int reg_bytes = lw->target.avx512f ? 64 : 32;
        int budget = (lw->target.avx512f ? 32 : 16) - E - pm_costs.private_spare_registers;
        int per_acc = (W * pm_type_size(f->type) + reg_bytes - 1) / reg_bytes;
        int per_pass = budget / (E * per_acc);
        lp->kind = PM_LOOP_PRIVATE;
        lp->per_pass = per_pass < 1 ? 1 : per_pass;
        /* a lane's bins contiguous and at most 16 of 32 bits: a transpose and a masked
         * store per row instead of E scatters (bilateral grid's histogram spent a quarter
         * of its samples in the 30 scatters after each block's window) */
        const pm_poly_storage *st = pm_poly_storage_of(lw->poly, f);
        int bin = sh.s->bin_dim;
        lp->rows_of_bins = W == 16 && E <= 16 && st && bin == st->ndims - 1 &&
                           pm_type_size(st->type) == 4 && st->step[bin] == 1;
        lp->v.W = W;
        lp->trip = sh.n; /* the update instances */
        lp->reason = "rows of bins in registers over the window";
    }
    if (W > 1 && W <= 64)
        pm_lower_private_shape_clear(&sh);
    return ok;
}

/* ---- reads: how W lanes read a buffer ------------------------------------------------------ */

#define NONLINEAR PM_LANE_NONLINEAR

int pm_lower_lane_coef(const pm_lane_shape *pt, const pm_expr *e)
{
    switch (e->kind) {
    case PM_EXPR_INT: case PM_EXPR_FLOAT: case PM_EXPR_PARAM:
        return 0;
    case PM_EXPR_VAR:
        for (int d = 0; d < pt->stmt->ndims; d++)
            if (pt->stmt->vars[d]->id == e->id)
                return pt->lanes[d] && pt->W > 1 ? NONLINEAR : pt->lane_step[d];
        return NONLINEAR;
    case PM_EXPR_CAST: {
        int c = pm_lower_lane_coef(pt, e->a);
        if (c == 0)
            return 0;
        /* integer widening keeps +k per lane */
        if (pm_type_is_int(e->type) && pm_type_is_int(e->a->type) &&
            pm_type_bits(e->type) >= pm_type_bits(e->a->type) && pm_type_bits(e->type) >= 32)
            return c;
        return NONLINEAR;
    }
    case PM_EXPR_UNARY: {
        int c = pm_lower_lane_coef(pt, e->a);
        if (c == 0)
            return 0;
        return e->op == PM_OP_NEG && c != NONLINEAR ? -c : NONLINEAR;
    }
    case PM_EXPR_BINARY: {
        int a = pm_lower_lane_coef(pt, e->a), b = pm_lower_lane_coef(pt, e->b);
        if (a == NONLINEAR || b == NONLINEAR)
            return NONLINEAR;
        if (a == 0 && b == 0)
            return 0;
        if (!pm_type_is_int(e->type))
            return NONLINEAR;
        if (e->op == PM_OP_ADD)
            return a + b;
        if (e->op == PM_OP_SUB)
            return a - b;
        if (e->op == PM_OP_MUL && a == 0 && e->a->kind == PM_EXPR_INT && e->a->ival > -64 &&
            e->a->ival < 64)
            return (int)e->a->ival * b;
        if (e->op == PM_OP_MUL && b == 0 && e->b->kind == PM_EXPR_INT && e->b->ival > -64 &&
            e->b->ival < 64)
            return (int)e->b->ival * a;
        return NONLINEAR;
    }
    case PM_EXPR_CALL: case PM_EXPR_SELECT: case PM_EXPR_MATH: {
        const pm_expr *kids[3] = {e->a, e->b, e->c};
        for (int i = 0; i < 3; i++)
            if (kids[i] && pm_lower_lane_coef(pt, kids[i]) != 0)
                return NONLINEAR;
        for (int i = 0; e->kind == PM_EXPR_CALL && i < e->nargs; i++)
            if (pm_lower_lane_coef(pt, e->args[i]) != 0)
                return NONLINEAR;
        return 0;
    }
    }
    return NONLINEAR;
}

bool pm_lower_read_proven(const pm_plan *plan, const pm_lane_shape *pt, const pm_expr *call)
{
    if (pt->where == PM_POINT_IN_BOX)
        return pm_plan_call_inside(plan, call);
    const pm_poly_access *acc = pm_poly_access_of(pt->stmt, call);
    return pt->where == PM_POINT_IN_CASE && acc && acc->in_bounds;
}

const pm_expr *pm_lower_half_of_lane(const pm_lane_shape *pt, const pm_expr *e)
{
    if (e->kind == PM_EXPR_BINARY && (e->op == PM_OP_ADD || e->op == PM_OP_SUB) &&
        e->b->kind == PM_EXPR_INT)
        e = e->a;
    if (e->kind == PM_EXPR_BINARY && e->op == PM_OP_DIV && pm_type_is_int(e->type) &&
        e->b->kind == PM_EXPR_INT && e->b->ival == 2 && pm_lower_lane_coef(pt, e->a) == 1)
        return e->a;
    return NULL;
}

/* The level dimension of a tile scratchpad read at one data-dependent outer index whose
 * extent is at most costs.level_max, or -1. */
static int level_shaped(const pm_lower *lw, const pm_poly_storage *st, const pm_lane_shape *pt,
                        const pm_expr *call)
{
    int n = call->nargs, level = -1;
    const pm_storage_plan *place = pm_plan_storage_of(lw->ast->plan, st->func);
    if (place->kind != PM_STORAGE_TILE || place->exported) /* exported: read outside too */
        return -1;
    for (int d = 0; d < n - 1; d++) {
        int c = pm_lower_lane_coef(pt, call->args[d]);
        if (c == 0)
            continue;
        /* data-dependent: read from data, or an inlined function's variable carried per
         * lane (lPyramid_L0's k) */
        if (level >= 0 || c != NONLINEAR || st->step[d] != 1 || place->tile_ext[d] < 1 ||
            place->tile_ext[d] > pm_costs.level_max)
            return -1;
        level = d;
    }
    return level;
}

bool pm_lower_two_table_permute(const pm_target *t, int W, pm_type type)
{
    int bytes = pm_type_size(type);
    return t->avx512f && ((bytes == 4 && W == 16) || (bytes == 4 && W == 8 && t->avx512vl) ||
                          (bytes == 8 && W == 8));
}

bool pm_lower_table_permute(const pm_target *t, int bytes)
{
    return (bytes == 1 && t->avx512vbmi) || (bytes == 2 && t->avx512bw) ||
           (bytes == 4 && t->avx512f);
}

static bool reads_data(const pm_expr *e)
{
    if (!e)
        return false;
    if (e->kind == PM_EXPR_CALL)
        return true;
    return reads_data(e->a) || reads_data(e->b) || reads_data(e->c);
}

const pm_expr *pm_lower_strip_constant(const pm_expr *e)
{
    if (e->kind == PM_EXPR_BINARY && (e->op == PM_OP_ADD || e->op == PM_OP_SUB) &&
        e->b->kind == PM_EXPR_INT)
        return e->a;
    return e;
}

/* An outer index whose lanes take at most two values when the vector starts suitably
 * aligned: uniform, or (e + k*lane) / K (+ a constant) with k*W <= 2K. */
static bool two_rows_at_most(const pm_lane_shape *pt, const pm_expr *e)
{
    if (reads_data(e))
        return false;
    e = pm_lower_strip_constant(e);
    if (pm_lower_lane_coef(pt, e) == 0)
        return true;
    if (e->kind != PM_EXPR_BINARY || e->op != PM_OP_DIV || !pm_type_is_int(e->type) ||
        e->b->kind != PM_EXPR_INT || e->b->ival <= 0)
        return false;
    int k = pm_lower_lane_coef(pt, e->a);
    return k != NONLINEAR && (int64_t)(k < 0 ? -k : k) * pt->W <= 2 * e->b->ival;
}

/* A gathered read shaped for the two-row table read: its callee's rows are short (the
 * innermost extent a constant of at most W elements), its innermost index reads data,
 * and its outer indices take at most two values across the vector. */
static bool table_shaped(const pm_lower *lw, const pm_poly_storage *st, const pm_lane_shape *pt,
                         const pm_expr *call)
{
    int n = call->nargs;
    if (n < 1 || !pm_lower_two_table_permute(&lw->target, pt->W, st->type) ||
        st->step[n - 1] != 1 || !reads_data(call->args[n - 1]))
        return false;
    for (int d = 0; d < n - 1; d++)
        if (!two_rows_at_most(pt, call->args[d]))
            return false;
    const pm_storage_plan *place = pm_plan_storage_of(lw->ast->plan, st->func);
    if (place->kind == PM_STORAGE_TILE && !place->exported)
        return place->tile_ext[n - 1] <= pt->W;
    isl_pw_aff *extent = isl_pw_aff_sub(isl_pw_aff_copy(st->ub[n - 1]), isl_pw_aff_copy(st->lb[n - 1]));
    bool small = false;
    if (isl_pw_aff_is_cst(extent) == isl_bool_true && isl_pw_aff_n_piece(extent) == 1) {
        isl_aff *a = isl_pw_aff_as_aff(isl_pw_aff_copy(extent));
        isl_val *v = a ? isl_aff_get_constant_val(a) : NULL;
        small = v && isl_val_is_int(v) && isl_val_get_num_si(v) >= 0 &&
                isl_val_get_num_si(v) < pt->W;
        isl_val_free(v);
        isl_aff_free(a);
    }
    isl_pw_aff_free(extent);
    return small;
}

/* A data-dependent read of a flat table at 16 lanes whose entries flat_lo .. flat_hi
 * fill at most costs.small_table_permutes permutes of 128 bytes. */
static bool small_table_shaped(const pm_lower *lw, const pm_poly_storage *st,
                               const pm_lane_shape *pt, const pm_expr *call, pm_read_plan *r)
{
    int bytes = pm_type_size(st->type);
    if (!st->flat || pt->W != 16 || call->nargs != 1 ||
        !pm_lower_table_permute(&lw->target, bytes) ||
        (pm_plan_storage_of(lw->ast->plan, st->func)->kind != PM_STORAGE_SCRATCH &&
         pm_plan_storage_of(lw->ast->plan, st->func)->kind != PM_STORAGE_OUTPUT) ||
        !pm_type_is_int(call->args[0]->type) || pm_type_bits(call->args[0]->type) > 32)
        return false;
    int64_t per = 128 / bytes, n = st->flat_hi - st->flat_lo + 1;
    int64_t p = (n + per - 1) / per;
    /* the domain is constant (frontend/flat.h) */
    int64_t dom_lo = st->func->intervals[0]->lb->ival, dom_hi = st->func->intervals[0]->ub->ival;
    int64_t first = st->flat_lo;
    if (first + p * per - 1 > dom_hi)
        first = dom_hi - p * per + 1;
    if (p > pm_costs.small_table_permutes || first < dom_lo)
        return false;
    r->table_start = first;
    r->permutes = (int)p;
    return true;
}

/* AVX-512's gathers with 32-bit offsets for this element size and width. */
static bool gathers32(const pm_target *t, int W, pm_type type)
{
    int bytes = pm_type_size(type);
    return t->avx512f && ((bytes == 4 && W == 16) || (bytes == 4 && W == 8 && t->avx512vl) ||
                          (bytes == 8 && W == 8));
}

/* A read no row load serves: a small table's permutes, two short rows' permute, or a
 * gather. */
static void decide_gather(const pm_lower *lw, const pm_poly_storage *st, const pm_lane_shape *pt,
                          const pm_expr *call, pm_read_plan *r, const char *why)
{
    r->gather32 = gathers32(&lw->target, pt->W, st->type);
    if (small_table_shaped(lw, st, pt, call, r)) {
        r->kind = PM_READ_SMALL_TABLE;
        r->reason = "a small flat table: permutes by lane";
    } else if (call->nargs > 0 && table_shaped(lw, st, pt, call)) {
        r->kind = PM_READ_TABLE;
        r->reason = "short rows at a data-dependent index: two rows permuted by lane";
    } else {
        r->kind = PM_READ_GATHER;
        r->reason = why;
    }
}

static pm_read_plan decide_read(const pm_lower *lw, const pm_lane_shape *pt, const pm_expr *call)
{
    const pm_poly *poly = lw->poly;
    pm_read_plan r = {.kind = PM_READ_SCALAR, .level_dim = -1};
    r.proven = pm_lower_read_proven(lw->ast->plan, pt, call);
    if (pt->W <= 1) {
        r.reason = "one lane";
        return r;
    }
    const pm_poly_storage *st = pm_poly_storage_of(poly, call->callee);
    int n = call->nargs, inner = 0;
    bool uniform = true, outer_uniform = true;
    for (int d = 0; d < n; d++) {
        int c = pm_lower_lane_coef(pt, call->args[d]);
        uniform &= c == 0;
        outer_uniform &= d == n - 1 || c == 0;
        if (d == n - 1)
            inner = c;
    }
    if (uniform) {
        r.kind = PM_READ_BROADCAST;
        r.reason = "the same element in every lane";
        return r;
    }
    if (n > 0 && st->step[n - 1] == 1) {
        if (inner == 1)
            r.kind = PM_READ_CONTIGUOUS, r.reason = "+1 per lane";
        else if (inner >= 2 && inner <= pm_costs.row_max_stride && inner <= pt->W)
            r.kind = PM_READ_STRIDED, r.stride = inner, r.reason = "+k per lane";
        else if (pm_lower_half_of_lane(pt, call->args[n - 1]))
            r.kind = PM_READ_HALF, r.reason = "(e + lane) / 2: up-sampling";
    }
    bool row = r.kind != PM_READ_SCALAR;
    /* level reads where proven only: guarded, each one's gather beside it made local
     * Laplacian's module 23% larger and its compile 1.2x the unfused one's */
    r.level_dim = row && !outer_uniform && r.proven ? level_shaped(lw, st, pt, call) : -1;
    if (!row || (!outer_uniform && r.level_dim < 0)) {
        r.kind = PM_READ_SCALAR;
        decide_gather(lw, st, pt, call, &r,
                      !row ? "the innermost index moves irregularly"
                           : "an outer index moves across the lanes");
        return r;
    }
    if (r.level_dim >= 0) {
        r.row = r.kind;
        r.kind = PM_READ_LEVEL_ROWS;
        r.reason = "a data-dependent level of a scratchpad: a row per level";
    }
    /* unproven: the row where every element is inside, else a clamped gather. Gathering
     * always, pyramid blending's blend spent 22% of its samples waiting on two gathers
     * per vector; the guarded row ran it in 0.93x the time at 2 threads, 0.94x at 1. */
    r.guarded = !r.proven && r.level_dim < 0;
    if (r.guarded) {
        pm_read_plan side = r;
        decide_gather(lw, st, pt, call, &side, "the row's other side");
        r.fallback = side.kind;
        r.table_start = side.table_start;
        r.permutes = side.permutes;
        r.gather32 = side.gather32;
    }
    return r;
}

const pm_read_plan *pm_lower_read(pm_lower *lw, const pm_lane_shape *shape, const pm_expr *call)
{
    read_entry *e = find_read(lw, call, shape);
    if (e)
        return &e->plan;
    e = add_read(lw, call, shape);
    if (!e) {
        lw->failed = true;
        return NULL;
    }
    e->plan = decide_read(lw, shape, call);
    e->plan.late = !lw->walking;
    return &e->plan;
}

/* ---- the walk ------------------------------------------------------------------------------ */

static void walk_expr(pm_lower *lw, const pm_lane_shape *pt, const pm_expr *e, int depth);

pm_lane_shape pm_lower_inlined_shape(const pm_plan *plan, const pm_lane_shape *pt,
                                     const pm_expr *call, const pm_poly_stmt *callee)
{
    const pm_func *f = call->callee;
    pm_lane_shape q = {.stmt = callee, .W = pt->W};
    q.where = !pm_lower_read_proven(plan, pt, call) ? PM_POINT_ANYWHERE
              : f->ncases > 1                        ? PM_POINT_IN_BOX
                                                     : PM_POINT_IN_CASE;
    for (int d = 0; d < call->nargs && d < PM_MAX_DIMS; d++) {
        int coef = pm_lower_lane_coef(pt, call->args[d]);
        if (pt->W > 1 && coef != 0 && coef != 1 && coef != 2)
            q.lanes[d] = true;
        else
            q.lane_step[d] = pt->W > 1 ? coef : 0;
    }
    return q;
}

/* An inlined call's reads, at the lanes of its point. */
static void walk_inlined(pm_lower *lw, const pm_lane_shape *pt, const pm_expr *call, int depth)
{
    const pm_poly *poly = lw->poly;
    const pm_func *f = call->callee;
    const pm_poly_stmt *s = NULL;
    for (int i = 0; i < poly->nstages && !s; i++)
        if (poly->stages[i].func == f)
            s = &poly->stmts[poly->stages[i].first_stmt];
    if (!s || f->kind != PM_FUNC_FUNCTION || f->ncases < 1 || call->nargs != s->ndims)
        return;
    pm_lane_shape q = pm_lower_inlined_shape(lw->ast->plan, pt, call, s);
    for (int c = 0; c < f->ncases; c++) {
        walk_expr(lw, &q, f->cases[c]->value, depth + 1);
        if (c < f->ncases - 1)
            walk_expr(lw, &q, f->cases[c]->cond, depth + 1);
    }
}

static void walk_expr(pm_lower *lw, const pm_lane_shape *pt, const pm_expr *e, int depth)
{
    if (!e || depth > 64 || lw->failed)
        return;
    walk_expr(lw, pt, e->a, depth);
    walk_expr(lw, pt, e->b, depth);
    walk_expr(lw, pt, e->c, depth);
    for (int i = 0; i < e->nargs; i++)
        walk_expr(lw, pt, e->args[i], depth);
    if (e->kind != PM_EXPR_CALL || !e->callee)
        return;
    if (pm_plan_call_inlined(lw->ast->plan, e))
        walk_inlined(lw, pt, e, depth);
    else if (pm_poly_storage_of(lw->poly, e->callee))
        pm_lower_read(lw, pt, e);
}

/* Every read of statement s at W lanes along its dimension k. */
static void walk_stmt(pm_lower *lw, const pm_poly_stmt *s, int W, int k)
{
    if (!s || k < 0 || k >= s->ndims)
        return;
    pm_lane_shape pt = {.stmt = s, .W = W, .where = PM_POINT_IN_CASE};
    pt.lane_step[k] = 1;
    const pm_func *f = lw->poly->stages[s->stage].func;
    for (int r = 0; r < s->nresidual; r++)
        walk_expr(lw, &pt, s->residual[r], 0);
    if (s->kind == PM_STMT_UPDATE) {
        walk_expr(lw, &pt, f->rvalue, 0);
        for (int d = 0; d < f->ndims; d++)
            walk_expr(lw, &pt, f->rindex[d], 0);
        return;
    }
    for (int c = s->case_index; c < s->case_index + s->ncases && c < f->ncases; c++) {
        walk_expr(lw, &pt, f->cases[c]->value, 0);
        if (!s->branch_cases)
            walk_expr(lw, &pt, f->cases[c]->cond, 0);
    }
}

/* The reads of a vector loop's statements at its widths (W, and a short loop's w). */
static void walk_loop_reads(pm_lower *lw, __isl_keep isl_ast_node *node, const pm_loop_plan *lp,
                            const pm_ast_box *box)
{
    pm_for_node f = pm_lower_for_node(node);
    isl_ast_node *users[MAX_USERS];
    int n = pm_lower_body_users(f.body, users, MAX_USERS);
    int widths[8], nw = 0, w = 0;
    pm_loop_shape at = pm_lower_shape_at(&lp->v, lp->trip, &w);
    if (at != PM_SHAPE_SCALAR)
        widths[nw++] = at == PM_SHAPE_SHORT ? w : lp->v.W;
    /* a box template's bounds may turn out constant when emitted: its short widths too */
    for (int s = 4; box && lp->trip < 0 && !lp->v.updates && s < lp->v.W && nw < 8; s *= 2)
        widths[nw++] = s;
    for (int k = 0; k < n; k++) {
        isl_ast_expr *call = isl_ast_node_user_get_expr(users[k]);
        const pm_poly_stmt *s = pm_lower_call_stmt(lw->poly, box, call);
        int dim = s && s->kind == PM_STMT_UPDATE ? pm_lower_lane_dim(call, s, f.id) : -1;
        if (s && dim < 0)
            dim = s->ndims - 1;
        for (int i = 0; i < nw; i++)
            walk_stmt(lw, s, widths[i], dim);
        isl_ast_expr_free(call);
        isl_ast_node_free(users[k]);
    }
    pm_lower_for_node_clear(&f);
}

static void walk_parts_reads(pm_lower *lw, __isl_keep isl_ast_node *node, const pm_loop_plan *lp,
                             const pm_ast_box *box)
{
    pm_for_node f = pm_lower_for_node(node);
    isl_ast_node *user = NULL;
    if (pm_lower_body_users(f.body, &user, 1) == 1) {
        isl_ast_expr *call = isl_ast_node_user_get_expr(user);
        const pm_poly_stmt *s = pm_lower_call_stmt(lw->poly, box, call);
        for (int p = 0; s && p < lp->nparts && p < s->nparts; p++)
            if (lp->parts[p].vector)
                walk_stmt(lw, &s->parts[p], lp->parts[p].W, s->parts[p].ndims - 1);
        isl_ast_expr_free(call);
        isl_ast_node_free(user);
    }
    pm_lower_for_node_clear(&f);
}

static void walk_private_reads(pm_lower *lw, __isl_keep isl_ast_node *node, const pm_ast_box *box)
{
    pm_private_shape sh;
    if (pm_lower_private_shape(lw, box, node, &sh))
        for (int k = 0; k < sh.n; k++) {
            isl_ast_expr *call = isl_ast_node_user_get_expr(sh.users[k]);
            const pm_poly_stmt *s = pm_lower_call_stmt(lw->poly, box, call);
            walk_stmt(lw, s, lw->target.vector_width, pm_lower_lane_dim(call, s, sh.id));
            isl_ast_expr_free(call);
        }
    pm_lower_private_shape_clear(&sh);
}

static pm_loop_plan decide_loop(const pm_lower *lw, __isl_keep isl_ast_node *node,
                                const pm_ast_box *box)
{
    pm_loop_plan lp = {.kind = PM_LOOP_SCALAR, .trip = -1,
                       .guided_share = pm_costs.guided_share};
    if (!decide_parts_loop(lw, node, box, &lp))
        decide_vector_loop(lw, node, box, &lp);
    return lp;
}

/* A privatized block's plan (kind PM_LOOP_PRIVATE), or a scalar one when the block
 * does not qualify. */
static pm_loop_plan decide_block(const pm_lower *lw, __isl_keep isl_ast_node *node,
                                 const pm_ast_box *box)
{
    pm_loop_plan lp = {.kind = PM_LOOP_SCALAR, .trip = -1,
                       .guided_share = pm_costs.guided_share,
                       .reason = "not a block of one update's lanes over a window"};
    decide_private(lw, node, box, &lp);
    return lp;
}

static const pm_loop_plan *plan_of(pm_lower *lw, __isl_keep isl_ast_node *node,
                                   const pm_ast_box *box, bool block)
{
    loop_entry *e = find_loop(lw, node, box, block);
    if (e)
        return &e->plan;
    pm_loop_plan lp = block ? decide_block(lw, node, box) : decide_loop(lw, node, box);
    lp.late = !lw->walking;
    e = add_loop(lw, node, box, block);
    if (!e) {
        free(lp.parts);
        lw->failed = true;
        return NULL;
    }
    e->plan = lp;
    return &e->plan;
}

const pm_loop_plan *pm_lower_loop(pm_lower *lw, __isl_keep isl_ast_node *node,
                                  const pm_ast_box *box)
{
    return plan_of(lw, node, box, false);
}

const pm_loop_plan *pm_lower_block(pm_lower *lw, __isl_keep isl_ast_node *node,
                                   const pm_ast_box *box)
{
    return plan_of(lw, node, box, true);
}

static void walk_node(pm_lower *lw, __isl_keep isl_ast_node *node, bool private_mark);

static int entry_index(const pm_lower *lw, const isl_ast_node *node, const pm_ast_box *box,
                       bool block)
{
    const loop_entry *e = find_loop(lw, node, box, block);
    return e ? (int)(e - lw->loops) : -1;
}

static void walk_children(pm_lower *lw, __isl_keep isl_ast_node *node)
{
    isl_ast_node_list *list = isl_ast_node_block_get_children(node);
    int n = isl_ast_node_list_n_ast_node(list);
    for (int i = 0; i < n; i++) {
        isl_ast_node *c = isl_ast_node_list_get_ast_node(list, i);
        walk_node(lw, c, false);
        isl_ast_node_free(c);
    }
    isl_ast_node_list_free(list);
}

/* A for node: its plan (and a privatized block's, below the mark), the reads of its
 * vector code, then what lies below. */
static void walk_for(pm_lower *lw, __isl_keep isl_ast_node *node, bool private_mark)
{
    const pm_ast_box *box = lw->walk_box;
    if (private_mark) {
        const pm_loop_plan *bp = plan_of(lw, node, box, true);
        lw->walk_loop = entry_index(lw, node, box, true);
        if (bp && bp->kind == PM_LOOP_PRIVATE)
            walk_private_reads(lw, node, box);
    }
    if (isl_ast_node_for_is_degenerate(node) != isl_bool_true && !find_loop(lw, node, box, false)) {
        const pm_loop_plan *p = plan_of(lw, node, box, false);
        lw->walk_loop = entry_index(lw, node, box, false);
        pm_loop_plan lp = p ? *p : (pm_loop_plan){.kind = PM_LOOP_SCALAR}; /* the walk may move the table */
        if (lp.kind == PM_LOOP_VECTOR)
            walk_loop_reads(lw, node, &lp, box);
        else if (lp.kind == PM_LOOP_PARTS)
            walk_parts_reads(lw, node, &lp, box);
    }
    isl_ast_node *body = isl_ast_node_for_get_body(node);
    walk_node(lw, body, false);
    isl_ast_node_free(body);
}

static void walk_node(pm_lower *lw, __isl_keep isl_ast_node *node, bool private_mark)
{
    if (!node || lw->failed)
        return;
    switch (isl_ast_node_get_type(node)) {
    case isl_ast_node_for:
        walk_for(lw, node, private_mark);
        break;
    case isl_ast_node_if: {
        isl_ast_node *t = isl_ast_node_if_get_then_node(node);
        walk_node(lw, t, false);
        isl_ast_node_free(t);
        if (isl_ast_node_if_has_else_node(node) == isl_bool_true) {
            isl_ast_node *e = isl_ast_node_if_get_else_node(node);
            walk_node(lw, e, false);
            isl_ast_node_free(e);
        }
        break;
    }
    case isl_ast_node_block:
        walk_children(lw, node);
        break;
    case isl_ast_node_mark: {
        isl_id *id = isl_ast_node_mark_get_id(node);
        bool priv = strcmp(isl_id_get_name(id), PM_MARK_PRIVATE) == 0;
        isl_id_free(id);
        isl_ast_node *child = isl_ast_node_mark_get_node(node);
        walk_node(lw, child, priv);
        isl_ast_node_free(child);
        break;
    }
    default:
        break;
    }
}

pm_lower *pm_lower_new(const pm_poly *poly, const pm_ast *ast, const pm_options *o,
                       const pm_target *target)
{
    pm_lower *lw = calloc(1, sizeof *lw);
    if (!lw)
        return NULL;
    lw->poly = poly;
    lw->ast = ast;
    lw->o = o;
    lw->target = *target;
    lw->walking = true;
    lw->walk_loop = -1;
    for (int i = 0; i < ast->n && !lw->failed; i++)
        walk_node(lw, ast->root[i], false);
    for (int g = 0; g < ast->plan->ngroups && !lw->failed; g++)
        for (int m = 0; m < ast->nboxes[g]; m++) {
            lw->walk_box = &ast->boxes[g][m];
            if (!ast->boxes[g][m].empty)
                walk_node(lw, ast->boxes[g][m].loops, false);
        }
    lw->walk_box = NULL;
    lw->walking = false;
    if (lw->failed) {
        pm_lower_free(lw);
        return NULL;
    }
    return lw;
}

void pm_lower_free(pm_lower *lw)
{
    if (!lw)
        return;
    for (int i = 0; i < lw->nloops; i++)
        free(lw->loops[i].plan.parts);
    free(lw->loops);
    free(lw->loop_index);
    free(lw->reads);
    free(lw->read_index);
    free(lw);
}

const pm_target *pm_lower_target(const pm_lower *lw)
{
    return &lw->target;
}

/* ---- the dump ------------------------------------------------------------------------------- */

static const char *shape_name(pm_loop_shape s)
{
    static const char *const names[] = {"scalar", "one body", "loop and tail",
                                        "loop then scalar", "streamed", "short vectors"};
    return names[s];
}

static const char *read_name(pm_read_kind k)
{
    static const char *const names[] = {"scalar", "broadcast", "contiguous", "strided shuffle",
                                        "half (up-sampling)", "level rows", "gather",
                                        "two-row permute", "small-table permute"};
    return names[k];
}

static isl_printer *print_vector(isl_printer *p, const pm_vector_plan *v, long long trip)
{
    char line[256];
    int w = 0;
    pm_loop_shape at = pm_lower_shape_at(v, trip, &w);
    if (at == PM_SHAPE_SHORT)
        snprintf(line, sizeof line, "vector <%d lanes>, short vectors of %d lanes (trip %lld)",
                 v->W, w, trip);
    else if (at == PM_SHAPE_SCALAR)
        snprintf(line, sizeof line, "scalar (trip %lld)", trip);
    else
        snprintf(line, sizeof line, "vector <%d lanes>, %s%s: %s", v->W, shape_name(at),
                 trip < 0 ? "" : " (constant trip)", v->reason);
    return isl_printer_print_str(p, line);
}

static isl_printer *print_loop(isl_printer *p, const pm_lower *lw, const loop_entry *e)
{
    const pm_loop_plan *lp = &e->plan;
    char head[320];
    isl_ast_expr *it = isl_ast_node_get_type((isl_ast_node *)e->node) == isl_ast_node_for
                           ? isl_ast_node_for_get_iterator((isl_ast_node *)e->node)
                           : NULL;
    isl_id *id = it ? isl_ast_expr_id_get_id(it) : NULL;
    int run = -1, group = -1;
    for (int g = 0; e->box && g < lw->ast->plan->ngroups; g++)
        for (int m = 0; m < lw->ast->nboxes[g]; m++)
            if (&lw->ast->boxes[g][m] == e->box)
                group = g, run = m;
    if (e->box)
        snprintf(head, sizeof head, "loop %s (group %d's box run %d)%s: ",
                 id ? isl_id_get_name(id) : "?", group, run, lp->late ? " [at emission]" : "");
    else
        snprintf(head, sizeof head, "%s %s%s: ", e->block ? "block at loop" : "loop",
                 id ? isl_id_get_name(id) : "?", lp->late ? " [at emission]" : "");
    isl_id_free(id);
    isl_ast_expr_free(it);
    p = isl_printer_print_str(p, head);
    char line[320];
    switch (lp->kind) {
    case PM_LOOP_SCALAR:
        snprintf(line, sizeof line, "scalar: %s\n", lp->reason);
        return isl_printer_print_str(p, line);
    case PM_LOOP_VECTOR:
        p = print_vector(p, &lp->v, lp->trip);
        return isl_printer_print_str(p, "\n");
    case PM_LOOP_PARTS:
        snprintf(line, sizeof line, "%s\n", lp->reason);
        p = isl_printer_print_str(p, line);
        for (int k = 0; k < lp->nparts; k++) {
            snprintf(line, sizeof line, "  part %d: ", k);
            p = isl_printer_print_str(p, line);
            if (lp->parts[k].vector)
                p = print_vector(p, &lp->parts[k], -1);
            else {
                snprintf(line, sizeof line, "scalar: %s", lp->parts[k].reason);
                p = isl_printer_print_str(p, line);
                if (lp->parts[k].body_part != k) {
                    snprintf(line, sizeof line, ", in part %d's loop (the same body)",
                             lp->parts[k].body_part);
                    p = isl_printer_print_str(p, line);
                }
            }
            p = isl_printer_print_str(p, "\n");
        }
        return p;
    case PM_LOOP_PRIVATE:
        snprintf(line, sizeof line,
                 "privatized block of <%d lanes>, %lld update instances, %d per pass, bins "
                 "stored by %s: %s\n",
                 lp->v.W, lp->trip, lp->per_pass, lp->rows_of_bins ? "rows" : "scatters",
                 lp->reason);
        return isl_printer_print_str(p, line);
    }
    return p;
}

static isl_printer *print_read(isl_printer *p, const read_entry *e);

/* Each loop, with the reads its vector code makes first below it; then the reads the
 * emitter asked for that no loop's walk met. */
static isl_printer *print_loops(isl_printer *p, const pm_lower *lw)
{
    int *first = calloc((size_t)lw->nloops + 1, sizeof *first), *next = NULL;
    next = calloc((size_t)lw->nreads + 1, sizeof *next);
    if (!first || !next) {
        free(first);
        free(next);
        return isl_printer_print_str(p, "(out of memory)\n");
    }
    for (int i = lw->nreads - 1; i >= 0; i--) { /* per loop, a list in the reads' order */
        int l = lw->reads[i].loop;
        if (l < 0 || l >= lw->nloops)
            continue;
        next[i] = first[l];
        first[l] = i + 1;
    }
    for (int l = 0; l < lw->nloops; l++) {
        p = print_loop(p, lw, &lw->loops[l]);
        for (int r = first[l]; r; r = next[r - 1])
            p = print_read(p, &lw->reads[r - 1]);
    }
    for (int i = 0; i < lw->nreads; i++)
        if (lw->reads[i].loop < 0)
            p = print_read(p, &lw->reads[i]);
    free(first);
    free(next);
    return p;
}

static isl_printer *print_read(isl_printer *p, const read_entry *e)
{
    const pm_read_plan *r = &e->plan;
    char line[512], what[96] = "";
    if (r->kind == PM_READ_STRIDED)
        snprintf(what, sizeof what, " by %d", r->stride);
    else if (r->kind == PM_READ_LEVEL_ROWS)
        snprintf(what, sizeof what, " along dim %d", r->level_dim);
    else if (r->kind == PM_READ_SMALL_TABLE)
        snprintf(what, sizeof what, ", %d permutes from entry %lld", r->permutes,
                 (long long)r->table_start);
    else if (r->kind == PM_READ_GATHER || r->kind == PM_READ_TABLE)
        snprintf(what, sizeof what, ", %s", r->gather32 ? "32-bit offsets" : "64-bit addresses");
    const char *func = e->shape.stmt ? e->shape.stmt->name : "?";
    snprintf(line, sizeof line, "  read %s in %s at %d lanes: %s%s%s%s: %s\n",
             e->call->callee->name, func, e->shape.W, read_name(r->kind), what,
             r->guarded ? ", guarded (else a clamped gather)"
             : r->proven ? "" : ", clamped",
             r->late ? " [at emission]" : "", r->reason);
    return isl_printer_print_str(p, line);
}

char *pm_lower_to_string(const pm_lower *lw)
{
    isl_printer *p = isl_printer_to_str(lw->poly->ctx);
    char head[160];
    snprintf(head, sizeof head, "target: %d lanes of 32 bits%s\n", lw->target.vector_width,
             lw->target.avx512f ? ", AVX-512" : "");
    p = isl_printer_print_str(p, head);
    p = print_loops(p, lw);
    char *text = isl_printer_get_str(p);
    isl_printer_free(p);
    return text;
}
