/*
 * registry.c - the device registry: device specs, opening a device of
 * either backend by spec, listing the devices of every backend, and
 * PoCL's environment (a private kernel cache, worker threads pinned)
 * set up before the first OpenCL call. Sees
 * the backends only through their open and list functions.
 */
#include "base/cachedir.h"
#include "measure/backend.h"
#include "measure/cuda/cuda.h"
#include "measure/opencl/opencl.h"

#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- device specs ------------------------------------------------------ */

/* Parses a whole string of decimal digits into *out (0..INT_MAX). */
static bool parse_index(const char *s, size_t len, int *out)
{
    if (len == 0)
        return false;
    long long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
        if (v > INT_MAX)
            return false;
    }
    *out = (int)v;
    return true;
}

static et_status spec_error(et_error *err, const char *spec, const char *why)
{
    return et_errorf(err, ET_ERR_INPUT,
                     "malformed device spec '%s': %s (expected opencl:N, "
                     "opencl:P:D, opencl:NAME or cuda:N)",
                     spec, why);
}

et_status et_device_spec_parse(const char *spec, et_device_spec *out,
                               et_error *err)
{
    memset(out, 0, sizeof *out);
    out->backend = ET_BACKEND_OPENCL;
    out->kind = ET_SPEC_DEFAULT;
    if (!spec || !*spec)
        return ET_OK;

    const char *colon = strchr(spec, ':');
    size_t blen = colon ? (size_t)(colon - spec) : strlen(spec);
    if (blen == 6 && strncmp(spec, "opencl", 6) == 0)
        out->backend = ET_BACKEND_OPENCL;
    else if (blen == 4 && strncmp(spec, "cuda", 4) == 0)
        out->backend = ET_BACKEND_CUDA;
    else
        return spec_error(err, spec, "unknown backend");
    if (!colon)
        return ET_OK;

    const char *sel = colon + 1;
    if (!*sel)
        return spec_error(err, spec, "nothing after ':'");
    bool numeric = isdigit((unsigned char)sel[0]) || sel[0] == '-' ||
                   sel[0] == '+';

    if (out->backend == ET_BACKEND_CUDA) {
        if (!parse_index(sel, strlen(sel), &out->index))
            return spec_error(err, spec,
                              "a CUDA device is chosen by its index >= 0");
        out->kind = ET_SPEC_INDEX;
        return ET_OK;
    }

    if (numeric) {
        const char *c2 = strchr(sel, ':');
        if (!c2) {
            if (!parse_index(sel, strlen(sel), &out->index))
                return spec_error(err, spec,
                                  "a device index is an integer >= 0");
            out->kind = ET_SPEC_INDEX;
            return ET_OK;
        }
        if (!parse_index(sel, (size_t)(c2 - sel), &out->platform) ||
            !parse_index(c2 + 1, strlen(c2 + 1), &out->device))
            return spec_error(err, spec,
                              "platform and device are integers >= 0");
        out->kind = ET_SPEC_PLATFORM_DEVICE;
        return ET_OK;
    }

    size_t nlen = strlen(sel);
    size_t lead = strspn(sel, " \t");
    if (lead == nlen)
        return spec_error(err, spec, "empty device name");
    if (nlen >= sizeof out->name)
        return spec_error(err, spec, "device name too long");
    memcpy(out->name, sel, nlen + 1);
    out->kind = ET_SPEC_NAME;
    return ET_OK;
}

/* ---- open, close, list ------------------------------------------------- */

/*
 * PoCL keeps compiled kernels in $POCL_CACHE_DIR, by default under
 * ~/.cache/pocl, which grows without bound. Unless the user chose a
 * directory, eintune points PoCL at a private one of its own,
 * $XDG_CACHE_HOME/eintune/pocl (0700), and empties it when it has grown
 * past ET_POCL_CACHE_MAX bytes. Done before the first OpenCL call of the
 * process, while no driver thread runs (setenv is not thread-safe).
 */
#define ET_POCL_CACHE_MAX ((int64_t)1 << 30)

static int64_t g_cache_bytes;

static int cache_sum(const char *path, const struct stat *sb, int flag,
                     struct FTW *ftw)
{
    (void)path;
    (void)ftw;
    if (flag == FTW_F)
        g_cache_bytes += (int64_t)sb->st_size;
    return 0;
}

static int cache_remove(const char *path, const struct stat *sb, int flag,
                        struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    if (ftw->level > 0)
        remove(path);
    return 0;
}

static void pocl_cache_setup_once(void)
{
    if (getenv("POCL_CACHE_DIR"))
        return;
    char dir[4096];
    if (et_cache_dir_make(dir, sizeof dir, NULL) != ET_OK)
        return;
    size_t n = strlen(dir);
    if (n + 7 >= sizeof dir)
        return;
    memcpy(dir + n, "/pocl", 6);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return;
    g_cache_bytes = 0;
    nftw(dir, cache_sum, 16, FTW_PHYS);
    if (g_cache_bytes > ET_POCL_CACHE_MAX)
        nftw(dir, cache_remove, 16, FTW_PHYS | FTW_DEPTH);
    setenv("POCL_CACHE_DIR", dir, 0);
}

/*
 * PoCL's CPU driver runs work-groups on one worker thread per core and
 * leaves their placement to the scheduler. For kernels of a few
 * milliseconds the workers, woken together by the host thread, often
 * share one core for the whole process: the same kernel then times
 * 0.28 or 0.54 ms (xre,rij,xej->xei f32, 2 cores) depending on the
 * process, and a search or a run judges by the slow half. POCL_AFFINITY=1
 * pins worker i to CPU i. Set only where that is this process's own
 * placement: it may run on every online CPU, numbered 0..n-1, and PoCL
 * starts no more workers than that (an MPI rank bound to a share of the
 * node, or a process under taskset, keeps PoCL's default). A value the
 * user set is left alone.
 */
static void pocl_affinity_setup(void)
{
    if (getenv("POCL_AFFINITY"))
        return;
    cpu_set_t have;
    CPU_ZERO(&have);
    if (sched_getaffinity(0, sizeof have, &have) != 0)
        return;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = CPU_COUNT(&have);
    if (online < 2 || n != online)
        return;
    for (int c = 0; c < n; c++)
        if (!CPU_ISSET(c, &have))
            return;
    const char *max = getenv("POCL_MAX_PTHREAD_COUNT");
    if (max && (atoi(max) < 1 || atoi(max) > n))
        return;
    setenv("POCL_AFFINITY", "1", 0);
}

static void pocl_env_setup_once(void)
{
    pocl_cache_setup_once();
    pocl_affinity_setup();
}

/* Once per process, whichever thread opens a device first; the others
 * wait until it is done (g_cache_bytes is only touched here). */
static pthread_once_t g_pocl_env_once = PTHREAD_ONCE_INIT;

static void pocl_env_setup(void)
{
    pthread_once(&g_pocl_env_once, pocl_env_setup_once);
}

et_status et_device_open(const char *spec, et_device **out, et_error *err)
{
    et_error scratch;
    if (!err)
        err = &scratch;
    err->msg[0] = '\0';
    *out = NULL;

    et_device_spec parsed;
    et_status st = et_device_spec_parse(spec, &parsed, err);
    if (st != ET_OK)
        return st;
    pocl_env_setup();

    et_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    switch (parsed.backend) {
    case ET_BACKEND_OPENCL: st = et_opencl_open(&parsed, dev, err); break;
    case ET_BACKEND_CUDA: st = et_cuda_open(&parsed, dev, err); break;
    default:
        st = et_errorf(err, ET_ERR_INTERNAL, "unknown backend %d",
                       (int)parsed.backend);
        break;
    }
    if (st != ET_OK) {
        free(dev);
        return st;
    }
    *out = dev;
    return ET_OK;
}

void et_device_close(et_device *dev)
{
    if (!dev)
        return;
    if (dev->ops && dev->ops->close)
        dev->ops->close(dev->ctx);
    free(dev);
}

et_status et_device_list(et_device_info *out, int cap, int *n, char *notes,
                         size_t notes_cap)
{
    *n = 0;
    if (notes && notes_cap)
        notes[0] = '\0';
    if (cap < 0 || (cap > 0 && !out))
        return ET_ERR_INPUT;
    pocl_env_setup();
    et_opencl_list(out, cap, n, notes, notes_cap);
    et_cuda_list(out, cap, n, notes, notes_cap);
    return ET_OK;
}
