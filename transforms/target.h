/*
 * target.h - what transforms/ needs to know about a device, and the launch
 * geometry it hands to measure/. Plain values; no device code here.
 */
#ifndef ET_TARGET_H
#define ET_TARGET_H

#include "eintune.h"

#include <stdbool.h>
#include <stdint.h>

/* et_backend_kind and et_backend_name are in eintune.h. */

/* Device limits that decide whether an opt applies. */
typedef struct et_target {
    et_backend_kind backend;
    int64_t max_work_group_size;   /* work-items per group (block) */
    int64_t max_work_item_sizes[3];
    int64_t local_mem_bytes;       /* local / shared memory per group */
    bool has_fp64;
    bool has_fp16;                 /* native half arithmetic (cl_khr_fp16) */
    bool has_atomic64;             /* 64-bit compare-and-swap on global
                                    * memory (f64 SPLIT) */
    int64_t mem_base_addr_align;   /* bytes; buffer offsets keep this */
    int compute_units;
    int64_t global_mem_bytes;
    int preferred_vector_width[ET_DTYPE_COUNT];
} et_target;

/* The generic profile used without a device: 1024 work-items, 48 KiB. */
et_target et_target_generic(et_backend_kind backend);

/* 64-bit integer arguments a launch can pass after the buffers. */
#define ET_LAUNCH_MAX_SCALARS 32

/*
 * Launch geometry, OpenCL style: global[d] is the total number of
 * work-items along dimension d (a multiple of local[d]); CUDA's grid is
 * global/local. has_local false (NOLOCALS) lets the runtime choose.
 * scalar[0 .. n_scalars-1] are 64-bit integer kernel arguments passed
 * after the buffers (the size of an open axis, see einsum.h).
 */
typedef struct et_launch {
    int ndim;                      /* 1..3 */
    int64_t global[3];
    int64_t local[3];
    bool has_local;
    int64_t zero_bytes;            /* bytes of argument 0 (the output) set
                                    * to zero before every launch, inside
                                    * the timed region; 0 = none (SPLIT) */
    int n_scalars;
    int64_t scalar[ET_LAUNCH_MAX_SCALARS];
} et_launch;

#endif
