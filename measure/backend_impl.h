/*
 * backend_impl.h - internal to measure/: the helpers every backend
 * (measure/opencl/, measure/cuda/) shares and the limits the device
 * wrappers check for them. Not part of the API.
 *
 * Include graph of measure/'s device code, one way only:
 *   registry.c -> opencl/opencl.h, cuda/cuda.h -> backend.h
 *   opencl.c, cuda.c, nvrtc.c, device.c -> backend_impl.h -> backend.h
 * A backend never sees the registry; the registry sees a backend only
 * through its open and list functions.
 */
#ifndef ET_BACKEND_IMPL_H
#define ET_BACKEND_IMPL_H

#include "measure/backend.h"

#include <stdbool.h>
#include <stddef.h>

/* Most kernel arguments any backend accepts in one launch. */
#define ET_MAX_KERNEL_ARGS 64

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

/*
 * Fills info->cache from the host CPU's data caches as Linux describes
 * them under sysfs_dir (NULL: /sys/devices/system/cpu/cpu0/cache): each
 * indexN/ with level 1..3 and type Data or Unified gives its size, shared
 * when shared_cpu_list names more than one CPU. Returns the number of
 * levels found (0: no sysfs, info->cache untouched).
 */
int et_cpu_caches_sysfs(const char *sysfs_dir, et_device_info *info);

#endif
