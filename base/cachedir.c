/*
 * cachedir.c - owns naming and creating the cache directory (see
 * cachedir.h).
 */
#include "base/cachedir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

et_status et_cache_dir_path(char *buf, size_t cap, et_error *err)
{
    const char *x = getenv("XDG_CACHE_HOME");
    int n;
    if (x && x[0] == '/') {
        n = snprintf(buf, cap, "%s/eintune", x);
    } else {
        const char *home = getenv("HOME");
        if (!home || !home[0])
            return et_errorf(err, ET_ERR_IO,
                             "no cache directory: neither XDG_CACHE_HOME "
                             "nor HOME is set");
        n = snprintf(buf, cap, "%s/.cache/eintune", home);
    }
    if (n < 0 || (size_t)n >= cap)
        return et_errorf(err, ET_ERR_IO, "cache directory path too long");
    return ET_OK;
}

et_status et_mkdirs(const char *dir, et_error *err)
{
    char p[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof p)
        return et_errorf(err, ET_ERR_IO, "cannot create '%s': bad path",
                         dir);
    memcpy(p, dir, n + 1);
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0700) != 0 && errno != EEXIST)
                return et_errorf(err, ET_ERR_IO, "cannot create %s: %s", p,
                                 strerror(errno));
            *s = c;
            if (c == '\0')
                break;
        }
    }
    return ET_OK;
}

et_status et_cache_dir_make(char *buf, size_t cap, et_error *err)
{
    et_status st = et_cache_dir_path(buf, cap, err);
    return st != ET_OK ? st : et_mkdirs(buf, err);
}
