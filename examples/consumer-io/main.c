/* main.c — a consumer of the installed polymage_io (pkg-config polymage_io, or CMake's
 * PolyMage::polymage_io: CMakeLists.txt): writes a 3 x 5 grey u8 picture as PNG, reads it
 * back, and checks every pixel. */
#include <polymage.h>
#include <polymage_io.h>

#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "consumer-io.png";
    uint8_t pixels[3][5];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 5; c++)
            pixels[r][c] = (uint8_t)(40 * r + 7 * c);
    pm_buffer img = pm_buffer_dense(pixels, PM_U8, 2, (int64_t[]){3, 5});
    pm_io_error err;
    if (pm_io_write(path, &img, NULL, &err) != PM_IO_OK) {
        fprintf(stderr, "consumer-io: %s\n", err.message);
        return 1;
    }
    pm_buffer back;
    if (pm_io_read(path, PM_U8, 1, &back, &err) != PM_IO_OK) {
        fprintf(stderr, "consumer-io: %s\n", err.message);
        return 1;
    }
    int bad = back.ndims != 2 || back.extent[0] != 3 || back.extent[1] != 5;
    for (int r = 0; !bad && r < 3; r++)
        for (int c = 0; c < 5; c++)
            bad |= ((const uint8_t *)back.data)[r * 5 + c] != pixels[r][c];
    pm_io_free(&back);
    printf("consumer-io: %s\n", bad ? "MISMATCH" : "ok");
    return bad;
}
