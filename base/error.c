/*
 * error.c - owns filling et_error messages (see error.h).
 */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

et_status et_errorf(et_error *err, et_status st, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return st;
}

void et_error_append(et_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    size_t used = strnlen(err->msg, sizeof err->msg);
    if (used + 1 >= sizeof err->msg)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + used, sizeof err->msg - used, fmt, ap);
    va_end(ap);
}

void et_error_prefix(et_error *err, const char *what)
{
    if (!err)
        return;
    char tmp[sizeof err->msg];
    memcpy(tmp, err->msg, sizeof tmp);
    tmp[sizeof tmp - 1] = '\0';
    et_errorf(err, ET_OK, "%s: %s", what, tmp);
}
