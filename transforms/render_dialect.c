/*
 * render_dialect.c - what differs between OpenCL C and CUDA C in a
 * rendered kernel: the dialect table, one entry per backend (see struct
 * dialect in render_impl.h). A backend difference goes here, never into an
 * `if` on the backend in the emitters.
 */
#include "transforms/render_impl.h"

#include <stdio.h>

static void ocl_half_load(char *buf, size_t cap, const char *cast,
                          const char *ptr, const char *addr)
{
    snprintf(buf, cap, "%svload_half(%s, %s)", cast, addr, ptr);
}

static void cuda_half_load(char *buf, size_t cap, const char *cast,
                           const char *ptr, const char *addr)
{
    snprintf(buf, cap, "%set_half_to_float(%s[%s])", cast, ptr, addr);
}

static void ocl_vector_load(rd_out *s, const char *acc, int64_t n,
                            const char *name, const char *ptr,
                            const char *addr)
{
    rd_line(s, "%s%lld %s = vload%lld(0, %s + %s);", acc, (long long)n,
            name, (long long)n, ptr, addr);
}

static void cuda_vector_load(rd_out *s, const char *acc, int64_t n,
                             const char *name, const char *ptr,
                             const char *addr)
{
    rd_line(s, "%s%lld %s = *(const %s%lld*)(%s + %s);", acc,
            (long long)n, name, acc, (long long)n, ptr, addr);
}

static void ocl_vector_store(rd_out *s, const char *type, int64_t n,
                             const char *list, const char *ptr,
                             const char *addr)
{
    rd_line(s, "vstore%lld((%s%lld)(%s), 0, %s + %s);", (long long)n, type,
            (long long)n, list, ptr, addr);
}

static void cuda_vector_store(rd_out *s, const char *type, int64_t n,
                              const char *list, const char *ptr,
                              const char *addr)
{
    rd_line(s, "*(%s%lld*)(%s + %s) = make_%s%lld(%s);", type, (long long)n,
            ptr, addr, type, (long long)n, list);
}

static void ocl_nt_store(char *buf, size_t cap, const char *type, int64_t n,
                         const char *value, const char *ptr,
                         const char *addr)
{
    if (n == 1)
        snprintf(buf, cap, "ET_NT_STORE(%s, %s + %s);", value, ptr, addr);
    else
        snprintf(buf, cap,
                 "ET_NT_STORE((%s%lld)(%s), (__global %s%lld*)(%s + %s));",
                 type, (long long)n, value, type, (long long)n, ptr, addr);
}

/* __stcs: the streaming store, cached as evict-first */
static void cuda_nt_store(char *buf, size_t cap, const char *type, int64_t n,
                          const char *value, const char *ptr,
                          const char *addr)
{
    if (n == 1)
        snprintf(buf, cap, "__stcs(%s + %s, %s);", ptr, addr, value);
    else
        snprintf(buf, cap, "__stcs((%s%lld*)(%s + %s), make_%s%lld(%s));",
                 type, (long long)n, ptr, addr, type, (long long)n, value);
}

const dialect rd_dialects[] = {
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
        .unaligned_vectors = true,
        .varying_inner_bound = true,
        .half_load = ocl_half_load,
        .vector_load = ocl_vector_load,
        .vector_store = ocl_vector_store,
        /* a compiler without the builtin stores as usual */
        .nt_helper =
            "\n// NTSTORE: stores that bypass the caches, where the compiler "
            "has them\n"
            "#ifdef __has_builtin\n"
            "#if __has_builtin(__builtin_nontemporal_store)\n"
            "#define ET_NT_STORE(v, p) __builtin_nontemporal_store((v), (p))\n"
            "#endif\n"
            "#endif\n"
            "#ifndef ET_NT_STORE\n"
            "#define ET_NT_STORE(v, p) (*(p) = (v))\n"
            "#endif\n",
        .nt_store = ocl_nt_store,
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
        .unaligned_vectors = false,
        .varying_inner_bound = false,
        .half_load = cuda_half_load,
        .vector_load = cuda_vector_load,
        .vector_store = cuda_vector_store,
        .nt_helper = NULL,
        .nt_store = cuda_nt_store,
    },
};
_Static_assert(sizeof(rd_dialects) / sizeof(rd_dialects[0]) == ET_BACKEND_COUNT,
               "one dialect per backend");
