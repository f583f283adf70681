/* driver.c — the compiler on one screen: pm_codegen runs the phases in order.
 *
 *   graph     the validated pipeline's definitions              (frontend/print.c)
 *   poly      domains, accesses, dimensions free of dependences  (codegen/poly.c)
 *   cases     cases merged and split into statements             (codegen/cases.c)
 *   inline    point-wise stages folded into their consumers      (codegen/inline.c)
 *   group     which stages fuse: greedy, or a DP over costs      (codegen/group.c, group_dp.c)
 *   align     each member in its group's space, scales           (codegen/align.c)
 *   tile      tile sizes (model), footprints per tile (isl)      (codegen/tile.c)
 *   storage   full buffers, tile scratchpads, slots              (codegen/storage.c)
 *   schedule  the isl schedule tree, every decision a mark       (codegen/schedule.c)
 *   ast       the isl AST; tile origins as AST expressions       (codegen/ast.c)
 *   lower     per loop and read: vectors, width, shape, strategy (codegen/lower.c)
 *   llvm      LLVM IR that follows the marks and the lowering    (codegen/llvm/)
 * The steps table below is the list; each step may leave a text (pm_phase), made only
 * when its PM_DUMP_BIT is set in options.keep_mask (the runtime prints them), and
 * records its time in the result's pm_compile_stats (PM_TIME=1 prints it per step).
 */
#include "codegen/codegen.h"

#include "codegen/align.h"
#include "codegen/ast.h"
#include "codegen/cases.h"
#include "codegen/group.h"
#include "codegen/inline.h"
#include "codegen/llvm/llvm.h"
#include "codegen/lower.h"
#include "codegen/options.h"
#include "codegen/plan.h"
#include "codegen/poly.h"
#include "codegen/schedule.h"
#include "codegen/storage.h"
#include "codegen/tile.h"
#include "frontend/error.h"
#include "frontend/ir.h"

#include <isl/ctx.h>
#include <isl/options.h>
#include <isl/ast.h>
#include <isl/id.h>
#include <isl/printer.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const pm_phase_names[PM_NPHASES] = {
    [PM_PHASE_GRAPH] = "graph",       [PM_PHASE_DOMAINS] = "domains",
    [PM_PHASE_GROUPS] = "groups",     [PM_PHASE_DOT] = "dot",
    [PM_PHASE_STORAGE] = "storage",   [PM_PHASE_SCHEDULE] = "schedule",
    [PM_PHASE_AST] = "ast",           [PM_PHASE_LOWER] = "lower",
    [PM_PHASE_SIZES] = "sizes",
    [PM_PHASE_LLVM] = "llvm",
    [PM_PHASE_ASM] = "asm"};

/* Everything one compile carries from phase to phase. */
typedef struct compile {
    pm_pipeline *p;
    const pm_value *estimates;
    const pm_options *o;
    LLVMTargetMachineRef tm;
    LLVMContextRef llvm_ctx;
    pm_codegen_result *out;
    pm_error *err;
    isl_ctx *ctx;
    pm_poly *poly;
    pm_plan *plan;
    isl_schedule *sched;
    isl_schedule **group_sched; /* each group's part of sched (plan->ngroups)              */
    pm_ast *ast;
    pm_lower *lower;
    pm_llvm_merge_stats merged;
} compile;

static pm_status failed(compile *c, pm_status fallback)
{
    return c->err && c->err->status != PM_OK ? c->err->status : fallback;
}

/* ---- the steps ------------------------------------------------------------------------ */

static pm_status step_poly(compile *c)
{
    c->poly = pm_poly_new(c->ctx, c->p, c->err);
    return c->poly ? PM_OK : failed(c, PM_ERR_INTERNAL);
}

static pm_status step_cases(compile *c)
{
    return pm_cases_shape(c->poly, c->err);
}

static pm_status step_inline(compile *c)
{
    c->plan = pm_plan_new(c->poly, c->o, c->estimates);
    if (!c->plan)
        return pm_error_set(c->err, PM_ERR_NOMEM, "%s: out of memory", c->p->name);
    pm_inline_decide(c->plan);
    return PM_OK;
}

static pm_status step_group(compile *c)
{
    if (!pm_group_decide(c->plan))
        return pm_error_set(c->err, PM_ERR_NOMEM, "%s: out of memory", c->p->name);
    return PM_OK;
}

/* The final groups' alignment (the group phase aligned each candidate; recorded here
 * for the groups it kept). */
static pm_status step_align(compile *c)
{
    for (int g = 0; g < c->plan->ngroups; g++) {
        pm_group *gr = &c->plan->groups[g];
        if (gr->tiled && !pm_align_group(c->plan, gr->members, gr->nmembers, gr->align))
            return pm_error_set(c->err, PM_ERR_INTERNAL, "%s: group %d no longer aligns",
                                   c->p->name, g);
    }
    return PM_OK;
}

/* Footprints with isl; a group whose footprint has no constant bound runs unfused. */
static pm_status step_tile(compile *c)
{
    for (int g = 0; g < c->plan->ngroups; g++) {
        pm_group *gr = &c->plan->groups[g];
        if (gr->tiled && !pm_tile_footprints(c->plan, gr) && !pm_group_split(c->plan, g))
            return pm_error_set(c->err, PM_ERR_NOMEM, "%s: out of memory", c->p->name);
    }
    return PM_OK;
}

static pm_status step_storage(compile *c)
{
    if (!pm_storage_decide(c->poly, c->plan))
        return pm_error_set(c->err, PM_ERR_NOMEM, "%s: out of memory", c->p->name);
    return PM_OK;
}

static pm_status step_schedule(compile *c)
{
    pm_schedule_parallel_dims(c->poly, c->plan);
    c->group_sched = calloc((size_t)c->plan->ngroups + 1, sizeof *c->group_sched);
    if (!c->group_sched)
        return pm_error_set(c->err, PM_ERR_NOMEM, "%s: out of memory", c->p->name);
    c->sched = pm_schedule_new(c->poly, c->plan, c->group_sched, c->err);
    return c->sched ? PM_OK : failed(c, PM_ERR_INTERNAL);
}

static pm_status step_ast(compile *c)
{
    c->ast = pm_ast_new(c->poly, c->plan, c->sched, c->group_sched, c->o->compile_threads, c->err);
    return c->ast ? PM_OK : failed(c, PM_ERR_INTERNAL);
}

static pm_status step_lower(compile *c)
{
    pm_target target = pm_target_of(c->tm, c->o->vector_width);
    c->lower = pm_lower_new(c->poly, c->ast, c->o, &target);
    if (!c->lower)
        return pm_error_set(c->err, PM_ERR_NOMEM, "%s: out of memory", c->p->name);
    return PM_OK;
}

static pm_status step_llvm(compile *c)
{
    pm_status st = pm_llvm_build(c->poly, c->ast, c->lower, c->o, c->tm, c->llvm_ctx, c->out->entry_name,
                                 &c->out->module, c->err);
    c->out->nslots = c->plan->nslots;
    return st;
}

static pm_status step_merge(compile *c)
{
    if (!c->o->merge_bodies)
        return PM_OK;
    return pm_llvm_merge_similar(c->out->module, &c->merged, c->err);
}

/* ---- the texts ---------------------------------------------------------------------------- */

static char *text_graph(compile *c) { return pm_pipeline_to_string(c->p); }
static char *text_domains(compile *c) { return pm_poly_to_string(c->poly); }
static char *text_groups(compile *c) { return pm_plan_groups_to_string(c->plan); }
static char *text_dot(compile *c) { return pm_plan_to_dot(c->plan); }
static char *text_storage(compile *c) { return pm_storage_to_string(c->poly, c->plan); }
static char *text_ast(compile *c) { return pm_ast_to_string(c->ast); }
static char *text_lower(compile *c) { return pm_lower_to_string(c->lower); }

static char *text_schedule(compile *c)
{
    isl_printer *p = isl_printer_to_str(c->ctx);
    p = isl_printer_set_yaml_style(p, ISL_YAML_STYLE_BLOCK);
    p = isl_printer_print_schedule(p, c->sched);
    char *text = isl_printer_get_str(p);
    isl_printer_free(p);
    return text;
}

/* ---- code size: where a kernel's code comes from ------------------------------------ */

enum { SIZE_ROWS = 256 };
typedef struct size_row {
    const char *name;
    long count, blocks;
} size_row;
typedef struct size_table {
    int n;
    size_row rows[SIZE_ROWS];
    long nodes[8]; /* per isl_ast_node_type (for, if, block, mark, user) */
} size_table;

static int by_count(const void *a, const void *b)
{
    const size_row *x = a, *y = b;
    return (y->count > x->count) - (y->count < x->count);
}

static isl_bool count_ast_node(__isl_keep isl_ast_node *node, void *user)
{
    size_table *t = user;
    enum isl_ast_node_type type = isl_ast_node_get_type(node);
    if (type > 0 && type < 8)
        t->nodes[type]++;
    if (type != isl_ast_node_user)
        return isl_bool_true;
    isl_ast_expr *call = isl_ast_node_user_get_expr(node);
    isl_ast_expr *fn = isl_ast_expr_get_op_arg(call, 0);
    isl_id *id = isl_ast_expr_get_id(fn);
    const char *name = isl_id_get_name(id); /* owned by the statement's domain: lives on */
    int i = 0;
    while (i < t->n && strcmp(t->rows[i].name, name) != 0)
        i++;
    if (i == t->n && t->n < SIZE_ROWS)
        t->rows[t->n++] = (size_row){name, 0, 0};
    if (i < t->n)
        t->rows[i].count++;
    isl_id_free(id);
    isl_ast_expr_free(fn);
    isl_ast_expr_free(call);
    return isl_bool_true;
}

/* Each statement's copies in the AST (a piece separated into several loops is one body
 * per copy), then each function's IR as built, before LLVM's passes: what the passes
 * and the machine-code step pay for. */
static char *text_sizes(compile *c)
{
    size_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    for (int i = 0; i < c->ast->n; i++)
        isl_ast_node_foreach_descendant_top_down(c->ast->root[i], count_ast_node, t);
    isl_printer *p = isl_printer_to_str(c->ctx);
    long copies = 0;
    for (int i = 0; i < t->n; i++)
        copies += t->rows[i].count;
    char head[256];
    snprintf(head, sizeof head,
             "isl AST: %ld for, %ld if, %ld block, %ld mark nodes; %ld statement copies of %d "
             "statements\n  copies  statement\n",
             t->nodes[isl_ast_node_for], t->nodes[isl_ast_node_if], t->nodes[isl_ast_node_block],
             t->nodes[isl_ast_node_mark], copies, t->n);
    p = isl_printer_print_str(p, head);
    qsort(t->rows, (size_t)t->n, sizeof t->rows[0], by_count);
    for (int i = 0; i < t->n; i++) {
        char line[160];
        snprintf(line, sizeof line, "  %6ld  %s\n", t->rows[i].count, t->rows[i].name);
        p = isl_printer_print_str(p, line);
    }
    /* the IR, per function */
    t->n = 0;
    long total = 0, nfun = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(c->out->module); f; f = LLVMGetNextFunction(f)) {
        long n = 0, nb = 0;
        for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b), nb++)
            for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
                n++;
        if (nb == 0)
            continue; /* a declaration */
        total += n;
        nfun++;
        if (t->n < SIZE_ROWS)
            t->rows[t->n++] = (size_row){LLVMGetValueName(f), n, nb};
    }
    char line[320];
    if (c->o->merge_bodies)
        snprintf(line, sizeof line,
                 "merged: %d of %d outlined bodies into %d functions "
                 "(<first>.x<members>), %d constants passed\n",
                 c->merged.removed + c->merged.classes, c->merged.candidates,
                 c->merged.classes, c->merged.holes);
    else
        snprintf(line, sizeof line, "merged: none (off: the full-DP upgrade)\n");
    p = isl_printer_print_str(p, line);
    snprintf(line, sizeof line,
             "LLVM IR as built, before the passes: %ld instructions in %ld functions\n"
             "  instrs  blocks  function (<kernel>_part<k>_<stage>: a stage in a tile; _par<k>_: "
             "a parallel loop's body)\n", total, nfun);
    p = isl_printer_print_str(p, line);
    qsort(t->rows, (size_t)t->n, sizeof t->rows[0], by_count);
    for (int i = 0; i < t->n; i++) {
        snprintf(line, sizeof line, "  %6ld  %6ld  %s\n", t->rows[i].count, t->rows[i].blocks,
                 t->rows[i].name);
        p = isl_printer_print_str(p, line);
    }
    char *text = isl_printer_get_str(p);
    isl_printer_free(p);
    free(t);
    return text;
}

/* One row per step, in order: its name (the PM_TIME name, and a PM_DUMP name), what it
 * does (polymage explain), its pm_compile_stats field, the texts it leaves, and the
 * texts its PM_DUMP name selects (a step that leaves none shows its decisions in a
 * later step's text). */
typedef struct step {
    const char *name;
    const char *what;
    pm_status (*run)(compile *c);          /* NULL: a text only                   */
    const char *stat_name;                  /* its pm_compile_stats field           */
    size_t stat;                            /* the field's offset (a double)        */
    int text_phase[2];                      /* texts it leaves (pm_phase), -1 none */
    char *(*text[2])(compile *c);
    unsigned shows;                         /* PM_DUMP_BIT bits its name selects    */
} step;

#define STAT(field) #field, offsetof(pm_compile_stats, field)
#define BIT(phase) PM_DUMP_BIT(PM_PHASE_##phase)
static const step steps[] = {
    {"graph", "the stage graph straight from the definitions", NULL, STAT(dump_ms),
     {PM_PHASE_GRAPH, -1}, {text_graph, NULL}, BIT(GRAPH)},
    {"poly", "polyhedral form: each case's domain and each read as isl sets and maps, and "
     "the dimensions free of dependences",
     step_poly, STAT(poly_ms), {-1, -1}, {NULL, NULL}, BIT(DOMAINS)},
    {"cases", "a function's cases merged and split into the statements isl schedules",
     step_cases, STAT(poly_ms), {PM_PHASE_DOMAINS, -1}, {text_domains, NULL}, BIT(DOMAINS)},
    {"inline", "point-wise and read-once stages inlined into their consumers", step_inline,
     STAT(inline_ms), {-1, -1}, {NULL, NULL}, BIT(GROUPS)},
    {"group", "stages grouped at the estimates, greedily or by a DP over the model's costs",
     step_group, STAT(group_ms), {-1, -1}, {NULL, NULL}, BIT(GROUPS)},
    {"align", "each member's dimensions aligned and scaled to its group's live-out",
     step_align, STAT(align_ms), {-1, -1}, {NULL, NULL}, BIT(GROUPS)},
    {"tile", "overlapped tiles per group; sizes from the run-time model", step_tile,
     STAT(tile_ms), {PM_PHASE_GROUPS, PM_PHASE_DOT}, {text_groups, text_dot}, BIT(GROUPS)},
    {"storage", "tile scratchpads, full buffers, slots shared by disjoint lifetimes",
     step_storage, STAT(storage_ms), {PM_PHASE_STORAGE, -1}, {text_storage, NULL},
     BIT(STORAGE)},
    {"schedule", "the isl schedule tree (parallel mark, tiles, footprints)", step_schedule,
     STAT(schedule_ms), {PM_PHASE_SCHEDULE, -1}, {text_schedule, NULL}, BIT(SCHEDULE)},
    {"ast", "the isl AST", step_ast, STAT(isl_ast_ms), {PM_PHASE_AST, -1}, {text_ast, NULL},
     BIT(AST)},
    {"lower", "per loop and per read: vectors or not, width, shape, read strategy, and why",
     step_lower, STAT(ir_build_ms), {PM_PHASE_LOWER, -1}, {text_lower, NULL}, BIT(LOWER)},
    {"llvm",
     "LLVM IR with <W x T> vectors and GOMP_parallel, optimized (the tuned pipeline), then "
     "machine code in ORC LLJIT",
     step_llvm, STAT(ir_build_ms), {-1, -1}, {NULL, NULL}, BIT(LLVM)},
    {"merge", "outlined bodies equal but for integer constants (a pyramid's levels) "
     "merged into one function each, the constants passed by the calls",
     step_merge, STAT(ir_build_ms), {PM_PHASE_SIZES, -1}, {text_sizes, NULL}, BIT(SIZES)},
};
#undef BIT
#undef STAT

enum { NSTEPS = sizeof steps / sizeof steps[0] };

int pm_codegen_step_count(void)
{
    return NSTEPS;
}

void pm_codegen_step_info(int i, const char **name, const char **what, const char **stat)
{
    *name = steps[i].name;
    *what = steps[i].what;
    *stat = steps[i].stat_name;
}

/* The bits one name of a dump spec selects: a step's name, a text's name, or "all";
 * 0 when it names nothing. */
static unsigned dump_bits_of(const char *p, size_t len)
{
    if (len == 3 && strncmp(p, "all", 3) == 0)
        return PM_DUMP_ALL;
    for (int i = 0; i < NSTEPS; i++)
        if (strlen(steps[i].name) == len && strncmp(p, steps[i].name, len) == 0)
            return steps[i].shows;
    for (int i = 0; i < PM_NPHASES; i++)
        if (strlen(pm_phase_names[i]) == len && strncmp(p, pm_phase_names[i], len) == 0)
            return PM_DUMP_BIT(i);
    return 0;
}

/* Calls fn on each name of a comma- or space-separated spec; stops when it returns
 * false. */
static bool each_dump_name(const char *spec, bool (*fn)(const char *p, size_t len, void *u),
                           void *user)
{
    for (const char *p = spec ? spec : ""; *p;) {
        size_t len = strcspn(p, ", ");
        if (len && !fn(p, len, user))
            return false;
        p += len;
        p += strspn(p, ", ");
    }
    return true;
}

static bool add_bits(const char *p, size_t len, void *user)
{
    *(unsigned *)user |= dump_bits_of(p, len);
    return true;
}

unsigned pm_dump_parse(const char *spec)
{
    unsigned mask = 0;
    each_dump_name(spec, add_bits, &mask);
    return mask;
}

typedef struct bad_name {
    char *buf;
    size_t size;
} bad_name;

static bool known(const char *p, size_t len, void *user)
{
    if (dump_bits_of(p, len))
        return true;
    bad_name *b = user;
    snprintf(b->buf, b->size, "%.*s", (int)len, p);
    return false;
}

bool pm_dump_check(const char *spec, char *bad, size_t size)
{
    bad_name b = {bad, size};
    return each_dump_name(spec, known, &b);
}

static bool is_step_name(const char *name)
{
    for (int i = 0; i < NSTEPS; i++)
        if (strcmp(steps[i].name, name) == 0)
            return true;
    return false;
}

void pm_dump_name_list(char *buf, size_t size)
{
    size_t at = (size_t)snprintf(buf, size, "all");
    for (int i = 0; i < NSTEPS && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, ", %s", steps[i].name);
    for (int i = 0; i < PM_NPHASES && at < size; i++)
        if (!is_step_name(pm_phase_names[i])) /* the texts' own names, kept as aliases */
            at += (size_t)snprintf(buf + at, size - at, ", %s", pm_phase_names[i]);
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    timespec_get(&t1, TIME_UTC);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A step failed: its own status and message when it set one (the real status is kept,
 * never replaced by PM_ERR_INTERNAL), with isl's last error added when isl failed; else
 * PM_ERR_INTERNAL naming the step. */
static pm_status step_failed(isl_ctx *ctx, pm_pipeline *p, const char *step, pm_error *err)
{
    const char *isl_msg = isl_ctx_last_error(ctx) != isl_error_none
                              ? isl_ctx_last_error_msg(ctx) : NULL;
    /* isl's own allocations report failure (GMP's abort instead: docs/jit.md). */
    if (isl_ctx_last_error(ctx) == isl_error_alloc && err->status != PM_ERR_NOMEM)
        return pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory in isl during the %s phase",
                            p->name, step);
    if (err->status == PM_OK)
        pm_error_set(err, PM_ERR_INTERNAL, "%s: the %s phase failed%s%s", p->name, step,
                     isl_msg ? ": isl: " : "", isl_msg ? isl_msg : "");
    else if (isl_msg) {
        size_t n = strlen(err->message);
        snprintf(err->message + n, sizeof err->message - n, " (isl: %s)", isl_msg);
    }
    return err->status;
}

pm_status pm_codegen(pm_pipeline *p, const pm_value *estimates, const pm_options *o,
                     LLVMTargetMachineRef tm, LLVMContextRef llvm_ctx, pm_codegen_result *out,
                     pm_error *err)
{
    pm_error local = {0}; /* steps report through err: keep their status without one */
    if (!err)
        err = &local;
    pm_error_clear(err);
    memset(out, 0, sizeof *out);
    if (!p || !o || !llvm_ctx)
        return pm_error_set(err, PM_ERR_MISUSE, "pm_codegen: NULL argument");
    snprintf(out->entry_name, sizeof out->entry_name, "pm_entry");
    /* isl objects live in a context of this compile: kernels share nothing. */
    isl_ctx *ctx = isl_ctx_alloc();
    if (!ctx)
        return pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", p->name);
    /* isl errors become this call's pm_error (step_failed), never text on stderr. */
    isl_options_set_on_error(ctx, o->isl_abort ? ISL_ON_ERROR_ABORT : ISL_ON_ERROR_CONTINUE);
    compile c = {p, estimates, o, tm, llvm_ctx, out, err, ctx, NULL, NULL, NULL, NULL, NULL, NULL,
                 {0}};
    pm_status st = PM_OK;
    pm_compile_stats *stats = &out->stats;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0] && st == PM_OK; i++) {
        struct timespec t0;
        timespec_get(&t0, TIME_UTC);
        if (steps[i].run && (st = steps[i].run(&c)) != PM_OK)
            st = step_failed(ctx, p, steps[i].name, err);
        double ms = ms_since(&t0);
        *(double *)((char *)stats + steps[i].stat) += ms;
        if (o->timed)
            fprintf(stderr, "PM_TIME %s: %-8s %8.1f ms\n", p->name, steps[i].name, ms);
        timespec_get(&t0, TIME_UTC);
        for (int k = 0; k < 2 && st == PM_OK; k++) {
            int ph = steps[i].text_phase[k];
            if (ph >= 0 && (o->keep_mask & PM_DUMP_BIT(ph)))
                out->text[ph] = steps[i].text[k](&c);
        }
        stats->dump_ms += ms_since(&t0);
    }
    stats->isl_schedule_ms = stats->poly_ms + stats->inline_ms + stats->group_ms +
                             stats->align_ms + stats->tile_ms + stats->storage_ms +
                             stats->schedule_ms;
    pm_lower_free(c.lower);
    pm_ast_free(c.ast);
    for (int g = 0; c.group_sched && g < c.plan->ngroups; g++)
        isl_schedule_free(c.group_sched[g]);
    free(c.group_sched);
    isl_schedule_free(c.sched);
    pm_plan_free(c.plan);
    pm_poly_free(c.poly);
    isl_ctx_free(ctx);
    return st;
}

void pm_codegen_result_free(pm_codegen_result *r)
{
    if (!r)
        return;
    if (r->module)
        LLVMDisposeModule(r->module);
    for (int i = 0; i < PM_NPHASES; i++)
        free(r->text[i]);
    memset(r, 0, sizeof *r);
}
