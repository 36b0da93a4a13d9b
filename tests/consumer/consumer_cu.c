/*
 * consumer_cu.c - a program that uses an installed eintune's CUDA loader
 * in its own CUDA context, through the fake libcuda of the tests (no GPU
 * here): built with
 *   cc consumer_cu.c -I tests/so $(pkg-config --cflags --libs eintune) -ldl
 * and run as
 *   ET_LIBCUDA=.../fake_cuda.so consumer_cu DB
 * where DB holds a verified SPLIT trial for the fake device (written by
 * tests/test_install.c). The program makes its context
 * (cuDevicePrimaryCtxRetain + cuCtxSetCurrent), a stream and its buffers
 * (cuMemAlloc) through the same library eintune loads, then checks in the
 * fake driver's log that the launch got its device pointers and its
 * stream, after a memset of the output on that stream.
 */
#include <eintune.h>

#include "fake_cuda.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            printf("FAILED: " __VA_ARGS__);                                 \
            printf(" (%s, line %d)\n", #cond, __LINE__);                    \
            failures++;                                                     \
        }                                                                   \
    } while (0)

static void *need(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        printf("FAILED: the driver lacks %s\n", name);
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    const char *so = getenv("ET_LIBCUDA");
    if (argc != 2 || !so) {
        fprintf(stderr, "usage: ET_LIBCUDA=fake_cuda.so consumer_cu DB\n");
        return 2;
    }
    void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("FAILED: %s\n", dlerror());
        return 1;
    }
    int (*init)(unsigned) = need(lib, "cuInit");
    int (*retain)(void **, int) = need(lib, "cuDevicePrimaryCtxRetain");
    int (*release)(int) = need(lib, "cuDevicePrimaryCtxRelease_v2");
    int (*set_current)(void *) = need(lib, "cuCtxSetCurrent");
    int (*stream_create)(void **, unsigned) = need(lib, "cuStreamCreate");
    int (*stream_destroy)(void *) = need(lib, "cuStreamDestroy_v2");
    int (*mem_alloc)(unsigned long long *, size_t) =
        need(lib, "cuMemAlloc_v2");
    int (*mem_free)(unsigned long long) = need(lib, "cuMemFree_v2");
    fake_cuda_log_get_fn log_get = need(lib, "fake_cuda_log_get");
    fake_cuda_log_reset_fn log_reset = need(lib, "fake_cuda_log_reset");

    et_diag d;
    et_problem *p = NULL;
    if (et_problem_init("xik,kj->xij", "x=64,i=16,k=16,j=16", "f32", &p,
                        &d) != ET_OK) {
        printf("FAILED: et_problem_init: %s\n", d.msg);
        return 1;
    }
    void *ctx = NULL, *stream = NULL;
    unsigned long long out = 0, in[2] = {0, 0};
    size_t out_bytes = et_problem_operand_bytes(p, -1);
    if (init(0) || retain(&ctx, 0) || set_current(ctx) ||
        stream_create(&stream, 0) || mem_alloc(&out, out_bytes) ||
        mem_alloc(&in[0], et_problem_operand_bytes(p, 0)) ||
        mem_alloc(&in[1], et_problem_operand_bytes(p, 1))) {
        printf("FAILED: setting up the context\n");
        return 1;
    }

    /* run against the tests' fake driver, which runs no kernel: the
     * check on the device before handing the kernel out is skipped */
    et_load_options lo = {.db = argv[1], .no_verify = 1};
    et_loaded_kernel *k = NULL;
    et_status st = et_cu_kernel_load(p, 0, &lo, &k, &d);
    CHECK(st == ET_OK, "et_cu_kernel_load: %s: %s", et_status_str(st),
          d.msg);
    if (st == ET_OK) {
        printf("load: kernel %s with '%s' from the database, zeroes %zu "
               "bytes\n",
               et_loaded_kernel_name(k), et_loaded_kernel_opts(k),
               et_loaded_kernel_zero_bytes(k));
        CHECK(strstr(et_loaded_kernel_opts(k), "SPLIT") != NULL,
              "the database's SPLIT trial was not used ('%s')",
              et_loaded_kernel_opts(k));
        CHECK(et_loaded_kernel_zero_bytes(k) == out_bytes,
              "zero bytes %zu, output %zu", et_loaded_kernel_zero_bytes(k),
              out_bytes);
        log_reset();
        st = et_cu_kernel_launch(k, stream, out, in, 2, NULL, &d);
        CHECK(st == ET_OK, "et_cu_kernel_launch: %s: %s", et_status_str(st),
              d.msg);
        const fake_cuda_log *l = log_get();
        unsigned long long s = (unsigned long long)(uintptr_t)stream;
        CHECK(l->launches == 1, "%d launches", l->launches);
        CHECK(l->nparams == 3 && l->params[0] == out &&
                  l->params[1] == in[0] && l->params[2] == in[1],
              "the launch did not get our device pointers");
        CHECK(l->launch_stream == s, "the launch was not on our stream");
        CHECK(l->memsets == 1 && l->memset_ptr == out &&
                  l->memset_bytes == out_bytes && l->memset_value == 0,
              "no memset of our output");
        CHECK(l->memset_stream == s, "the memset was not on our stream");
        CHECK(l->memset_before_launch == 0,
              "the memset came after the launch");
        printf("launch: grid %ux%ux%u block %ux%ux%u on our stream with our "
               "3 device pointers, after a memset of %llu bytes of the "
               "output on that stream\n",
               l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
               l->block[2], l->memset_bytes);
        et_loaded_kernel_free(k);
        CHECK(l->modules_live == 0, "%d modules left loaded",
              l->modules_live);
    }
    mem_free(out);
    mem_free(in[0]);
    mem_free(in[1]);
    stream_destroy(stream);
    set_current(NULL);
    release(0);
    et_problem_free(p);
    dlclose(lib);
    printf("%s\n", failures ? "consumer_cu: FAILED" : "consumer_cu: ok");
    return failures ? 1 : 0;
}
