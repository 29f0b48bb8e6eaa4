/*
 * A stand-in for libamdhip64 (ROCm 6 numbering) used by tests on machines without an AMD GPU; the same fake as
 * platforms/cuda's fake-cudart.c under HIP names, plus the HIP-only functions the ROCm platform binds. "Device"
 * memory is memfd-backed host memory so IPC handles work across processes. It checks hipMemcpyDefault, valid device
 * ordinals, the block base for hipIpcGetMemHandle, the ROCm 6 lazy-peer-access flag (1), well-formed handles passed
 * by value, and frees only of what was allocated.
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

typedef struct { char reserved[64]; } hipIpcMemHandle_t;

enum { KIND_NONE = 0, KIND_HOST = 1, KIND_DEVICE = 2, KIND_MAPPED = 3 };
typedef struct { uintptr_t base; size_t size; int kind; int device; int fd; } block_t;

#define MAX_BLOCKS 4096
static block_t blocks[MAX_BLOCKS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int current_device = 0;
static __thread int last_error = 0;
static const char MAGIC[8] = {'F', 'A', 'K', 'E', 'H', 'I', 'P', '!'};
static unsigned long long stream_magic = 0x53545245414d2121ULL;
int fake_ipc_opens = 0;

static int fail(int rc) { last_error = rc; return rc; }

static int device_count(void) {
    const char *env = getenv("FAKE_HIP_DEVICE_COUNT");
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

int hipRuntimeGetVersion(int *v) { *v = 60243483; return 0; }
int hipGetDeviceCount(int *count) { *count = device_count(); return 0; }
int hipSetDevice(int d) { if (d < 0 || d >= device_count()) return fail(101); current_device = d; return 0; }
int hipGetDevice(int *d) { *d = current_device; return 0; }
int hipGetLastError(void) { int e = last_error; last_error = 0; return e; }

int hipDeviceGetAttribute(int *value, int attr, int device) {
    if (device < 0 || device >= device_count()) return fail(101);
    switch (attr) {
        case 41: *value = 1; return 0;   /* unified addressing */
        case 75: *value = 9; return 0;   /* compute capability major */
        case 76: *value = 0; return 0;
        default: return fail(1);
    }
}

int hipDeviceGetPCIBusId(char *buf, int len, int device) {
    if (device < 0 || device >= device_count()) return fail(101);
    snprintf(buf, (size_t) len, "0000:%02x:00.0", 0x10 + device);
    return 0;
}

int hipGetDeviceProperties(void *prop, int device) {
    if (device < 0 || device >= device_count()) return fail(101);
    memset(prop, 0, 1008);
    snprintf((char *) prop, 256, "Fake HIP Device %d", device);
    *(size_t *) ((char *) prop + 288) = (size_t) 16 << 30;
    return 0;
}

int hipMemGetInfo(size_t *free_bytes, size_t *total) { *free_bytes = (size_t) 15 << 30; *total = (size_t) 16 << 30; return 0; }

int hipMalloc(void **out, size_t size) {
    if (size >= ((size_t) 1 << 40)) return fail(2);
    int fd = memfd_create("fake-hip", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t) size) != 0) return fail(2);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) { close(fd); return fail(2); }
    pthread_mutex_lock(&lock);
    add_block((uintptr_t) p, size, KIND_DEVICE, current_device, fd);
    pthread_mutex_unlock(&lock);
    *out = p;
    return 0;
}

int hipFree(void *p) {
    pthread_mutex_lock(&lock);
    block_t *b = find_containing((uintptr_t) p);
    if (!b || b->kind != KIND_DEVICE || b->base != (uintptr_t) p) { pthread_mutex_unlock(&lock); return fail(1); }
    munmap(p, b->size);
    close(b->fd);
    b->kind = KIND_NONE;
    pthread_mutex_unlock(&lock);
    return 0;
}

int hipHostMalloc(void **out, size_t size, unsigned int flags) {
    if (flags != 0) return fail(1);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return fail(2);
    pthread_mutex_lock(&lock);
    add_block((uintptr_t) p, size, KIND_HOST, current_device, -1);
    pthread_mutex_unlock(&lock);
    *out = p;
    return 0;
}

int hipHostFree(void *p) {
    pthread_mutex_lock(&lock);
    block_t *b = find_containing((uintptr_t) p);
    if (!b || b->kind != KIND_HOST || b->base != (uintptr_t) p) { pthread_mutex_unlock(&lock); return fail(1); }
    munmap(p, b->size);
    b->kind = KIND_NONE;
    pthread_mutex_unlock(&lock);
    return 0;
}

/* HIP 13 layout: type, device, devicePointer, hostPointer, long reserved[8] (88 bytes). */
int hipPointerGetAttributes(void *attr, const void *ptr) {
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

int hipMemcpy(void *dst, const void *src, size_t n, int kind) {
    if (kind != 4) return fail(21); /* hipErrorInvalidMemcpyDirection: tent4j always passes hipMemcpyDefault */
    memmove(dst, src, n);
    return 0;
}

int hipStreamCreateWithFlags(void **stream, unsigned int flags) {
    if (flags != 1) return fail(1);
    unsigned long long *s = malloc(sizeof *s);
    *s = stream_magic;
    *stream = s;
    return 0;
}

static int valid_stream(void *stream) { return stream && *(unsigned long long *) stream == stream_magic; }

int hipMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream) {
    if (!valid_stream(stream)) return fail(400);
    return hipMemcpy(dst, src, n, kind);
}

int hipStreamSynchronize(void *stream) { return valid_stream(stream) ? 0 : fail(400); }

int hipStreamDestroy(void *stream) {
    if (!valid_stream(stream)) return fail(400);
    *(unsigned long long *) stream = 0;
    free(stream);
    return 0;
}

int hipIpcGetMemHandle(hipIpcMemHandle_t *handle, void *p) {
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

int hipIpcOpenMemHandle(void **out, hipIpcMemHandle_t handle, unsigned int flags) {
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

int hipIpcCloseMemHandle(void *p) {
    pthread_mutex_lock(&lock);
    block_t *b = find_containing((uintptr_t) p);
    if (!b || b->kind != KIND_MAPPED || b->base != (uintptr_t) p) { pthread_mutex_unlock(&lock); return fail(400); }
    munmap(p, b->size);
    b->kind = KIND_NONE;
    pthread_mutex_unlock(&lock);
    return 0;
}

/* how many IPC mappings are open, for tests */
int fakeHipOpenMappings(void) {
    int n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_BLOCKS; i++) n += blocks[i].kind == KIND_MAPPED;
    pthread_mutex_unlock(&lock);
    return n;
}

const char *hipGetErrorName(int e) {
    switch (e) {
        case 0: return "hipSuccess";
        case 1: return "hipErrorInvalidValue";
        case 2: return "hipErrorOutOfMemory";
        case 21: return "hipErrorInvalidMemcpyDirection";
        case 35: return "hipErrorInsufficientDriver";
        case 100: return "hipErrorNoDevice";
        case 101: return "hipErrorInvalidDevice";
        case 400: return "hipErrorInvalidHandle";
        default: return "hipErrorUnknown";
    }
}

const char *hipGetErrorString(int e) {
    switch (e) {
        case 0: return "no error";
        case 1: return "invalid argument";
        case 2: return "out of memory";
        case 21: return "invalid copy direction for memcpy";
        case 35: return "HIP driver version is insufficient for HIP runtime version";
        case 100: return "no HIP-capable device is detected";
        case 101: return "invalid device ordinal";
        case 400: return "invalid resource handle";
        default: return "unknown error";
    }
}


int hipDeviceGetName(char *name, int len, int device) {
    if (device < 0 || device >= device_count()) return fail(101);
    snprintf(name, (size_t) len, "Fake ROCm Device %d", device);
    return 0;
}

int hipDeviceTotalMem(size_t *bytes, int device) {
    if (device < 0 || device >= device_count()) return fail(101);
    *bytes = (size_t) 64 << 30;
    return 0;
}

int hipMemGetAddressRange(void **base, size_t *size, void *ptr) {
    pthread_mutex_lock(&lock);
    block_t *b = find_containing((uintptr_t) ptr);
    int ok = b && b->kind == KIND_DEVICE;
    if (ok) { *base = (void *) b->base; *size = b->size; }
    pthread_mutex_unlock(&lock);
    return ok ? 0 : fail(1);
}
