/* driver.c — the compiler on one screen: pm_codegen runs the phases in order.
 *
 *   graph      the validated pipeline's definitions        (frontend/print.c)
 *   poly       domains, case pieces, accesses, dependences  (codegen/poly.c)
 *   schedule   isl schedule tree: stages in sequence, one band per stage
 *                                                           (codegen/schedule.c)
 *   ast        isl AST with separated pieces, parallel marks (codegen/ast.c)
 *   llvm       LLVM IR: vectors, GOMP_parallel, buffers      (codegen/llvm/)
 * The next issue inserts grouping, overlapped tiling and storage reduction between
 * poly and schedule. Each phase's text is kept in the result when its PM_DUMP_* bit is
 * set, and printed to options.dump_to.
 */
#include "codegen/codegen.h"

#include "codegen/ast.h"
#include "codegen/llvm/llvm.h"
#include "codegen/poly.h"
#include "codegen/schedule.h"
#include "frontend/ir.h"

#include <isl/ctx.h>
#include <isl/options.h>
#include <isl/printer.h>
#include <stdlib.h>
#include <string.h>

unsigned pm_dump_parse(const char *spec)
{
    static const struct { const char *name; unsigned bit; } names[] = {
        {"graph", PM_DUMP_GRAPH}, {"domains", PM_DUMP_DOMAINS}, {"schedule", PM_DUMP_SCHEDULE},
        {"ast", PM_DUMP_AST}, {"llvm", PM_DUMP_LLVM}, {"asm", PM_DUMP_ASM}};
    unsigned mask = 0;
    if (!spec)
        return 0;
    const char *p = spec;
    while (*p) {
        size_t len = strcspn(p, ", ");
        if (len == 3 && strncmp(p, "all", 3) == 0)
            mask |= PM_DUMP_GRAPH | PM_DUMP_DOMAINS | PM_DUMP_SCHEDULE | PM_DUMP_AST |
                    PM_DUMP_LLVM | PM_DUMP_ASM;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == len && strncmp(p, names[i].name, len) == 0)
                mask |= names[i].bit;
        p += len;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return mask;
}

/* Keeps a phase's text (taking text) when its bit is set, printing it. */
static void keep(const pm_codegen_options *o, unsigned bit, const char *title, char *text,
                 char **slot)
{
    if (!(o->dump_mask & bit) || !text) {
        free(text);
        return;
    }
    if (o->dump_to)
        fprintf(o->dump_to, "=== %s ===\n%s\n", title, text);
    *slot = text;
}

static char *schedule_text(__isl_keep isl_schedule *s)
{
    isl_printer *p = isl_printer_to_str(isl_schedule_get_ctx(s));
    p = isl_printer_set_yaml_style(p, ISL_YAML_STYLE_BLOCK);
    p = isl_printer_print_schedule(p, s);
    char *text = isl_printer_get_str(p);
    isl_printer_free(p);
    return text;
}

/* A phase returned nothing: its own status and message when it set one (the real
 * status is kept, never replaced by PM_ERR_INTERNAL), with isl's last error added when
 * isl failed; else PM_ERR_INTERNAL naming the phase. */
static pm_status phase_failed(isl_ctx *ctx, pm_pipeline *p, const char *phase, pm_error *err)
{
    const char *isl_msg = isl_ctx_last_error(ctx) != isl_error_none
                              ? isl_ctx_last_error_msg(ctx) : NULL;
    if (err->status == PM_OK)
        pm_error_set(err, PM_ERR_INTERNAL, "%s: the %s phase failed%s%s", p->name, phase,
                        isl_msg ? ": isl: " : "", isl_msg ? isl_msg : "");
    else if (isl_msg) {
        size_t n = strlen(err->message);
        snprintf(err->message + n, sizeof err->message - n, " (isl: %s)", isl_msg);
    }
    return err->status;
}

pm_status pm_codegen(pm_pipeline *p, const pm_value *estimates, const pm_codegen_options *o,
                     LLVMContextRef llvm_ctx, pm_codegen_result *out, pm_error *err)
{
    (void)estimates; /* used by grouping and tile sizes (next issue) */
    pm_error local = {0}; /* phases report through err: keep their status without one */
    if (!err)
        err = &local;
    pm_error_clear(err);
    memset(out, 0, sizeof *out);
    if (!p || !o || !llvm_ctx)
        return pm_error_set(err, PM_ERR_MISUSE, "pm_codegen: NULL argument");
    snprintf(out->entry_name, sizeof out->entry_name, "pm_entry");
    if (o->dump_mask & PM_DUMP_GRAPH)
        keep(o, PM_DUMP_GRAPH, "graph", pm_pipeline_to_string(p), &out->text_graph);

    /* isl objects live in a context of this compile: kernels share nothing. */
    isl_ctx *ctx = isl_ctx_alloc();
    if (!ctx)
        return pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", p->name);
    /* isl errors become this call's pm_error (phase_failed), never text on stderr. */
    isl_options_set_on_error(ctx, getenv("PM_ISL_ABORT") ? ISL_ON_ERROR_ABORT
                                                         : ISL_ON_ERROR_CONTINUE);
    pm_status st = PM_OK;
    isl_schedule *sched = NULL;
    isl_ast_node *ast = NULL;

    pm_poly *poly = pm_poly_new(ctx, p, err);                          /* 1. polyhedral form */
    if (!poly) {
        st = phase_failed(ctx, p, "polyhedral form", err);
        goto done;
    }
    if (o->dump_mask & PM_DUMP_DOMAINS)
        keep(o, PM_DUMP_DOMAINS, "domains", pm_poly_to_string(poly), &out->text_domains);

    sched = pm_schedule_new(poly, err);                                 /* 2. schedule */
    if (!sched) {
        st = phase_failed(ctx, p, "schedule", err);
        goto done;
    }
    if (o->dump_mask & PM_DUMP_SCHEDULE)
        keep(o, PM_DUMP_SCHEDULE, "schedule", schedule_text(sched), &out->text_schedule);

    ast = pm_ast_new(poly, sched, err);                                 /* 3. AST */
    if (!ast) {
        st = phase_failed(ctx, p, "AST", err);
        goto done;
    }
    if (o->dump_mask & PM_DUMP_AST)
        keep(o, PM_DUMP_AST, "ast", pm_ast_to_string(ast), &out->text_ast);

    st = pm_llvm_build(poly, ast, o, llvm_ctx, out->entry_name,        /* 4. LLVM IR */
                       &out->module, err);
    if (st != PM_OK)
        st = phase_failed(ctx, p, "LLVM IR", err);
    out->nslots = poly->nslots;

done:
    isl_ast_node_free(ast);
    isl_schedule_free(sched);
    pm_poly_free(poly);
    isl_ctx_free(ctx);
    return st;
}

void pm_codegen_result_free(pm_codegen_result *r)
{
    if (!r)
        return;
    if (r->module)
        LLVMDisposeModule(r->module);
    free(r->text_graph);
    free(r->text_domains);
    free(r->text_schedule);
    free(r->text_ast);
    memset(r, 0, sizeof *r);
}
