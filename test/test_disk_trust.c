/* test_disk_trust.c — the disk cache trusts no one else (runtime/disk_cache.h, "Trust";
 * docs/server.md):
 *  - folders: a missing one is made with its missing parents, mode 0700; a folder
 *    writable by group or others, owned by another user, below a folder others may write
 *    (unless sticky), or not a folder at all is refused by pm_jit_set_policy, and through
 *    PM_CACHE_DIR by pm_jit_new, naming the folder (or the variable) and the reason; a
 *    folder opened up after it was set is no longer read or written;
 *  - files at a kernel's name that are not this user's regular, private-to-write,
 *    bounded files (group-writable, another owner's, a symlink, a FIFO, a device, a
 *    sparse 300 MB file) are never read: counted in disk_untrusted, the kernel compiled
 *    afresh and right, the name replaced by a valid file the next jit loads; none of
 *    them blocks (each case is timed, and an alarm ends a hang).
 * Cases that need root (chown to nobody, a device node) say so when skipped.
 */
/* mkdtemp, mkfifo, mknod, symlink, setenv: POSIX / XSI, not C11. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE

#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static char base[256];
enum { NOBODY = 65534 };

/* sum(x) = 3 * I(x) - I(x + 1) over 0 <= x <= N-2 (i32). */
static pm_pipeline *build(pm_ctx *ctx)
{
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_expr *x = pm_var(ctx, "x");
    pm_func *f = pm_func_new(ctx, "trusted", PM_I32, 1, pm_exprs(x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(N, -2), 1)));
    pm_func_define_expr(f, pm_sub(pm_mul(pm_int(ctx, 3), pm_call(I, x)), pm_call(I, pm_addi(x, 1))));
    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "trusted", 1, pm_exprs(N), 1, (pm_func *const[]){I}, 1,
                    (pm_func *const[]){f}, &p);
    return p;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A fresh jit on `dir` compiles and runs the pipeline; its stats. *right: output equals
 * the interpreter's. */
static pm_cache_stats compile_in(const char *dir, bool *right)
{
    pm_cache_stats s;
    memset(&s, 0, sizeof s);
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    pm_cache_policy policy = pm_cache_policy_default();
    policy.disk_dir = dir;
    *right = false;
    if (!CHECK(jit != NULL) || !CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_OK)) {
        fprintf(stderr, "  %s: %s\n", dir, err.message);
        pm_jit_free(jit);
        return s;
    }
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build(ctx);
    pm_value n = PM_I(37);
    pm_kernel *k = pm_jit_compile(jit, p, &n, NULL, &err);
    pm_buffer in = check_buffer_new(PM_I32, 1, (int64_t[]){37});
    pm_buffer want = check_buffer_new(PM_I32, 1, (int64_t[]){36});
    pm_buffer got = check_buffer_new(PM_I32, 1, (int64_t[]){36});
    check_fill(&in, 3u, true);
    *right = k && pm_interpret(p, &n, &in, &want) == PM_OK &&
             pm_kernel_run(k, &n, &in, &got, &err) == PM_OK && check_buffer_maxdiff(&want, &got) == 0;
    pm_jit_stats(jit, &s, sizeof s);
    check_buffer_free(&in);
    check_buffer_free(&want);
    check_buffer_free(&got);
    pm_kernel_free(k);
    pm_ctx_free(ctx);
    pm_jit_free(jit);
    return s;
}

/* The path of the folder's one kernel file into path; false when there is not one. */
static bool kernel_file(const char *dir, char *path, size_t size)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len > 4 && strcmp(de->d_name + len - 4, ".pmk") == 0 && !strstr(de->d_name, ".tmp.")) {
            snprintf(path, size, "%s/%s", dir, de->d_name);
            n++;
        }
    }
    if (d)
        closedir(d);
    return n == 1;
}

static void path_in(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", base, name);
}

/* set_policy on dir: the status, and the message contains `want` when refused. */
static void expect_refused(const char *dir, const char *want)
{
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    pm_cache_policy policy = pm_cache_policy_default();
    policy.disk_dir = dir;
    if (!CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_ERR_ARGUMENT))
        fprintf(stderr, "  %s was accepted\n", dir);
    CHECK_CONTAINS(err.message, "pm_jit_set_policy: disk_dir \"");
    CHECK_CONTAINS(err.message, dir);
    CHECK_CONTAINS(err.message, want);
    pm_jit_free(jit);
}

static void test_folders(void)
{
    char dir[512], open_dir[512];
    /* Missing, with missing parents: made, 0700. */
    path_in(dir, sizeof dir, "a/b/c");
    bool right;
    pm_cache_stats s = compile_in(dir, &right);
    struct stat st;
    CHECK(right && s.disk_writes == 1);
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    path_in(open_dir, sizeof open_dir, "a");
    CHECK(stat(open_dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    /* Writable by group, by others. */
    chmod(dir, 0770);
    expect_refused(dir, "is writable by group or others");
    chmod(dir, 0702);
    expect_refused(dir, "is writable by group or others (owner uid");
    chmod(dir, 0700);
    /* Below a folder others may write: refused, unless that folder is sticky (/tmp). */
    path_in(open_dir, sizeof open_dir, "a/b");
    chmod(open_dir, 0777);
    expect_refused(dir, "the folder above it, ");
    chmod(open_dir, 01777);
    s = compile_in(dir, &right);
    CHECK(right && s.disk_hits == 1);
    chmod(open_dir, 0700);
    /* Not a folder. */
    path_in(open_dir, sizeof open_dir, "plain");
    FILE *f = fopen(open_dir, "w");
    if (f)
        fclose(f);
    expect_refused(open_dir, "is not a folder");
    /* Another user's. */
    if (geteuid() == 0) {
        CHECK(chown(dir, NOBODY, NOBODY) == 0);
        expect_refused(dir, "is owned by another user (owner uid 65534");
        CHECK(chown(dir, 0, 0) == 0);
    } else {
        printf("disk_trust: skipped a folder owned by nobody (needs root to chown)\n");
    }
    /* Opened up after the policy was set: no longer read or written. */
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    pm_cache_policy policy = pm_cache_policy_default();
    policy.disk_dir = dir;
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_OK);
    chmod(dir, 0777);
    pm_ctx *ctx = pm_ctx_new();
    pm_value n = PM_I(5000);
    pm_kernel *k = pm_jit_compile(jit, build(ctx), &n, NULL, &err);
    CHECK(k != NULL);
    pm_cache_stats js;
    pm_jit_stats(jit, &js, sizeof js);
    CHECK(js.disk_writes == 0 && js.sync_compiles == 1);
    chmod(dir, 0700);
    pm_kernel_free(k);
    pm_ctx_free(ctx);
    pm_jit_free(jit);
}

/* PM_CACHE_DIR is checked by pm_jit_new the same way, and named. */
static void test_environment(void)
{
    char dir[512];
    path_in(dir, sizeof dir, "env_open");
    mkdir(dir, 0700);
    chmod(dir, 0777);
    setenv("PM_CACHE_DIR", dir, 1);
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    CHECK(jit == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "pm_jit_new: PM_CACHE_DIR \"");
    CHECK_CONTAINS(err.message, "is writable by group or others");
    pm_jit_free(jit);
    chmod(dir, 0700);
    jit = pm_jit_new(NULL, &err);
    CHECK(jit != NULL);
    pm_jit_free(jit);
    unsetenv("PM_CACHE_DIR");
}

typedef enum planted { GROUP_WRITABLE, NOBODYS, SYMLINK, FIFO, DEVICE, HUGE_SPARSE } planted;
static const char *const planted_names[] = {"group-writable", "nobody's", "symlink", "FIFO",
                                            "device", "sparse 300 MB"};

/* Puts `what` at the kernel's name (a valid kernel file is at `valid`); false to skip. */
static bool plant(planted what, const char *path, const char *valid)
{
    char copy[1300];
    snprintf(copy, sizeof copy, "cp '%s' '%s'", valid, path);
    unlink(path);
    switch (what) {
    case GROUP_WRITABLE:
        return system(copy) == 0 && chmod(path, 0664) == 0;
    case NOBODYS:
        return geteuid() == 0 && system(copy) == 0 && chown(path, NOBODY, NOBODY) == 0;
    case SYMLINK:
        return symlink(valid, path) == 0;
    case FIFO:
        return mkfifo(path, 0600) == 0;
    case DEVICE: /* /dev/null's numbers */
        return geteuid() == 0 && mknod(path, S_IFCHR | 0600, makedev(1, 3)) == 0;
    case HUGE_SPARSE:
        return system(copy) == 0 && truncate(path, (off_t)300 << 20) == 0;
    }
    return false;
}

static void test_files(void)
{
    char dir[512], valid[300], path[600];
    path_in(dir, sizeof dir, "files");
    bool right;
    pm_cache_stats s = compile_in(dir, &right);
    CHECK(right && s.disk_writes == 1);
    if (!CHECK(kernel_file(dir, path, sizeof path)))
        return;
    snprintf(valid, sizeof valid, "%s/valid.pmk", base); /* outside the folder */
    char copy[1300];
    snprintf(copy, sizeof copy, "cp '%s' '%s'", path, valid);
    CHECK(system(copy) == 0);
    alarm(120); /* a hang fails the test instead of stalling the suite */
    for (int w = GROUP_WRITABLE; w <= HUGE_SPARSE; w++) {
        if (!plant((planted)w, path, valid)) {
            printf("disk_trust: skipped the %s file (%s)\n", planted_names[w],
                   geteuid() == 0 ? strerror(errno) : "needs root");
            continue;
        }
        double t0 = now_s();
        s = compile_in(dir, &right);
        double took = now_s() - t0;
        if (!CHECK(right && s.disk_untrusted == 1 && s.disk_hits == 0 && s.sync_compiles == 1 &&
                   s.disk_writes == 1 && took < 10))
            fprintf(stderr, "  %s: untrusted %llu, hits %llu, compiles %llu, writes %llu, %.1f s\n",
                    planted_names[w], (unsigned long long)s.disk_untrusted,
                    (unsigned long long)s.disk_hits, (unsigned long long)s.sync_compiles,
                    (unsigned long long)s.disk_writes, took);
        s = compile_in(dir, &right); /* replaced by a valid file of this user */
        CHECK(right && s.disk_hits == 1 && s.sync_compiles == 0 && s.disk_untrusted == 0);
    }
    alarm(0);
    unlink(valid);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s/pm_disk_trust_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!CHECK(mkdtemp(base) != NULL))
        return check_finish("disk_trust");
    test_folders();
    test_environment();
    test_files();
    char rm[300];
    snprintf(rm, sizeof rm, "rm -rf '%s'", base);
    CHECK(system(rm) == 0);
    return check_finish("disk_trust");
}
