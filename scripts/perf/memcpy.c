/* Single-threaded memcpy baseline for docs/PERFORMANCE.md: copies BLOCK-byte blocks walking through two 256 MiB
 * buffers (so blocks are not cache-resident, as a transfer's are not) for SECONDS seconds; prints GB/s (1e9 B/s). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    size_t block = argc > 1 ? strtoull(argv[1], NULL, 0) : 1 << 20;
    double seconds = argc > 2 ? atof(argv[2]) : 3;
    size_t size = 256u << 20;
    char *src = aligned_alloc(4096, size), *dst = aligned_alloc(4096, size);
    memset(src, 1, size);
    memset(dst, 2, size);
    size_t off = 0, bytes = 0;
    double start = now(), end = start + seconds;
    while (now() < end) {
        for (int i = 0; i < 64; i++) {
            memcpy(dst + off, src + off, block);
            off = (off + block) % (size - block + 1);
            bytes += block;
        }
    }
    double took = now() - start;
    printf("%.3f\n", bytes / took / 1e9);
    return dst[off] == 3; /* keeps the copies observable */
}
