/* compile.c — one kernel built: compiled here or in a helper process, or loaded from the
 * disk cache, and written there (see compile.h). A compile runs these steps:
 *   signature  the pipeline's run-time interface, detached (frontend/signature.c)
 *   codegen    the compiler's phases, poly to LLVM IR (codegen/driver.c)
 *   prepare    internal linkage, a unique entry name (runtime/jit_engine.c; codegen verified)
 *   optimize   the tuned pipeline or LLVM's default<On>, with the host target machine
 *   llvm, asm  texts for PM_DUMP / pm_kernel_dump, only when asked for (options.dump,
 *              options.keep): printing a module costs as much as a pass
 *   stats      each step's time and the IR's size (pm_kernel_compile_stats; PM_TIME=1
 *              prints them)
 *   split      with compile_threads > 1 and a big enough module: parts optimized and
 *              compiled to objects at once, each in its own thread and LLVM context
 *              (runtime/split_compile.c); the optimize step above is then theirs
 *   add        the module under a resource tracker of its own (or the parts' objects
 *              under one)
 *   lookup     compiles to machine code (serial path) and links, finds the entry (and
 *              the code's size)
 * PM_DUMP / options.dump prints the requested phases to stderr as they are produced.
 * Compiles hold no jit-wide lock: each has its own pipeline (context), isl context,
 * LLVM context and target machine; only the engine's machine-code step of the serial
 * path is serialized (the split path's parts make their objects outside the engine).
 */
/* clock_gettime, strdup: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "runtime/compile.h"
#include "runtime/isolate.h"
#include "runtime/split_compile.h"

#include "codegen/codegen.h"
#include "codegen/options.h"
#include "frontend/ir.h"
#include "frontend/error.h"

#include <llvm-c/Core.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void dump_phase(const pm_kernel *k, int phase, unsigned mask)
{
    if ((mask & PM_DUMP_BIT(phase)) && k->text[phase])
        fprintf(stderr, "=== %s: %s ===\n%s\n", k->sig->name, pm_phase_names[phase],
                k->text[phase]);
}

/* LLVM's string into a malloc'd copy the kernel owns. */
static char *take_llvm_string(char *s)
{
    char *copy = s ? strdup(s) : NULL;
    LLVMDisposeMessage(s);
    return copy;
}

_Static_assert((int)PM_DISK_MAX_PARTS == (int)PM_SPLIT_MAX_PARTS,
               "the disk cache stores every part of a split kernel");

/* The split path's end: the parts' objects under the kernel's one tracker, linked by the
 * entry's lookup; the statistics from the parts. */
static pm_status add_split_kernel(pm_jit *jit, const pm_split_result *split, const char *unique,
                                  int32_t nslots, pm_kernel *k, pm_disk_kernel *capture,
                                  pm_error *err)
{
    pm_compile_stats *stats = &k->stats;
    stats->llvm_opt_ms = split->opt_ms;
    stats->machine_code_ms = split->machine_code_ms;
    stats->llvm_wall_ms = split->wall_ms;
    stats->compile_parts = split->parts;
    stats->ir_instructions_after = split->instructions_after;
    stats->ir_functions = split->functions;
    k->pool = pm_scratch_pool_new(nslots);
    if (!k->pool)
        return pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", k->sig->name);
    pm_status s = pm_engine_add_objects(jit->engine, split->parts, split->objects, split->sizes,
                                        unique, &k->code, err);
    void *address = NULL;
    double split_ms[2] = {0, 0};
    if (s == PM_OK) /* nothing left to compile: the lookup links */
        s = pm_engine_lookup_sized(jit->engine, unique, &address, &k->code_bytes, NULL,
                                   split_ms, err);
    stats->link_ms = split_ms[0] + split_ms[1];
    k->entry = (pm_kernel_entry)address;
    size_t total = 0;
    for (int p = 0; p < split->parts; p++)
        total += split->sizes[p];
    if (s == PM_OK && capture && (capture->object = malloc(total ? total : 1))) {
        memcpy(capture->object, split->objects, total);
        snprintf(capture->entry, sizeof capture->entry, "%s", unique);
        capture->nslots = nslots;
        capture->object_size = total;
        capture->nparts = split->parts;
        for (int p = 0; p < split->parts; p++)
            capture->part_sizes[p] = split->sizes[p];
    }
    return s;
}

/* Codegen and prepare, apart so that both paths start from one module: the kernel takes
 * the phase texts (those before llvm printed here, in phase order, with its name), the
 * module gets its unique entry name (codegen verified it). */
static pm_status codegen_kernel(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                                const pm_options *o, LLVMTargetMachineRef tm,
                                LLVMOrcThreadSafeContextRef tsctx, pm_kernel *k,
                                pm_codegen_result *r, char *unique, size_t unique_size,
                                pm_error *err)
{
    const char *name = k->sig->name;
    pm_status s = pm_codegen(p, estimates, o, tm, LLVMOrcThreadSafeContextGetContext(tsctx), r,
                             err);
    pm_compile_stats *stats = &k->stats;
    *stats = r->stats;
    for (int ph = 0; ph < PM_NPHASES; ph++) {
        k->text[ph] = r->text[ph];
        r->text[ph] = NULL;
        if (ph < PM_PHASE_LLVM)
            dump_phase(k, ph, o->dump_mask);
    }
    if (s == PM_OK && !r->module)
        s = pm_error_set(err, PM_ERR_INTERNAL, "%s: codegen returned no module", name);
    pm_engine_unique_name(jit->engine, name, unique, unique_size);
    if (s == PM_OK)
        s = pm_engine_prepare_module(r->module, tm, r->entry_name, unique, err);
    stats->compile_parts = 1;
    if (s == PM_OK)
        stats->ir_instructions_before = pm_engine_count_instructions(r->module, NULL);
    return s;
}

/* The optimized module's texts, apart because they are made only when kept (printing a
 * module costs as much as a pass) and printed when dumped. */
static void keep_module_texts(pm_kernel *k, LLVMModuleRef module, LLVMTargetMachineRef tm,
                              const pm_options *o)
{
    double t0 = now_ms();
    if (o->keep_mask & PM_DUMP_BIT(PM_PHASE_LLVM)) {
        k->text[PM_PHASE_LLVM] = take_llvm_string(LLVMPrintModuleToString(module));
        dump_phase(k, PM_PHASE_LLVM, o->dump_mask);
    }
    if (o->keep_mask & PM_DUMP_BIT(PM_PHASE_ASM)) {
        pm_error asm_err = {0};
        k->text[PM_PHASE_ASM] = pm_engine_emit_asm(module, tm, &asm_err);
        if (!k->text[PM_PHASE_ASM] && (o->dump_mask & PM_DUMP_BIT(PM_PHASE_ASM)))
            /* a dump is a courtesy: say why, go on */
            fprintf(stderr, "=== %s: asm unavailable: %s ===\n", k->sig->name, asm_err.message);
        dump_phase(k, PM_PHASE_ASM, o->dump_mask);
    }
    k->stats.dump_ms += now_ms() - t0;
}

/* The serial path after codegen, the counterpart of add_split_kernel: the passes, the
 * texts, the module under the kernel's tracker, and the lookup that compiles and links
 * it (capture, or NULL, receives the object). */
static pm_status add_serial_kernel(pm_jit *jit, pm_codegen_result *r, LLVMTargetMachineRef tm,
                                   LLVMOrcThreadSafeContextRef tsctx, const char *unique,
                                   const pm_options *o, pm_kernel *k, pm_disk_kernel *capture,
                                   pm_error *err)
{
    pm_compile_stats *stats = &k->stats;
    double t0 = now_ms();
    pm_status s = pm_engine_optimize(r->module, tm, o->opt_level, err);
    stats->llvm_opt_ms = now_ms() - t0;
    if (s == PM_OK) {
        stats->ir_instructions_after = pm_engine_count_instructions(r->module,
                                                                    &stats->ir_functions);
        keep_module_texts(k, r->module, tm, o);
        k->pool = pm_scratch_pool_new(r->nslots);
        if (!k->pool)
            s = pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", k->sig->name);
    }
    if (s == PM_OK) {
        LLVMModuleRef m = r->module;
        r->module = NULL; /* taken by the engine, freed by it even on failure */
        s = pm_engine_add_module(jit->engine, m, tsctx, &k->code, err);
    }
    void *address = NULL;
    double split_ms[2] = {0, 0};
    if (s == PM_OK)
        s = pm_engine_lookup_sized(jit->engine, unique, &address, &k->code_bytes,
                                   capture ? &capture->object : NULL, split_ms, err);
    stats->machine_code_ms = split_ms[0];
    stats->link_ms = split_ms[1];
    stats->llvm_wall_ms = stats->llvm_opt_ms + stats->machine_code_ms;
    k->entry = (pm_kernel_entry)address;
    if (s == PM_OK && capture && capture->object) {
        snprintf(capture->entry, sizeof capture->entry, "%s", unique);
        capture->nslots = r->nslots;
        capture->object_size = k->code_bytes;
        capture->nparts = 1;
        capture->part_sizes[0] = k->code_bytes;
    }
    return s;
}

/* The steps listed at the top of this file; k->sig is set. */
static pm_status compile_kernel(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                                const pm_options *o, pm_kernel *k,
                                pm_disk_kernel *capture, pm_error *err)
{
    LLVMTargetMachineRef tm = pm_engine_target_machine_new(jit->engine, o->opt_level, err);
    if (!tm)
        return err ? err->status : PM_ERR_INTERNAL;
    LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContext();
    pm_codegen_result r;
    char unique[160];
    pm_status s = codegen_kernel(jit, p, estimates, o, tm, tsctx, k, &r, unique, sizeof unique,
                                 err);
    /* The texts of the optimized module and its assembly are the one module's: a compile
     * that keeps them takes the serial path. Otherwise every module with two groups of
     * functions is split: on the fuzzer's kernels (seeds 1..60, 135 to 7400 IR
     * instructions, 2 threads) the split was faster at every size, 16 -> 13 ms at 135
     * instructions, 399 -> 239 ms at 7400; its fixed costs (bitcode written once and read
     * per part, a thread and target machines per part, one more object to link) were
     * about a millisecond there, 75 ms on local Laplacian's 125000 instructions. */
    unsigned texts = PM_DUMP_BIT(PM_PHASE_LLVM) | PM_DUMP_BIT(PM_PHASE_ASM);
    pm_split_result split = {.parts = 0};
    if (s == PM_OK && o->compile_threads > 1 && !(o->keep_mask & texts))
        s = pm_split_compile(jit->engine, r.module, unique, o->opt_level,
                             o->compile_threads, &split, err);
    if (s == PM_OK && split.parts > 0)
        s = add_split_kernel(jit, &split, unique, r.nslots, k, capture, err);
    else if (s == PM_OK)
        s = add_serial_kernel(jit, &r, tm, tsctx, unique, o, k, capture, err);
    free(split.objects);
    pm_codegen_result_free(&r);
    LLVMOrcDisposeThreadSafeContext(tsctx); /* an added module keeps its share */
    LLVMDisposeTargetMachine(tm);
    return s;
}

/* The totals of a compiled kernel's stats; PM_TIME=1 prints them. */
static void finish_stats(pm_kernel *k, bool timed)
{
    pm_compile_stats *s = &k->stats;
    s->total_ms = k->compile_ms;
    s->code_bytes = (int64_t)k->code_bytes;
    s->other_ms = s->total_ms - (s->isl_schedule_ms + s->isl_ast_ms + s->ir_build_ms +
                                 s->dump_ms + s->llvm_wall_ms + s->link_ms);
    if (timed)
        fprintf(stderr,
                "PM_TIME %s: total %.1f ms = isl schedule %.1f + isl ast %.1f + ir %.1f + "
                "llvm %.1f (passes %.1f + machine code %.1f in %lld part%s) + link %.1f + "
                "texts %.1f + other %.1f; "
                "IR %lld -> %lld instructions in %lld functions, %lld bytes of code\n",
                k->sig->name, s->total_ms, s->isl_schedule_ms, s->isl_ast_ms, s->ir_build_ms,
                s->llvm_wall_ms, s->llvm_opt_ms, s->machine_code_ms,
                (long long)s->compile_parts, s->compile_parts == 1 ? "" : "s", s->link_ms,
                s->dump_ms, s->other_ms,
                (long long)s->ir_instructions_before, (long long)s->ir_instructions_after,
                (long long)s->ir_functions, (long long)s->code_bytes);
}

/* A kernel from an object of the on-disk cache: the signature from the pipeline, the
 * code and entry from the object. */
static pm_status load_kernel(pm_jit *jit, pm_pipeline *p, const pm_disk_kernel *d,
                             pm_kernel *k, pm_error *err)
{
    k->sig = pm_signature_new(p);
    k->pool = k->sig ? pm_scratch_pool_new(d->nslots) : NULL;
    if (!k->sig || !k->pool)
        return pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", p->name);
    pm_status s = pm_engine_add_objects(jit->engine, d->nparts, d->object, d->part_sizes,
                                        d->entry, &k->code, err);
    void *address = NULL;
    if (s == PM_OK)
        s = pm_engine_lookup_sized(jit->engine, d->entry, &address, &k->code_bytes, NULL, NULL,
                                   err);
    k->entry = (pm_kernel_entry)address;
    return s;
}

/* What a failed load leaves to free before compiling afresh. */
static void unload_kernel(pm_kernel *k)
{
    pm_engine_code_free(k->code);
    pm_scratch_pool_free(k->pool);
    pm_signature_free(k->sig);
    k->code = NULL;
    k->pool = NULL;
    k->sig = NULL;
    k->entry = NULL;
    k->code_bytes = 0;
}

/* The kernel of `disk`'s key from the folder, if there is a valid one; else notes what
 * was found there (rejected, untrusted) and returns false. */
static bool load_from_disk(pm_jit *jit, pm_pipeline *p, const pm_disk_request *disk,
                           pm_kernel *k, double t0)
{
    pm_disk_kernel d;
    pm_disk_result r = pm_disk_read(disk->dir, disk->key, disk->key_len, &d);
    if (r == PM_DISK_HIT) {
        pm_error load_err;
        pm_error_clear(&load_err);
        if (load_kernel(jit, p, &d, k, &load_err) == PM_OK) {
            free(d.object);
            k->from_disk = true;
            k->compile_ms = now_ms() - t0;
            k->stats = (pm_compile_stats){.total_ms = k->compile_ms,
                                          .code_bytes = (int64_t)k->code_bytes,
                                          .from_disk = 1,
                                          .compile_parts = d.nparts};
            return true;
        }
        unload_kernel(k); /* valid file, but not loadable here: compile */
        r = PM_DISK_REJECTED;
    }
    free(d.object);
    k->disk_rejected = r == PM_DISK_REJECTED;
    k->disk_untrusted = r == PM_DISK_UNTRUSTED;
    return false;
}

/* Compiles in this process; capture (or NULL) receives the objects. */
static pm_status build_here(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                            const pm_options *options, pm_kernel *k,
                            pm_disk_kernel *capture, pm_error *error)
{
    k->sig = pm_signature_new(p);
    if (!k->sig)
        return pm_error_set(error,
                            pm_ctx_status(p->ctx) != PM_OK ? pm_ctx_status(p->ctx) : PM_ERR_NOMEM,
                            "%s", pm_ctx_errmsg(p->ctx)[0] ? pm_ctx_errmsg(p->ctx)
                                                           : "pm_jit_compile: out of memory");
    return compile_kernel(jit, p, estimates, options, k, capture, error);
}

/* Compiles in a helper process (runtime/isolate.h), then loads its objects like a disk
 * cache file; capture receives them. */
static pm_status build_isolated(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                                const pm_options *options, pm_kernel *k,
                                pm_disk_kernel *capture, pm_error *error)
{
    pm_isolate_limits limits = {.helper = jit->helper,
                                .seconds = jit->settings.compile_seconds,
                                .memory_bytes = jit->settings.compile_memory_bytes,
                                .compile_threads = jit->settings.compile_threads,
                                .opt_level = jit->settings.opt_level};
    pm_compile_stats stats;
    pm_status s = pm_isolate_compile(&limits, p, estimates, options, capture, &stats, error);
    if (s == PM_OK)
        s = load_kernel(jit, p, capture, k, error);
    if (s == PM_OK)
        k->stats = stats;
    k->isolated = true;
    pthread_mutex_lock(&jit->lock);
    jit->stats.isolated_compiles++;
    jit->stats.isolated_failures += s != PM_OK;
    pthread_mutex_unlock(&jit->lock);
    return s;
}

pm_kernel *pm_jit_build_kernel(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                               const pm_options *options, const pm_disk_request *disk,
                               pm_error *error)
{
    double t0 = now_ms();
    pm_kernel *k = pm_kernel_begin(jit, options, p->name, error);
    if (!k)
        return NULL;
    if (disk && disk->upgraded_key) { /* a restart loads the best tier on disk */
        pm_disk_request up = *disk;
        up.key = disk->upgraded_key;
        up.key_len = disk->upgraded_key_len;
        if (load_from_disk(jit, p, &up, k, t0)) {
            k->upgraded = true;
            return k;
        }
    }
    if (disk && load_from_disk(jit, p, disk, k, t0))
        return k;
    /* Phase texts come only from a compile in this process. */
    bool isolated = jit->helper && options->keep_mask == 0;
    pm_disk_kernel capture = {.object = NULL};
    pm_status s = isolated ? build_isolated(jit, p, estimates, options, k, &capture, error)
                           : build_here(jit, p, estimates, options, k, disk ? &capture : NULL,
                                        error);
    if (s != PM_OK) {
        free(capture.object);
        k->next_dropped = NULL;
        pm_jit_drop_kernels(jit, k);
        return NULL;
    }
    k->compile_ms = now_ms() - t0;
    finish_stats(k, options->timed);
    if (disk && capture.object)
        k->disk_written = pm_disk_write(disk->dir, disk->key, disk->key_len, &capture,
                                        disk->max_bytes);
    free(capture.object);
    return k;
}

pm_status pm_jit_compile_object(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                                const pm_options *options, pm_disk_kernel *out,
                                pm_compile_stats *stats, pm_error *err)
{
    double t0 = now_ms();
    memset(out, 0, sizeof *out);
    pm_kernel *k = pm_kernel_begin(jit, options, p->name, err);
    if (!k)
        return err->status;
    pm_status s = build_here(jit, p, estimates, options, k, out, err);
    if (s == PM_OK && !out->object)
        s = pm_error_set(err, PM_ERR_INTERNAL, "%s: the compile kept no object", p->name);
    if (s == PM_OK) {
        k->compile_ms = now_ms() - t0;
        finish_stats(k, options->timed);
        *stats = k->stats;
    } else {
        free(out->object);
        out->object = NULL;
    }
    k->next_dropped = NULL;
    pm_jit_drop_kernels(jit, k);
    return s;
}
