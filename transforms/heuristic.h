/*
 * heuristic.h - the opts a kernel's structure suggests before any search
 * has timed anything: the structural seeds of a tuning run (docs/spaces.md,
 * "Seeds"), as a hand-coded optimisation would pick them.
 *
 * The rules (et_kernel_heuristics):
 *   - the batch axis: the outermost global axis when there are two or more
 *     and none is larger (x of xik,kj->xij; a batched einsum's row axis
 *     left out);
 *   - a register block: the other global axes, innermost (last in the
 *     output) first, are upcast whole while they fit the registers, the
 *     UPCAST parts the kernel already has counted in. With vectors (the
 *     target's preferred width w > 1 for the accumulator dtype) the first
 *     axis holds them: a row of it takes n/w vector registers plus one
 *     per power of two of the rest (35 f64 in 8 lanes: 8,8,8,8,2,1, six),
 *     and the accumulators, one row of the vector operand and a
 *     broadcast must fit 32 registers for 64-byte vectors, 16 for
 *     narrower ones, 4 left free; it is padded (PADTO) to a multiple of w
 *     when that adds at most an eighth and the whole axis then fits. The
 *     other axes are rows. Without vectors (the generic profile, CUDA)
 *     the accumulators may take 1 KiB (256 B on CUDA). An axis too large
 *     for what is left is upcast by its largest divisor up to 16 that
 *     fits; a second block then upcasts the batch axis by its largest
 *     divisor that fits (when one does; with 16 vector registers, in a
 *     contraction, the 4 spare ones count for it), suggested before the
 *     first (more reuse per load where it has room); for a batched einsum, the row
 *     axis is left out of these, and both blocks are suggested again with
 *     it right after the first axis, upcast whole (every row in each
 *     work-item, a shared operand loaded once for all) when it fits;
 *   - FACTOR, when the kernel accepts it (three or more operands); with
 *     vectors the block's rows then count twice (FACTOR keeps the
 *     partial sums and the totals live);
 *   - on a CPU with vectors, two operands summed over one axis: a panel
 *     after the first block (the wider one where the first has no
 *     rows), LOCAL of its row axis and PREFETCH of the
 *     operand without the rows in chunks of up to 16 KiB (heuristic.c);
 *   - for each block, the first suggestion stops there; the second adds
 *     STAGE and LOOP(batch, n), n the largest divisor up to 64 of what
 *     the block leaves of the batch axis, when the kernel accepts them:
 *     an input
 *     that no work-item of a group reads differently (one that does not
 *     use the batch axis) is copied to local memory once per work-group,
 *     and each work-item iterates the batch axis, so that the copy serves
 *     many of its values; not on CUDA, where the block had no room left
 *     for the batch axis, a third adds LOCAL(batch, n), n the largest
 *     power of two up to 4 dividing what is left;
 *   - not on CUDA (a CPU's work-groups): the block with the batch axis
 *     in it, and with LOCAL(batch, n) after it, n the largest power of
 *     two up to 8 dividing what the block leaves of the batch axis, so
 *     that neighbouring blocks share a work-group; and before those, the
 *     same block with the output axes it left unsplit iterated whole in
 *     each work-item (LOOP(axis, 0));
 *   - not on CUDA, first a reduction's form when the innermost output
 *     axis is strided in a large input (or there is none) and the
 *     largest input's innermost dimension is a summed axis: UNROLL of
 *     that axis by up to 8, and UPCAST of the batch axis (else the
 *     outermost output axis) by up to 4, or, without output axes, SPLIT
 *     of the largest other summed axis by up to 64;
 *   - on CUDA, first a thread block (LOCAL on the output axes, innermost
 *     first, up to 256 threads), a register tile and FACTOR, then the
 *     same with PREFETCH tiles of the largest summed axis, when the
 *     innermost output axis is contiguous in the large inputs that have
 *     it (heuristic.c says how the amounts are chosen).
 * Every opt is applied in turn to a copy of the kernel, and one the rules
 * refuse is left out, so every suggestion applies to the kernel as is.
 */
#ifndef ET_HEURISTIC_H
#define ET_HEURISTIC_H

#include "transforms/kernel.h"

#define ET_HEURISTIC_MAX 16       /* suggestions at most */
#define ET_HEURISTIC_MAX_OPTS 16  /* opts per suggestion at most */

/* One suggestion: opts to apply after the kernel's own. Plain value. */
typedef struct et_heuristic {
    et_opt opt[ET_HEURISTIC_MAX_OPTS];
    int n_opts;
} et_heuristic;

/*
 * Writes into out (room for ET_HEURISTIC_MAX) the distinct, non-empty
 * suggestions for kernel k (the first ET_HEURISTIC_MAX of them) and returns their number (0 when the rules
 * suggest nothing, e.g. a full reduction, or out of memory).
 */
int et_kernel_heuristics(const et_kernel *k, et_heuristic *out);

#endif
