/* clone.h — a pipeline copied into another context.
 *
 * Promise: pm_pipeline_clone copies everything the compiler reads of a validated pipeline
 * into `into`, a new, empty context. The copy shares nothing with the original, so the
 * original's context may be freed, or used by its thread, while another thread compiles
 * the copy. The copy's canonical form (frontend/canon.h) equals the original's.
 */
#ifndef PM_FRONTEND_CLONE_H
#define PM_FRONTEND_CLONE_H

#include "polymage.h"

/* The copy, owned by `into`; NULL when out of memory (the reason recorded in `into`).
 * It holds the signature, every image and stage the pipeline reaches with their domains
 * and definitions, and the stage order and parameter slots pm_pipeline_new computed. It
 * is not validated again (the original was). Shared subexpressions stay shared,
 * functions keep their relative creation order, and parameters get ids equal to their
 * slots: so the canonical forms are equal. */
pm_pipeline *pm_pipeline_clone(const pm_pipeline *p, pm_ctx *into);

#endif
