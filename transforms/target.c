/* target.c - the generic device profile and backend names. */
#include "transforms/target.h"

#include <assert.h>

static const char *const backend_names[] = {"opencl", "cuda"};
static_assert(sizeof(backend_names) / sizeof(backend_names[0]) ==
                  ET_BACKEND_COUNT,
              "backend_names must match et_backend_kind");

const char *et_backend_name(et_backend_kind k)
{
    if ((unsigned)k >= ET_BACKEND_COUNT)
        return "?";
    return backend_names[k];
}

et_target et_target_generic(et_backend_kind backend)
{
    et_target t = {0};
    t.backend = backend;
    t.max_work_group_size = 1024;
    t.max_work_item_sizes[0] = 1024;
    t.max_work_item_sizes[1] = 1024;
    t.max_work_item_sizes[2] = 64;
    t.local_mem_bytes = 48 * 1024;
    t.has_fp64 = true;
    t.has_fp16 = false;
    t.has_atomic64 = true;
    t.mem_base_addr_align = 128;
    t.compute_units = 1;
    t.global_mem_bytes = (int64_t)1 << 30;
    for (int i = 0; i < ET_DTYPE_COUNT; i++)
        t.preferred_vector_width[i] = 1;
    return t;
}
