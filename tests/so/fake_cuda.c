/*
 * fake_cuda.c - a fake libcuda for the tests (see fake_cuda.h). It exports
 * the Driver API entry points measure/cuda/cuda.c resolves, under their
 * versioned names, checks their arguments as a driver would (initialized,
 * a current context, pointers inside allocations, block and grid limits)
 * and records what it was given.
 *
 * Deliberately independent of cuda.h: it declares its own ABI-compatible
 * types, so it also checks that the backend passes what the ABI expects.
 */
#include "tests/so/fake_cuda.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct fake_ctx *CUcontext;
typedef struct fake_module *CUmodule;
typedef struct fake_function *CUfunction;
typedef struct fake_event *CUevent;
typedef struct fake_stream *CUstream;

enum {
    OK = 0,
    E_INVALID_VALUE = 1,
    E_NOT_INITIALIZED = 3,
    E_INVALID_DEVICE = 101,
    E_INVALID_IMAGE = 200,
    E_INVALID_CONTEXT = 201,
    E_INVALID_PTX = 218,
    E_INVALID_HANDLE = 400,
    E_NOT_FOUND = 500,
};

struct fake_ctx {
    int device;
};
struct fake_module {
    char *ptx;
};
struct fake_function {
    int nparams;
    char name[256];
};
struct fake_event {
    double t;
};
struct fake_stream {
    int flags;
};

static fake_cuda_log g_log;
static int g_initialized;
static struct fake_ctx g_primary[8];
static CUcontext g_current;
static struct {
    void *base;
    size_t size;
} g_mem[4096];
/* fake_cuda_touch's bytes per launch parameter */
static unsigned long long g_touch[FAKE_CUDA_MAX];
static int g_ntouch;

#if defined(__SANITIZE_ADDRESS__)
#define FAKE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAKE_ASAN 1
#endif
#endif

const fake_cuda_log *fake_cuda_log_get(void) { return &g_log; }

void fake_cuda_touch(const unsigned long long *bytes, int n)
{
    g_ntouch = n < 0 ? 0 : n > FAKE_CUDA_MAX ? FAKE_CUDA_MAX : n;
    for (int i = 0; i < g_ntouch; i++)
        g_touch[i] = bytes[i];
}

void fake_cuda_log_reset(void)
{
    int live = g_log.live_allocs, retained = g_log.ctx_retained,
        events = g_log.events_live, modules = g_log.modules_live,
        streams = g_log.streams_live;
    memset(&g_log, 0, sizeof g_log);
    /* the counts of live objects survive a reset */
    g_log.live_allocs = live;
    g_log.ctx_retained = retained;
    g_log.events_live = events;
    g_log.modules_live = modules;
    g_log.streams_live = streams;
}

static int device_count(void)
{
    const char *env = getenv("FAKE_CUDA_DEVICES");
    int n = env ? atoi(env) : 1;
    return n < 0 ? 0 : n > 8 ? 8 : n;
}

/* Finds the allocation holding [p, p + n); -1 if none. */
static int find_mem(CUdeviceptr p, size_t n)
{
    for (size_t i = 0; i < sizeof g_mem / sizeof g_mem[0]; i++) {
        uintptr_t base = (uintptr_t)g_mem[i].base;
        if (g_mem[i].base && p >= base && p - base <= g_mem[i].size &&
            n <= g_mem[i].size - (p - base))
            return (int)i;
    }
    return -1;
}

#define NEED_INIT()                                                         \
    do {                                                                    \
        if (!g_initialized)                                                 \
            return E_NOT_INITIALIZED;                                       \
    } while (0)
#define NEED_CTX()                                                          \
    do {                                                                    \
        NEED_INIT();                                                        \
        if (!g_current)                                                     \
            return E_INVALID_CONTEXT;                                       \
    } while (0)

CUresult cuGetErrorName(CUresult e, const char **name)
{
    static const struct {
        int code;
        const char *name;
    } names[] = {
        {OK, "CUDA_SUCCESS"},
        {E_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
        {E_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
        {E_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
        {E_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
        {E_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
        {E_INVALID_PTX, "CUDA_ERROR_INVALID_PTX"},
        {E_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
        {E_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (names[i].code == e) {
            *name = names[i].name;
            return OK;
        }
    }
    *name = NULL;
    return E_INVALID_VALUE;
}

CUresult cuInit(unsigned flags)
{
    if (flags != 0)
        return E_INVALID_VALUE;
    g_initialized = 1;
    g_log.init_calls++;
    return OK;
}

CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return OK;
}

CUresult cuDeviceGetCount(int *n)
{
    NEED_INIT();
    *n = device_count();
    return OK;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    NEED_INIT();
    if (ordinal < 0 || ordinal >= device_count())
        return E_INVALID_DEVICE;
    *d = ordinal;
    return OK;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    NEED_INIT();
    if (d < 0 || d >= device_count())
        return E_INVALID_DEVICE;
    snprintf(name, (size_t)len, "Fake CUDA Device %d (eintune tests)", d);
    return OK;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
    NEED_INIT();
    if (d < 0 || d >= device_count())
        return E_INVALID_DEVICE;
    switch (attr) {
    case 1: *v = 1024; break;       /* max threads per block */
    case 2: *v = 1024; break;       /* block x */
    case 3: *v = 1024; break;       /* block y */
    case 4: *v = 64; break;         /* block z */
    case 5: *v = 2147483647; break; /* grid x */
    case 6: *v = 65535; break;      /* grid y */
    case 7: *v = 65535; break;      /* grid z */
    case 8: *v = 49152; break;      /* shared memory per block */
    case 16: *v = 132; break;       /* SMs */
    case 75: *v = 9; break;         /* cc major */
    case 76: *v = 0; break;         /* cc minor */
    default: return E_INVALID_VALUE;
    }
    return OK;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
    NEED_INIT();
    if (d < 0 || d >= device_count())
        return E_INVALID_DEVICE;
    *bytes = (size_t)80 << 30;
    return OK;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d)
{
    NEED_INIT();
    if (d < 0 || d >= device_count())
        return E_INVALID_DEVICE;
    g_primary[d].device = d;
    *ctx = &g_primary[d];
    g_log.ctx_retained++;
    return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    NEED_INIT();
    if (d < 0 || d >= device_count())
        return E_INVALID_DEVICE;
    g_log.ctx_retained--;
    return OK;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    NEED_INIT();
    g_current = ctx;
    return OK;
}

CUresult cuCtxGetCurrent(CUcontext *ctx)
{
    NEED_INIT();
    *ctx = g_current;
    return OK;
}

CUresult cuCtxGetDevice(CUdevice *d)
{
    NEED_CTX();
    *d = g_current->device;
    return OK;
}

CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
    NEED_CTX();
    *s = calloc(1, sizeof **s);
    if (!*s)
        return 2;
    (*s)->flags = (int)flags;
    g_log.streams_live++;
    return OK;
}

CUresult cuStreamDestroy_v2(CUstream s)
{
    NEED_CTX();
    if (!s)
        return E_INVALID_HANDLE;
    free(s);
    g_log.streams_live--;
    return OK;
}

CUresult cuStreamSynchronize(CUstream s)
{
    NEED_CTX();
    (void)s;
    return OK;
}

CUresult cuCtxSynchronize(void)
{
    NEED_CTX();
    return OK;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
    NEED_CTX();
    if (bytes == 0)
        return E_INVALID_VALUE;
    for (size_t i = 0; i < sizeof g_mem / sizeof g_mem[0]; i++) {
        if (g_mem[i].base)
            continue;
        void *mem = NULL;
        if (posix_memalign(&mem, 256, bytes) != 0)
            return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
        memset(mem, 0xA5, bytes);
        g_mem[i].base = mem;
        g_mem[i].size = bytes;
        *p = (CUdeviceptr)(uintptr_t)mem;
        g_log.live_allocs++;
        if (g_log.nallocs < FAKE_CUDA_MAX) {
            g_log.alloc_ptrs[g_log.nallocs] = *p;
            g_log.alloc_sizes[g_log.nallocs] = bytes;
        }
        g_log.nallocs++;
        return OK;
    }
    return 2;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
    NEED_CTX();
    for (size_t i = 0; i < sizeof g_mem / sizeof g_mem[0]; i++) {
        if (g_mem[i].base && (uintptr_t)g_mem[i].base == p) {
            free(g_mem[i].base);
            g_mem[i].base = NULL;
            g_log.live_allocs--;
            return OK;
        }
    }
    return E_INVALID_VALUE;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size,
                                 CUdeviceptr p)
{
    NEED_CTX();
    g_log.address_ranges++;
    for (size_t i = 0; i < sizeof g_mem / sizeof g_mem[0]; i++) {
        uintptr_t b = (uintptr_t)g_mem[i].base;
        if (g_mem[i].base && p >= b && p - b < g_mem[i].size) {
            if (base)
                *base = (CUdeviceptr)b;
            if (size)
                *size = g_mem[i].size;
            return OK;
        }
    }
    return E_NOT_FOUND;
}

/* A launch's accesses as fake_cuda_touch asked: the output written, the
 * inputs read (see fake_cuda.h for what happens past an allocation). */
static void touch(void **params, int nparams)
{
    volatile unsigned char sum = 0;
    for (int i = 0; i < nparams && i < g_ntouch; i++) {
        CUdeviceptr p;
        memcpy(&p, params[i], sizeof p);
        size_t n = (size_t)g_touch[i];
#ifndef FAKE_ASAN
        int m = find_mem(p, 0);
        size_t room = m < 0 ? 0
                            : g_mem[m].size - (size_t)(p - (uintptr_t)g_mem[m].base);
        if (n > room) {
            g_log.overruns++;
            n = room;
        }
#endif
        unsigned char *mem = (unsigned char *)(uintptr_t)p;
        if (i == 0)
            memset(mem, 0x3C, n);
        else
            for (size_t b = 0; b < n; b++)
                sum ^= mem[b];
    }
    (void)sum;
    if (g_ntouch)
        g_log.touches++;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    NEED_CTX();
    if (find_mem(dst, n) < 0)
        return E_INVALID_VALUE;
    memcpy((void *)(uintptr_t)dst, src, n);
    return OK;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    NEED_CTX();
    if (find_mem(src, n) < 0)
        return E_INVALID_VALUE;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return OK;
}

static CUresult load_module(CUmodule *out, const void *image, char *log,
                            size_t log_cap)
{
    NEED_CTX();
    const char *text = image;
    if (!text || !strstr(text, ".version") || !strstr(text, ".target")) {
        if (log && log_cap)
            snprintf(log, log_cap, "fake_cuda: the image is not PTX");
        return E_INVALID_PTX;
    }
    struct fake_module *m = calloc(1, sizeof *m);
    if (!m || !(m->ptx = strdup(text))) {
        free(m);
        return 2;
    }
    snprintf(g_log.module_image, sizeof g_log.module_image, "%s", text);
    g_log.module_loads++;
    g_log.modules_live++;
    *out = m;
    return OK;
}

CUresult cuModuleLoadData(CUmodule *out, const void *image)
{
    return load_module(out, image, NULL, 0);
}

CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned n,
                            int *options, void **values)
{
    char *log = NULL;
    size_t cap = 0;
    for (unsigned i = 0; i < n; i++) {
        if (options[i] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
            log = values[i];
        else if (options[i] == 6) /* ..._SIZE_BYTES, passed by value */
            cap = (size_t)(uintptr_t)values[i];
    }
    if (log && cap)
        log[0] = '\0';
    return load_module(out, image, log, cap);
}

CUresult cuModuleUnload(CUmodule m)
{
    NEED_CTX();
    if (!m)
        return E_INVALID_HANDLE;
    free(m->ptx);
    free(m);
    g_log.modules_live--;
    return OK;
}

/* Counts the .param entries of ".entry name(...)" in the PTX; -1 if the
 * entry is not there. */
static int count_params(const char *ptx, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = ptx; (p = strstr(p, ".entry ")) != NULL; p += 7) {
        const char *q = p + 7;
        while (*q == ' ' || *q == '\t')
            q++;
        if (strncmp(q, name, n) != 0)
            continue;
        q += n;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
            q++;
        if (*q != '(')
            continue;
        const char *end = strchr(q, ')');
        int count = 0;
        for (const char *r = q; (r = strstr(r, ".param")) && r < end; r += 6)
            count++;
        return count;
    }
    return -1;
}

CUresult cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name)
{
    NEED_CTX();
    if (!m)
        return E_INVALID_HANDLE;
    snprintf(g_log.function, sizeof g_log.function, "%s", name);
    int np = count_params(m->ptx, name);
    if (np < 0)
        return E_NOT_FOUND;
    /* functions live with their module here; a small leak-free pool */
    static struct fake_function pool[64];
    static int next;
    struct fake_function *f = &pool[next++ % 64];
    f->nparams = np;
    snprintf(f->name, sizeof f->name, "%s", name);
    *out = f;
    return OK;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                        CUstream stream, void **params, void **extra)
{
    NEED_CTX();
    if (!f)
        return E_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz || bx > 1024 || by > 1024 ||
        bz > 64 || (unsigned long long)bx * by * bz > 1024 || gy > 65535 ||
        gz > 65535 || shmem > 49152 || (f->nparams > 0 && !params) || extra)
        return E_INVALID_VALUE;
    g_log.launches++;
    g_log.launch_stream = (unsigned long long)(uintptr_t)stream;
    g_log.grid[0] = gx;
    g_log.grid[1] = gy;
    g_log.grid[2] = gz;
    g_log.block[0] = bx;
    g_log.block[1] = by;
    g_log.block[2] = bz;
    g_log.shared_mem = shmem;
    g_log.nparams = f->nparams;
    for (int i = 0; i < f->nparams && i < FAKE_CUDA_MAX; i++) {
        CUdeviceptr p;
        memcpy(&p, params[i], sizeof p);
        if (find_mem(p, 0) < 0)
            return E_INVALID_VALUE; /* not a device pointer */
        g_log.params[i] = p;
    }
    touch(params, f->nparams);
    return OK;
}

CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n,
                         CUstream stream)
{
    NEED_CTX();
    if (find_mem(p, n) < 0)
        return E_INVALID_VALUE;
    memset((void *)(uintptr_t)p, v, n);
    g_log.memsets++;
    g_log.memset_stream = (unsigned long long)(uintptr_t)stream;
    g_log.memset_ptr = p;
    g_log.memset_bytes = n;
    g_log.memset_value = v;
    g_log.memset_before_launch = g_log.launches;
    return OK;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

CUresult cuEventCreate(CUevent *e, unsigned flags)
{
    NEED_CTX();
    (void)flags;
    *e = calloc(1, sizeof **e);
    if (!*e)
        return 2;
    g_log.events_live++;
    return OK;
}

CUresult cuEventRecord(CUevent e, CUstream s)
{
    NEED_CTX();
    (void)s;
    if (!e)
        return E_INVALID_HANDLE;
    e->t = now();
    return OK;
}

CUresult cuEventSynchronize(CUevent e)
{
    NEED_CTX();
    return e ? OK : E_INVALID_HANDLE;
}

CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    NEED_CTX();
    if (!a || !b)
        return E_INVALID_HANDLE;
    double d = (b->t - a->t) * 1e3;
    *ms = (float)(d > 1e-3 ? d : 1e-3);
    return OK;
}

CUresult cuEventDestroy_v2(CUevent e)
{
    NEED_CTX();
    if (!e)
        return E_INVALID_HANDLE;
    free(e);
    g_log.events_live--;
    return OK;
}
