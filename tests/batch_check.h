/*
 * batch_check.h - test helper for batched einsums (einsum/rows.c): the
 * batched einsum of a text, shape, dtype and batch spec; one opt
 * sequence applied to it and the kernel checked on the suite's device
 * (kernel_check.h) and compiled with NVRTC, tallied; a command run and
 * its exit status. Shared by test_batched and test_rows_summed.
 */
#ifndef ET_TESTS_BATCH_CHECK_H
#define ET_TESTS_BATCH_CHECK_H

#include "eintune.h"
#include "einsum/einsum.h"
#include "tests/kernel_check.h"

#include <stdbool.h>
#include <stddef.h>

/* The batched einsum of text/shape/dtype with the batch spec rows. */
et_status bc_batched(const char *text, const char *shape, const char *dtype,
                     const char *rows, et_einsum *e, et_diag *d);

/* What bc_check saw: kernels verified, CUDA renderings compiled, failures
 * (each printed to stderr), and whether libnvrtc is absent. */
typedef struct bc_tally {
    int checked, cuda, failures;
    bool nvrtc_absent;
} bc_tally;

/*
 * Applies opts to the kernel of the batched einsum (einsum, shape, rows)
 * in dtype dt, checks it on dev with inputs of seed and compiles its CUDA
 * rendering, counting into t. An opt the case cannot take (an axis it
 * lacks, a size that does not divide) skips the sequence: returns 0. A
 * refusal naming a row returns -1 with the reason in why: the callers'
 * sequences keep to the row rules.
 */
int bc_check(et_device *dev, const char *einsum, const char *shape,
             const char *rows, const char *dt, const char *opts,
             unsigned seed, bc_tally *t, char *why, size_t cap);

/*
 * Tunes p into the database db with a budget of candidates and no final
 * race: ET_OK when a best was found and no candidate failed, else the
 * status (ET_ERR_NOT_FOUND when the run found nothing or a candidate failed)
 * with why in msg.
 */
et_status bc_tune(const et_problem *p, const char *db, int budget,
                  char *msg, size_t cap);

/* Runs argv (argv[0] found on PATH); its exit status, -1 when it could
 * not run. */
int bc_run_argv(char *const *argv);

#endif
