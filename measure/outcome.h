/*
 * outcome.h - what became of a candidate: one enum used everywhere (the
 * JSON `status` and `failures` keys, the tuning database, the logs).
 *
 * Every outcome travels with a reason string: the refusing rule, the build
 * log's first error, the CL/CUDA error name, the failing element with its
 * error, the time limit that was exceeded. Names are the exact strings of
 * DESIGN.md "Measurement" and are stable (scripts and the database key on
 * them).
 */
#ifndef ET_OUTCOME_H
#define ET_OUTCOME_H

#include "eintune.h"

typedef enum et_outcome {
    ET_OUTCOME_OK = 0,            /* "ok": verified and timed */
    ET_OUTCOME_REFUSED,           /* "refused": an opt broke a validity rule */
    ET_OUTCOME_BUILD_ERROR,       /* "build_error": compilation failed */
    ET_OUTCOME_LAUNCH_ERROR,      /* "launch_error": launch/transfer failed */
    ET_OUTCOME_WRONG_RESULT,      /* "wrong_result": verification failed */
    ET_OUTCOME_TIMEOUT,           /* "timeout": killed after its time limit */
    ET_OUTCOME_CRASH,             /* "crash": the device worker died */
    ET_OUTCOME_SLOWER_THAN_BOUND, /* "slower_than_bound": early cut */
    ET_OUTCOME_COUNT
} et_outcome;

/* Static name: "ok", "refused", ..., "slower_than_bound"; "?" if invalid. */
const char *et_outcome_name(et_outcome o);

/* Parses a name as et_outcome_name gives it; 0 on success, -1 if unknown. */
int et_outcome_parse(const char *name, et_outcome *out);

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
