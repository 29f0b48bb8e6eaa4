/*
 * A stand-in for libcudart used by tests on machines without a GPU. "Device" memory is host memory from memfd_create,
 * so that IPC handles work across processes of one user (the importer maps /proc/<pid>/fd/<fd>). It checks what the
 * real runtime would reject and what tent4j must get right: cudaMemcpyDefault as the kind, a valid device ordinal,
 * the base of a block for cudaIpcGetMemHandle, the lazy-peer-access flag and a well-formed handle passed by value,
 * and frees only of what was allocated. Every failing call records the thread's last error, like the real runtime.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct { char reserved[64]; } cudaIpcMemHandle_t;

enum { KIND_NONE = 0, KIND_HOST = 1, KIND_DEVICE = 2, KIND_MAPPED = 3 };
typedef struct { uintptr_t base; size_t size; int kind; int device; int fd; } block_t;

#define MAX_BLOCKS 4096
static block_t blocks[MAX_BLOCKS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int current_device = 0;
static __thread int last_error = 0;
static const char MAGIC[8] = {'F', 'A', 'K', 'E', 'C', 'U', 'D', 'A'};
static unsigned long long stream_magic = 0x53545245414d2121ULL;
int fake_ipc_opens = 0;

static int fail(int rc) { last_error = rc; return rc; }

static int device_count(void) {
    const char *env = getenv("FAKE_CUDA_DEVICE_COUNT");
    return env ? atoi(env) : 2;
}

static block_t *find_containing(uintptr_t p) {
    for (int i = 0; i < MAX_BLOCKS; i++) {
        if (blocks[i].kind != KIND_NONE && p >= blocks[i].base && p < blocks[i].base + blocks[i].size) return &blocks[i];
    }
    return NULL;
}

static block_t *add_block(uintptr_t base, size_t size, int kind, int device, int fd) {
    for (int i = 0; i < MAX_BLOCKS; i++) {
        if (blocks[i].kind == KIND_NONE) {
            blocks[i] = (block_t){base, size, kind, device, fd};
            return &blocks[i];
        }
    }
    return NULL;
}

int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }
int cudaDriverGetVersion(int *v) { *v = 13000; return 0; }
int cudaGetDeviceCount(int *count) { *count = device_count(); return 0; }
int cudaSetDevice(int d) { if (d < 0 || d >= device_count()) return fail(101); current_device = d; return 0; }
int cudaGetDevice(int *d) { *d = current_device; return 0; }
int cudaGetLastError(void) { int e = last_error; last_error = 0; return e; }

int cudaDeviceGetAttribute(int *value, int attr, int device) {
    if (device < 0 || device >= device_count()) return fail(101);
    switch (attr) {
        case 41: *value = 1; return 0;   /* unified addressing */
        case 75: *value = 9; return 0;   /* compute capability major */
        case 76: *value = 0; return 0;
        default: return fail(1);
    }
}

int cudaDeviceGetPCIBusId(char *buf, int len, int device) {
    if (device < 0 || device >= device_count()) return fail(101);
    snprintf(buf, (size_t) len, "0000:%02x:00.0", 0x10 + device);
    return 0;
}

int cudaGetDeviceProperties(void *prop, int device) {
    if (device < 0 || device >= device_count()) return fail(101);
    memset(prop, 0, 1008);
    snprintf((char *) prop, 256, "Fake CUDA Device %d", device);
    *(size_t *) ((char *) prop + 288) = (size_t) 16 << 30;
    return 0;
}

int cudaMemGetInfo(size_t *free_bytes, size_t *total) { *free_bytes = (size_t) 15 << 30; *total = (size_t) 16 << 30; return 0; }

int cudaMalloc(void **out, size_t size) {
    if (size >= ((size_t) 1 << 40)) return fail(2);
    int fd = memfd_create("fake-cuda", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t) size) != 0) return fail(2);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) { close(fd); return fail(2); }
    pthread_mutex_lock(&lock);
    add_block((uintptr_t) p, size, KIND_DEVICE, current_device, fd);
    pthread_mutex_unlock(&lock);
    *out = p;
    return 0;
}

int cudaFree(void *p) {
    pthread_mutex_lock(&lock);
    block_t *b = find_containing((uintptr_t) p);
    if (!b || b->kind != KIND_DEVICE || b->base != (uintptr_t) p) { pthread_mutex_unlock(&lock); return fail(1); }
    munmap(p, b->size);
    close(b->fd);
    b->kind = KIND_NONE;
    pthread_mutex_unlock(&lock);
    return 0;
}

int cudaMallocHost(void **out, size_t size) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return fail(2);
    pthread_mutex_lock(&lock);
    add_block((uintptr_t) p, size, KIND_HOST, current_device, -1);
    pthread_mutex_unlock(&lock);
    *out = p;
    return 0;
}

int cudaFreeHost(void *p) {
    pthread_mutex_lock(&lock);
    block_t *b = find_containing((uintptr_t) p);
    if (!b || b->kind != KIND_HOST || b->base != (uintptr_t) p) { pthread_mutex_unlock(&lock); return fail(1); }
    munmap(p, b->size);
    b->kind = KIND_NONE;
    pthread_mutex_unlock(&lock);
    return 0;
}

/* CUDA 13 layout: type, device, devicePointer, hostPointer, long reserved[8] (88 bytes). */
int cudaPointerGetAttributes(void *attr, const void *ptr) {
    memset(attr, 0, 88);
    pthread_mutex_lock(&lock);
    block_t *b = find_containing((uintptr_t) ptr);
    int type = !b ? 0 : b->kind == KIND_HOST ? 1 : 2;
    int device = b ? b->device : -2;
    pthread_mutex_unlock(&lock);
    *(int *) attr = type;
    *(int *) ((char *) attr + 4) = device;
    *(const void **) ((char *) attr + 8) = type == 2 ? ptr : NULL;
    *(const void **) ((char *) attr + 16) = type != 2 ? ptr : NULL;
    return 0;
}

int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
    if (kind != 4) return fail(21); /* cudaErrorInvalidMemcpyDirection: tent4j always passes cudaMemcpyDefault */
    memmove(dst, src, n);
    return 0;
}

int cudaStreamCreateWithFlags(void **stream, unsigned int flags) {
    if (flags != 1) return fail(1);
    unsigned long long *s = malloc(sizeof *s);
    *s = stream_magic;
    *stream = s;
    return 0;
}

static int valid_stream(void *stream) { return stream && *(unsigned long long *) stream == stream_magic; }

int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream) {
    if (!valid_stream(stream)) return fail(400);
    return cudaMemcpy(dst, src, n, kind);
}

int cudaStreamSynchronize(void *stream) { return valid_stream(stream) ? 0 : fail(400); }

int cudaStreamDestroy(void *stream) {
    if (!valid_stream(stream)) return fail(400);
    *(unsigned long long *) stream = 0;
    free(stream);
    return 0;
}

int cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *p) {
    pthread_mutex_lock(&lock);
    block_t *b = find_containing((uintptr_t) p);
    if (!b || b->kind != KIND_DEVICE || b->base != (uintptr_t) p) { pthread_mutex_unlock(&lock); return fail(1); }
    memset(handle, 0, sizeof *handle);
    memcpy(handle->reserved, MAGIC, 8);
    int pid = getpid();
    memcpy(handle->reserved + 8, &pid, 4);
    memcpy(handle->reserved + 12, &b->fd, 4);
    memcpy(handle->reserved + 16, &b->size, 8);
    pthread_mutex_unlock(&lock);
    return 0;
}

int cudaIpcOpenMemHandle(void **out, cudaIpcMemHandle_t handle, unsigned int flags) {
    if (flags != 1) return fail(1);
    if (memcmp(handle.reserved, MAGIC, 8) != 0) return fail(400);
    int pid, fd;
    size_t size;
    memcpy(&pid, handle.reserved + 8, 4);
    memcpy(&fd, handle.reserved + 12, 4);
    memcpy(&size, handle.reserved + 16, 8);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
    int mine = open(path, O_RDWR | O_CLOEXEC);
    if (mine < 0) return fail(400);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mine, 0);
    close(mine);
    if (p == MAP_FAILED) return fail(2);
    pthread_mutex_lock(&lock);
    add_block((uintptr_t) p, size, KIND_MAPPED, current_device, -1);
    fake_ipc_opens++;
    pthread_mutex_unlock(&lock);
    *out = p;
    return 0;
}

int cudaIpcCloseMemHandle(void *p) {
    pthread_mutex_lock(&lock);
    block_t *b = find_containing((uintptr_t) p);
    if (!b || b->kind != KIND_MAPPED || b->base != (uintptr_t) p) { pthread_mutex_unlock(&lock); return fail(400); }
    munmap(p, b->size);
    b->kind = KIND_NONE;
    pthread_mutex_unlock(&lock);
    return 0;
}

/* how many IPC mappings are open, for tests */
int fakeCudaOpenMappings(void) {
    int n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_BLOCKS; i++) n += blocks[i].kind == KIND_MAPPED;
    pthread_mutex_unlock(&lock);
    return n;
}

const char *cudaGetErrorName(int e) {
    switch (e) {
        case 0: return "cudaSuccess";
        case 1: return "cudaErrorInvalidValue";
        case 2: return "cudaErrorMemoryAllocation";
        case 21: return "cudaErrorInvalidMemcpyDirection";
        case 35: return "cudaErrorInsufficientDriver";
        case 100: return "cudaErrorNoDevice";
        case 101: return "cudaErrorInvalidDevice";
        case 400: return "cudaErrorInvalidResourceHandle";
        default: return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(int e) {
    switch (e) {
        case 0: return "no error";
        case 1: return "invalid argument";
        case 2: return "out of memory";
        case 21: return "invalid copy direction for memcpy";
        case 35: return "CUDA driver version is insufficient for CUDA runtime version";
        case 100: return "no CUDA-capable device is detected";
        case 101: return "invalid device ordinal";
        case 400: return "invalid resource handle";
        default: return "unknown error";
    }
}

/* the one driver-API function tent4j uses, so the "memory allocated elsewhere" path runs too */
int cuMemGetAddressRange_v2(unsigned long long *base, size_t *size, unsigned long long ptr) {
    pthread_mutex_lock(&lock);
    block_t *b = find_containing((uintptr_t) ptr);
    int ok = b && b->kind == KIND_DEVICE;
    if (ok) { *base = b->base; *size = b->size; }
    pthread_mutex_unlock(&lock);
    return ok ? 0 : 1;
}
