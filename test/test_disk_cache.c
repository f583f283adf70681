/* test_disk_cache.c — the on-disk object cache (runtime/disk_cache.h; polymage.h, "The
 * on-disk object cache"):
 *  - a kernel compiled by one jit is written once; a new jit (a restarted process: its
 *    own engine and symbol names) loads it instead of compiling, and it runs right;
 *  - two processes compiling the same key into one folder at once leave one valid file
 *    and no temporary ones;
 *  - files truncated, emptied, corrupted in the object, with another format version,
 *    with another key's contents, or random bytes are rejected, never loaded, and
 *    replaced by a valid file;
 *  - kernels compiled with dumps are neither written nor read; the folder's bound removes
 *    files; policy errors;
 *  - a kernel compiled in parts (compile_threads = 2: several objects in one file) loads
 *    in a new jit with its parts, computes bit-identical outputs, and a file damaged in
 *    its last part is rejected.
 * Every kernel's output is compared with the interpreter's.
 */
/* mkdtemp, fork: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "samples.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char folder[256];

/* out(x, y) = I(x, y) * 2 + I(x + 1, y) over 0 <= x <= R-2, 0 <= y < C (f32). */
static pm_pipeline *build_pipe(pm_ctx *ctx)
{
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_F32, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *out = pm_func_new(ctx, "twice", PM_F32, 2, pm_exprs(x, y),
                               pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(R, -2), 1),
                                            pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1)));
    pm_func_define_expr(out, pm_add(pm_mulf(pm_call(I, x, y), 2.0), pm_call(I, pm_addi(x, 1), y)));
    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "twice", 2, pm_exprs(R, C), 1, (pm_func *const[]){I}, 1,
                    (pm_func *const[]){out}, &p);
    return p;
}

static bool runs_right(pm_kernel *k, pm_pipeline *p, int64_t rows, int64_t cols)
{
    pm_value params[2] = {PM_I(rows), PM_I(cols)};
    pm_buffer in = check_buffer_new(PM_F32, 2, (int64_t[]){rows, cols});
    pm_buffer want = check_buffer_new(PM_F32, 2, (int64_t[]){rows - 1, cols});
    pm_buffer got = check_buffer_new(PM_F32, 2, (int64_t[]){rows - 1, cols});
    check_fill(&in, 7u, false);
    pm_error err;
    bool ok = pm_interpret(p, params, &in, &want) == PM_OK &&
              pm_kernel_run(k, params, &in, &got, &err) == PM_OK &&
              check_buffer_maxdiff(&want, &got) <= 1e-6;
    check_buffer_free(&in);
    check_buffer_free(&want);
    check_buffer_free(&got);
    return ok;
}

static pm_jit *new_jit(const char *dir, int64_t max_bytes)
{
    pm_jit_options o = pm_jit_options_default();
    o.opt_level = 1;
    pm_error err;
    pm_jit *jit = pm_jit_new(&o, &err);
    if (!CHECK(jit != NULL))
        return NULL;
    pm_cache_policy policy = pm_cache_policy_default();
    policy.disk_dir = dir;
    if (max_bytes > 0)
        policy.disk_max_bytes = max_bytes;
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_OK);
    return jit;
}

static pm_cache_stats stats_of(pm_jit *jit)
{
    pm_cache_stats s;
    memset(&s, 0, sizeof s);
    pm_jit_stats(jit, &s, sizeof s);
    return s;
}

/* Kernel files (*.pmk) and temporary files in the folder; the path of the last .pmk. */
static int count_files(const char *dir, int *temps, char *last, size_t size)
{
    int n = 0;
    *temps = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (strstr(de->d_name, ".tmp."))
            (*temps)++;
        else if (len > 4 && strcmp(de->d_name + len - 4, ".pmk") == 0) {
            n++;
            if (last)
                snprintf(last, size, "%s/%s", dir, de->d_name);
        }
    }
    if (d)
        closedir(d);
    return n;
}

static void clear_folder(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        char path[512];
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
}

/* Compiles the pipeline at 64 x 64 in a fresh jit on `dir`; returns the stats. */
static pm_cache_stats compile_once(const char *dir, bool *ran_right)
{
    pm_cache_stats s;
    memset(&s, 0, sizeof s);
    pm_jit *jit = new_jit(dir, 0);
    if (!jit)
        return s;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_pipe(ctx);
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(64), PM_I(64)}, NULL, &err);
    *ran_right = k && runs_right(k, p, 33, 17);
    s = stats_of(jit);
    pm_kernel_free(k);
    pm_ctx_free(ctx);
    pm_jit_free(jit);
    return s;
}

/* Two processes compile the same key into an empty folder at once. Runs before this
 * process makes any thread (fork copies only the calling thread). */
static void test_two_processes(void)
{
    pid_t pids[2];
    for (int i = 0; i < 2; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            bool ok = false;
            pm_cache_stats s = compile_once(folder, &ok);
            _exit(ok && s.disk_hits + s.sync_compiles == 1 ? 0 : 1);
        }
    }
    for (int i = 0; i < 2; i++) {
        int status = 0;
        CHECK(pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    int temps;
    CHECK(count_files(folder, &temps, NULL, 0) == 1 && temps == 0);
    bool ok = false;
    pm_cache_stats s = compile_once(folder, &ok); /* a third process: warm */
    CHECK(ok && s.disk_hits == 1 && s.sync_compiles == 0 && s.disk_rejected == 0);
    clear_folder(folder);
}

static void test_restart(void)
{
    bool ok = false;
    pm_cache_stats s = compile_once(folder, &ok);
    CHECK(ok && s.sync_compiles == 1 && s.disk_writes == 1 && s.disk_hits == 0);
    int temps;
    CHECK(count_files(folder, &temps, NULL, 0) == 1 && temps == 0);

    /* "Restarted": a new jit, a new context; loads, runs, has no phase texts. */
    pm_jit *jit = new_jit(folder, 0);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_pipe(ctx);
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(66), PM_I(70)}, NULL, &err);
    s = stats_of(jit);
    CHECK(k != NULL && s.disk_hits == 1 && s.sync_compiles == 0 && s.disk_writes == 0);
    CHECK(s.code_bytes > 0);
    if (k) {
        CHECK(runs_right(k, p, 64, 64));
        CHECK(runs_right(k, p, 5, 200));
        CHECK(pm_kernel_dump(k, "llvm") == NULL);
    }
    /* The serving call finds it cached in memory now. */
    pm_value params[2] = {PM_I(64), PM_I(64)};
    pm_buffer in = check_buffer_new(PM_F32, 2, (int64_t[]){64, 64});
    pm_buffer out = check_buffer_new(PM_F32, 2, (int64_t[]){63, 64});
    CHECK_STATUS(pm_jit_run(jit, p, NULL, params, &in, &out, &err), PM_OK);
    CHECK(stats_of(jit).hits == 1);
    check_buffer_free(&in);
    check_buffer_free(&out);
    /* Another bucket: compiled and written. */
    pm_kernel *k2 = pm_jit_compile(jit, p, (pm_value[]){PM_I(300), PM_I(70)}, NULL, &err);
    s = stats_of(jit);
    CHECK(k2 != NULL && s.sync_compiles == 1 && s.disk_writes == 1);
    CHECK(count_files(folder, &temps, NULL, 0) == 2);
    /* A dump asked for: neither read nor written. */
    pm_compile_options co = pm_compile_options_default();
    co.dump = "graph";
    pm_kernel *k3 = pm_jit_compile(jit, p, (pm_value[]){PM_I(64), PM_I(64)}, &co, &err);
    s = stats_of(jit);
    CHECK(k3 != NULL && s.sync_compiles == 2 && s.disk_writes == 1 && s.disk_hits == 1);
    CHECK(k3 && pm_kernel_dump(k3, "graph") != NULL);
    pm_kernel_free(k);
    pm_kernel_free(k2);
    pm_kernel_free(k3);
    pm_ctx_free(ctx);
    pm_jit_free(jit);
    clear_folder(folder);
}

/* pm_jit_run at 64 x 64 n times; true when every run succeeded. */
static bool serve_runs(pm_jit *jit, pm_pipeline *p, const pm_compile_options *co, int n)
{
    pm_value params[2] = {PM_I(64), PM_I(64)};
    pm_buffer in = check_buffer_new(PM_F32, 2, (int64_t[]){64, 64});
    pm_buffer out = check_buffer_new(PM_F32, 2, (int64_t[]){63, 64});
    pm_error err;
    bool ok = true;
    for (int i = 0; i < n; i++)
        ok = CHECK_STATUS(pm_jit_run(jit, p, co, params, &in, &out, &err), PM_OK) && ok;
    check_buffer_free(&in);
    check_buffer_free(&out);
    return ok;
}

/* The default grouping is tiered: pm_jit_run's first compile is the capped DP's; its
 * eighth hit queues the full DP's compile, once, which replaces it in its entry (an
 * upgrade) and is written to disk beside it. A restarted jit loads the upgrade and queues
 * nothing; with the grouping given (the capped DP), nothing is upgraded. */
static void test_tiered_upgrade(void)
{
    clear_folder(folder);
    pm_jit *jit = new_jit(folder, 0);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_pipe(ctx);
    int temps;
    if (jit && p && serve_runs(jit, p, NULL, 8)) { /* a miss, 7 hits */
        pm_jit_wait_idle(jit);
        pm_cache_stats s = stats_of(jit);
        CHECK(s.sync_compiles == 1 && s.background_compiles == 0 && s.upgrades == 0);
        serve_runs(jit, p, NULL, 1);
        pm_jit_wait_idle(jit);
        s = stats_of(jit);
        CHECK(s.sync_compiles == 1 && s.background_compiles == 1 && s.upgrades == 1);
        CHECK(s.disk_writes == 2 && count_files(folder, &temps, NULL, 0) == 2);
        serve_runs(jit, p, NULL, 10); /* the upgraded kernel: nothing more to do */
        pm_jit_wait_idle(jit);
        s = stats_of(jit);
        CHECK(s.background_compiles == 1 && s.upgrades == 1 && s.kernels == 1);
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(64), PM_I(64)}, NULL, &err);
        CHECK(k && runs_right(k, p, 33, 17));
        pm_kernel_free(k);
    }
    pm_jit_free(jit);
    jit = new_jit(folder, 0);
    if (jit && p && serve_runs(jit, p, NULL, 12)) {
        pm_jit_wait_idle(jit);
        pm_cache_stats s = stats_of(jit);
        CHECK(s.disk_hits == 1 && s.sync_compiles == 0 && s.background_compiles == 0 &&
              s.upgrades == 0);
        pm_compile_options co = pm_compile_options_default();
        co.grouping = PM_GROUPING_DP_CAPPED;
        serve_runs(jit, p, &co, 12);
        pm_jit_wait_idle(jit);
        s = stats_of(jit);
        CHECK(s.sync_compiles == 1 && s.background_compiles == 0 && s.upgrades == 0);
    }
    pm_jit_free(jit);
    pm_ctx_free(ctx);
    clear_folder(folder);
}

/* Damages the one kernel file as told, then a new jit must reject it, compile, run
 * right and write a valid file (which the next jit loads). */
typedef enum damage {
    TRUNCATE_HALF, EMPTY, FLIP_OBJECT_BYTE, OTHER_VERSION, OTHER_KEY, RANDOM_BYTES
} damage;

static void damage_file(const char *path, damage how, const char *other_key_file)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    static unsigned char data[1 << 22];
    size_t n = fread(data, 1, sizeof data, f);
    fclose(f);
    if (how == OTHER_KEY) { /* a valid file of another key, under this key's name */
        f = fopen(other_key_file, "rb");
        n = f ? fread(data, 1, sizeof data, f) : 0;
        if (f)
            fclose(f);
    }
    switch (how) {
    case TRUNCATE_HALF: n /= 2; break;
    case EMPTY: n = 0; break;
    case FLIP_OBJECT_BYTE: data[n - 100] ^= 0x40; break; /* inside the object */
    case OTHER_VERSION: data[8] ^= 1; break;             /* the format version */
    case RANDOM_BYTES:
        for (size_t i = 0; i < n; i++)
            data[i] = (unsigned char)(i * 2654435761u >> 13);
        break;
    default: break;
    }
    f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static void test_damaged_files(void)
{
    /* A file of another key (another bucket) to copy over. */
    char other[512] = "", path[512] = "";
    int temps;
    {
        pm_jit *jit = new_jit(folder, 0);
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = build_pipe(ctx);
        pm_error err;
        pm_kernel_free(pm_jit_compile(jit, p, (pm_value[]){PM_I(900), PM_I(900)}, NULL, &err));
        pm_ctx_free(ctx);
        pm_jit_free(jit);
        count_files(folder, &temps, path, sizeof path);
        snprintf(other, sizeof other, "%s.other", path);
        CHECK(rename(path, other) == 0);
    }
    bool ok = false;
    compile_once(folder, &ok);
    CHECK(ok && count_files(folder, &temps, path, sizeof path) == 1);
    damage kinds[] = {TRUNCATE_HALF, EMPTY, FLIP_OBJECT_BYTE, OTHER_VERSION, OTHER_KEY,
                      RANDOM_BYTES};
    const char *names[] = {"truncated", "empty", "flipped object byte", "other version",
                           "other key", "random bytes"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        damage_file(path, kinds[i], other);
        pm_cache_stats s = compile_once(folder, &ok);
        if (!CHECK(ok && s.disk_rejected == 1 && s.disk_hits == 0 && s.sync_compiles == 1 &&
                   s.disk_writes == 1))
            fprintf(stderr, "  %s: rejected %llu, hits %llu, compiles %llu, writes %llu\n",
                    names[i], (unsigned long long)s.disk_rejected,
                    (unsigned long long)s.disk_hits, (unsigned long long)s.sync_compiles,
                    (unsigned long long)s.disk_writes);
        s = compile_once(folder, &ok); /* replaced by a valid file */
        CHECK(ok && s.disk_hits == 1 && s.sync_compiles == 0 && s.disk_rejected == 0);
    }
    unlink(other);
    clear_folder(folder);
}

/* camera pipe at its quick size: compiled in 2 parts (several groups), kept on disk. */
static pm_kernel *split_kernel(pm_jit **jit, int compile_threads, pm_ctx **ctx, pm_pipeline **p,
                               pm_value *params)
{
    pm_jit_options o = pm_jit_options_default();
    o.compile_threads = compile_threads;
    pm_error err;
    *jit = pm_jit_new(&o, &err);
    *ctx = pm_ctx_new();
    *p = pm_sample_camera_pipe.build(*ctx);
    if (!CHECK(*jit != NULL && *p != NULL))
        return NULL;
    pm_cache_policy policy = pm_cache_policy_default();
    policy.disk_dir = folder;
    CHECK_STATUS(pm_jit_set_policy(*jit, &policy, &err), PM_OK);
    pm_sample_camera_pipe.params(pm_sample_camera_pipe.quick_rows,
                                 pm_sample_camera_pipe.quick_cols, params);
    pm_kernel *k = pm_jit_compile(*jit, *p, params, NULL, &err);
    if (!CHECK(k != NULL))
        fprintf(stderr, "  camera_pipe: %s\n", err.message);
    return k;
}

/* Runs camera pipe's kernel; a malloc'd copy of output 0 (data NULL on failure). */
static pm_buffer run_split(pm_kernel *k, pm_pipeline *p, const pm_value *params)
{
    int nin = pm_pipeline_ninputs(p);
    pm_buffer in[4];
    for (int i = 0; i < nin && i < 4; i++) {
        in[i] = pm_sample_buffer(p, 0, i, params);
        pm_sample_camera_pipe.fill_input(i, &in[i], params);
    }
    pm_buffer out = pm_sample_buffer(p, 1, 0, params);
    pm_buffer want = pm_sample_buffer(p, 1, 0, params);
    pm_error err = {.status = PM_OK, .message = "more inputs or outputs than this test has"};
    pm_status s = nin <= 4 && pm_pipeline_noutputs(p) == 1 ? pm_kernel_run(k, params, in, &out, &err)
                                                          : PM_ERR_INTERNAL;
    if (s != PM_OK)
        fprintf(stderr, "  camera_pipe: %s\n", err.message);
    if (!CHECK(s == PM_OK && pm_interpret(p, params, in, &want) == PM_OK &&
               pm_sample_buffer_maxdiff(&want, &out) <= pm_sample_camera_pipe.tolerance)) {
        free(out.data);
        out.data = NULL;
    }
    for (int i = 0; i < nin && i < 4; i++)
        free(in[i].data);
    free(want.data);
    return out;
}

static void test_split_kernel(void)
{
    pm_jit *jit;
    pm_ctx *ctx;
    pm_pipeline *p;
    pm_value params[8];
    pm_kernel *k = split_kernel(&jit, 2, &ctx, &p, params);
    pm_compile_stats st = {0};
    pm_buffer first = {0};
    if (k) {
        pm_kernel_compile_stats(k, &st, sizeof st);
        CHECK(st.compile_parts == 2 && st.from_disk == 0);
        CHECK(stats_of(jit).disk_writes == 1);
        first = run_split(k, p, params);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
    pm_jit_free(jit);
    int temps;
    char path[512] = "";
    CHECK(count_files(folder, &temps, path, sizeof path) == 1 && temps == 0);

    /* A new jit (serial itself: loading needs no threads) loads both parts. */
    k = split_kernel(&jit, 1, &ctx, &p, params);
    if (k) {
        pm_kernel_compile_stats(k, &st, sizeof st);
        CHECK(st.from_disk == 1 && st.compile_parts == 2 && st.code_bytes > 0);
        CHECK(stats_of(jit).disk_hits == 1 && stats_of(jit).sync_compiles == 0);
        pm_buffer again = run_split(k, p, params);
        CHECK(first.data && again.data &&
              memcmp(first.data, again.data,
                     (size_t)pm_sample_buffer_count(&again) * pm_type_size(again.type)) == 0);
        free(again.data);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
    pm_jit_free(jit);

    /* A byte of the last part flipped: rejected, compiled again (in parts), rewritten. */
    FILE *f = fopen(path, "r+b");
    if (CHECK(f != NULL)) {
        fseek(f, -100, SEEK_END);
        int c = fgetc(f);
        fseek(f, -100, SEEK_END);
        fputc(c ^ 0x40, f);
        fclose(f);
    }
    k = split_kernel(&jit, 2, &ctx, &p, params);
    if (k) {
        pm_cache_stats s = stats_of(jit);
        CHECK(s.disk_rejected == 1 && s.sync_compiles == 1 && s.disk_writes == 1);
        pm_buffer again = run_split(k, p, params);
        CHECK(again.data != NULL);
        free(again.data);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
    pm_jit_free(jit);
    free(first.data);
    clear_folder(folder);
}

static void test_bound_and_policy(void)
{
    /* A bound smaller than one file keeps none; the kernels still work. */
    pm_jit *jit = new_jit(folder, 1);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_pipe(ctx);
    pm_error err;
    for (int i = 0; i < 3; i++) {
        pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(16 << (2 * i)), PM_I(64)}, NULL,
                                      &err);
        CHECK(k && runs_right(k, p, 20, 20));
        pm_kernel_free(k);
    }
    int temps;
    CHECK(count_files(folder, &temps, NULL, 0) == 0 && temps == 0);
    CHECK(stats_of(jit).disk_writes == 3);
    /* A generous bound keeps them all. */
    pm_cache_policy policy = pm_cache_policy_default();
    policy.disk_dir = folder;
    policy.max_kernels = 0; /* nothing kept in memory: every compile goes to the folder */
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_OK);
    for (int i = 0; i < 3; i++)
        pm_kernel_free(pm_jit_compile(jit, p, (pm_value[]){PM_I(16 << (2 * i)), PM_I(64)}, NULL,
                                      &err));
    CHECK(count_files(folder, &temps, NULL, 0) == 3);
    for (int i = 0; i < 3; i++) /* evicted from memory, back from the folder */
        pm_kernel_free(pm_jit_compile(jit, p, (pm_value[]){PM_I(16 << (2 * i)), PM_I(64)}, NULL,
                                      &err));
    CHECK(stats_of(jit).disk_hits == 3);
    policy.disk_max_bytes = -1;
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "disk_max_bytes");
    /* A folder that cannot be made is an error naming it, not a silent "off"; the jit
     * keeps its policy, and compiles go on. */
    policy = pm_cache_policy_default();
    policy.disk_dir = "/proc/no/such/folder";
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "pm_jit_set_policy: disk_dir \"/proc/no/such/folder\" is not "
                                "used: it cannot be made");
    pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(5000), PM_I(64)}, NULL, &err);
    CHECK(k && runs_right(k, p, 9, 9));
    CHECK(stats_of(jit).disk_writes == 7); /* the folder kept: the new size written */
    pm_kernel_free(k);
    pm_ctx_free(ctx);
    pm_jit_free(jit);
    clear_folder(folder);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(folder, sizeof folder, "%s/pm_disk_cache_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!CHECK(mkdtemp(folder) != NULL))
        return check_finish("disk_cache");
    test_two_processes();
    test_restart();
    test_tiered_upgrade();
    test_damaged_files();
    test_split_kernel();
    test_bound_and_policy();
    rmdir(folder);
    return check_finish("disk_cache");
}
