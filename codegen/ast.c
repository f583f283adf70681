/* ast.c — isl AST generation (see ast.h). */
#include "codegen/ast.h"

#include <isl/ast_build.h>
#include <isl/id.h>
#include <isl/options.h>
#include <isl/printer.h>
#include <isl/space.h>
#include <stdlib.h>
#include <string.h>

__isl_give isl_ast_node *pm_ast_new(const pm_poly *poly, __isl_keep isl_schedule *sched,
                                    pm_error *err)
{
    isl_ctx *ctx = poly->ctx;
    /* min/max in bounds instead of disjunctive guards: simpler loop conditions. */
    isl_options_set_ast_build_detect_min_max(ctx, 1);
    isl_set *context = isl_set_universe(isl_space_copy(poly->params));
    isl_ast_build *build = isl_ast_build_from_context(context);
    isl_ast_node *ast = isl_ast_build_node_from_schedule(build, isl_schedule_copy(sched));
    isl_ast_build_free(build);
    if (!ast)
        pm_error_set(err, PM_ERR_INTERNAL, "%s: isl could not build the AST",
                        poly->pipeline->name);
    return ast;
}

const pm_poly_stmt *pm_ast_stmt(const pm_poly *poly, __isl_keep isl_ast_expr *call)
{
    isl_ast_expr *fn = isl_ast_expr_op_get_arg(call, 0);
    isl_id *id = isl_ast_expr_id_get_id(fn);
    isl_ast_expr_free(fn);
    const char *name = id ? isl_id_get_name(id) : NULL;
    const pm_poly_stmt *found = NULL;
    for (int i = 0; name && i < poly->nstmts && !found; i++)
        if (strcmp(poly->stmts[i].name, name) == 0)
            found = &poly->stmts[i];
    isl_id_free(id);
    return found;
}

char *pm_ast_to_string(__isl_keep isl_ast_node *ast)
{
    isl_printer *p = isl_printer_to_str(isl_ast_node_get_ctx(ast));
    p = isl_printer_set_output_format(p, ISL_FORMAT_C);
    p = isl_printer_print_ast_node(p, ast);
    char *s = isl_printer_get_str(p);
    isl_printer_free(p);
    return s;
}
