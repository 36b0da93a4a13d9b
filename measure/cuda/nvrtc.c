/*
 * nvrtc.c - NVRTC opened with dlopen, once per process (see nvrtc.h).
 * Every nvrtc* call goes through NV_FAILED, which records the call's text
 * and nvrtcGetErrorString's name for the result.
 */
#include "measure/cuda/nvrtc.h"
#include "measure/backend_impl.h"

#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(ET_HAVE_CUDA_H) && __has_include(<nvrtc.h>)
#include <nvrtc.h>
#else
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;
#define NVRTC_SUCCESS 0
#endif

typedef struct nvrtc_api {
    void *lib;
    const char *(*GetErrorString)(nvrtcResult);
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *,
                                 int, const char *const *,
                                 const char *const *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
} nvrtc_api;

static nvrtc_api g_nv;
static char g_nv_why[512];
static pthread_once_t g_nv_once = PTHREAD_ONCE_INIT;

static const struct {
    size_t off;
    const char *name;
} nv_symbols[] = {
    {offsetof(nvrtc_api, GetErrorString), "nvrtcGetErrorString"},
    {offsetof(nvrtc_api, Version), "nvrtcVersion"},
    {offsetof(nvrtc_api, CreateProgram), "nvrtcCreateProgram"},
    {offsetof(nvrtc_api, DestroyProgram), "nvrtcDestroyProgram"},
    {offsetof(nvrtc_api, CompileProgram), "nvrtcCompileProgram"},
    {offsetof(nvrtc_api, GetPTXSize), "nvrtcGetPTXSize"},
    {offsetof(nvrtc_api, GetPTX), "nvrtcGetPTX"},
    {offsetof(nvrtc_api, GetCUBINSize), "nvrtcGetCUBINSize"},
    {offsetof(nvrtc_api, GetCUBIN), "nvrtcGetCUBIN"},
    {offsetof(nvrtc_api, GetProgramLogSize), "nvrtcGetProgramLogSize"},
    {offsetof(nvrtc_api, GetProgramLog), "nvrtcGetProgramLog"},
};

static void nv_load_once(void)
{
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                        "libnvrtc.so"};
    const char *env = getenv("ET_LIBNVRTC");
    void *lib = NULL;
    if (env && *env) {
        lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            snprintf(g_nv_why, sizeof g_nv_why,
                     "NVRTC not found: ET_LIBNVRTC=%s: %s", env, dlerror());
            return;
        }
    }
    for (size_t i = 0; !lib && i < sizeof names / sizeof names[0]; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(g_nv_why, sizeof g_nv_why,
                 "NVRTC not found: none of libnvrtc.so.13, libnvrtc.so.12, "
                 "libnvrtc.so is installed (set ET_LIBNVRTC to its path)");
        return;
    }
    nvrtc_api api = {.lib = lib};
    for (size_t i = 0; i < sizeof nv_symbols / sizeof nv_symbols[0]; i++) {
        void *sym = dlsym(lib, nv_symbols[i].name);
        if (!sym) {
            snprintf(g_nv_why, sizeof g_nv_why,
                     "NVRTC library lacks %s: too old?", nv_symbols[i].name);
            dlclose(lib);
            return;
        }
        memcpy((char *)&api + nv_symbols[i].off, &sym, sizeof sym);
    }
    g_nv = api; /* kept for the life of the process */
}

bool et_cuda_have_nvrtc(et_error *err)
{
    pthread_once(&g_nv_once, nv_load_once);
    if (g_nv.lib)
        return true;
    et_errorf(err, ET_ERR_UNSUPPORTED, "%s", g_nv_why);
    return false;
}

/* The body of NV_FAILED. */
static bool nv_failed(et_error *err, const char *text, nvrtcResult rc)
{
    if (rc == NVRTC_SUCCESS)
        return false;
    if (err) {
        const char *name = g_nv.GetErrorString ? g_nv.GetErrorString(rc)
                                               : NULL;
        et_errorf(err, ET_ERR_BUILD, "%s failed: %s (%d)", text,
                  name ? name : "unknown NVRTC error", (int)rc);
    }
    return true;
}

/* The one checking macro for nvrtc* calls: true on failure, err filled. */
#define NV_FAILED(err, call) nv_failed((err), #call, (call))

/* "compute_90", "sm_90a", "compute_100f": a prefix and a number. */
static bool arch_ok(const char *arch, bool *cubin)
{
    const char *p;
    if (strncmp(arch, "compute_", 8) == 0) {
        p = arch + 8;
        *cubin = false;
    } else if (strncmp(arch, "sm_", 3) == 0) {
        p = arch + 3;
        *cubin = true;
    } else {
        return false;
    }
    if (!isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p))
        p++;
    return *p == '\0' || ((*p == 'a' || *p == 'f') && p[1] == '\0');
}

et_status et_cuda_compile_ptx(const char *source, const char *arch,
                              char **ptx_out, size_t *ptx_len, et_error *err)
{
    et_status st = ET_OK;
    nvrtcProgram prog = NULL;
    char *image = NULL, *log = NULL;
    bool cubin = false;
    size_t size = 0;

    *ptx_out = NULL;
    if (ptx_len)
        *ptx_len = 0;
    if (!source || !arch || !arch_ok(arch, &cubin))
        return et_errorf(err, ET_ERR_INPUT,
                         "NVRTC: architecture '%s' is not compute_XY or "
                         "sm_XY",
                         arch ? arch : "(null)");
    if (!et_cuda_have_nvrtc(err))
        return ET_ERR_UNSUPPORTED;

    if (NV_FAILED(err, g_nv.CreateProgram(&prog, source, "eintune_kernel.cu",
                                          0, NULL, NULL))) {
        st = ET_ERR_BUILD;
        goto cleanup;
    }
    char arch_opt[64];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    const char *opts[] = {arch_opt};
    nvrtcResult crc;
    if (NV_FAILED(err, crc = g_nv.CompileProgram(prog, 1, opts))) {
        st = ET_ERR_BUILD;
        size_t len = 0;
        et_error ignore;
        if (NV_FAILED(&ignore, g_nv.GetProgramLogSize(prog, &len)) ||
            !(log = calloc(len + 1, 1)) ||
            NV_FAILED(&ignore, g_nv.GetProgramLog(prog, log))) {
            et_error_append(err, " (no compile log)");
            goto cleanup;
        }
        char first[512], call[256];
        et_log_first_error(log, first, sizeof first);
        snprintf(call, sizeof call, "%.200s", err->msg);
        et_errorf(err, ET_ERR_BUILD,
                  "NVRTC compile for %s failed: %s\n[%s]\ncompile "
                  "log:\n%s",
                  arch, first[0] ? first : "(empty log)", call, log);
        goto cleanup;
    }
    if (cubin ? NV_FAILED(err, g_nv.GetCUBINSize(prog, &size))
              : NV_FAILED(err, g_nv.GetPTXSize(prog, &size))) {
        st = ET_ERR_BUILD;
        goto cleanup;
    }
    image = calloc(size + 1, 1);
    if (!image) {
        st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    if (cubin ? NV_FAILED(err, g_nv.GetCUBIN(prog, image))
              : NV_FAILED(err, g_nv.GetPTX(prog, image))) {
        st = ET_ERR_BUILD;
        goto cleanup;
    }
    /* PTX sizes count the terminating NUL; CUBIN sizes do not. */
    if (!cubin && size > 0 && image[size - 1] == '\0')
        size--;
    *ptx_out = image;
    if (ptx_len)
        *ptx_len = size;
    image = NULL;
cleanup:
    if (prog)
        NV_FAILED(NULL, g_nv.DestroyProgram(&prog));
    free(image);
    free(log);
    return st;
}
