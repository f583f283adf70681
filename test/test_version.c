/* test_version.c — the library's version and build ID: pm_version() agrees with the
 * header's PM_VERSION macros, and pm_build_id() is 32 hex digits (a hash made at build
 * time from the library's sources, so it cannot be checked against a fixed value). */
#include "check.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    CHECK(strcmp(pm_version(), PM_VERSION) == 0);
    char made[32];
    snprintf(made, sizeof made, "%d.%d.%d", PM_VERSION_MAJOR, PM_VERSION_MINOR,
             PM_VERSION_PATCH);
    CHECK(strcmp(made, PM_VERSION) == 0);

    const char *id = pm_build_id();
    CHECK(id != NULL && strlen(id) == 32);
    bool hex = true;
    for (const char *c = id; c && *c; c++)
        hex &= isxdigit((unsigned char)*c) && !isupper((unsigned char)*c);
    CHECK(hex);
    CHECK(pm_build_id() == id || strcmp(pm_build_id(), id) == 0); /* stable in a process */
    return check_finish("version");
}
