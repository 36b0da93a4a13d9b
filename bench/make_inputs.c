/*
 * make_inputs - writes the input operands of an einsum as .npy files,
 * uniform in [-1, 1] from a fixed-seed generator, for `eintune run` in the
 * CUDA benchmark (bench/cuda_cases.sh), where neither Python nor NumPy
 * may be installed. Uses the public API only (include/eintune.h):
 *
 *   make_inputs EINSUM SHAPE DTYPE DIR
 *
 * writes DIR/in0.npy, DIR/in1.npy, ... (one per operand, in order) and
 * prints their paths, one a line. Exit status 0, 1 when a file cannot be
 * written, 2 for bad input (the einsum, shape or dtype).
 */
#include "eintune.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Uniform on [-1, 1]: the xorshift of bench/peer_stats.h. */
static double next(unsigned long long *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: make_inputs EINSUM SHAPE DTYPE DIR\n");
        return 2;
    }
    et_problem *p = NULL;
    et_diag d;
    if (et_problem_init(argv[1], argv[2], argv[3], &p, &d) != ET_OK) {
        fprintf(stderr, "make_inputs: %s\n", d.msg);
        return 2;
    }
    unsigned long long seed = 12345;
    int rc = 0;
    for (int k = 0; k < et_problem_n_operands(p) && rc == 0; k++) {
        et_host_array a;
        if (et_host_array_init(p, k, &a) != ET_OK) {
            fprintf(stderr, "make_inputs: operand %d: out of memory\n", k);
            rc = 1;
            break;
        }
        int64_t n = et_problem_elems(p, k);
        for (int64_t i = 0; i < n; i++) {
            double v = next(&seed);
            if (a.dtype == ET_F64)
                ((double *)a.data)[i] = v;
            else if (a.dtype == ET_F32)
                ((float *)a.data)[i] = (float)v;
            else /* f16 bits of |v| < 1: exponent below 15 */
                ((uint16_t *)a.data)[i] =
                    (uint16_t)((v < 0 ? 0x8000 : 0) |
                               ((seed >> 20) % 15) << 10 | (seed & 1023));
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/in%d.npy", argv[4], k);
        if (et_npy_save(path, &a, &d) != ET_OK) {
            fprintf(stderr, "make_inputs: %s\n", d.msg);
            rc = 1;
        } else {
            printf("%s\n", path);
        }
        et_host_array_free(&a);
    }
    et_problem_free(p);
    return rc;
}
