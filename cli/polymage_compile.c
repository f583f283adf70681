/* polymage_compile.c — polymage-compile, the compile helper (runtime/isolate.h): a jit
 * with pm_jit_options.isolate_compiles runs each compile in one of these, so that LLVM
 * or isl running out of memory, crashing or hanging ends this process, not the server.
 *
 *   polymage-compile --memory BYTES --seconds N   < request   > reply
 *
 * It limits its own address space (RLIMIT_AS: the limit must hold before LLVM runs, and
 * posix_spawn cannot set it), dies with the process that started it, stops itself a few
 * seconds after its time limit should the caller not, and closes every descriptor it
 * did not need to inherit. Installed in $PREFIX/libexec/polymage/; not for people.
 */
/* prctl, close_range, setrlimit: Linux and POSIX, not C11. */
#define _GNU_SOURCE

#include "runtime/isolate.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* The sanitizers' shadow memory needs far more address space than any limit. */
#define PM_LIMIT_ADDRESS_SPACE 0
#else
#define PM_LIMIT_ADDRESS_SPACE 1
#endif

static long long number(const char *s)
{
    char *end = NULL;
    long long v = s ? strtoll(s, &end, 10) : -1;
    return end && *end == '\0' && v > 0 ? v : -1;
}

int main(int argc, char **argv)
{
    long long memory = -1, seconds = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--memory") == 0)
            memory = number(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0)
            seconds = number(argv[i + 1]);
    }
    if (memory <= 0 || seconds <= 0 || isatty(0)) {
        fprintf(stderr, "polymage-compile: the compile helper of libpolymage; it is started "
                        "by the library (usage: polymage-compile --memory BYTES --seconds N "
                        "< request > reply)\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) /* the caller is gone already */
        return 4;
    close_range(3, ~0u, 0);
    unsetenv("PM_CACHE_DIR"); /* the caller keeps the disk cache, not the helper */
    alarm((unsigned)(seconds + 5));
#if PM_LIMIT_ADDRESS_SPACE
    struct rlimit as = {(rlim_t)memory, (rlim_t)memory};
    if (setrlimit(RLIMIT_AS, &as) != 0)
        perror("polymage-compile: setrlimit");
#endif
    return pm_isolate_helper_main(0, 1);
}
