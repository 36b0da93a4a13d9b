/*
 * kernel_impl.h - helpers shared by kernel.c, the opts (opts.c) and the
 * renderers (internal to transforms/; other layers use kernel.h).
 */
#ifndef ET_KERNEL_IMPL_H
#define ET_KERNEL_IMPL_H

#include "transforms/kernel.h"

/* Is part p a dimension of operand op's PREFETCH or STAGE tile? */
bool et_kernel_tile_part(const et_kernel *k, int op, int p);
/* Elements of operand op's PREFETCH or STAGE tile. */
int64_t et_kernel_tile_elems(const et_kernel *k, int op);
/* Number of work-groups along each launch dimension (before flattening). */
void et_kernel_group_counts(const et_kernel *k, int64_t N[3]);
/* Work-group size along each launch dimension, lanes folded into dim 0. */
void et_kernel_local_dims(const et_kernel *k, int64_t L[3]);
/* Launch dimension holding the SPLIT parts (the last one). */
int et_kernel_split_dim(const et_kernel *k);
/* Launch dimension of global axis a. */
int et_kernel_axis_dim(const et_kernel *k, int a);
/* True when backend b needs every group decoded from dimension 0 (CUDA
 * grid dimensions 1 and 2 are limited to 65535). */
bool et_kernel_flat_groups(const et_kernel *k, et_backend_kind b);
/* Is operand op in local memory (prefetched or staged)? */
bool et_kernel_op_local(const et_kernel *k, int op);
/* Does operand op (-1: the output) use axis a? */
bool et_kernel_op_uses(const et_kernel *k, int op, int a);

/* Splits the outer part of axis a by n into a new inner part of kind
 * `kind`, named <letter>_<suffix> (a counter from the second such part of
 * the axis); top: index = inner*(S/n) + outer (contiguous chunks) instead
 * of outer*n + inner. The caller checked that n divides the outer part
 * (or that a is open) and that a part is free. Returns the new part's
 * index. */
int et_kernel_split(et_kernel *k, int a, int64_t n, et_part_kind kind,
                    const char *suffix, bool top);
/* Open axis a: its outer part covers the size rounded up to whole steps
 * of its inner parts. */
void et_kernel_open_resize(et_kernel *k, int a);

#endif
