/*
 * outcome.h - what became of a candidate: one enum used everywhere (the
 * JSON `status` and `failures` keys, the tuning database, the logs).
 *
 * Every outcome travels with a reason string: the refusing rule, the build
 * log's first error, the CL/CUDA error name, the failing element with its
 * error, the time limit that was exceeded. Names are the exact strings of
 * docs/measurement.md and are stable (scripts and the database key on
 * them).
 */
#ifndef ET_OUTCOME_H
#define ET_OUTCOME_H

#include "eintune.h"

/* et_outcome, et_outcome_name and et_outcome_parse are public: eintune.h. */

/*
 * The outcome a failed call stands for: ET_ERR_REFUSED -> refused,
 * ET_ERR_BUILD -> build_error, ET_ERR_TIMEOUT -> timeout, ET_ERR_CRASH ->
 * crash, ET_OK -> ok; every other failure of device work (launch, device,
 * out of memory, ...) -> launch_error.
 */
et_outcome et_outcome_from_status(et_status s);

/* An outcome with its reason (empty for ok). Plain value. */
typedef struct et_result {
    et_outcome outcome;
    char reason[1024];
} et_result;

/* Sets r to outcome o with a printf-formatted reason. */
void et_result_set(et_result *r, et_outcome o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
