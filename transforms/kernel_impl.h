/*
 * kernel_impl.h - helpers shared by kernel.c and render.c (internal to
 * transforms/; other layers use kernel.h).
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

#endif
