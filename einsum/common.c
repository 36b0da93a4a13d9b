/* common.c - names and sizes shared by every layer. */
#include "einsum/einsum.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const status_names[] = {
    "ok",
    "bad input",
    "refused",
    "unsupported",
    "out of memory",
    "i/o error",
    "device error",
    "build error",
    "launch error",
    "internal error",
    "timeout",
    "crash",
    "not found",
};
static_assert(sizeof(status_names) / sizeof(status_names[0]) ==
                  ET_STATUS_COUNT,
              "status_names must match et_status");

const char *et_status_str(et_status s)
{
    if ((unsigned)s >= ET_STATUS_COUNT)
        return "unknown status";
    return status_names[s];
}

static const char *const dtype_names[] = {"f16", "f32", "f64"};
static_assert(sizeof(dtype_names) / sizeof(dtype_names[0]) == ET_DTYPE_COUNT,
              "dtype_names must match et_dtype");
static const size_t dtype_sizes[] = {2, 4, 8};
static_assert(sizeof(dtype_sizes) / sizeof(dtype_sizes[0]) == ET_DTYPE_COUNT,
              "dtype_sizes must match et_dtype");

const char *et_dtype_name(et_dtype t)
{
    if ((unsigned)t >= ET_DTYPE_COUNT)
        return "?";
    return dtype_names[t];
}

size_t et_dtype_size(et_dtype t)
{
    if ((unsigned)t >= ET_DTYPE_COUNT)
        return 0;
    return dtype_sizes[t];
}

int et_dtype_parse(const char *s, et_dtype *out)
{
    static const struct {
        const char *name;
        et_dtype t;
    } names[] = {
        {"f16", ET_F16},     {"float16", ET_F16}, {"half", ET_F16},
        {"f32", ET_F32},     {"float32", ET_F32}, {"float", ET_F32},
        {"f64", ET_F64},     {"float64", ET_F64}, {"double", ET_F64},
    };
    if (!s || !out)
        return -1;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(s, names[i].name) == 0) {
            *out = names[i].t;
            return 0;
        }
    }
    return -1;
}

static const char *const role_names[] = {"free", "summed", "batch"};
static_assert(sizeof(role_names) / sizeof(role_names[0]) == ET_ROLE_COUNT,
              "role_names must match et_role");

const char *et_role_name(et_role r)
{
    if ((unsigned)r >= ET_ROLE_COUNT)
        return "?";
    return role_names[r];
}

static const char *const input_names[] = {
    [ET_INPUT_NONE] = "",        [ET_INPUT_EINSUM] = "einsum",
    [ET_INPUT_SHAPE] = "shape",  [ET_INPUT_DTYPE] = "dtype",
    [ET_INPUT_OPTS] = "opts",    [ET_INPUT_SPACE] = "space",
    [ET_INPUT_FILE] = "file",    [ET_INPUT_OPTION] = "option",
    [ET_INPUT_DEVICE] = "device", [ET_INPUT_BATCH] = "batch",
};
_Static_assert(sizeof input_names / sizeof input_names[0] == ET_INPUT_COUNT,
               "input_names covers et_input");

const char *et_input_name(et_input in)
{
    if ((unsigned)in >= ET_INPUT_COUNT)
        return "?";
    return input_names[in];
}

et_status et_diag_fail(et_diag *d, int pos, const char *fmt, ...)
{
    if (d) {
        d->line = 0;
        d->col = 0;
        d->pos = pos;
        d->status = ET_ERR_INPUT;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
        va_end(ap);
    }
    return ET_ERR_INPUT;
}
