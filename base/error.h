/*
 * error.h - owns et_error, the message that goes with a failing et_status,
 * and the one way to fill it.
 *
 * Every function of the library that can fail returns an et_status and,
 * when the caller passed an et_error, writes a human-readable reason into
 * it. The message is cut quietly at sizeof msg; there is no global error
 * state. Every function here accepts err == NULL (the message is then
 * dropped and the status still returned).
 */
#ifndef ET_BASE_ERROR_H
#define ET_BASE_ERROR_H

#include "eintune.h"

typedef struct et_error {
    char msg[2048];
} et_error;

/* printf into err->msg, replacing what it held; returns st, so that a
 * failing path reads `return et_errorf(err, ET_ERR_IO, "...", ...);`. */
et_status et_errorf(et_error *err, et_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends text after what err->msg already holds (cut at its end). */
void et_error_append(et_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Puts "what: " in front of the message err holds. */
void et_error_prefix(et_error *err, const char *what);

#endif
