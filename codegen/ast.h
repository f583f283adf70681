/* ast.h — the loop nest: isl's AST for the schedule.
 *
 * Promise: pm_ast_new generates the isl AST of the schedule with the per-band options
 * the schedule carries (separate: case pieces and boundaries as their own loops, so
 * inner loop bodies carry no per-point conditions where isl can split them). User nodes
 * are calls S(c0, c1, ...) whose name is a statement's tuple name (pm_ast_stmt finds it)
 * and whose arguments are the statement's coordinates as expressions of the loop
 * iterators and parameters. Mark nodes "parallel" sit above loops safe to run in
 * parallel. Ownership: the caller frees the AST (isl_ast_node_free).
 */
#ifndef PM_CODEGEN_AST_H
#define PM_CODEGEN_AST_H

#include "codegen/plan.h"

#include <isl/ast.h>
#include <isl/schedule.h>

typedef struct pm_tile_origins {
    const pm_group *group;
    int n;
    int *storage;                     /* pm_poly storage index of each scratchpad        */
    isl_ast_expr *(*lb)[PM_MAX_DIMS]; /* its origin per dimension                         */
} pm_tile_origins;

__isl_give isl_ast_node *pm_ast_new(const pm_poly *poly, const pm_plan *plan,
                                    __isl_keep isl_schedule *sched, pm_error *err);

/* The statement a user node's call names, or NULL. */
const pm_poly_stmt *pm_ast_stmt(const pm_poly *poly, __isl_keep isl_ast_expr *call);

/* The AST as C-like text (the "ast" dump); malloc'd. */
char *pm_ast_to_string(__isl_keep isl_ast_node *ast);

#endif
