/*
 * worker_main.c - the device worker (build/eintune-worker).
 *
 * Started by measure/remote.c with fork+exec as
 *     eintune-worker --fd 3 --parent PID
 * in its own process group with PR_SET_PDEATHSIG(SIGKILL). It serves
 * requests (measure/remote_proto.h) one at a time on the socket: opens the
 * real device with et_device_open and runs every buffer, build and launch
 * call on it. It never outlives its parent: it exits when the socket
 * closes, and checks getppid() at start in case the parent died before
 * the death signal was armed.
 */
#include "measure/backend.h"
#include "measure/remote.h"
#include "measure/remote_proto.h"

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static int sock = ET_WORKER_FD;

static void read_all(void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = read(sock, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            _exit(0); /* the parent is gone or closed the device */
        p += k;
        n -= (size_t)k;
    }
}

static void write_all(const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = send(sock, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            _exit(0);
        p += k;
        n -= (size_t)k;
    }
}

/* Answers with status, result a, seconds and a payload (data on success;
 * on failure the error text is sent instead). */
static void answer(et_status st, uint64_t a, double seconds,
                   const void *data, size_t n, const et_error *err)
{
    et_wire_ans ans = {.status = st, .a = a, .seconds = seconds};
    if (st != ET_OK) {
        data = err->msg;
        n = strnlen(err->msg, sizeof err->msg);
    }
    ans.len = n;
    write_all(&ans, sizeof ans);
    if (n)
        write_all(data, n);
}

static void *read_payload(size_t n)
{
    char *p = malloc(n + 1);
    if (!p) {
        fprintf(stderr, "eintune-worker: out of memory (%zu bytes)\n", n);
        _exit(3);
    }
    read_all(p, n);
    p[n] = '\0';
    return p;
}

int main(int argc, char **argv)
{
    long parent = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--fd") == 0)
            sock = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--parent") == 0)
            parent = atol(argv[i + 1]);
    }
    /* armed here, after exec (the parent starts us with posix_spawn),
     * then checked: a parent that died before this line is seen */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (parent > 0 && (long)getppid() != parent)
        return 1; /* the parent died before PR_SET_PDEATHSIG was armed */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, SIG_IGN); /* ^C belongs to the parent */

    et_device *dev = NULL;
    void *read_buf = NULL;
    size_t read_cap = 0;
    for (;;) {
        et_wire_req q;
        read_all(&q, sizeof q);
        void *payload = q.len ? read_payload(q.len) : NULL;
        et_error err = {{0}};
        et_status st = ET_OK;
        switch ((et_wire_op)q.op) {
        case ET_WIRE_OPEN:
            if (dev) {
                answer(ET_OK, 0, 0, &dev->info, sizeof dev->info, &err);
                break;
            }
            st = et_device_open(payload ? (const char *)payload : "", &dev,
                                &err);
            if (st == ET_OK)
                answer(st, 0, 0, &dev->info, sizeof dev->info, &err);
            else
                answer(st, 0, 0, NULL, 0, &err);
            break;
        case ET_WIRE_ALLOC: {
            et_buffer *b = NULL;
            st = dev ? et_buffer_alloc(dev, q.a, &b, &err) : ET_ERR_DEVICE;
            answer(st, (uint64_t)(uintptr_t)b, 0, NULL, 0, &err);
            break;
        }
        case ET_WIRE_WRITE:
            st = et_buffer_write(dev, (et_buffer *)(uintptr_t)q.a, q.b,
                                 payload, q.len, &err);
            answer(st, 0, 0, NULL, 0, &err);
            break;
        case ET_WIRE_FILL:
            st = dev ? et_buffer_fill(dev, (et_buffer *)(uintptr_t)q.a, q.b,
                                      payload, q.len, q.c, &err)
                     : ET_ERR_DEVICE;
            answer(st, 0, 0, NULL, 0, &err);
            break;
        case ET_WIRE_READ: {
            /* one buffer kept across reads: a verification reads every
             * candidate's outputs, and fresh pages cost more than the copy */
            if (q.c > read_cap) {
                free(read_buf);
                read_cap = 0;
                read_buf = malloc(q.c);
                if (read_buf)
                    read_cap = q.c;
            }
            void *data = q.c ? read_buf : &read_cap;
            if (!data) {
                snprintf(err.msg, sizeof err.msg,
                         "worker: out of memory reading %llu bytes",
                         (unsigned long long)q.c);
                answer(ET_ERR_NOMEM, 0, 0, NULL, 0, &err);
                break;
            }
            st = et_buffer_read(dev, (et_buffer *)(uintptr_t)q.a, q.b, data,
                                q.c, &err);
            answer(st, 0, 0, data, q.c, &err);
            break;
        }
        case ET_WIRE_FREE:
            et_buffer_free(dev, (et_buffer *)(uintptr_t)q.a);
            answer(ET_OK, 0, 0, NULL, 0, &err);
            break;
        case ET_WIRE_BUILD: {
            const char *name = payload ? payload : "";
            const char *source = name + strlen(name) + 1;
            if (!payload || (size_t)(source - name) > q.len) {
                snprintf(err.msg, sizeof err.msg, "worker: bad build request");
                answer(ET_ERR_INTERNAL, 0, 0, NULL, 0, &err);
                break;
            }
            et_program *p = NULL;
            st = dev ? et_program_build(dev, source, name, &p, &err)
                     : ET_ERR_DEVICE;
            /* a build that worked answers with the compiler's warnings */
            answer(st, (uint64_t)(uintptr_t)p, 0, err.msg,
                   st == ET_OK ? strnlen(err.msg, sizeof err.msg) : 0, &err);
            break;
        }
        case ET_WIRE_PFREE:
            et_program_free(dev, (et_program *)(uintptr_t)q.a);
            answer(ET_OK, 0, 0, NULL, 0, &err);
            break;
        case ET_WIRE_LAUNCH: {
            const et_wire_launch *l = payload;
            int nargs = (int)q.b;
            if (!l || q.len != sizeof *l || nargs < 0 ||
                nargs > ET_WIRE_MAX_ARGS) {
                snprintf(err.msg, sizeof err.msg,
                         "worker: bad launch request");
                answer(ET_ERR_INTERNAL, 0, 0, NULL, 0, &err);
                break;
            }
            et_buffer *args[ET_WIRE_MAX_ARGS];
            size_t offs[ET_WIRE_MAX_ARGS];
            for (int i = 0; i < nargs; i++) {
                args[i] = (et_buffer *)(uintptr_t)l->arg[i];
                offs[i] = (size_t)l->off[i];
            }
            double s = 0;
            st = et_launch_kernel(dev, (et_program *)(uintptr_t)q.a,
                                  &l->geom, args, offs, nargs,
                                  q.c ? &s : NULL, &err);
            answer(st, 0, s, NULL, 0, &err);
            break;
        }
        case ET_WIRE_HOOK:
            if (q.a == ET_REMOTE_HOOK_ABORT) {
                /* a deliberate crash leaves no core file behind */
                struct rlimit no_core = {0, 0};
                setrlimit(RLIMIT_CORE, &no_core);
                abort();
            }
            if (q.a == ET_REMOTE_HOOK_HANG)
                for (;;)
                    pause();
            answer(ET_OK, 0, 0, NULL, 0, &err);
            break;
        case ET_WIRE_CLOSE:
            answer(ET_OK, 0, 0, NULL, 0, &err);
            et_device_close(dev);
            free(payload);
            free(read_buf);
            return 0;
        default:
            snprintf(err.msg, sizeof err.msg, "worker: unknown request %llu",
                     (unsigned long long)q.op);
            answer(ET_ERR_INTERNAL, 0, 0, NULL, 0, &err);
            break;
        }
        free(payload);
    }
}
