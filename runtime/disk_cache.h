/* disk_cache.h — compiled kernels kept as object files in a folder, so a restarted
 * process (or another process sharing the folder) loads them instead of compiling.
 *
 * Promise:
 *  - A file holds one kernel: a magic number and format version, the full cache key as
 *    text (the jit's environment: target, CPU, features, PM_VERSION, build ID, LLVM
 *    version; then options, buckets and the pipeline's canonical text), the kernel's
 *    metadata (entry symbol, scratch slots), its relocatable objects (one, or the parts
 *    of a kernel compiled split, which refer to each other), and a 64-bit
 *    checksum of all of it. Its name is a hash of the key; the key inside is compared in
 *    full, so a hash collision is a miss, never a wrong kernel.
 *  - pm_disk_read trusts nothing: a short, truncated, oversized, corrupted or foreign
 *    file (another version, build, host or key) is reported as rejected and never
 *    crashes or loads; the next write of that key replaces it.
 *  - pm_disk_write writes a temporary file in the folder and renames it over the final
 *    name (atomic on POSIX), so readers in any process see a whole file or none. Then it
 *    keeps the folder's kernel files within max_bytes, removing the least recently used
 *    (by modification time; a read hit refreshes it) and temporary files left by crashed
 *    writers.
 *  - Errors of the folder (missing, unwritable, full) make reads miss and writes fail
 *    quietly: the disk cache only ever saves time.
 */
#ifndef PM_RUNTIME_DISK_CACHE_H
#define PM_RUNTIME_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Files larger than this are rejected unread. */
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
    PM_DISK_MISS,             /* no file for the key (or no folder)                       */
    PM_DISK_HIT,              /* *out filled                                              */
    PM_DISK_REJECTED          /* a file was there but not a valid one for this key        */
} pm_disk_result;

/* Makes the folder if it is missing (one level; best effort). */
void pm_disk_prepare(const char *dir);
/* Reads the kernel of `key` (key_len bytes) from folder dir. */
pm_disk_result pm_disk_read(const char *dir, const char *key, size_t key_len,
                            pm_disk_kernel *out);
/* Writes it (the object and entry of k, nslots); true when the file is in place. */
bool pm_disk_write(const char *dir, const char *key, size_t key_len, const pm_disk_kernel *k,
                   int64_t max_bytes);

#endif
