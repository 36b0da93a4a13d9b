/*
 * cachedir.h - owns where eintune keeps its files: the cache directory
 * $XDG_CACHE_HOME/eintune, or ~/.cache/eintune when XDG_CACHE_HOME is unset
 * or relative (the XDG rule), created with mode 0700. The tuning database,
 * the peaks cache and PoCL's kernel cache live under it.
 */
#ifndef ET_BASE_CACHEDIR_H
#define ET_BASE_CACHEDIR_H

#include "base/error.h"

#include <stddef.h>

/* Names the cache directory into buf without touching the file system.
 * ET_ERR_IO when neither XDG_CACHE_HOME nor HOME names one, or when the
 * path does not fit in cap bytes. */
et_status et_cache_dir_path(char *buf, size_t cap, et_error *err);

/* Names the cache directory into buf and creates it (and any missing
 * parent) with mode 0700. ET_ERR_IO as above, or when it cannot be
 * created. */
et_status et_cache_dir_make(char *buf, size_t cap, et_error *err);

/* mkdir -p: creates dir and its missing parents with mode 0700; ET_ERR_IO
 * naming the component that could not be created. */
et_status et_mkdirs(const char *dir, et_error *err);

#endif
