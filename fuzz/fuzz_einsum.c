/*
 * fuzz_einsum.c - libFuzzer driver for the einsum front end.
 *
 * The input is split at the first two NUL or '|' bytes into
 *   einsum text | --shape spec | --dtype spec
 * The whole first part goes to et_subscripts_parse(); the parts go to
 * et_einsum_from_strings() (no third part: dtype NULL). An einsum that
 * resolves is also run through the counts, the canonical form and, when
 * small, the reference evaluator on zero inputs, so the sanitizers see the
 * whole front end. Invariants checked: an error message is terminated and
 * its position lies inside the input.
 */
#include "einsum/einsum.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_diag(const et_diag *d, size_t len)
{
    if (!memchr(d->msg, 0, sizeof d->msg))
        abort(); /* unterminated message */
    if (d->pos < -1 || (d->pos >= 0 && (size_t)d->pos > len))
        abort(); /* caret outside the text */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = 0;

    et_subscripts s;
    et_diag d;
    memset(&d, 0, sizeof d);
    d.pos = -1;
    if (et_subscripts_parse(buf, &s, &d) != ET_OK)
        check_diag(&d, size);

    /* split into text, shape, dtype */
    char *part[3] = {buf, NULL, NULL};
    int n = 1;
    for (size_t i = 0; i < size && n < 3; i++)
        if (buf[i] == '|' || buf[i] == 0) {
            buf[i] = 0;
            part[n++] = buf + i + 1;
        }
    const char *shape = part[1] ? part[1] : "";

    et_einsum e;
    memset(&d, 0, sizeof d);
    d.pos = -1;
    et_status st = et_einsum_from_strings(part[0], shape, part[2], &e, &d);
    if (st != ET_OK) {
        check_diag(&d, size);
        free(buf);
        return 0;
    }

    int64_t ops[ET_DTYPE_COUNT];
    et_einsum_ops(&e, ops);
    (void)et_einsum_bytes(&e);
    char canon[4096];
    et_einsum_canonical(&e, canon, sizeof canon);
    if (!memchr(canon, 0, sizeof canon))
        abort();

    /* the reference on zeros, when small (single-threaded sizes; an
     * operand with a repeated index can be far larger than the iteration
     * space, so its size is bounded too) */
    int small = et_einsum_iter_size(&e) <= 100000;
    for (int k = 0; k < e.n_ops && small; k++)
        small = et_einsum_operand_elems(&e, k) <= 1000000;
    if (small) {
        void *in[ET_MAX_OPERANDS] = {0};
        int ok = 1;
        for (int k = 0; k < e.n_ops; k++) {
            int64_t el = et_einsum_operand_elems(&e, k);
            in[k] = calloc((size_t)el, et_dtype_size(e.op[k].dtype));
            ok &= in[k] != NULL;
        }
        int64_t n_out = et_einsum_operand_elems(&e, -1);
        long double *ref = malloc((size_t)n_out * sizeof *ref);
        long double *abs_terms = malloc((size_t)n_out * sizeof *abs_terms);
        if (ok && ref && abs_terms) {
            if (et_reference_eval(&e, (const void *const *)in, ref,
                                  abs_terms) != ET_OK)
                abort(); /* a resolved einsum must evaluate */
            for (int64_t o = 0; o < n_out; o++)
                if (ref[o] != 0 || abs_terms[o] != 0)
                    abort();
        }
        for (int k = 0; k < e.n_ops; k++)
            free(in[k]);
        free(ref);
        free(abs_terms);
    }
    free(buf);
    return 0;
}
