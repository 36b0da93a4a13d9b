/*
 * fake_cuda.h - what the fake libcuda (tests/so/fake_cuda.c) records, for
 * tests that load it through ET_LIBCUDA. A test dlopens the same .so and
 * resolves fake_cuda_log_get / fake_cuda_log_reset with dlsym.
 *
 * The fake has FAKE_CUDA_DEVICES devices (env, default 1) of compute
 * capability 9.0; memory is host memory, so copies round-trip; a launch
 * runs nothing but records its arguments. The number of kernel parameters
 * is read from the .entry's .param list in the loaded PTX. Streams are
 * plain handles (cuStreamCreate); work on them runs at once.
 *
 * cuMemGetAddressRange_v2 answers from the allocations handed out (their
 * sizes are logged in alloc_sizes). A test that wants a launch to touch
 * memory as the kernel would calls fake_cuda_touch(bytes, n): from then
 * on each launch writes bytes[0] bytes at its first pointer parameter
 * (the output) and reads bytes[i] at parameter i. Built with
 * AddressSanitizer (`make asan`), the fake makes those accesses whatever
 * the allocation's size, so a launch on a buffer too short for its kernel
 * is an ASan report, as it would be a fault or a corruption on a GPU;
 * otherwise it stops at the allocation's end and counts an overrun.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <stddef.h>

enum { FAKE_CUDA_MAX = 64, FAKE_CUDA_IMAGE = 1 << 16 };

typedef struct fake_cuda_log {
    int init_calls;
    int ctx_retained;  /* retains minus releases */
    int events_live;   /* created minus destroyed */
    int live_allocs;   /* allocations not yet freed */
    int nallocs;       /* allocations since the reset, in order: */
    unsigned long long alloc_ptrs[FAKE_CUDA_MAX];
    int module_loads;
    int modules_live;
    char module_image[FAKE_CUDA_IMAGE]; /* the last image (text, cut) */
    char function[256];                 /* the last function looked up */
    int launches;                       /* the last launch: */
    unsigned grid[3], block[3], shared_mem;
    int nparams;
    unsigned long long params[FAKE_CUDA_MAX];
    int memsets;                        /* the last cuMemsetD8Async: */
    unsigned long long memset_ptr, memset_bytes;
    unsigned memset_value;
    int memset_before_launch;           /* launches counted at that time */
    /* the streams of the last launch and the last memset (0: default) */
    unsigned long long launch_stream, memset_stream;
    int streams_live;                   /* created minus destroyed */
    unsigned long long alloc_sizes[FAKE_CUDA_MAX]; /* with alloc_ptrs */
    int address_ranges;                 /* cuMemGetAddressRange calls */
    int touches;                        /* launches that touched memory */
    int overruns;                       /* accesses cut at an allocation's
                                         * end (not under ASan) */
} fake_cuda_log;

typedef const fake_cuda_log *(*fake_cuda_log_get_fn)(void);
typedef void (*fake_cuda_log_reset_fn)(void);
/* bytes[0..n-1]: what each launch touches per parameter; n 0: nothing */
typedef void (*fake_cuda_touch_fn)(const unsigned long long *bytes, int n);

#endif
