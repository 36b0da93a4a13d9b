/*
 * device_impl.h - internal to measure/: what device.c needs from each
 * backend, and the small helpers the backends share. Not part of the API.
 *
 * A backend's open function fills an et_device that device.c allocated
 * (ops, ctx, info) and returns ET_OK, or returns an error with the device
 * untouched. A backend's list function appends the devices it sees to an
 * array and writes a note when the backend is absent; it never fails.
 */
#ifndef ET_DEVICE_IMPL_H
#define ET_DEVICE_IMPL_H

#include "measure/backend.h"

#include <stdbool.h>
#include <stddef.h>

/* Most kernel arguments any backend accepts in one launch. */
#define ET_MAX_KERNEL_ARGS 64

/* printf into err->msg (err may be NULL); returns status for `return`. */
et_status et_error_set(et_error *err, et_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends text after what err->msg already holds (truncating). */
void et_error_append(et_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends one "backend: text" line to notes (may be NULL). */
void et_notes_add(char *notes, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Copies the build log's first line that reports an error (a line that
 * contains "error", else the first non-empty line) into out. */
void et_log_first_error(const char *log, char *out, size_t cap);

/* Case-insensitive substring test. */
bool et_str_icontains(const char *hay, const char *needle);

/* Checks that [off, off + n) lies inside a buffer of `bytes` bytes. */
bool et_range_ok(size_t bytes, size_t off, size_t n);

et_status et_opencl_open(const et_device_spec *spec, et_device *dev,
                         et_error *err);
void et_opencl_list(et_device_info *out, int cap, int *n, char *notes,
                    size_t notes_cap);

et_status et_cuda_open(const et_device_spec *spec, et_device *dev,
                       et_error *err);
void et_cuda_list(et_device_info *out, int cap, int *n, char *notes,
                  size_t notes_cap);

#endif
