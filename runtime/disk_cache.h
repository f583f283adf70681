/* disk_cache.h — compiled kernels kept as object files in a folder, so a restarted
 * process (or another process sharing the folder) loads them instead of compiling.
 *
 * Promise: a folder is used only when it passes the trust rule (pm_disk_folder_check),
 * checked again by every read and write. A file that is not a trusted regular file is
 * never read, and reading never blocks. A file that is not a valid kernel of this exact
 * key is rejected, never taken for a wrong kernel. Writers replace files atomically, so
 * readers in any process see a whole file or none. The same encoding carries a kernel
 * from the compile helper (runtime/isolate.c) to the server.
 */
#ifndef PM_RUNTIME_DISK_CACHE_H
#define PM_RUNTIME_DISK_CACHE_H

#include "polymage.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Files larger than this are skipped unread. */
#define PM_DISK_MAX_FILE ((int64_t)256 << 20)

enum { PM_DISK_MAX_PARTS = 16 }; /* = PM_SPLIT_MAX_PARTS (runtime/split_compile.h)  */

typedef struct pm_disk_kernel {
    char entry[160];          /* the entry symbol in the object                          */
    int32_t nslots;           /* scratch slots the entry uses                             */
    void *object;             /* malloc'd relocatable objects, back to back (the reader
                                 frees it): one, or the parts of a split compile         */
    size_t object_size;       /* all of them                                              */
    int nparts;               /* 1..PM_DISK_MAX_PARTS                                     */
    size_t part_sizes[PM_DISK_MAX_PARTS];
} pm_disk_kernel;

typedef enum pm_disk_result {
    PM_DISK_MISS,             /* no file for the key (or the folder is unusable now)      */
    PM_DISK_HIT,              /* *out filled                                              */
    PM_DISK_REJECTED,         /* a file was there but not a valid one for this key        */
    PM_DISK_UNTRUSTED         /* something was there that is not read: not a regular
                                 file, another owner, writable by others, too large       */
} pm_disk_result;

/* Makes dir (and its missing parents) with mode 0700 if missing, then checks the trust
 * rule (docs/server.md, "Trust"): the folder and every folder above it belong to this
 * user or to root, and none of them can be written by group or others (a parent may be,
 * with the sticky bit, as /tmp is). Every read and write checks the folder again through
 * the descriptor it works in. PM_OK with *resolved = the folder's canonical path
 * (malloc'd, the caller frees); otherwise PM_ERR_ARGUMENT (or PM_ERR_NOMEM) and a message
 * "<who>: <what> \"<dir>\" <reason>", saying why the folder is refused. */
pm_status pm_disk_folder_check(const char *dir, const char *who, const char *what,
                               char **resolved, pm_error *err);

/* Reads the kernel of `key` (key_len bytes) from folder dir (a resolved path). The file
 * is read only if it is a regular file owned like the folder, not writable by group or
 * others, and of at most PM_DISK_MAX_FILE bytes: checked with fstatat before opening,
 * opened with O_NOFOLLOW | O_NONBLOCK, and checked again with fstat on the open file.
 * Anything else (a link, a FIFO, a device, another user's file, a larger file) is
 * PM_DISK_UNTRUSTED. A short, truncated, corrupted or foreign file (another version,
 * build, host or key) is PM_DISK_REJECTED. A hit refreshes the file's modification
 * time. */
pm_disk_result pm_disk_read(const char *dir, const char *key, size_t key_len,
                            pm_disk_kernel *out);
/* Writes it; true when the file is in place. The file is written under a temporary
 * name in the folder and renamed over the final name (atomic on POSIX), replacing any
 * file of that key. Then the folder's kernel files are kept within max_bytes, removing
 * the least recently used (by modification time) first, and temporary files older than
 * ten minutes (left by crashed writers) go too. */
bool pm_disk_write(const char *dir, const char *key, size_t key_len, const pm_disk_kernel *k,
                   int64_t max_bytes);

/* The file's bytes for (key, k): malloc'd, *size bytes; NULL when out of memory.
 * A file holds one kernel: a magic number and format version, the full cache key as
 * text, the kernel's metadata (entry symbol, scratch slots), its relocatable objects
 * (one, or the parts of a kernel compiled split), and a BLAKE2b-256 digest (libsodium)
 * of all of it. Its name is BLAKE2b-128 of the key; the key inside is compared in full,
 * so a collision reads as PM_DISK_REJECTED, never as a wrong kernel. */
unsigned char *pm_disk_encode(const char *key, size_t key_len, const pm_disk_kernel *k,
                              size_t *size);
/* Fills *out (out->object malloc'd) when data is a valid encoding of a kernel of `key`. */
bool pm_disk_decode(const unsigned char *data, size_t size, const char *key, size_t key_len,
                    pm_disk_kernel *out);

#endif
