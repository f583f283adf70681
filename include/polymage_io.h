/* polymage_io.h — image I/O for PolyMage-JIT: PNG (8- and 16-bit) and JPEG (8-bit), grey,
 * grey + alpha, RGB and RGBA, read into and written from pm_buffers.
 *
 * Promise: the read and decode calls fill pm_buffers from a file or memory, and the write
 * and encode calls write them, converting element types and channels by the rules below.
 * A call that can fail returns a pm_io_status and, unless OK, a one-line message naming
 * the file and the cause; nothing is printed. A truncated or corrupt file is an error,
 * never a picture part grey. Calls share no state and may run in parallel.
 */

/* An optional component: its own library, polymage_io (on libpng and libjpeg-turbo),
 * built when both are found; link it next to polymage.
 *
 * Layout (the samples' apps take their images this way)
 *   A grey picture is a 2-D buffer [row][col]. A picture of C channels (1..4) is a 3-D
 *   buffer [channel][row][col], planar: channel 0 = R (or grey), 1 = G (or alpha for
 *   grey + alpha), 2 = B, 3 = alpha. A 3-D buffer with extent[0] == 1 is grey too.
 *   Strides are honoured, so interleaved memory (R G B R G B ...) is the 3-D buffer with
 *   strides {1, cols * C, C}. Reading into it and writing from it need no copy on the
 *   caller's side.
 *
 * Element types and values
 *   PM_U8, PM_U16, PM_F32 and PM_F64 buffers. Reading: an 8-bit file into u8 and a
 *   16-bit file into u16 are exact; 8-bit into u16 is v * 257, 16-bit into u8 is
 *   round(v * 255 / 65535). f32 / f64 get v / 255 (8-bit) or v / 65535 (16-bit), in
 *   [0, 1]. Writing: u8 writes 8-bit, u16 16-bit samples unless options say otherwise.
 *   f32 / f64 values are clamped to [0, 1] (NaN is 0) and scaled to the bit depth,
 *   rounded.
 *
 * Channels when reading
 *   0 asks for the file's own (after palette expansion: 1 grey, 2 grey + alpha, 3 RGB,
 *   4 RGBA). 1..4 converts. Grey from colour is the rounded luma
 *   (299 R + 587 G + 114 B) / 1000, and colour from grey repeats it. Alpha is dropped
 *   when not asked for (not composited), and fully opaque when asked for but absent.
 *   pm_io_decode / pm_io_read give a 2-D buffer for 1 channel, 3-D otherwise.
 *
 * Errors are values
 *   Every call returns a pm_io_status. Unless OK, it writes a one-line message naming the
 *   file (or the name given for memory) and the cause into the caller's pm_io_error
 *   (which may be NULL). Nothing is printed: libpng's and libjpeg's errors (their
 *   longjmp / error_exit) are caught and become the message. A truncated file is an
 *   error. So is libjpeg's "premature end" warning, which would otherwise fill the rest
 *   with grey, and so are libjpeg's corrupt-data warnings. Out of memory, inside libpng
 *   too, is PM_IO_ERR_NOMEM, never a corrupted file. Sizes are checked before any
 *   allocation: rows * cols * channels * bytes never overflows silently.
 *
 * Threads: every call is independent (no global state); calls may run in parallel.
 */
#ifndef POLYMAGE_IO_H
#define POLYMAGE_IO_H

#include "polymage.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(PM_IO_API)
#define PM_IO_API __attribute__((visibility("default")))
#elif !defined(PM_IO_API)
#define PM_IO_API
#endif

typedef enum pm_io_status {
    PM_IO_OK = 0,
    PM_IO_ERR_FILE,        /* the file cannot be opened, read or written (message: errno's) */
    PM_IO_ERR_FORMAT,      /* not a PNG or JPEG (no signature), or a name with no known
                              extension when writing                                       */
    PM_IO_ERR_CORRUPT,     /* a PNG or JPEG that is truncated or corrupted                   */
    PM_IO_ERR_UNSUPPORTED, /* valid, but not handled: a CMYK JPEG, a 12-bit JPEG, alpha or
                              16 bits asked of JPEG, a bit depth other than 8 or 16         */
    PM_IO_ERR_ARGUMENT,    /* a wrong buffer (type, shape, NULL data) or option             */
    PM_IO_ERR_TOO_LARGE,   /* a size whose bytes overflow, or over the format's limits      */
    PM_IO_ERR_NOMEM        /* out of memory                                                 */
} pm_io_status;

/* "PM_IO_ERR_CORRUPT", ... */
PM_IO_API const char *pm_io_status_name(pm_io_status status);

typedef struct pm_io_error {
    pm_io_status status;
    char message[1024];
} pm_io_error;

typedef enum pm_io_format {
    PM_IO_AUTO = 0, /* reading: from the signature; writing: from the file name's extension
                       (.png, .jpg, .jpeg; PNG for pm_io_encode)                          */
    PM_IO_PNG,
    PM_IO_JPEG
} pm_io_format;

/* What a file holds, from its header alone. */
typedef struct pm_io_info {
    pm_io_format format;
    int64_t rows, cols;
    int channels;  /* after palette expansion: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA */
    int bit_depth; /* 8 or 16 (PNG's 1-, 2- and 4-bit grey and palettes read as 8) */
} pm_io_info;

/* The header of an image in memory (`name` only for messages; NULL = "image") or in a
 * file. No pixel memory is allocated: check the size against a budget before decoding. */
PM_IO_API pm_io_status pm_io_probe(const void *data, size_t size, const char *name,
                                   pm_io_info *info, pm_io_error *error);
PM_IO_API pm_io_status pm_io_probe_file(const char *path, pm_io_info *info, pm_io_error *error);

/* Decodes into a new dense buffer of `type` with `channels` (0 = the file's; see the
 * conversions above): [rows][cols] for 1 channel, [channels][rows][cols] otherwise.
 * Free its memory with pm_io_free. On error *out has data NULL. */
PM_IO_API pm_io_status pm_io_decode(const void *data, size_t size, const char *name,
                                    pm_type type, int channels, pm_buffer *out,
                                    pm_io_error *error);
PM_IO_API pm_io_status pm_io_read(const char *path, pm_type type, int channels,
                                  pm_buffer *out, pm_io_error *error);
/* Decodes into the caller's buffer, whose type and shape say what is wanted: extents must
 * be the picture's rows and cols (PM_IO_ERR_ARGUMENT naming both shapes otherwise); its
 * channels (1 for a 2-D buffer) are converted as above. Any strides. */
PM_IO_API pm_io_status pm_io_decode_into(const void *data, size_t size, const char *name,
                                         pm_buffer *dst, pm_io_error *error);
PM_IO_API pm_io_status pm_io_read_into(const char *path, pm_buffer *dst, pm_io_error *error);
/* Frees the data of a buffer pm_io_decode / pm_io_read made and sets it to NULL. */
PM_IO_API void pm_io_free(pm_buffer *b);

/* The rule of polymage.h's options structs: start from pm_io_write_options_default()
 * and change fields. `size` is the struct's size as the caller's header declares it;
 * a size of an older release reads just those bytes (later fields keep their defaults).
 * A size that is no release's (0 from {0} or {.bit_depth = 16}, SIZE_MAX, an
 * uninitialized struct, a newer header's) is refused before any other field is read:
 * PM_IO_ERR_ARGUMENT, the message naming the struct, the size and the sizes read. */
typedef struct pm_io_write_options {
    size_t size;         /* sizeof(pm_io_write_options), set by pm_io_write_options_default */
    pm_io_format format; /* PM_IO_AUTO (default): from the name                             */
    int bit_depth;       /* 0 (default): 16 for u16 buffers, 8 for the others; PNG 8 or 16,
                            JPEG 8                                                          */
    int jpeg_quality;    /* 1..100; default 90                                               */
    int png_compression; /* zlib level 0..9; -1 (default) = zlib's default                   */
} pm_io_write_options;
PM_IO_API pm_io_write_options pm_io_write_options_default(void);

/* Encodes the picture in `img` (2-D grey or 3-D [channels][rows][cols], 1..4 channels;
 * JPEG takes 1 or 3) into malloc'd memory (*data, *size; free()). NULL options mean
 * the defaults. */
PM_IO_API pm_io_status pm_io_encode(const pm_buffer *img, const pm_io_write_options *options,
                                    void **data, size_t *size, pm_io_error *error);
/* Writes it to a file (replacing it). A folder that does not exist is an error
 * (PM_IO_ERR_FILE with the system's reason); nothing is left behind on failure. */
PM_IO_API pm_io_status pm_io_write(const char *path, const pm_buffer *img,
                                   const pm_io_write_options *options, pm_io_error *error);

#ifdef __cplusplus
}
#endif

#endif /* POLYMAGE_IO_H */
