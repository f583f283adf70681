/* serve.h — the kernel cache of a jit at work: lookups that compile on a miss, serving
 * runs with background compiles, and the cache's end (runtime-internal; the public calls
 * are pm_jit_set_policy, pm_jit_get_policy, pm_jit_stats and pm_jit_wait_idle, here too).
 *
 * Promise: every function takes options already resolved (runtime/jit.c resolves them),
 * and a key is compiled once at a time: a second caller waits for the first compile
 * rather than repeating it.
 */
#ifndef PM_RUNTIME_SERVE_H
#define PM_RUNTIME_SERVE_H

#include "runtime/kernel.h"

#include <stdbool.h>
#include <stdint.h>

/* The cached kernel of (p, estimates, options) with one more reference, or a new one
 * compiled in this thread and cached. serving (pm_jit_run with background compiles):
 * when the key is missing but its pipeline has a kernel, or one being compiled, compile
 * nothing: set *serving and return NULL, so the caller runs that kernel (decided under
 * one lock with the entry's creation, so concurrent first calls cannot both compile). */
pm_kernel *pm_jit_get_kernel(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                             const pm_options *options, bool *serving, pm_error *err);
/* pm_jit_run after its checks: runs the kernel the cache serves for params. */
pm_status pm_serve_run(pm_jit *jit, pm_pipeline *p, const pm_options *resolved,
                       const pm_value *params, const pm_buffer *inputs, pm_buffer *outputs,
                       pm_error *error);
/* pm_jit_scratch_estimate after its checks: scales the largest run seen of the family. */
pm_status pm_serve_scratch_estimate(pm_jit *jit, pm_pipeline *p, const pm_options *resolved,
                                    const pm_value *params, int64_t *bytes, pm_error *error);
/* pm_jit_free's part for the cache and the compile threads: cancels queued compiles,
 * joins the threads, drops the cache's references; returns kernels to drop. */
pm_kernel *pm_jit_stop_serving(pm_jit *jit);

#endif
