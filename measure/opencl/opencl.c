/*
 * opencl.c - the OpenCL backend, through the ICD loader (OpenCL 1.2 API).
 *
 * One device context holds a cl_context and one in-order command queue
 * with profiling enabled. Programs are built with "-cl-std=CL1.2" and no
 * fast-math flags (they would break the error bound verification relies
 * on). Launch times are device-side: the kernel event's END - START.
 *
 * Buffer offsets: OpenCL 1.2 has no pointer arithmetic on cl_mem, so an
 * argument at a non-zero offset becomes a sub-buffer, which OpenCL only
 * allows at multiples of CL_DEVICE_MEM_BASE_ADDR_ALIGN. A few sub-buffers
 * are cached per buffer (timing loops launch with the same offsets again
 * and again); further ones live for one launch.
 *
 * Every cl* call goes through CL_FAILED, which records the call's text and
 * the error's name. Not thread-safe: one thread uses a device at a time.
 */
#include "measure/opencl/opencl.h"
#include "measure/backend_impl.h"
#include "measure/user_kernel.h"

#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- error names and the checking macro -------------------------------- */

static const struct {
    cl_int code;
    const char *name;
} cl_error_names[] = {
    {0, "CL_SUCCESS"},
    {-1, "CL_DEVICE_NOT_FOUND"},
    {-2, "CL_DEVICE_NOT_AVAILABLE"},
    {-3, "CL_COMPILER_NOT_AVAILABLE"},
    {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"},
    {-6, "CL_OUT_OF_HOST_MEMORY"},
    {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
    {-8, "CL_MEM_COPY_OVERLAP"},
    {-9, "CL_IMAGE_FORMAT_MISMATCH"},
    {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
    {-11, "CL_BUILD_PROGRAM_FAILURE"},
    {-12, "CL_MAP_FAILURE"},
    {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
    {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
    {-15, "CL_COMPILE_PROGRAM_FAILURE"},
    {-16, "CL_LINKER_NOT_AVAILABLE"},
    {-17, "CL_LINK_PROGRAM_FAILURE"},
    {-18, "CL_DEVICE_PARTITION_FAILED"},
    {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
    {-30, "CL_INVALID_VALUE"},
    {-31, "CL_INVALID_DEVICE_TYPE"},
    {-32, "CL_INVALID_PLATFORM"},
    {-33, "CL_INVALID_DEVICE"},
    {-34, "CL_INVALID_CONTEXT"},
    {-35, "CL_INVALID_QUEUE_PROPERTIES"},
    {-36, "CL_INVALID_COMMAND_QUEUE"},
    {-37, "CL_INVALID_HOST_PTR"},
    {-38, "CL_INVALID_MEM_OBJECT"},
    {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
    {-40, "CL_INVALID_IMAGE_SIZE"},
    {-41, "CL_INVALID_SAMPLER"},
    {-42, "CL_INVALID_BINARY"},
    {-43, "CL_INVALID_BUILD_OPTIONS"},
    {-44, "CL_INVALID_PROGRAM"},
    {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
    {-46, "CL_INVALID_KERNEL_NAME"},
    {-47, "CL_INVALID_KERNEL_DEFINITION"},
    {-48, "CL_INVALID_KERNEL"},
    {-49, "CL_INVALID_ARG_INDEX"},
    {-50, "CL_INVALID_ARG_VALUE"},
    {-51, "CL_INVALID_ARG_SIZE"},
    {-52, "CL_INVALID_KERNEL_ARGS"},
    {-53, "CL_INVALID_WORK_DIMENSION"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE"},
    {-55, "CL_INVALID_WORK_ITEM_SIZE"},
    {-56, "CL_INVALID_GLOBAL_OFFSET"},
    {-57, "CL_INVALID_EVENT_WAIT_LIST"},
    {-58, "CL_INVALID_EVENT"},
    {-59, "CL_INVALID_OPERATION"},
    {-60, "CL_INVALID_GL_OBJECT"},
    {-61, "CL_INVALID_BUFFER_SIZE"},
    {-62, "CL_INVALID_MIP_LEVEL"},
    {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
    {-64, "CL_INVALID_PROPERTY"},
    {-65, "CL_INVALID_IMAGE_DESCRIPTOR"},
    {-66, "CL_INVALID_COMPILER_OPTIONS"},
    {-67, "CL_INVALID_LINKER_OPTIONS"},
    {-68, "CL_INVALID_DEVICE_PARTITION_COUNT"},
    {-69, "CL_INVALID_PIPE_SIZE"},
    {-70, "CL_INVALID_DEVICE_QUEUE"},
    {-71, "CL_INVALID_SPEC_ID"},
    {-72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED"},
    {-1000, "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR"},
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
    {-1002, "CL_INVALID_D3D10_DEVICE_KHR"},
    {-1057, "CL_DEVICE_PARTITION_FAILED_EXT"},
    {-1058, "CL_INVALID_PARTITION_COUNT_EXT"},
    {-1059, "CL_INVALID_PARTITION_NAME_EXT"},
};

static const char *ocl_error_name(cl_int code)
{
    for (size_t i = 0; i < sizeof cl_error_names / sizeof cl_error_names[0];
         i++)
        if (cl_error_names[i].code == code)
            return cl_error_names[i].name;
    return "unknown OpenCL error";
}

/*
 * Extracts "clName(args)" from the stringified call, which may be wrapped
 * as "(x = clName(args, &rc), rc)" or "rc = clName(args)".
 */
static void ocl_call_text(const char *text, char *out, size_t cap)
{
    const char *p = text;
    for (; *p; p++) {
        bool starts_word = p == text || !(isalnum((unsigned char)p[-1]) ||
                                          p[-1] == '_');
        if (starts_word && p[0] == 'c' && p[1] == 'l' &&
            isupper((unsigned char)p[2]))
            break;
    }
    if (!*p)
        p = text;
    size_t len = 0;
    int depth = 0;
    for (; p[len]; len++) {
        if (p[len] == '(')
            depth++;
        else if (p[len] == ')' && --depth == 0) {
            len++;
            break;
        }
    }
    snprintf(out, cap, "%.*s", (int)len, p);
}

/* The body of CL_FAILED: true (and err filled, if non-NULL) on failure. */
static bool ocl_failed(et_error *err, const char *text, cl_int rc)
{
    if (rc == CL_SUCCESS)
        return false;
    if (err) {
        char call[512];
        ocl_call_text(text, call, sizeof call);
        et_errorf(err, ET_ERR_DEVICE, "%s failed: %s (%d)", call,
                  ocl_error_name(rc), (int)rc);
    }
    return true;
}

/*
 * The one checking macro: `call` is an expression whose value is the
 * cl_int status (for creators: "(obj = clCreateX(..., &rc), rc)").
 * Evaluates to true when the call failed; err (may be NULL) then holds
 * "clX(...) failed: CL_NAME (code)".
 */
#define CL_FAILED(err, call) ocl_failed((err), #call, (call))

/* CL_FAILED for a function with `et_status st`, `err` and a `cleanup`
 * label: on failure sets st = status and jumps to cleanup. (It calls
 * ocl_failed itself so that the recorded text is the call as written,
 * before macros such as NULL expand.) */
#define CL_TRY(status, call)                                                \
    do {                                                                    \
        if (ocl_failed(err, #call, (call))) {                               \
            st = (status);                                                  \
            goto cleanup;                                                   \
        }                                                                   \
    } while (0)

/* ---- backend objects --------------------------------------------------- */

enum { OCL_SUB_CACHE = 4 };

typedef struct ocl_ctx {
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    size_t align; /* CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes */
} ocl_ctx;

typedef struct ocl_buffer {
    cl_mem mem;
    size_t bytes;
    int nsub;
    struct {
        size_t off;
        cl_mem mem;
    } sub[OCL_SUB_CACHE];
} ocl_buffer;

typedef struct ocl_program {
    cl_program program;
    cl_kernel kernel;
    cl_uint nargs;
} ocl_program;

/* ---- device enumeration and info --------------------------------------- */

typedef struct ocl_dev_ref {
    cl_device_id id;
    int platform, device;
} ocl_dev_ref;

/* All devices of all platforms, in platform order. *out is malloc'ed. */
static et_status ocl_collect(ocl_dev_ref **out, int *n, et_error *err)
{
    et_status st = ET_OK;
    cl_platform_id *plats = NULL;
    cl_device_id *ids = NULL;
    ocl_dev_ref *refs = NULL;
    cl_uint nplat = 0;
    int count = 0;
    cl_int rc;

    *out = NULL;
    *n = 0;
    if (CL_FAILED(err, rc = clGetPlatformIDs(0, NULL, &nplat))) {
        if (rc == CL_PLATFORM_NOT_FOUND_KHR)
            nplat = 0;
        else {
            st = ET_ERR_DEVICE;
            goto cleanup;
        }
    }
    if (nplat == 0) {
        st = et_errorf(err, ET_ERR_DEVICE,
                       "no OpenCL platform: the ICD loader found no "
                       "driver (install one, e.g. pocl-opencl-icd for "
                       "the CPU)");
        goto cleanup;
    }
    plats = calloc(nplat, sizeof *plats);
    if (!plats) {
        st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    CL_TRY(ET_ERR_DEVICE, clGetPlatformIDs(nplat, plats, NULL));
    for (cl_uint p = 0; p < nplat; p++) {
        cl_uint ndev = 0;
        if (CL_FAILED(err, rc = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL,
                                               0, NULL, &ndev))) {
            if (rc == CL_DEVICE_NOT_FOUND)
                continue;
            st = ET_ERR_DEVICE;
            goto cleanup;
        }
        if (ndev == 0)
            continue;
        free(ids);
        ids = calloc(ndev, sizeof *ids);
        ocl_dev_ref *grown = realloc(refs, (count + ndev) * sizeof *refs);
        if (!ids || !grown) {
            if (grown)
                refs = grown;
            st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
            goto cleanup;
        }
        refs = grown;
        CL_TRY(ET_ERR_DEVICE, clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL,
                                             ndev, ids, NULL));
        for (cl_uint d = 0; d < ndev; d++) {
            refs[count].id = ids[d];
            refs[count].platform = (int)p;
            refs[count].device = (int)d;
            count++;
        }
    }
    if (count == 0) {
        st = et_errorf(err, ET_ERR_DEVICE,
                       "no OpenCL device: %u platform(s) but no device",
                       (unsigned)nplat);
        goto cleanup;
    }
    *out = refs;
    *n = count;
    refs = NULL;
cleanup:
    free(refs);
    free(ids);
    free(plats);
    return st;
}

/* A device string parameter, malloc'ed (NUL-terminated). */
static et_status ocl_device_string(cl_device_id id, cl_device_info param,
                                   char **out, et_error *err)
{
    et_status st = ET_OK;
    size_t len = 0;
    char *s = NULL;
    *out = NULL;
    CL_TRY(ET_ERR_DEVICE, clGetDeviceInfo(id, param, 0, NULL, &len));
    s = calloc(len + 1, 1);
    if (!s) {
        st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    CL_TRY(ET_ERR_DEVICE, clGetDeviceInfo(id, param, len, s, NULL));
    s[len] = '\0';
    *out = s;
    s = NULL;
cleanup:
    free(s);
    return st;
}

/* Copies a device string parameter into a fixed field, trimmed. */
static et_status ocl_device_field(cl_device_id id, cl_device_info param,
                                  char *dst, size_t cap, et_error *err)
{
    char *s = NULL;
    et_status st = ocl_device_string(id, param, &s, err);
    if (st != ET_OK)
        return st;
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    snprintf(dst, cap, "%s", p);
    size_t len = strlen(dst);
    while (len > 0 && isspace((unsigned char)dst[len - 1]))
        dst[--len] = '\0';
    free(s);
    return ET_OK;
}

/* True when the space-separated list `exts` holds the token `name`. */
static bool has_token(const char *exts, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = exts; (p = strstr(p, name)) != NULL; p += n) {
        bool start = p == exts || isspace((unsigned char)p[-1]);
        bool end = p[n] == '\0' || isspace((unsigned char)p[n]);
        if (start && end)
            return true;
    }
    return false;
}

#define DEV_VALUE(param, var)                                               \
    CL_TRY(ET_ERR_DEVICE,                                                   \
           clGetDeviceInfo(ref->id, (param), sizeof(var), &(var), NULL))

static et_status ocl_device_info(const ocl_dev_ref *ref, et_device_info *info,
                                 et_error *err)
{
    et_status st = ET_OK;
    char *exts = NULL;
    memset(info, 0, sizeof *info);
    et_target *t = &info->target;
    t->backend = ET_BACKEND_OPENCL;
    snprintf(info->spec, sizeof info->spec, "opencl:%d:%d", ref->platform,
             ref->device);

    st = ocl_device_field(ref->id, CL_DEVICE_NAME, info->name,
                          sizeof info->name, err);
    if (st == ET_OK)
        st = ocl_device_field(ref->id, CL_DEVICE_VENDOR, info->vendor,
                              sizeof info->vendor, err);
    if (st == ET_OK)
        st = ocl_device_field(ref->id, CL_DRIVER_VERSION,
                              info->driver_version,
                              sizeof info->driver_version, err);
    if (st == ET_OK)
        st = ocl_device_field(ref->id, CL_DEVICE_VERSION,
                              info->device_version,
                              sizeof info->device_version, err);
    if (st == ET_OK)
        st = ocl_device_string(ref->id, CL_DEVICE_EXTENSIONS, &exts, err);
    if (st != ET_OK)
        goto cleanup;

    size_t wg = 0, sizes[3] = {1, 1, 1};
    cl_uint dims = 0, align_bits = 0, cus = 0;
    cl_ulong local = 0, global = 0;
    cl_uint vw_half = 0, vw_float = 0, vw_double = 0;
    cl_device_fp_config dfp = 0;
    cl_device_type type = 0;
    cl_ulong gcache = 0;
    DEV_VALUE(CL_DEVICE_TYPE, type);
    DEV_VALUE(CL_DEVICE_MAX_WORK_GROUP_SIZE, wg);
    DEV_VALUE(CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, dims);
    if (dims >= 3) {
        size_t *all = calloc(dims, sizeof *all);
        if (!all) {
            st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
            goto cleanup;
        }
        bool bad = CL_FAILED(err, clGetDeviceInfo(
                                      ref->id, CL_DEVICE_MAX_WORK_ITEM_SIZES,
                                      dims * sizeof *all, all, NULL));
        memcpy(sizes, all, sizeof sizes);
        free(all);
        if (bad) {
            st = ET_ERR_DEVICE;
            goto cleanup;
        }
    } else if (dims > 0) {
        CL_TRY(ET_ERR_DEVICE,
               clGetDeviceInfo(ref->id, CL_DEVICE_MAX_WORK_ITEM_SIZES,
                               dims * sizeof sizes[0], sizes, NULL));
    }
    DEV_VALUE(CL_DEVICE_LOCAL_MEM_SIZE, local);
    DEV_VALUE(CL_DEVICE_GLOBAL_MEM_SIZE, global);
    DEV_VALUE(CL_DEVICE_MEM_BASE_ADDR_ALIGN, align_bits);
    DEV_VALUE(CL_DEVICE_MAX_COMPUTE_UNITS, cus);
    DEV_VALUE(CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF, vw_half);
    DEV_VALUE(CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, vw_float);
    DEV_VALUE(CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE, vw_double);
    /* Devices without doubles may reject this query: treat as "none". */
    if (CL_FAILED(NULL, clGetDeviceInfo(ref->id, CL_DEVICE_DOUBLE_FP_CONFIG,
                                        sizeof dfp, &dfp, NULL)))
        dfp = 0;

    t->max_work_group_size = (int64_t)wg;
    for (int i = 0; i < 3; i++)
        t->max_work_item_sizes[i] = (int64_t)sizes[i];
    t->local_mem_bytes = (int64_t)local;
    t->global_mem_bytes = (int64_t)global;
    t->mem_base_addr_align = align_bits >= 8 ? (int64_t)(align_bits / 8) : 1;
    t->compute_units = (int)cus;
    t->has_fp64 = has_token(exts, "cl_khr_fp64") || dfp != 0;
    t->has_fp16 = has_token(exts, "cl_khr_fp16");
    t->has_atomic64 = has_token(exts, "cl_khr_int64_base_atomics");
    /* f16 is computed in f32 without native half: use the float width. */
    t->preferred_vector_width[ET_F16] =
        (int)(vw_half ? vw_half : vw_float);
    t->preferred_vector_width[ET_F32] = (int)vw_float;
    t->preferred_vector_width[ET_F64] = (int)vw_double;
    /* Caches for the roofline's per-level bandwidth: a CPU device is the
     * host CPU, whose levels Linux describes; otherwise (and as a fallback)
     * the one global memory cache OpenCL reports, shared by all units. */
    info->is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    if (CL_FAILED(NULL, clGetDeviceInfo(ref->id,
                                        CL_DEVICE_GLOBAL_MEM_CACHE_SIZE,
                                        sizeof gcache, &gcache, NULL)))
        gcache = 0;
    if (!(info->is_cpu && et_cpu_caches_sysfs(NULL, info) > 0) &&
        gcache > 0) {
        int l = info->is_cpu ? ET_CACHE_LEVELS : 2;
        info->cache[l - 1].bytes = (int64_t)gcache;
        info->cache[l - 1].shared = true;
    }
cleanup:
    free(exts);
    return st;
}

#undef DEV_VALUE

/* Finds the device a spec names among refs; ET_ERR_INPUT if it names
 * none of them (the spec is the user's input). */
static et_status ocl_pick(const et_device_spec *spec, const ocl_dev_ref *refs,
                          int n, et_error *err, int *pick)
{
    switch (spec->kind) {
    case ET_SPEC_DEFAULT: *pick = 0; return ET_OK;
    case ET_SPEC_INDEX:
        if (spec->index < n) {
            *pick = spec->index;
            return ET_OK;
        }
        return et_errorf(err, ET_ERR_INPUT,
                         "no OpenCL device %d: there %s %d (see "
                         "'eintune devices')",
                         spec->index, n == 1 ? "is only" : "are", n);
    case ET_SPEC_PLATFORM_DEVICE:
        for (int i = 0; i < n; i++) {
            if (refs[i].platform == spec->platform &&
                refs[i].device == spec->device) {
                *pick = i;
                return ET_OK;
            }
        }
        return et_errorf(err, ET_ERR_INPUT,
                         "no OpenCL device %d on platform %d (see "
                         "'eintune devices')",
                         spec->device, spec->platform);
    case ET_SPEC_NAME:
        for (int i = 0; i < n; i++) {
            char name[256];
            et_error ignore;
            if (ocl_device_field(refs[i].id, CL_DEVICE_NAME, name,
                                 sizeof name, &ignore) != ET_OK)
                continue;
            if (et_str_icontains(name, spec->name)) {
                *pick = i;
                return ET_OK;
            }
        }
        return et_errorf(err, ET_ERR_INPUT,
                         "no OpenCL device whose name contains '%s' "
                         "(see 'eintune devices')",
                         spec->name);
    default:
        return et_errorf(err, ET_ERR_INTERNAL, "bad spec kind %d",
                         (int)spec->kind);
    }
}

/* ---- buffers ----------------------------------------------------------- */

static et_status ocl_buffer_alloc(void *vctx, size_t bytes, et_buffer **out,
                                  et_error *err)
{
    ocl_ctx *c = vctx;
    et_status st = ET_OK;
    cl_int rc;
    ocl_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    CL_TRY(ET_ERR_DEVICE, (b->mem = clCreateBuffer(c->context,
                                                   CL_MEM_READ_WRITE, bytes,
                                                   NULL, &rc),
                           rc));
    b->bytes = bytes;
    *out = (et_buffer *)b;
    b = NULL;
cleanup:
    free(b);
    return st;
}

static et_status ocl_buffer_write(void *vctx, et_buffer *vb, size_t off,
                                  const void *src, size_t n, et_error *err)
{
    ocl_ctx *c = vctx;
    ocl_buffer *b = (ocl_buffer *)vb;
    if (!et_range_ok(b->bytes, off, n))
        return et_errorf(err, ET_ERR_INPUT,
                         "write of %zu bytes at offset %zu outside a "
                         "buffer of %zu bytes",
                         n, off, b->bytes);
    if (n == 0)
        return ET_OK;
    if (CL_FAILED(err, clEnqueueWriteBuffer(c->queue, b->mem, CL_TRUE, off, n,
                                            src, 0, NULL, NULL)))
        return ET_ERR_DEVICE;
    return ET_OK;
}

static et_status ocl_buffer_read(void *vctx, et_buffer *vb, size_t off,
                                 void *dst, size_t n, et_error *err)
{
    ocl_ctx *c = vctx;
    ocl_buffer *b = (ocl_buffer *)vb;
    if (!et_range_ok(b->bytes, off, n))
        return et_errorf(err, ET_ERR_INPUT,
                         "read of %zu bytes at offset %zu outside a "
                         "buffer of %zu bytes",
                         n, off, b->bytes);
    if (n == 0)
        return ET_OK;
    if (CL_FAILED(err, clEnqueueReadBuffer(c->queue, b->mem, CL_TRUE, off, n,
                                           dst, 0, NULL, NULL)))
        return ET_ERR_DEVICE;
    return ET_OK;
}

static et_status ocl_buffer_fill(void *vctx, et_buffer *vb, size_t off,
                                 const void *pattern, size_t psize, size_t n,
                                 et_error *err)
{
    ocl_ctx *c = vctx;
    ocl_buffer *b = (ocl_buffer *)vb;
    if (!et_range_ok(b->bytes, off, n))
        return et_errorf(err, ET_ERR_INPUT,
                         "fill of %zu bytes at offset %zu outside a "
                         "buffer of %zu bytes",
                         n, off, b->bytes);
    if (n == 0)
        return ET_OK;
    /* blocking, as the other transfers: the fill is done when this
     * returns, before any later launch reads the buffer */
    if (CL_FAILED(err, clEnqueueFillBuffer(c->queue, b->mem, pattern, psize,
                                           off, n, 0, NULL, NULL)) ||
        CL_FAILED(err, clFinish(c->queue)))
        return ET_ERR_DEVICE;
    return ET_OK;
}

static void ocl_buffer_free(void *vctx, et_buffer *vb)
{
    ocl_buffer *b = (ocl_buffer *)vb;
    (void)vctx;
    for (int i = 0; i < b->nsub; i++)
        CL_FAILED(NULL, clReleaseMemObject(b->sub[i].mem));
    CL_FAILED(NULL, clReleaseMemObject(b->mem));
    free(b);
}

/*
 * The cl_mem that starts `off` bytes into b: b itself, a cached
 * sub-buffer, or a new one (cached if there is room, else returned in
 * *temp for the caller to release after the launch).
 */
static et_status ocl_buffer_view(ocl_ctx *c, ocl_buffer *b, size_t off,
                                 int arg, cl_mem *mem, cl_mem *temp,
                                 et_error *err)
{
    *temp = NULL;
    if (off == 0) {
        *mem = b->mem;
        return ET_OK;
    }
    if (off >= b->bytes)
        return et_errorf(err, ET_ERR_LAUNCH,
                         "argument %d: offset %zu is outside its buffer "
                         "of %zu bytes",
                         arg, off, b->bytes);
    if (off % c->align != 0)
        return et_errorf(err, ET_ERR_LAUNCH,
                         "argument %d: offset %zu is not a multiple of "
                         "the device's base address alignment (%zu "
                         "bytes)",
                         arg, off, c->align);
    for (int i = 0; i < b->nsub; i++) {
        if (b->sub[i].off == off) {
            *mem = b->sub[i].mem;
            return ET_OK;
        }
    }
    cl_buffer_region region = {off, b->bytes - off};
    cl_int rc;
    cl_mem sub;
    if (CL_FAILED(err, (sub = clCreateSubBuffer(b->mem, CL_MEM_READ_WRITE,
                                                CL_BUFFER_CREATE_TYPE_REGION,
                                                &region, &rc),
                        rc)))
        return ET_ERR_LAUNCH;
    if (b->nsub < OCL_SUB_CACHE) {
        b->sub[b->nsub].off = off;
        b->sub[b->nsub].mem = sub;
        b->nsub++;
    } else {
        *temp = sub;
    }
    *mem = sub;
    return ET_OK;
}

/* ---- programs ---------------------------------------------------------- */

static et_status ocl_program_build(void *vctx, const char *source,
                                   const char *name, et_program **out,
                                   et_error *err)
{
    ocl_ctx *c = vctx;
    et_status st = ET_OK;
    char *log = NULL;
    cl_int rc;
    ocl_program *p = calloc(1, sizeof *p);
    if (!p)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");

    CL_TRY(ET_ERR_DEVICE,
           (p->program = clCreateProgramWithSource(c->context, 1, &source,
                                                   NULL, &rc),
            rc));
    char said[1024];
    rc = et_cl_build_captured(p->program, c->device, "-cl-std=CL1.2", said,
                              sizeof said);
    log = et_cl_build_log(p->program, c->device);
    if (rc != CL_SUCCESS) {
        st = ET_ERR_BUILD;
        if (!log || !log[0]) {
            et_errorf(err, ET_ERR_BUILD,
                      "OpenCL build of '%s' failed: clBuildProgram: %s "
                      "(%d) (no build log)%s%s",
                      name, ocl_error_name(rc), (int)rc,
                      said[0] ? "\ncompiler output:\n" : "", said);
            goto cleanup;
        }
        char first[512];
        et_log_first_error(log, first, sizeof first);
        et_errorf(err, ET_ERR_BUILD,
                  "OpenCL build of '%s' failed: %s\n[clBuildProgram: %s "
                  "(%d)]\nbuild log:\n%s%s%s",
                  name, first[0] ? first : ocl_error_name(rc),
                  ocl_error_name(rc), (int)rc, log,
                  said[0] ? "\ncompiler output:\n" : "", said);
        goto cleanup;
    }
    /* a build that worked: what the compiler said (warnings), for the
     * caller's debug log (see backend.h) */
    if ((log && log[0]) || said[0])
        et_errorf(err, ET_OK, "%s%s%s", said,
                  said[0] && log && log[0] ? "\n" : "", log ? log : "");
    if (CL_FAILED(err, (p->kernel = clCreateKernel(p->program, name, &rc),
                        rc))) {
        if (rc == CL_INVALID_KERNEL_NAME)
            et_errorf(err, ET_ERR_BUILD,
                      "no kernel named '%s' in the program "
                      "(CL_INVALID_KERNEL_NAME)",
                      name);
        st = ET_ERR_BUILD;
        goto cleanup;
    }
    CL_TRY(ET_ERR_DEVICE, clGetKernelInfo(p->kernel, CL_KERNEL_NUM_ARGS,
                                          sizeof p->nargs, &p->nargs, NULL));
    *out = (et_program *)p;
    p = NULL;
cleanup:
    free(log);
    if (p) {
        if (p->kernel)
            CL_FAILED(NULL, clReleaseKernel(p->kernel));
        if (p->program)
            CL_FAILED(NULL, clReleaseProgram(p->program));
        free(p);
    }
    return st;
}

static void ocl_program_free(void *vctx, et_program *vp)
{
    ocl_program *p = (ocl_program *)vp;
    (void)vctx;
    CL_FAILED(NULL, clReleaseKernel(p->kernel));
    CL_FAILED(NULL, clReleaseProgram(p->program));
    free(p);
}

/* ---- launch ------------------------------------------------------------ */

static et_status ocl_launch(void *vctx, et_program *vp, const et_launch *geom,
                            et_buffer *const *args, const size_t *offsets,
                            int nargs, double *seconds, et_error *err)
{
    ocl_ctx *c = vctx;
    ocl_program *p = (ocl_program *)vp;
    et_status st = ET_OK;
    cl_mem temps[ET_MAX_KERNEL_ARGS] = {0};
    cl_mem out_mem = NULL;
    cl_event ev = NULL, zev = NULL;

    if (geom->n_scalars < 0 || geom->n_scalars > ET_LAUNCH_MAX_SCALARS ||
        (cl_uint)(nargs + geom->n_scalars) != p->nargs)
        return et_errorf(err, ET_ERR_LAUNCH,
                         "the kernel takes %u arguments, the launch gives "
                         "%d",
                         (unsigned)p->nargs, nargs + geom->n_scalars);
    for (int i = 0; i < geom->n_scalars; i++) {
        cl_long v = (cl_long)geom->scalar[i];
        CL_TRY(ET_ERR_LAUNCH, clSetKernelArg(p->kernel, (cl_uint)(nargs + i),
                                             sizeof v, &v));
    }
    for (int i = 0; i < nargs; i++) {
        cl_mem mem;
        st = ocl_buffer_view(c, (ocl_buffer *)args[i],
                             offsets ? offsets[i] : 0, i, &mem, &temps[i],
                             err);
        if (st != ET_OK)
            goto cleanup;
        CL_TRY(ET_ERR_LAUNCH,
               clSetKernelArg(p->kernel, (cl_uint)i, sizeof mem, &mem));
        if (i == 0)
            out_mem = mem;
    }
    if (geom->zero_bytes > 0) {
        /* SPLIT kernels add into the output: it starts at zero */
        size_t off0 = offsets ? offsets[0] : 0;
        ocl_buffer *b0 = nargs > 0 ? (ocl_buffer *)args[0] : NULL;
        if (!b0 || (uint64_t)geom->zero_bytes > b0->bytes - off0) {
            st = et_errorf(err, ET_ERR_LAUNCH,
                           "the output to zero (%lld bytes) is larger "
                           "than argument 0",
                           (long long)geom->zero_bytes);
            goto cleanup;
        }
        const cl_uchar zero = 0;
        CL_TRY(ET_ERR_LAUNCH,
               clEnqueueFillBuffer(c->queue, out_mem, &zero, sizeof zero, 0,
                                   (size_t)geom->zero_bytes, 0, NULL, &zev));
    }

    size_t global[3] = {1, 1, 1}, local[3] = {1, 1, 1};
    for (int d = 0; d < geom->ndim; d++) {
        if ((uint64_t)geom->global[d] > SIZE_MAX ||
            (uint64_t)geom->local[d] > SIZE_MAX) {
            st = et_errorf(err, ET_ERR_LAUNCH,
                           "dimension %d: size does not fit size_t", d);
            goto cleanup;
        }
        global[d] = (size_t)geom->global[d];
        local[d] = (size_t)geom->local[d];
    }
    CL_TRY(ET_ERR_LAUNCH,
           clEnqueueNDRangeKernel(c->queue, p->kernel, (cl_uint)geom->ndim,
                                  NULL, global,
                                  geom->has_local ? local : NULL,
                                  zev ? 1 : 0, zev ? &zev : NULL, &ev));
    CL_TRY(ET_ERR_LAUNCH, clWaitForEvents(1, &ev));
    cl_int exec = CL_COMPLETE;
    CL_TRY(ET_ERR_LAUNCH,
           clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec,
                          &exec, NULL));
    if (exec < 0) {
        st = et_errorf(err, ET_ERR_LAUNCH,
                       "the kernel ended with %s (%d)",
                       ocl_error_name(exec), (int)exec);
        goto cleanup;
    }
    if (seconds) {
        cl_ulong t0 = 0, t1 = 0;
        /* from the zeroing's start when there is one: it is part of the
         * kernel's cost */
        CL_TRY(ET_ERR_DEVICE,
               clGetEventProfilingInfo(zev ? zev : ev,
                                       CL_PROFILING_COMMAND_START,
                                       sizeof t0, &t0, NULL));
        CL_TRY(ET_ERR_DEVICE,
               clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END,
                                       sizeof t1, &t1, NULL));
        *seconds = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0.0;
    }
cleanup:
    if (ev)
        CL_FAILED(NULL, clReleaseEvent(ev));
    if (zev)
        CL_FAILED(NULL, clReleaseEvent(zev));
    for (int i = 0; i < nargs && i < ET_MAX_KERNEL_ARGS; i++)
        if (temps[i])
            CL_FAILED(NULL, clReleaseMemObject(temps[i]));
    return st;
}

/* ---- open, close, list ------------------------------------------------- */

static void ocl_close(void *vctx)
{
    ocl_ctx *c = vctx;
    if (!c)
        return;
    if (c->queue) {
        CL_FAILED(NULL, clFinish(c->queue));
        CL_FAILED(NULL, clReleaseCommandQueue(c->queue));
    }
    if (c->context)
        CL_FAILED(NULL, clReleaseContext(c->context));
    free(c);
}

static const et_backend_ops ocl_ops = {
    .name = "opencl",
    .buffer_alloc = ocl_buffer_alloc,
    .buffer_write = ocl_buffer_write,
    .buffer_read = ocl_buffer_read,
    .buffer_fill = ocl_buffer_fill,
    .buffer_free = ocl_buffer_free,
    .program_build = ocl_program_build,
    .program_free = ocl_program_free,
    .launch = ocl_launch,
    .close = ocl_close,
};

et_status et_opencl_open(const et_device_spec *spec, et_device *dev,
                         et_error *err)
{
    et_status st;
    ocl_dev_ref *refs = NULL;
    ocl_ctx *c = NULL;
    int n = 0, pick = 0;
    cl_int rc;

    st = ocl_collect(&refs, &n, err);
    if (st != ET_OK)
        goto cleanup;
    st = ocl_pick(spec, refs, n, err, &pick);
    if (st != ET_OK)
        goto cleanup;
    st = ocl_device_info(&refs[pick], &dev->info, err);
    if (st != ET_OK)
        goto cleanup;

    c = calloc(1, sizeof *c);
    if (!c) {
        st = et_errorf(err, ET_ERR_NOMEM, "out of memory");
        goto cleanup;
    }
    c->device = refs[pick].id;
    c->align = (size_t)dev->info.target.mem_base_addr_align;
    CL_TRY(ET_ERR_DEVICE, (c->context = clCreateContext(NULL, 1, &c->device,
                                                        NULL, NULL, &rc),
                           rc));
    CL_TRY(ET_ERR_DEVICE,
           (c->queue = clCreateCommandQueue(c->context, c->device,
                                            CL_QUEUE_PROFILING_ENABLE, &rc),
            rc));
    dev->ops = &ocl_ops;
    dev->ctx = c;
    c = NULL;
cleanup:
    ocl_close(c);
    free(refs);
    return st;
}

void et_opencl_list(et_device_info *out, int cap, int *n, char *notes,
                    size_t notes_cap)
{
    ocl_dev_ref *refs = NULL;
    int count = 0;
    et_error err;
    if (ocl_collect(&refs, &count, &err) != ET_OK) {
        et_notes_add(notes, notes_cap, "opencl: %s", err.msg);
        return;
    }
    for (int i = 0; i < count && *n < cap; i++) {
        if (ocl_device_info(&refs[i], &out[*n], &err) != ET_OK) {
            et_notes_add(notes, notes_cap, "opencl:%d:%d: %s",
                         refs[i].platform, refs[i].device, err.msg);
            continue;
        }
        (*n)++;
    }
    free(refs);
}

/* ---- the caller's own devices (measure/user_kernel.h) ------------------ */

const char *et_opencl_error_name(int code)
{
    return ocl_error_name((cl_int)code);
}

et_status et_opencl_device_info(cl_device_id id, et_device_info *info,
                                et_error *err)
{
    /* the spec names its place among all devices when it is found there */
    ocl_dev_ref ref = {id, -1, -1}, *refs = NULL;
    int n = 0;
    if (ocl_collect(&refs, &n, NULL) == ET_OK)
        for (int i = 0; i < n; i++)
            if (refs[i].id == id)
                ref = refs[i];
    free(refs);
    et_status st = ocl_device_info(&ref, info, err);
    if (st == ET_OK && ref.platform < 0)
        snprintf(info->spec, sizeof info->spec, "opencl");
    return st;
}
