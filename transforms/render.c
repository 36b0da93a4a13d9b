/*
 * render.c - one emitter for OpenCL C 1.2 and CUDA C, with a dialect table.
 *
 * Shape of a rendered kernel (see kernel.h for the IR):
 *   - header comments: einsum, opts, launch geometry, arguments;
 *   - local arrays (PREFETCH tiles, the GROUP reduction buffer);
 *   - group id and local id decoded into the parts (running divisors);
 *   - per global axis its base index `<axis>_idx` (UPCAST parts are added
 *     as constants per accumulator);
 *   - one accumulator per UPCAST combination, `acc_<values>`;
 *   - the reduce loops (plain loops outermost, then the PREFETCH chunk loop
 *     with its cooperative copy and barriers, then the `_p` loop);
 *   - in the innermost body: every operand's values loaded once per
 *     combination of the UPCAST/UNROLL parts it uses (`a<k>_<values>`),
 *     vector loads where the part is contiguous and aligned, then one FMA
 *     per (UPCAST x UNROLL) combination;
 *   - GROUP: partial sums to local memory, barrier, lane 0 combines the
 *     lanes in lane order;
 *   - stores, masked where PADTO padded a global axis.
 * PADTO masks are ternaries on loads and an `if` around stores only; no
 * barrier is ever inside a branch.
 */
#include "transforms/kernel_impl.h"

#include "base/sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP ET_MAX_PARTS
#define LIMIT_INT31 ((int64_t)0x7fffffff)

/* ---- output with indentation --------------------------------------------- */

/* The source being written: a growing et_sbuf and the indentation of the
 * next rd_line. */
typedef struct rd_out {
    et_sbuf b;
    int indent;
} rd_out;

static void rd_put(rd_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void rd_put(rd_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    et_sbuf_vprintf(&o->b, fmt, ap);
    va_end(ap);
}

/* One line at the current indentation. */
static void rd_line(rd_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void rd_line(rd_out *o, const char *fmt, ...)
{
    for (int i = 0; i < o->indent; i++)
        et_sbuf_puts(&o->b, "    ");
    va_list ap;
    va_start(ap, fmt);
    et_sbuf_vprintf(&o->b, fmt, ap);
    va_end(ap);
    et_sbuf_puts(&o->b, "\n");
}

/* ---- dialects --------------------------------------------------------------- */

/*
 * What differs between OpenCL C and CUDA C, one entry per backend. Text
 * slots that are NULL are left out of the kernel; function slots write a
 * construct whose shape differs (argument order, casts).
 */
typedef struct dialect {
    const char *kernel_kw;
    const char *out_ptr;     /* printf: type, name */
    const char *in_ptr;
    const char *group_id[3];
    const char *local_id[3];
    const char *global_id[3];
    const char *local_kw;
    const char *barrier;
    const char *long_type;
    const char *half_type;   /* storage type of f16 */
    const char *comp[16];    /* vector component names */
    int max_vec_f32;
    int max_vec_f64;
    /* header comment on how the launch geometry maps to the API's */
    const char *launch_note;
    /* enables f64 when any operand, the output or the sum is f64 */
    const char *fp64_pragma;
    /* SPLIT: the atomic add the stores call, and the definitions it needs
     * for an f64 and an f32 (or f16) output */
    const char *atomic_add;
    const char *atomic_add_f64;
    const char *atomic_add_f32;
    /* definitions an f16 operand's loads need */
    const char *half_helper;
    /* fused multiply-add of the f32 sum (f64 is always "fma") */
    const char *fma_f32;
    /* NOLOCALS launches round the grid up to whole blocks: the surplus
     * work-items of each dimension return at once */
    bool rounded_grid;
    /* vector accumulators (see choose_vector) */
    bool vector_accumulators;
    /* into buf: the f16 element in<op>[addr] converted, after `cast` */
    void (*half_load)(char *buf, size_t cap, const char *cast, int op,
                      const char *addr);
    /* declares `<acc>n name` loaded from in<op> + addr */
    void (*vector_load)(rd_out *s, const char *acc, int64_t n,
                        const char *name, int op, const char *addr);
    /* stores the n values `list` (comma-separated) at out + addr */
    void (*vector_store)(rd_out *s, const char *type, int64_t n,
                         const char *list, const char *addr);
} dialect;

static void ocl_half_load(char *buf, size_t cap, const char *cast, int op,
                          const char *addr)
{
    snprintf(buf, cap, "%svload_half(%s, in%d)", cast, addr, op);
}

static void cuda_half_load(char *buf, size_t cap, const char *cast, int op,
                           const char *addr)
{
    snprintf(buf, cap, "%set_half_to_float(in%d[%s])", cast, op, addr);
}

static void ocl_vector_load(rd_out *s, const char *acc, int64_t n,
                            const char *name, int op, const char *addr)
{
    rd_line(s, "%s%lld %s = vload%lld(0, in%d + %s);", acc, (long long)n,
            name, (long long)n, op, addr);
}

static void cuda_vector_load(rd_out *s, const char *acc, int64_t n,
                             const char *name, int op, const char *addr)
{
    rd_line(s, "%s%lld %s = *(const %s%lld*)(in%d + %s);", acc,
            (long long)n, name, acc, (long long)n, op, addr);
}

static void ocl_vector_store(rd_out *s, const char *type, int64_t n,
                             const char *list, const char *addr)
{
    rd_line(s, "vstore%lld((%s%lld)(%s), 0, out + %s);", (long long)n, type,
            (long long)n, list, addr);
}

static void cuda_vector_store(rd_out *s, const char *type, int64_t n,
                              const char *list, const char *addr)
{
    rd_line(s, "*(%s%lld*)(out + %s) = make_%s%lld(%s);", type, (long long)n,
            addr, type, (long long)n, list);
}

static const dialect dialects[] = {
    [ET_BACKEND_OPENCL] = {
        .kernel_kw = "__kernel void",
        .out_ptr = "__global %s* restrict %s",
        .in_ptr = "__global const %s* restrict %s",
        .group_id = {"get_group_id(0)", "get_group_id(1)", "get_group_id(2)"},
        .local_id = {"get_local_id(0)", "get_local_id(1)", "get_local_id(2)"},
        .global_id = {"get_global_id(0)", "get_global_id(1)",
                      "get_global_id(2)"},
        .local_kw = "__local",
        .barrier = "barrier(CLK_LOCAL_MEM_FENCE);",
        .long_type = "long",
        .half_type = "half",
        .comp = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9",
                 "sa", "sb", "sc", "sd", "se", "sf"},
        .max_vec_f32 = 16,
        .max_vec_f64 = 16,
        .launch_note = NULL,
        .fp64_pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
        .atomic_add = "et_atomic_add",
        /* OpenCL 1.2 has no float atomics: a compare-and-swap loop */
        .atomic_add_f64 =
            "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
            "\nvoid et_atomic_add(volatile __global double *p, double v)\n"
            "{\n"
            "    ulong old = as_ulong(*p), seen;\n"
            "    while ((seen = atom_cmpxchg((volatile __global ulong *)p, "
            "old,\n"
            "                                as_ulong(as_double(old) + v))) "
            "!= old)\n"
            "        old = seen;\n"
            "}\n",
        .atomic_add_f32 =
            "\nvoid et_atomic_add(volatile __global float *p, float v)\n"
            "{\n"
            "    uint old = as_uint(*p), seen;\n"
            "    while ((seen = atomic_cmpxchg((volatile __global uint *)p, "
            "old,\n"
            "                                  as_uint(as_float(old) + v))) "
            "!= old)\n"
            "        old = seen;\n"
            "}\n",
        .half_helper = NULL,
        .fma_f32 = "fma",
        .rounded_grid = false,
        .vector_accumulators = true,
        .half_load = ocl_half_load,
        .vector_load = ocl_vector_load,
        .vector_store = ocl_vector_store,
    },
    [ET_BACKEND_CUDA] = {
        .kernel_kw = "extern \"C\" __global__ void",
        .out_ptr = "%s* __restrict__ %s",
        .in_ptr = "const %s* __restrict__ %s",
        .group_id = {"blockIdx.x", "blockIdx.y", "blockIdx.z"},
        .local_id = {"threadIdx.x", "threadIdx.y", "threadIdx.z"},
        .global_id = {"(blockIdx.x * blockDim.x + threadIdx.x)",
                      "(blockIdx.y * blockDim.y + threadIdx.y)",
                      "(blockIdx.z * blockDim.z + threadIdx.z)"},
        .local_kw = "__shared__",
        .barrier = "__syncthreads();",
        .long_type = "long long",
        .half_type = "unsigned short",
        .comp = {"x", "y", "z", "w"},
        .max_vec_f32 = 4,
        .max_vec_f64 = 2,
        .launch_note = "// CUDA: grid = global / local per dimension, block = "
                       "local\n",
        .fp64_pragma = NULL,
        .atomic_add = "atomicAdd", /* f32 and, from sm_60, f64 */
        .atomic_add_f64 = NULL,
        .atomic_add_f32 = NULL,
        /* f16 is stored as its bits: no cuda_fp16.h under NVRTC */
        .half_helper =
            "\n// IEEE binary16 bits to float (exact)\n"
            "__device__ static float et_half_to_float(unsigned short h)\n"
            "{\n"
            "    unsigned int sign = (unsigned int)(h >> 15) << 31;\n"
            "    unsigned int e = (h >> 10) & 31u;\n"
            "    unsigned int m = h & 1023u;\n"
            "    if (e == 0) {\n"
            "        float f = (float)m * 5.9604644775390625e-8f;\n"
            "        return sign ? -f : f;\n"
            "    }\n"
            "    if (e == 31)\n"
            "        return __uint_as_float(sign | 0x7f800000u | (m << 13));\n"
            "    return __uint_as_float(sign | ((e + 112u) << 23) | "
            "(m << 13));\n"
            "}\n",
        .fma_f32 = "fmaf",
        .rounded_grid = true,
        .vector_accumulators = false,
        .half_load = cuda_half_load,
        .vector_load = cuda_vector_load,
        .vector_store = cuda_vector_store,
    },
};
_Static_assert(sizeof(dialects) / sizeof(dialects[0]) == ET_BACKEND_COUNT,
               "one dialect per backend");

/* ---- render context ------------------------------------------------------- */

typedef struct ctx {
    const et_kernel *k;
    const dialect *D;
    et_backend_kind b;
    rd_out s;
    const char *itype;       /* index type: "int" or the dialect's long */
    const char *acc;         /* "float" / "double" */
    const char *zero;        /* "0.0f" / "0.0" */
    const char *fma;
    int n_ops;
    /* address coefficient of each axis per operand; row n_ops = output */
    int64_t coef[ET_MAX_OPERANDS + 1][ET_MAX_INDICES];
    int64_t L[3];            /* work-group size per dim (lanes in dim 0) */
    int64_t wg;
    bool flat;
    et_launch launch;
    /* vector accumulators (OpenCL): 0 scalar, 1 along an UPCAST part
     * contiguous in the output, 2 along an UNROLL part (lanes summed after
     * the reduce loops); vpart is that part, vn its size */
    int vmode;
    int vpart;
    int64_t vn;
} ctx;

static const char *acc_type(et_dtype t) { return t == ET_F64 ? "double" : "float"; }

static const char *store_type(const ctx *c, et_dtype t)
{
    switch (t) {
    case ET_F16: return c->D->half_type;
    case ET_F32: return "float";
    default: return "double";
    }
}

/* coefficient row of operand op (-1 = output) */
static const int64_t *coefs(const ctx *c, int op)
{
    return c->coef[op < 0 ? c->n_ops : op];
}

static bool op_uses(const ctx *c, int op, int a)
{
    if (op < 0)
        return a < c->k->e.n_out;
    return et_kernel_op_uses(c->k, op, a);
}

static bool padded(const ctx *c, int a)
{
    return c->k->padded[a] != c->k->e.idx[a].size;
}

static void compute_coefs(ctx *c)
{
    const et_einsum *e = &c->k->e;
    memset(c->coef, 0, sizeof c->coef);
    for (int op = 0; op < e->n_ops; op++) {
        const et_operand *o = &e->op[op];
        int64_t stride = 1;
        for (int d = o->rank - 1; d >= 0; d--) {
            if (o->dim[d] != 1)
                c->coef[op][o->idx[d]] += stride;
            stride *= o->dim[d];
        }
    }
    int64_t stride = 1;
    for (int a = e->n_out - 1; a >= 0; a--) {
        c->coef[c->n_ops][a] = stride;
        stride *= e->idx[a].size;
    }
}

/* Largest address or size the kernel computes with, to pick the index type. */
static bool needs_long(const ctx *c)
{
    const et_kernel *k = c->k;
    for (int op = -1; op < c->n_ops; op++) {
        const int64_t *cf = coefs(c, op);
        int64_t m = 0;
        for (int a = 0; a < k->e.n_idx; a++) {
            if (cf[a] && k->padded[a] > 0) {
                if (cf[a] > LIMIT_INT31 || k->padded[a] > LIMIT_INT31)
                    return true;
                m += cf[a] * k->padded[a];
                if (m > LIMIT_INT31)
                    return true;
            }
        }
    }
    for (int a = 0; a < k->e.n_idx; a++)
        if (k->padded[a] > LIMIT_INT31)
            return true;
    for (int d = 0; d < 3; d++)
        if (c->launch.global[d] > LIMIT_INT31)
            return true;
    return false;
}

/* "name*stride" terms of a sum into buf; parts filtered by keep(). */
typedef bool (*part_pred)(const ctx *c, int p, const void *arg);

static void sum_terms(const ctx *c, char *buf, size_t cap, int axis,
                      part_pred keep, const void *arg, const char *suffix)
{
    et_sbuf b;
    et_sbuf_fixed(&b, buf, cap);
    for (int p = 0; p < c->k->n_parts; p++) {
        const et_part *pt = &c->k->part[p];
        if (pt->axis != axis || pt->size == 1 || !keep(c, p, arg))
            continue;
        if (pt->stride == 1)
            et_sbuf_printf(&b, "%s%s%s", b.len ? " + " : "", pt->name,
                           suffix);
        else
            et_sbuf_printf(&b, "%s%s%s*%lld", b.len ? " + " : "", pt->name,
                           suffix, (long long)pt->stride);
    }
    if (b.len == 0)
        et_sbuf_puts(&b, "0");
}

static bool is_runtime(et_part_kind kd)
{
    return kd == ET_PART_GLOBAL || kd == ET_PART_REDUCE ||
           kd == ET_PART_LOCAL || kd == ET_PART_GROUP ||
           kd == ET_PART_PREFETCH || kd == ET_PART_SPLIT;
}

static bool keep_runtime(const ctx *c, int p, const void *arg)
{
    (void)arg;
    return is_runtime(c->k->part[p].kind);
}

/* ---- combinations of unrolled parts -------------------------------------- */

typedef struct plist {
    int n;
    int p[MAXP];
} plist;

static int64_t plist_count(const ctx *c, const plist *l)
{
    int64_t t = 1;
    for (int i = 0; i < l->n; i++)
        t *= c->k->part[l->p[i]].size;
    return t;
}

/* Value of part l->p[i] in combination number idx (first part fastest). */
static int64_t combo_val(const ctx *c, const plist *l, int64_t idx, int i)
{
    for (int j = 0; j < i; j++)
        idx /= c->k->part[l->p[j]].size;
    return idx % c->k->part[l->p[i]].size;
}

/* Value of part p in the full combination (vals indexed by part). */
static void combo_fill(const ctx *c, const plist *l, int64_t idx,
                       int64_t *vals)
{
    for (int i = 0; i < l->n; i++)
        vals[l->p[i]] = combo_val(c, l, idx, i);
}

/* Name base + "_v" for each part of l, values from vals. */
static void combo_name(const ctx *c, char *buf, size_t cap, const char *base,
                       const plist *l, const int64_t *vals)
{
    et_sbuf b;
    et_sbuf_fixed(&b, buf, cap);
    et_sbuf_puts(&b, base);
    (void)c;
    for (int i = 0; i < l->n; i++)
        et_sbuf_printf(&b, "_%lld", (long long)vals[l->p[i]]);
}

/* Offset of axis a contributed by const parts (values in vals). */
static int64_t axis_off(const ctx *c, int a, const plist *consts,
                        const int64_t *vals)
{
    int64_t off = 0;
    for (int i = 0; i < consts->n; i++) {
        const et_part *pt = &c->k->part[consts->p[i]];
        if (pt->axis == a)
            off += vals[consts->p[i]] * pt->stride;
    }
    return off;
}

static void plist_kind(const ctx *c, plist *l, et_part_kind kind, int op)
{
    l->n = 0;
    for (int p = 0; p < c->k->n_parts; p++) {
        const et_part *pt = &c->k->part[p];
        if (pt->kind == kind && (op == -2 || op_uses(c, op, pt->axis)))
            l->p[l->n++] = p;
    }
}

/* UPCAST then UNROLL parts used by operand op (-2: all). */
static void const_parts(const ctx *c, plist *l, int op)
{
    plist u, r;
    plist_kind(c, &u, ET_PART_UPCAST, op);
    plist_kind(c, &r, ET_PART_UNROLL, op);
    *l = u;
    for (int i = 0; i < r.n; i++)
        l->p[l->n++] = r.p[i];
}

/* ---- loads ---------------------------------------------------------------- */

/* Expression converting the stored value at address `addr` of operand op. */
static void load_expr(const ctx *c, int op, const char *addr, char *buf,
                      size_t cap)
{
    et_dtype t = c->k->e.op[op].dtype;
    et_dtype acc = c->k->e.acc_dtype;
    const char *cast = t == acc || (t == ET_F16 && acc == ET_F32)
                           ? ""
                           : (acc == ET_F64 ? "(double)" : "(float)");
    if (t == ET_F16) {
        c->D->half_load(buf, cap, cast, op, addr);
    } else {
        snprintf(buf, cap, "%sin%d[%s]", cast, op, addr);
    }
}

static bool vec_width_ok(const ctx *c, et_dtype t, int64_t n)
{
    if (n != 2 && n != 4 && n != 8 && n != 16)
        return false;
    if (t == ET_F16)
        return false;
    return n <= (t == ET_F64 ? c->D->max_vec_f64 : c->D->max_vec_f32);
}

/*
 * A part of `consts` along which operand op (-1: output) can use vector
 * memory access: size n in {2,4,8,16} the dialect supports, address
 * coefficient 1, every other coefficient a multiple of n, no padded axis
 * and the stored dtype equal to the accumulator's. -1 if none.
 */
static int vector_part(const ctx *c, int op, const plist *consts)
{
    const et_kernel *k = c->k;
    et_dtype t = op < 0 ? k->e.out.dtype : k->e.op[op].dtype;
    if (t != k->e.acc_dtype)
        return -1;
    const int64_t *cf = coefs(c, op);
    for (int a = 0; a < k->e.n_idx; a++)
        if (op_uses(c, op, a) && padded(c, a))
            return -1;
    for (int i = 0; i < consts->n; i++) {
        const et_part *vp = &k->part[consts->p[i]];
        int64_t n = vp->size;
        if (!vec_width_ok(c, t, n) || cf[vp->axis] * vp->stride != 1)
            continue;
        bool ok = true;
        for (int p = 0; p < k->n_parts && ok; p++) {
            if (p == consts->p[i])
                continue;
            const et_part *pt = &k->part[p];
            if (pt->size == 1)
                continue;
            int64_t co = cf[pt->axis] * pt->stride;
            if (co % n != 0)
                ok = false;
        }
        if (ok)
            return consts->p[i];
    }
    return -1;
}

/* ---- sections of the kernel ----------------------------------------------- */

static void emit_header(ctx *c)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    char dts[256];
    et_sbuf db;
    et_sbuf_fixed(&db, dts, sizeof dts);
    for (int op = 0; op < k->e.n_ops; op++)
        et_sbuf_printf(&db, "%s%s", op ? "," : "",
                       et_dtype_name(k->e.op[op].dtype));
    rd_put(s, "// eintune %s kernel for %s (%s -> %s, accumulated in %s)\n",
           et_backend_name(c->b), k->e.text, dts,
           et_dtype_name(k->e.out.dtype), et_dtype_name(k->e.acc_dtype));
    char opts[1024];
    et_opts_format(k->opts, k->n_opts, opts, sizeof opts);
    rd_put(s, "// opts: %s\n", k->n_opts ? opts : "(none)");
    const et_launch *l = &c->launch;
    rd_put(s, "// global: ");
    for (int d = 0; d < l->ndim; d++)
        rd_put(s, "%s%lld", d ? "x" : "", (long long)l->global[d]);
    if (l->has_local) {
        rd_put(s, " local: ");
        for (int d = 0; d < l->ndim; d++)
            rd_put(s, "%s%lld", d ? "x" : "", (long long)l->local[d]);
    } else {
        rd_put(s, " local: chosen by the runtime (NOLOCALS)");
    }
    rd_put(s, "\n");
    if (c->D->launch_note)
        rd_put(s, "%s", c->D->launch_note);
    rd_put(s, "// args: out");
    for (int op = 0; op < k->e.n_ops; op++)
        rd_put(s, ", in%d", op);
    rd_put(s, "\n");
    bool f64 = k->e.acc_dtype == ET_F64 || k->e.out.dtype == ET_F64;
    for (int op = 0; op < k->e.n_ops; op++)
        f64 = f64 || k->e.op[op].dtype == ET_F64;
    if (c->D->fp64_pragma && f64)
        rd_put(s, "%s", c->D->fp64_pragma);
    if (et_kernel_has_split(k)) {
        rd_put(s, "// SPLIT: work-groups add partial sums into the output: "
                  "zero its %lld bytes before each launch\n",
               (long long)c->launch.zero_bytes);
        const char *add = k->e.out.dtype == ET_F64 ? c->D->atomic_add_f64
                                                   : c->D->atomic_add_f32;
        if (add)
            rd_put(s, "%s", add);
    }
    bool f16 = false;
    for (int op = 0; op < k->e.n_ops; op++)
        f16 = f16 || k->e.op[op].dtype == ET_F16;
    if (c->D->half_helper && f16)
        rd_put(s, "%s", c->D->half_helper);
    rd_put(s, "\n");
}

static void kernel_name(const et_kernel *k, char *buf, size_t cap)
{
    static const et_part_kind order[] = {
        ET_PART_GLOBAL, ET_PART_SPLIT, ET_PART_LOCAL, ET_PART_GROUP,
        ET_PART_REDUCE,
        ET_PART_PREFETCH, ET_PART_UNROLL, ET_PART_UPCAST};
    size_t len = (size_t)snprintf(buf, cap, "%s",
                                  k->e.n_idx > k->e.n_out ? "r" : "E");
    int count = 0;
    for (size_t o = 0; o < sizeof order / sizeof order[0]; o++)
        for (int p = 0; p < k->n_parts; p++) {
            if (k->part[p].kind != order[o])
                continue;
            char num[32];
            snprintf(num, sizeof num, "_%lld", (long long)k->part[p].size);
            if (len + strlen(num) + 1 >= cap)
                continue;
            memcpy(buf + len, num, strlen(num) + 1);
            len += strlen(num);
            count++;
        }
    if (count == 0 && len + 3 < cap)
        memcpy(buf + len, "_1", 3);
}

/* Parts of kind `kind` of the axes in launch dimension d, innermost first
 * (launch order, then smaller stride first). d = -1: every dimension. For
 * ET_PART_GLOBAL the SPLIT parts follow in their dimension, slowest. */
static void dim_parts(const ctx *c, plist *l, int d, et_part_kind kind)
{
    const et_kernel *k = c->k;
    l->n = 0;
    for (int j = 0; j < k->e.n_out; j++) {
        int a = k->order[j];
        if (d >= 0 && et_kernel_axis_dim(k, a) != d)
            continue;
        int start = l->n;
        for (int p = 0; p < k->n_parts; p++)
            if (k->part[p].axis == a && k->part[p].kind == kind)
                l->p[l->n++] = p;
        /* insertion sort by stride */
        for (int i = start + 1; i < l->n; i++)
            for (int m = i; m > start &&
                            k->part[l->p[m]].stride < k->part[l->p[m - 1]].stride;
                 m--) {
                int t = l->p[m];
                l->p[m] = l->p[m - 1];
                l->p[m - 1] = t;
            }
    }
    if (kind == ET_PART_GLOBAL && (d < 0 || d == et_kernel_split_dim(k)))
        for (int p = 0; p < k->n_parts; p++)
            if (k->part[p].kind == ET_PART_SPLIT)
                l->p[l->n++] = p;
}

/* Decodes `var` (already declared) into the parts of l, first fastest. */
static void decode(ctx *c, const char *var, const plist *l)
{
    int64_t div = 1;
    for (int i = 0; i < l->n; i++) {
        const et_part *pt = &c->k->part[l->p[i]];
        bool last = i == l->n - 1;
        if (pt->size == 1)
            continue; /* always 0; sums skip size-1 parts */
        if (div == 1 && last)
            rd_line(&c->s, "%s %s = %s;", c->itype, pt->name, var);
        else if (div == 1)
            rd_line(&c->s, "%s %s = %s %% %lld;", c->itype, pt->name, var,
                    (long long)pt->size);
        else if (last)
            rd_line(&c->s, "%s %s = %s / %lld;", c->itype, pt->name, var,
                    (long long)div);
        else
            rd_line(&c->s, "%s %s = %s / %lld %% %lld;", c->itype, pt->name, var,
                    (long long)div, (long long)pt->size);
        div *= pt->size;
    }
}

static void emit_ids(ctx *c)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    int ndim = c->launch.ndim;
    int64_t N[3];
    et_kernel_group_counts(k, N);
    rd_line(s, "// position of this work-group");
    if (c->flat) {
        plist l;
        dim_parts(c, &l, -1, ET_PART_GLOBAL);
        /* dim_parts(-1) lists launch order, which is dims 0,1,2 order */
        rd_line(s, "%s gidx = (%s)%s;", c->itype, c->itype,
                k->nolocals ? c->D->global_id[0] : c->D->group_id[0]);
        if (k->nolocals)
            rd_line(s, "if (gidx >= %lld) return; /* rounded-up grid */",
                    (long long)(N[0] * N[1] * N[2]));
        decode(c, "gidx", &l);
    } else {
        for (int d = 0; d < ndim; d++) {
            plist l;
            dim_parts(c, &l, d, ET_PART_GLOBAL);
            if (l.n == 0)
                continue;
            bool all_one = true;
            for (int i = 0; i < l.n; i++)
                all_one = all_one && k->part[l.p[i]].size == 1;
            if (all_one && !k->nolocals) {
                decode(c, "0", &l);
                continue;
            }
            char var[16];
            snprintf(var, sizeof var, "gidx%d", d);
            rd_line(s, "%s %s = (%s)%s;", c->itype, var, c->itype,
                    k->nolocals ? c->D->global_id[d] : c->D->group_id[d]);
            if (k->nolocals && c->D->rounded_grid)
                rd_line(s, "if (%s >= %lld) return; /* rounded-up grid */", var,
                        (long long)N[d]);
            decode(c, var, &l);
        }
    }
    if (c->wg > 1) {
        rd_line(s, "// position inside the work-group");
        for (int d = 0; d < ndim; d++) {
            if (c->L[d] == 1)
                continue;
            plist l;
            dim_parts(c, &l, d, ET_PART_LOCAL);
            if (d == 0 && k->group_part >= 0) {
                memmove(l.p + 1, l.p, sizeof(int) * (size_t)l.n);
                l.p[0] = k->group_part;
                l.n++;
            }
            char var[16];
            snprintf(var, sizeof var, "lidx%d", d);
            rd_line(s, "%s %s = (%s)%s;", c->itype, var, c->itype,
                    c->D->local_id[d]);
            decode(c, var, &l);
        }
        if (k->group_part >= 0 || k->prefetch_axis >= 0) {
            char expr[256];
            et_sbuf e;
            et_sbuf_fixed(&e, expr, sizeof expr);
            int64_t mul = 1;
            for (int d = 0; d < ndim; d++) {
                if (c->L[d] > 1) {
                    if (mul == 1)
                        et_sbuf_printf(&e, "%slidx%d", e.len ? " + " : "", d);
                    else
                        et_sbuf_printf(&e, "%slidx%d*%lld",
                                       e.len ? " + " : "", d, (long long)mul);
                }
                mul *= c->L[d];
            }
            rd_line(s, "%s lid_flat = %s;", c->itype, e.len ? expr : "0");
        }
    } else if (k->group_part >= 0 || k->prefetch_axis >= 0) {
        rd_line(s, "%s lid_flat = 0;", c->itype);
    }
}

/* Declares `<axis>_idx` for every axis of the given role: the runtime
 * part of its index. */
static void emit_axis_bases(ctx *c, bool global)
{
    const et_kernel *k = c->k;
    int from = global ? 0 : k->e.n_out, to = global ? k->e.n_out : k->e.n_idx;
    for (int a = from; a < to; a++) {
        /* a reduce index read only through PREFETCH copies is not needed */
        bool needed = global;
        for (int op = 0; op < k->e.n_ops && !needed; op++)
            needed = et_kernel_op_uses(k, op, a) &&
                     !(k->prefetch_axis >= 0 && k->prefetch_op[op]);
        if (!needed)
            continue;
        char sum[512];
        sum_terms(c, sum, sizeof sum, a, keep_runtime, NULL, "");
        rd_line(&c->s, "%s %s_idx = %s;", c->itype, k->e.idx[a].name, sum);
    }
}

/* Address base of operand op (-1 output): sum of coef * <axis>_idx. */
static void addr_base(const ctx *c, int op, char *buf, size_t cap)
{
    const int64_t *cf = coefs(c, op);
    et_sbuf b;
    et_sbuf_fixed(&b, buf, cap);
    for (int a = 0; a < c->k->e.n_idx; a++) {
        if (!cf[a] || c->k->padded[a] == 1)
            continue;
        if (cf[a] == 1)
            et_sbuf_printf(&b, "%s%s_idx", b.len ? " + " : "",
                           c->k->e.idx[a].name);
        else
            et_sbuf_printf(&b, "%s%s_idx*%lld", b.len ? " + " : "",
                           c->k->e.idx[a].name, (long long)cf[a]);
    }
    if (!b.len)
        et_sbuf_puts(&b, "0");
}

/* Mask of operand op for the const values: padded axes in range. */
static bool mask_expr(const ctx *c, int op, const plist *consts,
                      const int64_t *vals, char *buf, size_t cap)
{
    et_sbuf b;
    et_sbuf_fixed(&b, buf, cap);
    for (int a = 0; a < c->k->e.n_idx; a++) {
        if (!op_uses(c, op, a) || !padded(c, a))
            continue;
        int64_t off = axis_off(c, a, consts, vals);
        if (off)
            et_sbuf_printf(&b, "%s%s_idx + %lld < %lld", b.len ? " && " : "",
                           c->k->e.idx[a].name, (long long)off,
                           (long long)c->k->e.idx[a].size);
        else
            et_sbuf_printf(&b, "%s%s_idx < %lld", b.len ? " && " : "",
                           c->k->e.idx[a].name,
                           (long long)c->k->e.idx[a].size);
    }
    return b.len > 0;
}

static int64_t addr_off(const ctx *c, int op, const plist *consts,
                        const int64_t *vals)
{
    const int64_t *cf = coefs(c, op);
    int64_t off = 0;
    for (int i = 0; i < consts->n; i++) {
        const et_part *pt = &c->k->part[consts->p[i]];
        off += cf[pt->axis] * pt->stride * vals[consts->p[i]];
    }
    return off;
}

static void addr_str(char *buf, size_t cap, const char *base, int64_t off)
{
    if (off)
        snprintf(buf, cap, "%s + %lld", base, (long long)off);
    else
        snprintf(buf, cap, "%s", base);
}

/* Tile strides of operand op's PREFETCH tile, indexed by part. */
static int64_t tile_strides(const ctx *c, int op, int64_t *ts)
{
    int64_t t = 1;
    for (int p = 0; p < c->k->n_parts; p++) {
        ts[p] = 0;
        if (et_kernel_tile_part(c->k, op, p)) {
            ts[p] = t;
            t *= c->k->part[p].size;
        }
    }
    return t;
}

/* Declares in<op>_t, the position of this work-item's values in operand
 * op's PREFETCH tile (ts: the tile strides by part). */
static void emit_tile_pos(ctx *c, int op, const int64_t *ts)
{
    const et_kernel *k = c->k;
    char pos[512];
    et_sbuf b;
    et_sbuf_fixed(&b, pos, sizeof pos);
    for (int p = 0; p < k->n_parts; p++) {
        const et_part *pt = &k->part[p];
        if (!ts[p] || !is_runtime(pt->kind) || pt->size == 1)
            continue;
        if (ts[p] == 1)
            et_sbuf_printf(&b, "%s%s", b.len ? " + " : "", pt->name);
        else
            et_sbuf_printf(&b, "%s%s*%lld", b.len ? " + " : "", pt->name,
                           (long long)ts[p]);
    }
    rd_line(&c->s, "%s in%d_t = %s; /* position in the local copy */",
            c->itype, op, b.len ? pos : "0");
}

static bool direct_vec(const ctx *c, int op);
static void emit_direct_vec_loads(ctx *c, int op);
static bool emit_vstores_direct(ctx *c);

/* Loads of one operand in the innermost body. */
static void emit_loads(ctx *c, int op)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    plist consts;
    const_parts(c, &consts, op);
    int64_t ncombo = plist_count(c, &consts);
    int64_t vals[MAXP] = {0};
    char name[256], addr[600], expr[768], mask[512], base[512];
    if (direct_vec(c, op)) {
        emit_direct_vec_loads(c, op);
        return;
    }
    if (k->prefetch_axis >= 0 && k->prefetch_op[op]) {
        int64_t ts[MAXP];
        tile_strides(c, op, ts);
        emit_tile_pos(c, op, ts);
        for (int64_t ci = 0; ci < ncombo; ci++) {
            combo_fill(c, &consts, ci, vals);
            char bn[16];
            snprintf(bn, sizeof bn, "a%d", op);
            combo_name(c, name, sizeof name, bn, &consts, vals);
            int64_t off = 0;
            for (int i = 0; i < consts.n; i++)
                off += ts[consts.p[i]] * vals[consts.p[i]];
            snprintf(base, sizeof base, "in%d_t", op);
            addr_str(addr, sizeof addr, base, off);
            rd_line(s, "%s %s = tile_in%d[%s];", c->acc, name, op, addr);
        }
        return;
    }
    addr_base(c, op, base, sizeof base);
    rd_line(s, "%s in%d_addr = %s;", c->itype, op, base);
    snprintf(base, sizeof base, "in%d_addr", op);
    int vp = vector_part(c, op, &consts);
    if (vp >= 0) {
        /* one vector per combination of the other parts */
        plist rest = {0};
        int vi = -1;
        for (int i = 0; i < consts.n; i++) {
            if (consts.p[i] == vp)
                vi = i;
            else
                rest.p[rest.n++] = consts.p[i];
        }
        (void)vi;
        int64_t n = k->part[vp].size;
        int64_t nrest = plist_count(c, &rest);
        for (int64_t ri = 0; ri < nrest; ri++) {
            memset(vals, 0, sizeof vals);
            combo_fill(c, &rest, ri, vals);
            vals[vp] = 0;
            char vn[256], bn[16];
            snprintf(bn, sizeof bn, "a%d_v", op);
            combo_name(c, vn, sizeof vn, bn, &rest, vals);
            addr_str(addr, sizeof addr, base, addr_off(c, op, &consts, vals));
            c->D->vector_load(s, c->acc, n, vn, op, addr);
            for (int64_t v = 0; v < n; v++) {
                vals[vp] = v;
                snprintf(bn, sizeof bn, "a%d", op);
                combo_name(c, name, sizeof name, bn, &consts, vals);
                rd_line(s, "%s %s = %s.%s;", c->acc, name, vn, c->D->comp[v]);
            }
        }
        return;
    }
    for (int64_t ci = 0; ci < ncombo; ci++) {
        combo_fill(c, &consts, ci, vals);
        char bn[16];
        snprintf(bn, sizeof bn, "a%d", op);
        combo_name(c, name, sizeof name, bn, &consts, vals);
        addr_str(addr, sizeof addr, base, addr_off(c, op, &consts, vals));
        load_expr(c, op, addr, expr, sizeof expr);
        if (mask_expr(c, op, &consts, vals, mask, sizeof mask))
            rd_line(s, "%s %s = (%s) ? %s : %s;", c->acc, name, mask, expr,
                    c->zero);
        else
            rd_line(s, "%s %s = %s;", c->acc, name, expr);
    }
}

/* The multiply-adds of the innermost body, one per combination. */
static void emit_fmas_scalar(ctx *c)
{
    const et_kernel *k = c->k;
    plist all, ups;
    const_parts(c, &all, -2);
    plist_kind(c, &ups, ET_PART_UPCAST, -2);
    int64_t n = plist_count(c, &all);
    int64_t vals[MAXP] = {0};
    for (int64_t ci = 0; ci < n; ci++) {
        combo_fill(c, &all, ci, vals);
        char accn[256];
        combo_name(c, accn, sizeof accn, "acc", &ups, vals);
        char v[ET_MAX_OPERANDS][256];
        for (int op = 0; op < k->e.n_ops; op++) {
            plist consts;
            const_parts(c, &consts, op);
            char bn[16];
            snprintf(bn, sizeof bn, "a%d", op);
            combo_name(c, v[op], sizeof v[op], bn, &consts, vals);
        }
        if (k->e.n_ops == 1) {
            rd_line(&c->s, "%s += %s;", accn, v[0]);
            continue;
        }
        char prod[4096];
        et_sbuf pb;
        et_sbuf_fixed(&pb, prod, sizeof prod);
        for (int op = 0; op < k->e.n_ops - 1; op++)
            et_sbuf_printf(&pb, "%s%s", op ? " * " : "", v[op]);
        rd_line(&c->s, "%s = %s(%s, %s, %s);", accn, c->fma, prod,
                v[k->e.n_ops - 1], accn);
    }
}

/* ---- vector accumulators ---------------------------------------------------- */

/* l without part p. */
static void plist_without(const plist *l, int p, plist *out)
{
    out->n = 0;
    for (int i = 0; i < l->n; i++)
        if (l->p[i] != p)
            out->p[out->n++] = l->p[i];
}

/* How operand op reads the lanes of candidate vector part p: 0 broadcast
 * (does not use its axis), 1 contiguous (address coefficient 1, or tile
 * stride 1 in its local copy), 2 gather. */
static int lane_access(const ctx *c, int op, int p)
{
    const et_part *pt = &c->k->part[p];
    if (!op_uses(c, op, pt->axis))
        return 0;
    if (c->k->prefetch_axis >= 0 && c->k->prefetch_op[op]) {
        int64_t ts[MAXP];
        tile_strides(c, op, ts);
        return ts[p] == 1 ? 1 : 2;
    }
    return coefs(c, op)[pt->axis] * pt->stride == 1 ? 1 : 2;
}

/*
 * Picks the vector accumulators (OpenCL only; CUDA keeps scalars). A
 * candidate is an UPCAST part contiguous in the output (mode 1) or an
 * UNROLL part (mode 2) of size 2 or more; its lanes go in chunks of at
 * most 64 bytes (16 floats, 8 doubles), e.g. 35 = 8+8+8+8+2+1. Mode 1 is
 * preferred when no input has to gather its lanes; otherwise an UNROLL
 * part that every input reads contiguously or broadcasts (at least one
 * contiguously); otherwise the mode 1 part with the fewest gathers.
 */
static void choose_vector(ctx *c)
{
    const et_kernel *k = c->k;
    c->vmode = 0;
    c->vpart = -1;
    c->vn = 1;
    if (!c->D->vector_accumulators)
        return;
    int best1 = -1, best1_g = 1 << 30, best2 = -1;
    for (int p = 0; p < k->n_parts; p++) {
        const et_part *pt = &k->part[p];
        if (pt->size < 2)
            continue;
        int gathers = 0, contig = 0;
        for (int op = 0; op < k->e.n_ops; op++) {
            int a = lane_access(c, op, p);
            gathers += a == 2;
            contig += a == 1;
        }
        if (pt->kind == ET_PART_UPCAST &&
            coefs(c, -1)[pt->axis] * pt->stride == 1 && gathers < best1_g) {
            best1 = p;
            best1_g = gathers;
        } else if (pt->kind == ET_PART_UNROLL && gathers == 0 && contig > 0 &&
                   best2 < 0) {
            best2 = p;
        }
    }
    if (best1 >= 0 && (best1_g == 0 || best2 < 0)) {
        c->vmode = 1;
        c->vpart = best1;
    } else if (best2 >= 0) {
        c->vmode = 2;
        c->vpart = best2;
    }
    if (c->vmode)
        c->vn = k->part[c->vpart].size;
}

#define MAX_CHUNKS 64

/* The lanes of the vector part in chunks: start and width of each, the
 * widest power of two that fits first. Returns the number of chunks. */
static int vchunks(const ctx *c, int64_t *start, int64_t *width)
{
    int64_t maxw = c->k->e.acc_dtype == ET_F64 ? 8 : 16;
    int n = 0;
    for (int64_t at = 0; at < c->vn && n < MAX_CHUNKS; n++) {
        int64_t w = maxw;
        while (w > c->vn - at)
            w /= 2;
        start[n] = at;
        width[n] = w;
        at += w;
    }
    return n;
}

/* "float8" or, for one lane, "float". */
static void vtype(const ctx *c, int64_t w, char *buf, size_t cap)
{
    if (w == 1)
        snprintf(buf, cap, "%s", c->acc);
    else
        snprintf(buf, cap, "%s%lld", c->acc, (long long)w);
}

/* Name of chunk q of a vector: base, "_c<start>" when there are several. */
static void chunk_name(char *buf, size_t cap, const char *base, int nch,
                       int64_t start)
{
    if (nch > 1)
        snprintf(buf, cap, "%s_c%lld", base, (long long)start);
    else
        snprintf(buf, cap, "%s", base);
}

/* UPCAST parts that name a vector accumulator. */
static void vacc_parts(const ctx *c, plist *l)
{
    plist ups;
    plist_kind(c, &ups, ET_PART_UPCAST, -2);
    if (c->vmode == 1)
        plist_without(&ups, c->vpart, l);
    else
        *l = ups;
}

static void emit_vacc_decls(ctx *c)
{
    plist l;
    vacc_parts(c, &l);
    int64_t st[MAX_CHUNKS], w[MAX_CHUNKS];
    int nch = vchunks(c, st, w);
    int64_t n = plist_count(c, &l);
    int64_t vals[MAXP] = {0};
    char base[256], name[300], ty[32];
    for (int64_t ci = 0; ci < n; ci++) {
        combo_fill(c, &l, ci, vals);
        combo_name(c, base, sizeof base, "accv", &l, vals);
        for (int q = 0; q < nch; q++) {
            chunk_name(name, sizeof name, base, nch, st[q]);
            vtype(c, w[q], ty, sizeof ty);
            rd_line(&c->s, "%s %s = (%s)(%s);", ty, name, ty, c->zero);
        }
    }
}

/* With vector accumulators: does operand op load the lanes of the vector
 * part as vectors (from memory or its local copy), named
 * vec<op>_<values of its other unrolled parts>[_c<chunk start>]? */
static bool direct_vec(const ctx *c, int op)
{
    const et_kernel *k = c->k;
    if (!c->vmode || lane_access(c, op, c->vpart) != 1)
        return false;
    if (k->prefetch_axis >= 0 && k->prefetch_op[op])
        return true; /* the local copy holds accumulator values, no masks */
    if (k->e.op[op].dtype != k->e.acc_dtype)
        return false;
    for (int a = 0; a < k->e.n_idx; a++)
        if (op_uses(c, op, a) && padded(c, a))
            return false;
    return true;
}

static void emit_direct_vec_loads(ctx *c, int op)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    plist consts, rest;
    const_parts(c, &consts, op);
    plist_without(&consts, c->vpart, &rest);
    int64_t st[MAX_CHUNKS], w[MAX_CHUNKS];
    int nch = vchunks(c, st, w);
    bool tile = k->prefetch_axis >= 0 && k->prefetch_op[op];
    int64_t ts[MAXP];
    char base[512], ptr[32];
    if (tile) {
        tile_strides(c, op, ts);
        emit_tile_pos(c, op, ts);
        snprintf(base, sizeof base, "in%d_t", op);
        snprintf(ptr, sizeof ptr, "tile_in%d", op);
    } else {
        addr_base(c, op, base, sizeof base);
        rd_line(s, "%s in%d_addr = %s;", c->itype, op, base);
        snprintf(base, sizeof base, "in%d_addr", op);
        snprintf(ptr, sizeof ptr, "in%d", op);
    }
    int64_t n = plist_count(c, &rest);
    int64_t vals[MAXP] = {0};
    for (int64_t ri = 0; ri < n; ri++) {
        memset(vals, 0, sizeof vals);
        combo_fill(c, &rest, ri, vals);
        int64_t off = 0;
        if (tile)
            for (int i = 0; i < rest.n; i++)
                off += ts[rest.p[i]] * vals[rest.p[i]];
        else
            off = addr_off(c, op, &rest, vals);
        char vb[16], vname[256], name[300], ty[32], addr[600];
        snprintf(vb, sizeof vb, "vec%d", op);
        combo_name(c, vname, sizeof vname, vb, &rest, vals);
        for (int q = 0; q < nch; q++) {
            chunk_name(name, sizeof name, vname, nch, st[q]);
            vtype(c, w[q], ty, sizeof ty);
            addr_str(addr, sizeof addr, base, off + st[q]);
            if (w[q] == 1)
                rd_line(s, "%s %s = %s[%s];", ty, name, ptr, addr);
            else
                rd_line(s, "%s %s = vload%lld(0, %s + %s);", ty, name,
                        (long long)w[q], ptr, addr);
        }
    }
}

/* The vector multiply-adds: one per chunk and combination of the unrolled
 * parts but the vector part; an operand's lanes are vectors it loaded, or
 * built from its values, or one value broadcast. */
static void emit_fmas_vector(ctx *c)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    int vp = c->vpart;
    plist all, rest, accl;
    const_parts(c, &all, -2);
    plist_without(&all, vp, &rest);
    vacc_parts(c, &accl);
    int64_t st[MAX_CHUNKS], w[MAX_CHUNKS];
    int nch = vchunks(c, st, w);
    int64_t vals[MAXP] = {0};
    char name[256], ty[32], cn[300];
    /* lane vectors of the other operands that use the vector part's axis */
    for (int op = 0; op < k->e.n_ops; op++) {
        if (!op_uses(c, op, k->part[vp].axis) || direct_vec(c, op))
            continue;
        plist consts, orest;
        const_parts(c, &consts, op);
        plist_without(&consts, vp, &orest);
        int64_t n = plist_count(c, &orest);
        char bn[16], vb[16], vname[256];
        snprintf(bn, sizeof bn, "a%d", op);
        snprintf(vb, sizeof vb, "vec%d", op);
        for (int64_t ci = 0; ci < n; ci++) {
            memset(vals, 0, sizeof vals);
            combo_fill(c, &orest, ci, vals);
            combo_name(c, vname, sizeof vname, vb, &orest, vals);
            for (int q = 0; q < nch; q++) {
                char list[4096];
                et_sbuf lb;
                et_sbuf_fixed(&lb, list, sizeof list);
                for (int64_t v = st[q]; v < st[q] + w[q]; v++) {
                    vals[vp] = v;
                    combo_name(c, name, sizeof name, bn, &consts, vals);
                    et_sbuf_printf(&lb, "%s%s", v > st[q] ? ", " : "", name);
                }
                vals[vp] = 0;
                chunk_name(cn, sizeof cn, vname, nch, st[q]);
                vtype(c, w[q], ty, sizeof ty);
                if (w[q] == 1)
                    rd_line(s, "%s %s = %s;", ty, cn, list);
                else
                    rd_line(s, "%s %s = (%s)(%s);", ty, cn, ty, list);
            }
        }
    }
    int64_t n = plist_count(c, &rest);
    for (int64_t ci = 0; ci < n; ci++) {
        memset(vals, 0, sizeof vals);
        combo_fill(c, &rest, ci, vals);
        char accb[256];
        combo_name(c, accb, sizeof accb, "accv", &accl, vals);
        for (int q = 0; q < nch; q++) {
            char accn[300];
            chunk_name(accn, sizeof accn, accb, nch, st[q]);
            vtype(c, w[q], ty, sizeof ty);
            char v[ET_MAX_OPERANDS][340];
            for (int op = 0; op < k->e.n_ops; op++) {
                plist consts, orest;
                const_parts(c, &consts, op);
                char bn[16];
                if (op_uses(c, op, k->part[vp].axis)) {
                    plist_without(&consts, vp, &orest);
                    snprintf(bn, sizeof bn, "vec%d", op);
                    combo_name(c, name, sizeof name, bn, &orest, vals);
                    chunk_name(v[op], sizeof v[op], name, nch, st[q]);
                } else {
                    snprintf(bn, sizeof bn, "a%d", op);
                    combo_name(c, name, sizeof name, bn, &consts, vals);
                    if (w[q] == 1)
                        snprintf(v[op], sizeof v[op], "%s", name);
                    else
                        snprintf(v[op], sizeof v[op], "(%s)(%s)", ty, name);
                }
            }
            if (k->e.n_ops == 1) {
                rd_line(s, "%s += %s;", accn, v[0]);
                continue;
            }
            char prod[4096];
            et_sbuf pb;
            et_sbuf_fixed(&pb, prod, sizeof prod);
            for (int op = 0; op < k->e.n_ops - 1; op++)
                et_sbuf_printf(&pb, "%s%s", op ? " * " : "", v[op]);
            rd_line(s, "%s = %s(%s, %s, %s);", accn, c->fma, prod,
                    v[k->e.n_ops - 1], accn);
        }
    }
}

/* After the reduce loops: the scalar accumulators acc_<upcast values>
 * from the vectors (mode 1: a lane each; mode 2: the lanes of each chunk
 * summed pairwise, then the chunks in order). */
static void emit_vacc_unpack(ctx *c)
{
    rd_out *s = &c->s;
    plist ups, accl;
    plist_kind(c, &ups, ET_PART_UPCAST, -2);
    vacc_parts(c, &accl);
    int64_t st[MAX_CHUNKS], w[MAX_CHUNKS];
    int nch = vchunks(c, st, w);
    int64_t vals[MAXP] = {0};
    char accn[256], vbase[256], vname[300];
    if (c->vmode == 2) {
        int64_t m = plist_count(c, &accl);
        for (int64_t ci = 0; ci < m; ci++) {
            combo_fill(c, &accl, ci, vals);
            combo_name(c, vbase, sizeof vbase, "accv", &accl, vals);
            combo_name(c, accn, sizeof accn, "acc", &ups, vals);
            char sum[4096];
            et_sbuf sb;
            et_sbuf_fixed(&sb, sum, sizeof sum);
            for (int q = 0; q < nch; q++) {
                chunk_name(vname, sizeof vname, vbase, nch, st[q]);
                char cur[340];
                snprintf(cur, sizeof cur, "%s", vname);
                for (int64_t h = w[q] / 2; h >= 2; h /= 2) {
                    char nx[340];
                    snprintf(nx, sizeof nx, "%s_h%lld", vname, (long long)h);
                    rd_line(s, "%s%lld %s = %s.lo + %s.hi;", c->acc, (long long)h,
                            nx, cur, cur);
                    snprintf(cur, sizeof cur, "%s", nx);
                }
                if (w[q] == 1)
                    et_sbuf_printf(&sb, "%s%s", q ? " + " : "", cur);
                else
                    et_sbuf_printf(&sb, "%s(%s.s0 + %s.s1)", q ? " + " : "",
                                   cur, cur);
            }
            rd_line(s, "%s %s = %s;", c->acc, accn, sum);
        }
        return;
    }
    int64_t n = plist_count(c, &ups);
    for (int64_t ci = 0; ci < n; ci++) {
        combo_fill(c, &ups, ci, vals);
        combo_name(c, accn, sizeof accn, "acc", &ups, vals);
        combo_name(c, vbase, sizeof vbase, "accv", &accl, vals);
        int64_t v = vals[c->vpart];
        int q = 0;
        while (q + 1 < nch && st[q + 1] <= v)
            q++;
        chunk_name(vname, sizeof vname, vbase, nch, st[q]);
        if (w[q] == 1)
            rd_line(s, "%s %s = %s;", c->acc, accn, vname);
        else
            rd_line(s, "%s %s = %s.%s;", c->acc, accn, vname,
                    c->D->comp[v - st[q]]);
    }
}

/* Mode 1 without GROUP: stores straight from the vector accumulators
 * when the output has the accumulator's dtype and no padding. */
static bool vstores_direct_ok(const ctx *c)
{
    const et_kernel *k = c->k;
    if (c->vmode != 1 || k->group_part >= 0 ||
        k->e.out.dtype != k->e.acc_dtype || et_kernel_has_split(k))
        return false;
    for (int a = 0; a < k->e.n_out; a++)
        if (padded(c, a))
            return false;
    return true;
}

static bool emit_vstores_direct(ctx *c)
{
    if (!vstores_direct_ok(c))
        return false;
    rd_out *s = &c->s;
    plist ups, accl;
    plist_kind(c, &ups, ET_PART_UPCAST, -2);
    vacc_parts(c, &accl);
    int64_t st[MAX_CHUNKS], w[MAX_CHUNKS];
    int nch = vchunks(c, st, w);
    char base[512], addr[600], vbase[256], vname[300];
    addr_base(c, -1, base, sizeof base);
    rd_line(s, "%s out_addr = %s;", c->itype, base);
    int64_t n = plist_count(c, &accl);
    int64_t vals[MAXP] = {0};
    for (int64_t ci = 0; ci < n; ci++) {
        memset(vals, 0, sizeof vals);
        combo_fill(c, &accl, ci, vals);
        combo_name(c, vbase, sizeof vbase, "accv", &accl, vals);
        int64_t off = addr_off(c, -1, &accl, vals);
        for (int q = 0; q < nch; q++) {
            chunk_name(vname, sizeof vname, vbase, nch, st[q]);
            addr_str(addr, sizeof addr, "out_addr", off + st[q]);
            if (w[q] == 1)
                rd_line(s, "out[%s] = %s;", addr, vname);
            else
                rd_line(s, "vstore%lld(%s, 0, out + %s);", (long long)w[q],
                        vname, addr);
        }
    }
    return true;
}

/* The multiply-adds of the innermost body. */
static void emit_fmas(ctx *c)
{
    if (c->vmode)
        emit_fmas_vector(c);
    else
        emit_fmas_scalar(c);
}

/* The cooperative copy of operand op's tile for the current chunk. */
static void emit_prefetch_copy(ctx *c, int op)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    int64_t ts[MAXP];
    int64_t T = tile_strides(c, op, ts);
    rd_line(s, "// copy the %lld elements of operand %d this chunk needs", (long long)T,
            op);
    rd_line(s, "for (%s cp = lid_flat; cp < %lld; cp += %lld) {", c->itype,
            (long long)T, (long long)c->wg);
    s->indent++;
    for (int p = 0; p < k->n_parts; p++) {
        const et_part *pt = &k->part[p];
        if (!ts[p])
            continue;
        if (pt->size == 1)
            rd_line(s, "%s %s_c = 0;", c->itype, pt->name);
        else if (ts[p] * pt->size == T && ts[p] == 1)
            rd_line(s, "%s %s_c = cp;", c->itype, pt->name);
        else if (ts[p] * pt->size == T)
            rd_line(s, "%s %s_c = cp / %lld;", c->itype, pt->name,
                    (long long)ts[p]);
        else if (ts[p] == 1)
            rd_line(s, "%s %s_c = cp %% %lld;", c->itype, pt->name,
                    (long long)pt->size);
        else
            rd_line(s, "%s %s_c = cp / %lld %% %lld;", c->itype, pt->name,
                    (long long)ts[p], (long long)pt->size);
    }
    const et_operand *o = &k->e.op[op];
    const int64_t *cf = coefs(c, op);
    char addr[1024], mask[512];
    et_sbuf ab, mb;
    et_sbuf_fixed(&ab, addr, sizeof addr);
    et_sbuf_fixed(&mb, mask, sizeof mask);
    for (int a = 0; a < k->e.n_idx; a++) {
        bool used = false;
        for (int d = 0; d < o->rank; d++)
            used = used || o->idx[d] == a;
        if (!used)
            continue;
        /* <axis>_ci = fixed parts by name + tile parts by their _c copy */
        char sum[512];
        et_sbuf sb;
        et_sbuf_fixed(&sb, sum, sizeof sum);
        for (int p = 0; p < k->n_parts; p++) {
            const et_part *pt = &k->part[p];
            if (pt->axis != a || pt->size == 1)
                continue;
            const char *suf = ts[p] ? "_c" : "";
            if (pt->stride == 1)
                et_sbuf_printf(&sb, "%s%s%s", sb.len ? " + " : "", pt->name,
                               suf);
            else
                et_sbuf_printf(&sb, "%s%s%s*%lld", sb.len ? " + " : "",
                               pt->name, suf, (long long)pt->stride);
        }
        rd_line(s, "%s %s_ci = %s;", c->itype, k->e.idx[a].name,
                sb.len ? sum : "0");
        if (cf[a] && k->padded[a] != 1) {
            if (cf[a] == 1)
                et_sbuf_printf(&ab, "%s%s_ci", ab.len ? " + " : "",
                               k->e.idx[a].name);
            else
                et_sbuf_printf(&ab, "%s%s_ci*%lld", ab.len ? " + " : "",
                               k->e.idx[a].name, (long long)cf[a]);
        }
        if (padded(c, a))
            et_sbuf_printf(&mb, "%s%s_ci < %lld", mb.len ? " && " : "",
                           k->e.idx[a].name, (long long)k->e.idx[a].size);
    }
    char expr[1536];
    load_expr(c, op, ab.len ? addr : "0", expr, sizeof expr);
    if (mb.len)
        rd_line(s, "tile_in%d[cp] = (%s) ? %s : %s;", op, mask, expr, c->zero);
    else
        rd_line(s, "tile_in%d[cp] = %s;", op, expr);
    s->indent--;
    rd_line(s, "}");
}

static void emit_body(ctx *c)
{
    const et_kernel *k = c->k;
    if (k->e.n_idx > k->e.n_out) {
        rd_line(&c->s, "// reduce indices");
        emit_axis_bases(c, false);
    }
    for (int op = 0; op < k->e.n_ops; op++) {
        rd_line(&c->s, "// operand %d", op);
        emit_loads(c, op);
    }
    emit_fmas(c);
}

static void open_loop(ctx *c, const et_part *pt)
{
    rd_line(&c->s, "for (%s %s = 0; %s < %lld; %s++) {", c->itype, pt->name,
            pt->name, (long long)pt->size, pt->name);
    c->s.indent++;
}

static void close_block(ctx *c)
{
    c->s.indent--;
    rd_line(&c->s, "}");
}

static void emit_loops(ctx *c)
{
    const et_kernel *k = c->k;
    int depth = 0;
    for (int a = k->e.n_out; a < k->e.n_idx; a++) {
        if (a == k->prefetch_axis)
            continue;
        open_loop(c, &k->part[k->outer[a]]);
        depth++;
    }
    if (k->prefetch_axis >= 0) {
        open_loop(c, &k->part[k->outer[k->prefetch_axis]]);
        for (int op = 0; op < k->e.n_ops; op++)
            if (k->prefetch_op[op])
                emit_prefetch_copy(c, op);
        rd_line(&c->s, "%s", c->D->barrier);
        open_loop(c, &k->part[k->prefetch_part]);
        emit_body(c);
        close_block(c);
        rd_line(&c->s, "%s", c->D->barrier);
        close_block(c);
    } else {
        emit_body(c);
    }
    for (int i = 0; i < depth; i++)
        close_block(c);
}

static void emit_stores(ctx *c)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    plist ups;
    plist_kind(c, &ups, ET_PART_UPCAST, -2);
    char base[512], addr[600], mask[512], accn[256];
    if (emit_vstores_direct(c))
        return;
    addr_base(c, -1, base, sizeof base);
    rd_line(s, "%s out_addr = %s;", c->itype, base);
    int64_t vals[MAXP] = {0};
    const char *ot = acc_type(k->e.out.dtype);
    const char *cast = k->e.out.dtype == k->e.acc_dtype ? ""
                       : k->e.out.dtype == ET_F64     ? "(double)"
                                                      : "(float)";
    if (et_kernel_has_split(k)) {
        /* SPLIT: this work-group's partial sums go into the zeroed output */
        const char *add = c->D->atomic_add;
        int64_t n = plist_count(c, &ups);
        for (int64_t ci = 0; ci < n; ci++) {
            combo_fill(c, &ups, ci, vals);
            combo_name(c, accn, sizeof accn, "acc", &ups, vals);
            addr_str(addr, sizeof addr, "out_addr",
                     addr_off(c, -1, &ups, vals));
            if (mask_expr(c, -1, &ups, vals, mask, sizeof mask))
                rd_line(s, "if (%s) %s(out + %s, %s%s);", mask, add, addr, cast,
                        accn);
            else
                rd_line(s, "%s(out + %s, %s%s);", add, addr, cast, accn);
        }
        return;
    }
    int vp = vector_part(c, -1, &ups);
    if (vp >= 0) {
        plist rest = {0};
        for (int i = 0; i < ups.n; i++)
            if (ups.p[i] != vp)
                rest.p[rest.n++] = ups.p[i];
        int64_t n = k->part[vp].size;
        int64_t nrest = plist_count(c, &rest);
        for (int64_t ri = 0; ri < nrest; ri++) {
            memset(vals, 0, sizeof vals);
            combo_fill(c, &rest, ri, vals);
            vals[vp] = 0;
            addr_str(addr, sizeof addr, "out_addr",
                     addr_off(c, -1, &ups, vals));
            char list[4096];
            et_sbuf lb;
            et_sbuf_fixed(&lb, list, sizeof list);
            for (int64_t v = 0; v < n; v++) {
                vals[vp] = v;
                combo_name(c, accn, sizeof accn, "acc", &ups, vals);
                et_sbuf_printf(&lb, "%s%s", v ? ", " : "", accn);
            }
            c->D->vector_store(s, ot, n, list, addr);
        }
        return;
    }
    int64_t n = plist_count(c, &ups);
    for (int64_t ci = 0; ci < n; ci++) {
        combo_fill(c, &ups, ci, vals);
        combo_name(c, accn, sizeof accn, "acc", &ups, vals);
        addr_str(addr, sizeof addr, "out_addr", addr_off(c, -1, &ups, vals));
        if (mask_expr(c, -1, &ups, vals, mask, sizeof mask))
            rd_line(s, "if (%s) out[%s] = %s%s;", mask, addr, cast, accn);
        else
            rd_line(s, "out[%s] = %s%s;", addr, cast, accn);
    }
}

static void emit_group_combine(ctx *c)
{
    const et_kernel *k = c->k;
    rd_out *s = &c->s;
    const et_part *g = &k->part[k->group_part];
    plist ups;
    plist_kind(c, &ups, ET_PART_UPCAST, -2);
    int64_t n = plist_count(c, &ups);
    int64_t vals[MAXP] = {0};
    char accn[256];
    if (g->size == 1) {
        /* one lane: nothing to combine, and the size-1 lane index is
         * not declared (its value is always 0) */
        emit_stores(c);
        return;
    }
    rd_line(s, "// combine the partial sums of the %lld lanes of %s",
            (long long)g->size, g->name);
    for (int64_t ci = 0; ci < n; ci++) {
        combo_fill(c, &ups, ci, vals);
        combo_name(c, accn, sizeof accn, "acc", &ups, vals);
        rd_line(s, "red[%lld + lid_flat] = %s;", (long long)(ci * c->wg), accn);
    }
    rd_line(s, "%s", c->D->barrier);
    rd_line(s, "if (%s == 0) {", g->name);
    s->indent++;
    for (int64_t ci = 0; ci < n; ci++) {
        combo_fill(c, &ups, ci, vals);
        combo_name(c, accn, sizeof accn, "acc", &ups, vals);
        rd_line(s, "for (%s ln = 1; ln < %lld; ln++)", c->itype,
                (long long)g->size);
        rd_line(s, "    %s += red[%lld + lid_flat + ln];", accn,
                (long long)(ci * c->wg));
    }
    emit_stores(c);
    s->indent--;
    rd_line(s, "}");
}

et_status et_kernel_render(const et_kernel *k, et_backend_kind b,
                           const et_render_opts *ro, et_rendered *out)
{
    memset(out, 0, sizeof *out);
    if ((unsigned)b >= ET_BACKEND_COUNT)
        return ET_ERR_INPUT;
    et_render_opts defaults = {0};
    if (!ro)
        ro = &defaults;
    switch (ro->plant) {
    case ET_PLANT_NONE:
    default:
        break;
    }
    ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ET_ERR_NOMEM;
    et_status st = ET_OK;
    c->k = k;
    c->b = b;
    c->D = &dialects[b];
    c->n_ops = k->e.n_ops;
    st = et_kernel_launch(k, b, &c->launch);
    if (st != ET_OK)
        goto done;
    c->flat = et_kernel_flat_groups(k, b);
    et_kernel_local_dims(k, c->L);
    c->wg = c->L[0] * c->L[1] * c->L[2];
    compute_coefs(c);
    c->itype = needs_long(c) ? c->D->long_type : "int";
    c->acc = acc_type(k->e.acc_dtype);
    c->zero = k->e.acc_dtype == ET_F64 ? "0.0" : "0.0f";
    c->fma = k->e.acc_dtype == ET_F32 ? c->D->fma_f32 : "fma";
    kernel_name(k, out->name, sizeof out->name);
    out->launch = c->launch;
    out->local_bytes = et_kernel_local_bytes(k);
    out->n_args = k->e.n_ops + 1;
    out->arg_operand[0] = -1;
    for (int op = 0; op < k->e.n_ops; op++)
        out->arg_operand[op + 1] = op;

    rd_out *s = &c->s;
    emit_header(c);
    rd_put(s, "%s %s(", c->D->kernel_kw, out->name);
    rd_put(s, c->D->out_ptr, store_type(c, k->e.out.dtype), "out");
    for (int op = 0; op < k->e.n_ops; op++) {
        char nm[16];
        snprintf(nm, sizeof nm, "in%d", op);
        rd_put(s, ", ");
        rd_put(s, c->D->in_ptr, store_type(c, k->e.op[op].dtype), nm);
    }
    rd_put(s, ")\n{\n");
    s->indent = 1;
    for (int op = 0; op < k->e.n_ops; op++)
        if (k->prefetch_axis >= 0 && k->prefetch_op[op])
            rd_line(s, "%s %s tile_in%d[%lld];", c->D->local_kw, c->acc, op,
                    (long long)et_kernel_tile_elems(k, op));
    plist ups;
    plist_kind(c, &ups, ET_PART_UPCAST, -2);
    int64_t nacc = plist_count(c, &ups);
    if (k->group_part >= 0)
        rd_line(s, "%s %s red[%lld];", c->D->local_kw, c->acc,
                (long long)(c->wg * nacc));
    emit_ids(c);
    if (k->e.n_out > 0) {
        rd_line(s, "// output indices (UPCAST parts added per accumulator)");
        emit_axis_bases(c, true);
    }
    int64_t vals[MAXP] = {0};
    char accn[256];
    choose_vector(c);
    if (c->vmode) {
        emit_vacc_decls(c);
    } else {
        for (int64_t ci = 0; ci < nacc; ci++) {
            combo_fill(c, &ups, ci, vals);
            combo_name(c, accn, sizeof accn, "acc", &ups, vals);
            rd_line(s, "%s %s = %s;", c->acc, accn, c->zero);
        }
    }
    emit_loops(c);
    if (c->vmode && !vstores_direct_ok(c))
        emit_vacc_unpack(c);
    if (k->group_part >= 0)
        emit_group_combine(c);
    else
        emit_stores(c);
    s->indent = 0;
    rd_put(s, "}\n");
    out->source = et_sbuf_take(&s->b);
    if (!out->source)
        st = ET_ERR_NOMEM;
done:
    et_sbuf_free(&c->s.b);
    free(c);
    return st;
}

void et_rendered_free(et_rendered *r)
{
    if (!r)
        return;
    free(r->source);
    r->source = NULL;
}
