/*
 * A stand-in for libascendcl used by tests: no Ascend software can be installed on the build machines. Signatures
 * follow CANN's acl/acl_rt.h. "NPU" memory is memfd-backed host memory so IPC keys work across processes. It checks
 * what the real runtime requires and tent4j must get right: a device bound to the calling thread (aclrtSetDevice)
 * before memory calls, an aclrtMemcpyKind that matches where src and dst live, count <= destMax, a 65-byte key
 * buffer, IPC keys closed before the memory is freed, and frees only of what was allocated.
 * Compiled with -DFAKE_ACL_NO_IPC it lacks the IPC and pointer-attribute functions, like CANN releases before 8.x.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { KIND_NONE = 0, KIND_HOST = 1, KIND_DEVICE = 2, KIND_IMPORTED = 3 };
typedef struct { uintptr_t base; size_t size; int kind; int device; int fd; int exports; uintptr_t map_base; size_t map_size; char key[65]; } block_t;

#define MAX_BLOCKS 4096
static block_t blocks[MAX_BLOCKS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int current_device = -1;
static __thread char recent[256];
static int initialized = 0;
static const unsigned long long STREAM_MAGIC = 0x41434c5354524d21ULL;

static int fail(int rc, const char *what) { snprintf(recent, sizeof recent, "EE9999: fake acl: %s", what); return rc; }

static block_t *containing(uintptr_t p) {
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (blocks[i].kind != KIND_NONE && p >= blocks[i].base && p < blocks[i].base + blocks[i].size) return &blocks[i];
    return NULL;
}

static block_t *add(uintptr_t base, size_t size, int kind, int device, int fd) {
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (blocks[i].kind == KIND_NONE) {
            memset(&blocks[i], 0, sizeof blocks[i]);
            blocks[i].base = base; blocks[i].size = size; blocks[i].kind = kind; blocks[i].device = device; blocks[i].fd = fd;
            return &blocks[i];
        }
    return NULL;
}

static int is_device(const void *p) {
    pthread_mutex_lock(&lock);
    block_t *b = containing((uintptr_t) p);
    int d = b && (b->kind == KIND_DEVICE || b->kind == KIND_IMPORTED);
    pthread_mutex_unlock(&lock);
    return d;
}

int aclInit(const char *config) { (void) config; if (initialized) return 100002; initialized = 1; return 0; }
int aclrtGetDeviceCount(uint32_t *count) { if (!initialized) return fail(100001, "aclInit not called"); *count = 2; return 0; }
int aclrtSetDevice(int32_t d) { if (d < 0 || d >= 2) return fail(107001, "invalid device id"); current_device = d; return 0; }
const char *aclrtGetSocName(void) { return "FakeAscend910B"; }
const char *aclGetRecentErrMsg(void) { return recent; }

int aclrtGetMemInfo(int attr, size_t *free_bytes, size_t *total) {
    if (current_device < 0) return fail(107002, "no context on this thread");
    if (attr != 1) return fail(100000, "only ACL_HBM_MEM is faked");
    *free_bytes = (size_t) 60 << 30; *total = (size_t) 64 << 30;
    return 0;
}

int aclrtMalloc(void **out, size_t size, int policy) {
    (void) policy;
    if (current_device < 0) return fail(107002, "no context on this thread");
    if (size >= ((size_t) 1 << 40)) return fail(207001, "out of device memory");
    int fd = memfd_create("fake-acl", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t) size) != 0) return fail(207001, "memfd");
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) { close(fd); return fail(207001, "mmap"); }
    pthread_mutex_lock(&lock);
    add((uintptr_t) p, size, KIND_DEVICE, current_device, fd);
    pthread_mutex_unlock(&lock);
    *out = p;
    return 0;
}

int aclrtFree(void *p) {
    pthread_mutex_lock(&lock);
    block_t *b = containing((uintptr_t) p);
    if (!b || b->kind != KIND_DEVICE || b->base != (uintptr_t) p) { pthread_mutex_unlock(&lock); return fail(507000, "free of unknown pointer"); }
    if (b->exports > 0) { pthread_mutex_unlock(&lock); return fail(507022, "IPC key still open; call aclrtIpcMemClose first"); }
    munmap(p, b->size); close(b->fd); b->kind = KIND_NONE;
    pthread_mutex_unlock(&lock);
    return 0;
}

int aclrtMallocHost(void **out, size_t size) {
    if (current_device < 0) return fail(107002, "no context on this thread");
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return fail(207001, "mmap");
    pthread_mutex_lock(&lock);
    add((uintptr_t) p, size, KIND_HOST, current_device, -1);
    pthread_mutex_unlock(&lock);
    *out = p;
    return 0;
}

int aclrtFreeHost(void *p) {
    pthread_mutex_lock(&lock);
    block_t *b = containing((uintptr_t) p);
    if (!b || b->kind != KIND_HOST || b->base != (uintptr_t) p) { pthread_mutex_unlock(&lock); return fail(507000, "freeHost of unknown pointer"); }
    munmap(p, b->size); b->kind = KIND_NONE;
    pthread_mutex_unlock(&lock);
    return 0;
}

int aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind) {
    if (current_device < 0) return fail(107002, "no context on this thread");
    if (count > destMax) return fail(100000, "count > destMax");
    int expected = (is_device(src) ? 2 : 0) + (is_device(dst) ? 1 : 0);
    /* HOST_TO_HOST 0, HOST_TO_DEVICE 1, DEVICE_TO_HOST 2, DEVICE_TO_DEVICE 3 */
    if (kind != expected) { snprintf(recent, sizeof recent, "EE9999: fake acl: memcpy kind %d, expected %d", kind, expected); return 100000; }
    memmove(dst, src, count);
    return 0;
}

int aclrtCreateStream(void **stream) {
    if (current_device < 0) return fail(107002, "no context on this thread");
    unsigned long long *s = malloc(sizeof *s); *s = STREAM_MAGIC; *stream = s;
    return 0;
}

static int valid_stream(void *s) { return s && *(unsigned long long *) s == STREAM_MAGIC; }

int aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, int kind, void *stream) {
    if (!valid_stream(stream)) return fail(107017, "invalid stream");
    return aclrtMemcpy(dst, destMax, src, count, kind);
}

int aclrtSynchronizeStream(void *stream) {
    if (current_device < 0) return fail(107002, "no context on this thread");
    return valid_stream(stream) ? 0 : fail(107017, "invalid stream");
}

int aclrtDestroyStream(void *stream) {
    if (!valid_stream(stream)) return fail(107017, "invalid stream");
    *(unsigned long long *) stream = 0; free(stream);
    return 0;
}

#ifndef FAKE_ACL_NO_IPC
int aclrtIpcMemGetExportKey(void *devPtr, size_t size, char *key, size_t len, uint64_t flags) {
    if (len != 65) return fail(100000, "key length must be 65");
    if (flags != 1) return fail(100000, "fake expects ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION");
    pthread_mutex_lock(&lock);
    block_t *b = containing((uintptr_t) devPtr);
    if (!b || b->kind != KIND_DEVICE || (uintptr_t) devPtr + size > b->base + b->size) {
        pthread_mutex_unlock(&lock);
        return fail(107000, "not device memory");
    }
    snprintf(key, len, "fakeacl-%d-%d-%zu-%zu", (int) getpid(), b->fd, (size_t) ((uintptr_t) devPtr - b->base), size);
    b->exports++;
    pthread_mutex_unlock(&lock);
    return 0;
}

int aclrtIpcMemImportByKey(void **devPtr, const char *key, uint64_t flags) {
    if (flags > 1) return fail(100000, "bad flags");
    if (current_device < 0) return fail(107002, "no context on this thread");
    int pid, fd;
    size_t offset, size;
    if (sscanf(key, "fakeacl-%d-%d-%zu-%zu", &pid, &fd, &offset, &size) != 4) return fail(507022, "bad key");
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
    int mine = open(path, O_RDWR | O_CLOEXEC);
    if (mine < 0) return fail(507022, "cannot open exporter memory");
    struct stat st;
    fstat(mine, &st);
    void *p = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, mine, 0);
    close(mine);
    if (p == MAP_FAILED) return fail(507022, "mmap");
    pthread_mutex_lock(&lock);
    block_t *b = add((uintptr_t) p + offset, size, KIND_IMPORTED, current_device, -1);
    b->map_base = (uintptr_t) p; b->map_size = (size_t) st.st_size;
    snprintf(b->key, sizeof b->key, "%s", key);
    pthread_mutex_unlock(&lock);
    *devPtr = (char *) p + offset;
    return 0;
}

int aclrtIpcMemClose(const char *key) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_BLOCKS; i++) {
        if (blocks[i].kind == KIND_IMPORTED && strcmp(blocks[i].key, key) == 0) {
            munmap((void *) blocks[i].map_base, blocks[i].map_size);
            blocks[i].kind = KIND_NONE;
            pthread_mutex_unlock(&lock);
            return 0;
        }
    }
    int pid, fd;
    size_t offset, size;
    if (sscanf(key, "fakeacl-%d-%d-%zu-%zu", &pid, &fd, &offset, &size) == 4 && pid == getpid()) {
        for (int i = 0; i < MAX_BLOCKS; i++) {
            if (blocks[i].kind == KIND_DEVICE && blocks[i].fd == fd && blocks[i].exports > 0) {
                blocks[i].exports--;
                pthread_mutex_unlock(&lock);
                return 0;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return fail(507022, "unknown key");
}

/* aclrtPtrAttributes: {uint32 id; uint32 type} location; uint32 pageSize; uint32 rsv[4] */
int aclrtPointerGetAttributes(const void *ptr, void *attributes) {
    memset(attributes, 0, 28);
    pthread_mutex_lock(&lock);
    block_t *b = containing((uintptr_t) ptr);
    uint32_t type = !b ? 2 : b->kind == KIND_HOST ? 0 : 1; /* UNREGISTERED 2, HOST 0, DEVICE 1 */
    uint32_t id = b ? (uint32_t) b->device : 0;
    pthread_mutex_unlock(&lock);
    ((uint32_t *) attributes)[0] = id;
    ((uint32_t *) attributes)[1] = type;
    ((uint32_t *) attributes)[2] = 4096;
    return 0;
}

int fakeAclOpenImports(void) {
    int n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_BLOCKS; i++) n += blocks[i].kind == KIND_IMPORTED;
    pthread_mutex_unlock(&lock);
    return n;
}
#endif
