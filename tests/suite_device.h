/*
 * suite_device.h - the device the test suite runs on, for the tests that
 * open one: $ET_TEST_DEVICE, which `make test DEVICE=cuda:0` sets through
 * tests/run.sh; unset or empty: NULL, the first OpenCL device (the PoCL
 * device here), the library's own default. A test asks td_device() where
 * it would pass NULL, and td_cli_device() adds --device to the `eintune`
 * command lines it runs.
 *
 * Tests that can only run on OpenCL (OpenCL C written by hand, the OpenCL
 * API called directly, PoCL's own behaviour) keep their device and call
 * td_opencl_only() first: on another suite device it says so and answers
 * whether an OpenCL device is there to run on ($ET_TEST_OPENCL, which
 * tests/run.sh sets to 0 when `eintune devices` lists none); the test
 * skips when not. A test that builds on the suite's device's results and
 * then needs OpenCL (an export run by an OpenCL host program) calls
 * td_suite_opencl() and skips on another device. Tests of the fake CUDA
 * driver (tests/so/) need no device and run everywhere.
 *
 * Header-only on libc and include/eintune.h, so that the tests that use
 * the public header alone may include it.
 */
#ifndef ET_TESTS_SUITE_DEVICE_H
#define ET_TESTS_SUITE_DEVICE_H

#include "eintune.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The suite's device spec, NULL for the default (the first OpenCL
 * device). */
static inline const char *td_device(void)
{
    const char *s = getenv("ET_TEST_DEVICE");
    return s && *s ? s : NULL;
}

/* The spec for messages: td_device(), or "opencl" for the default. */
static inline const char *td_spec(void)
{
    return td_device() ? td_device() : "opencl";
}

/* Whether the suite's device is an OpenCL one (the default is). */
static inline bool td_is_opencl(void)
{
    const char *s = td_device();
    return !s || strncmp(s, "opencl", 6) == 0;
}

/* The suite's backend. */
static inline et_backend_kind td_backend(void)
{
    return td_is_opencl() ? ET_BACKEND_OPENCL : ET_BACKEND_CUDA;
}

/* "opencl" or "cuda": the backend's name as eintune writes it. */
static inline const char *td_backend_name(void)
{
    return td_is_opencl() ? "opencl" : "cuda";
}

/* A well-formed spec of the suite's backend that names no device. */
static inline const char *td_missing(void)
{
    return td_is_opencl() ? "opencl:99" : "cuda:99";
}

/* Whether `eintune CMD` takes --device. */
static inline bool td_cli_takes_device(const char *cmd)
{
    static const char *const with[] = {"run",    "tune",  "best", "export",
                                       "peaks",  "check", "campaign"};
    for (size_t i = 0; cmd && i < sizeof with / sizeof *with; i++)
        if (strcmp(cmd, with[i]) == 0)
            return true;
    return false;
}

/*
 * For a test that runs `eintune`: argv[0..*n) is its command line,
 * argv[1] the subcommand. When the suite has a device, the command takes
 * --device and the line has none (nor --help), appends "--device SPEC"
 * (argv needs room for two more and the NULL the caller puts after
 * them).
 */
static inline void td_cli_device(char **argv, int *n)
{
    if (!td_device() || *n < 2 || !td_cli_takes_device(argv[1]))
        return;
    for (int i = 2; i < *n; i++)
        if (argv[i] && (strcmp(argv[i], "--device") == 0 ||
                        strcmp(argv[i], "--help") == 0))
            return;
    argv[(*n)++] = (char *)"--device";
    argv[(*n)++] = (char *)td_device();
}

/* Says on stdout, once for each `why` in a row, what a test does
 * instead of running on the suite's device. */
static inline void td_say(const char *why, const char *what)
{
    static const char *last;
    if (last == why)
        return;
    last = why;
    printf("%s: OpenCL only (%s): %s %s\n", program_invocation_short_name,
           why, what, td_spec());
    fflush(stdout);
}

/*
 * For a test that runs on OpenCL only, `why` saying what ties it to
 * OpenCL. true: run it (on the first OpenCL device); false: skip it.
 * Silent when the suite's device is OpenCL; else says that the test keeps
 * OpenCL, or that it is skipped because there is no OpenCL device.
 */
static inline bool td_opencl_only(const char *why)
{
    if (td_is_opencl())
        return true;
    const char *cl = getenv("ET_TEST_OPENCL");
    bool have = !cl || strcmp(cl, "0") != 0;
    td_say(why, have ? "runs on the first OpenCL device, not on"
                     : "skipped: no OpenCL device here besides");
    return have;
}

/*
 * For a test that needs the suite's device to be an OpenCL one (it builds
 * on what an earlier test did there, or runs what it makes with the
 * OpenCL API): true when it is; else says that the test is skipped.
 */
static inline bool td_suite_opencl(const char *why)
{
    if (td_is_opencl())
        return true;
    td_say(why, "skipped on");
    return false;
}

#endif
