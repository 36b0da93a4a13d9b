/*
 * backend_util.c - the helpers the backends share (see backend_impl.h):
 * notes for absent backends, the first error of a build log, substring
 * and range checks.
 */
#include "measure/backend_impl.h"
#include "measure/user_kernel.h"

#include <ctype.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void et_notes_add(char *notes, size_t cap, const char *fmt, ...)
{
    if (!notes || cap == 0)
        return;
    size_t used = strnlen(notes, cap);
    if (used + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(notes + used, cap - used, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    used = strnlen(notes, cap);
    if (used + 1 < cap) {
        notes[used] = '\n';
        notes[used + 1] = '\0';
    }
}

bool et_str_icontains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return true;
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return false;
}

bool et_range_ok(size_t bytes, size_t off, size_t n)
{
    return off <= bytes && n <= bytes - off;
}

/* user_kernel.h's: the launchers' names of their buffers */
const char *et_user_arg_name(int i, char *buf, size_t cap)
{
    if (i == 0)
        snprintf(buf, cap, "the output (out)");
    else
        snprintf(buf, cap, "input %d (in[%d])", i - 1, i - 1);
    return buf;
}

void et_log_first_error(const char *log, char *out, size_t cap)
{
    if (cap == 0)
        return;
    out[0] = '\0';
    if (!log)
        return;
    const char *first_nonempty = NULL, *hit = NULL;
    for (const char *line = log; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *p = line;
        while (p < line + len && isspace((unsigned char)*p))
            p++;
        if (p < line + len && !first_nonempty)
            first_nonempty = line;
        for (const char *q = line; q + 5 <= line + len; q++) {
            if (strncasecmp(q, "error", 5) == 0) {
                hit = line;
                break;
            }
        }
        if (hit)
            break;
        line = end ? end + 1 : line + len;
    }
    const char *pick = hit ? hit : first_nonempty;
    if (!pick)
        return;
    size_t len = strcspn(pick, "\n");
    while (len > 0 && isspace((unsigned char)pick[len - 1]))
        len--;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, pick, len);
    out[len] = '\0';
}

/* The first line of dir/name into buf; false when unreadable. */
static bool read_line(const char *dir, const char *name, char *buf,
                      size_t cap)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)cap, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

int et_cpu_caches_sysfs(const char *sysfs_dir, et_device_info *info)
{
    const char *dir = sysfs_dir ? sysfs_dir
                                : "/sys/devices/system/cpu/cpu0/cache";
    et_cache_level found[ET_CACHE_LEVELS];
    memset(found, 0, sizeof found);
    int levels = 0;
    for (int i = 0; i < 16; i++) {
        char sub[4100], level[32], type[32], size[32], shared[256];
        snprintf(sub, sizeof sub, "%s/index%d", dir, i);
        if (!read_line(sub, "level", level, sizeof level))
            continue;
        if (!read_line(sub, "type", type, sizeof type) ||
            !read_line(sub, "size", size, sizeof size))
            continue;
        if (strcmp(type, "Data") != 0 && strcmp(type, "Unified") != 0)
            continue;
        int l = atoi(level);
        char *end = NULL;
        long long n = strtoll(size, &end, 10);
        if (l < 1 || l > ET_CACHE_LEVELS || n <= 0 || !end)
            continue;
        if (*end == 'K')
            n <<= 10;
        else if (*end == 'M')
            n <<= 20;
        else if (*end == 'G')
            n <<= 30;
        /* "0", "0-1", "0,2": more than one CPU when there is a - or , */
        bool sh = read_line(sub, "shared_cpu_list", shared, sizeof shared) &&
                  strpbrk(shared, "-,") != NULL;
        if (found[l - 1].bytes == 0)
            levels++;
        found[l - 1].bytes = n;
        found[l - 1].shared = sh;
    }
    if (levels > 0)
        memcpy(info->cache, found, sizeof found);
    return levels;
}
