/* outcome.c - the outcome enum's names and the status -> outcome map. */
#include "measure/outcome.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const outcome_names[] = {
    "ok",           "refused", "build_error", "launch_error",
    "wrong_result", "timeout", "crash",       "slower_than_bound",
};
static_assert(sizeof(outcome_names) / sizeof(outcome_names[0]) ==
                  ET_OUTCOME_COUNT,
              "outcome_names must match et_outcome");

const char *et_outcome_name(et_outcome o)
{
    if ((unsigned)o >= ET_OUTCOME_COUNT)
        return "?";
    return outcome_names[o];
}

int et_outcome_parse(const char *name, et_outcome *out)
{
    if (!name || !out)
        return -1;
    for (int i = 0; i < ET_OUTCOME_COUNT; i++) {
        if (strcmp(name, outcome_names[i]) == 0) {
            *out = (et_outcome)i;
            return 0;
        }
    }
    return -1;
}

et_outcome et_outcome_from_status(et_status s)
{
    switch (s) {
    case ET_OK:
        return ET_OUTCOME_OK;
    case ET_ERR_REFUSED:
        return ET_OUTCOME_REFUSED;
    case ET_ERR_BUILD:
        return ET_OUTCOME_BUILD_ERROR;
    case ET_ERR_TIMEOUT:
        return ET_OUTCOME_TIMEOUT;
    case ET_ERR_CRASH:
        return ET_OUTCOME_CRASH;
    default:
        return ET_OUTCOME_LAUNCH_ERROR;
    }
}

void et_result_set(et_result *r, et_outcome o, const char *fmt, ...)
{
    r->outcome = o;
    r->reason[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->reason, sizeof r->reason, fmt, ap);
        va_end(ap);
    }
}
