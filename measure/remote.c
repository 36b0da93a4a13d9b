/*
 * remote.c - the isolated device: an et_backend_ops table that forwards
 * every call to a worker process, with time limits, kill and restart.
 *
 * Wire format over a SOCK_STREAM socket pair (both ends are the same
 * build, so structs travel as raw bytes):
 *   request: struct wire_req (op, four arguments, payload length) then
 *            the payload;
 *   answer:  struct wire_ans (status, one result, seconds, payload length)
 *            then the payload: the data (OPEN: et_device_info, READ: the
 *            bytes) on success, the error text on failure.
 * Handles are the worker's pointers as 64-bit numbers; the parent wraps
 * them with the epoch they belong to.
 */
#include "measure/remote.h"
#include "base/clock.h"

#include "measure/remote_proto.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct remote {
    char spec[256];
    et_remote_limits lim;
    pid_t pid;      /* current worker, 0 if none */
    int fd;         /* our end of the socket pair, -1 if none */
    uint64_t epoch;
    bool dead;      /* the worker could not be restarted */
    et_device_info info;
} remote;

typedef struct remote_buffer {
    uint64_t h;
    uint64_t epoch;
} remote_buffer;

typedef struct remote_program {
    uint64_t h;
    uint64_t epoch;
    /* geometries launched so far: a driver may compile again for a new
     * local size (PoCL does), so a new geometry gets the build limit */
    int n_seen;
    et_launch seen[8];
    /* wall time of the slowest first launch of a geometry (which includes
     * any compilation): a kernel that legitimately runs for seconds gets a
     * later-launch limit that fits it */
    double first_wall;
    char name[128];
} remote_program;

static bool geom_equal(const et_launch *a, const et_launch *b)
{
    if (a->ndim != b->ndim || a->has_local != b->has_local ||
        a->zero_bytes != b->zero_bytes || a->n_scalars != b->n_scalars)
        return false;
    for (int i = 0; i < a->n_scalars && i < ET_LAUNCH_MAX_SCALARS; i++)
        if (a->scalar[i] != b->scalar[i])
            return false;
    for (int d = 0; d < a->ndim && d < 3; d++)
        if (a->global[d] != b->global[d] ||
            (a->has_local && a->local[d] != b->local[d]))
            return false;
    return true;
}

static bool geom_seen(const remote_program *p, const et_launch *g)
{
    for (int i = 0; i < p->n_seen; i++)
        if (geom_equal(&p->seen[i], g))
            return true;
    return false;
}

static const et_backend_ops remote_ops;

/* ---- finding and starting the worker ------------------------------------ */

/* True when dir/rel exists and is executable; buf gets the path either
 * way (the last path tried is what an error names). */
static bool worker_at(char *buf, size_t cap, const char *dir,
                      const char *rel)
{
    snprintf(buf, cap, "%s/%s", dir, rel);
    return access(buf, X_OK) == 0;
}

int et_remote_worker_path(char *buf, size_t cap)
{
    const char *env = getenv("ET_WORKER");
    if (env && *env) {
        snprintf(buf, cap, "%s", env);
        return access(buf, X_OK) == 0 ? 0 : -1;
    }
    /* the shared library's own directory: lib/ of an installation or the
     * build tree (dladdr names the program itself when eintune is linked
     * statically: that case is the next one's) */
    Dl_info dl;
    char dir[PATH_MAX];
    if (dladdr((void *)et_remote_worker_path, &dl) && dl.dli_fname) {
        const char *base = strrchr(dl.dli_fname, '/');
        if (base && !strncmp(base + 1, "libeintune.so", 13) &&
            realpath(dl.dli_fname, dir)) {
            *strrchr(dir, '/') = '\0';
            if (worker_at(buf, cap, dir,
                          "../libexec/eintune/eintune-worker") ||
                worker_at(buf, cap, dir, "eintune-worker"))
                return 0;
        }
    }
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n > 0) {
        dir[n] = '\0';
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        if (worker_at(buf, cap, dir, "eintune-worker") ||
            worker_at(buf, cap, dir, "../eintune-worker") ||
            worker_at(buf, cap, dir, "../libexec/eintune/eintune-worker"))
            return 0;
    }
    if (et_remote_libexecdir[0] &&
        worker_at(buf, cap, et_remote_libexecdir, "eintune-worker"))
        return 0;
    /* PATH: the worker itself, or an installation whose bin/ is there
     * (PREFIX/bin/eintune and PREFIX/libexec/eintune/eintune-worker) */
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t len = strcspn(path, ":");
        if (len > 0 && len < sizeof dir) {
            snprintf(dir, sizeof dir, "%.*s", (int)len, path);
            if (worker_at(buf, cap, dir, "eintune-worker") ||
                worker_at(buf, cap, dir, "../libexec/eintune/eintune-worker"))
                return 0;
        }
        path += len + (path[len] == ':');
    }
    return -1;
}

static et_status spawn(remote *r, et_error *err)
{
    char path[PATH_MAX];
    if (et_remote_worker_path(path, sizeof path) != 0) {
        return et_errorf(err, ET_ERR_DEVICE,
                         "device worker not found (last tried %.900s, "
                         "after the directories of libeintune.so and of "
                         "the program, the installation directory %.600s "
                         "and PATH); build it with make, install it with "
                         "make install or set ET_WORKER",
                         path, et_remote_libexecdir);
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return et_errorf(err, ET_ERR_DEVICE, "socketpair: %s",
                         strerror(errno));
    }
    /* posix_spawn, not fork: the child never runs the parent's code, so
     * it is safe in a process with driver threads or after MPI_Init (an
     * MPI library may not survive a fork); the worker arms
     * PR_SET_PDEATHSIG itself after exec */
    char fd_arg[16], parent_arg[32];
    snprintf(fd_arg, sizeof fd_arg, "%d", ET_WORKER_FD);
    snprintf(parent_arg, sizeof parent_arg, "%ld", (long)getpid());
    char *argv[] = {path, "--fd", fd_arg, "--parent", parent_arg, NULL};
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&fa);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
                                        POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    /* dup2 onto the same number clears close-on-exec (glibc >= 2.29) */
    posix_spawn_file_actions_adddup2(&fa, sv[1], ET_WORKER_FD);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, path, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        close(sv[0]);
        close(sv[1]);
        return et_errorf(err, ET_ERR_DEVICE, "posix_spawn %.900s: %s", path,
                         strerror(rc));
    }
    setpgid(pid, pid); /* also here: no race with the first kill */
    close(sv[1]);
    r->pid = pid;
    r->fd = sv[0];
    return ET_OK;
}

/* Kills the worker's process group and reaps it; *how describes the end. */
/* How long a worker may take to exit once its socket is closed: one that
 * died or failed (REAP_GRACE_MS), and one that answered ET_WIRE_CLOSE and
 * is closing its device and exiting (CLOSED_GRACE_MS). */
enum { REAP_GRACE_MS = 2000, CLOSED_GRACE_MS = 15000 };

/* Closes the socket and reaps the worker: first grace_ms for it to exit
 * on its own (unless kill_first), then SIGKILL to its process group. */
static void reap(remote *r, bool kill_first, int grace_ms, char *how,
                 size_t cap)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    if (r->pid <= 0) {
        snprintf(how, cap, "no worker");
        return;
    }
    int status = 0;
    pid_t got = 0;
    if (!kill_first) {
        /* it closed the socket: give it a moment to finish dying */
        for (int i = 0; i < grace_ms / 10 && got == 0; i++) {
            got = waitpid(r->pid, &status, WNOHANG);
            if (got == 0)
                usleep(10000);
        }
    }
    if (got != r->pid) {
        kill(-r->pid, SIGKILL);
        kill(r->pid, SIGKILL);
        got = waitpid(r->pid, &status, 0);
    }
    if (got != r->pid)
        snprintf(how, cap, "worker lost");
    else if (WIFSIGNALED(status))
        snprintf(how, cap, "worker killed by signal %d (%s)",
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(how, cap, "worker exited with status %d",
                 WEXITSTATUS(status));
    else
        snprintf(how, cap, "worker ended");
    r->pid = 0;
}

/* ---- transport ---------------------------------------------------------- */

enum { IO_OK = 0, IO_TIMEOUT = -1, IO_CLOSED = -2 };

static int io_all(int fd, void *buf, size_t n, bool out, double deadline)
{
    char *p = buf;
    while (n > 0) {
        double left = deadline - et_now_s();
        if (left <= 0)
            return IO_TIMEOUT;
        struct pollfd pfd = {.fd = fd, .events = out ? POLLOUT : POLLIN};
        int ms = left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
        int rc = poll(&pfd, 1, ms);
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            return IO_CLOSED;
        }
        if (rc == 0)
            continue; /* the loop re-checks the deadline */
        ssize_t k = out ? send(fd, p, n, MSG_NOSIGNAL) : read(fd, p, n);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k <= 0)
            return IO_CLOSED;
        p += k;
        n -= (size_t)k;
    }
    return IO_OK;
}

static const char *const op_names[] = {
    "open", "alloc", "write", "read", "free",
    "build", "program free", "launch", "test hook", "close", "fill",
};
static_assert(sizeof(op_names) / sizeof(op_names[0]) == ET_WIRE_OP_COUNT,
              "op_names must match et_wire_op");

static et_status restart(remote *r, et_error *err);

/*
 * One request and its answer. On success *ans holds the answer and its
 * payload went to `out` (up to out_cap bytes) or, for a failure status, to
 * err. A timeout or a dead worker restarts it and returns
 * ET_ERR_TIMEOUT / ET_ERR_CRASH with `what` in the reason.
 */
static et_status call(remote *r, const et_wire_req *q, const void *payload,
                      double limit, et_wire_ans *ans, void *out,
                      size_t out_cap, const char *what, et_error *err)
{
    if (r->dead || r->fd < 0) {
        return et_errorf(err, ET_ERR_DEVICE,
                         "device worker is not running (restart failed)");
    }
    double deadline = et_now_s() + limit;
    int io = io_all(r->fd, (void *)q, sizeof *q, true, deadline);
    if (io == IO_OK && q->len)
        io = io_all(r->fd, (void *)payload, q->len, true, deadline);
    if (io == IO_OK)
        io = io_all(r->fd, ans, sizeof *ans, false, deadline);
    if (io == IO_OK && ans->len) {
        if (ans->status == ET_OK && out && ans->len <= out_cap) {
            io = io_all(r->fd, out, ans->len, false, deadline);
        } else {
            /* error text (or an unexpected payload): keep what fits */
            char *tmp = malloc(ans->len + 1);
            if (!tmp) {
                io = IO_CLOSED;
            } else {
                io = io_all(r->fd, tmp, ans->len, false, deadline);
                tmp[io == IO_OK ? ans->len : 0] = '\0';
                if (ans->status != ET_OK)
                    et_errorf(err, (et_status)ans->status, "%s", tmp);
                else if (io == IO_OK)
                    ans->status = et_errorf(
                        err, ET_ERR_INTERNAL,
                        "worker answered %llu bytes, expected <= %zu",
                        (unsigned long long)ans->len, out_cap);
                else
                    et_errorf(err, ET_ERR_INTERNAL,
                              "worker answered %llu bytes, expected <= %zu",
                              (unsigned long long)ans->len, out_cap);
                free(tmp);
            }
        }
    }
    if (io == IO_OK)
        return (et_status)ans->status;

    char how[160];
    et_status st;
    const char *opn = q->op < ET_WIRE_OP_COUNT ? op_names[q->op] : "?";
    char msg[1024];
    if (io == IO_TIMEOUT) {
        reap(r, true, 0, how, sizeof how);
        st = ET_ERR_TIMEOUT;
        snprintf(msg, sizeof msg,
                 "%s%s%s exceeded its time limit of %g s; worker killed",
                 opn, what ? " of " : "", what ? what : "", limit);
    } else {
        reap(r, false, REAP_GRACE_MS, how, sizeof how);
        st = ET_ERR_CRASH;
        snprintf(msg, sizeof msg, "device worker died during %s%s%s: %s",
                 opn, what ? " of " : "", what ? what : "", how);
    }
    et_error rerr = {{0}};
    if (restart(r, &rerr) == ET_OK)
        return et_errorf(err, st, "%s; restarted (epoch %llu)", msg,
                         (unsigned long long)r->epoch);
    return et_errorf(err, st, "%s; restart failed: %.900s", msg, rerr.msg);
}

static double lim_build(const remote *r)
{
    return r->lim.build_s > 0 ? r->lim.build_s : 60.0;
}

static double lim_launch(const remote *r)
{
    return r->lim.launch_s > 0 ? r->lim.launch_s : 10.0;
}

static double lim_transfer(const remote *r)
{
    return r->lim.transfer_s > 0 ? r->lim.transfer_s : 60.0;
}

/* Starts a worker and opens the device in it (no restart on failure). */
static et_status start(remote *r, et_error *err)
{
    et_status st = spawn(r, err);
    if (st != ET_OK)
        return st;
    double deadline = et_now_s() + lim_build(r);
    et_wire_req q = {.op = ET_WIRE_OPEN, .len = strlen(r->spec)};
    et_wire_ans a;
    int io = io_all(r->fd, &q, sizeof q, true, deadline);
    if (io == IO_OK && q.len)
        io = io_all(r->fd, r->spec, q.len, true, deadline);
    if (io == IO_OK)
        io = io_all(r->fd, &a, sizeof a, false, deadline);
    if (io == IO_OK && a.status == ET_OK && a.len == sizeof r->info) {
        io = io_all(r->fd, &r->info, sizeof r->info, false, deadline);
        if (io == IO_OK)
            return ET_OK;
    } else if (io == IO_OK) {
        char text[sizeof err->msg];
        size_t n = a.len < sizeof text - 1 ? a.len : sizeof text - 1;
        io = io_all(r->fd, text, n, false, deadline);
        text[io == IO_OK ? n : 0] = '\0';
        st = et_errorf(err, a.status == ET_OK ? ET_ERR_INTERNAL
                                              : (et_status)a.status,
                       "%s", text);
        char how[160];
        reap(r, true, 0, how, sizeof how);
        return st;
    }
    char how[160];
    reap(r, io == IO_TIMEOUT, REAP_GRACE_MS, how, sizeof how);
    return et_errorf(err, ET_ERR_DEVICE,
                     "device worker failed while opening '%s': %s%s", r->spec,
                     io == IO_TIMEOUT ? "time limit exceeded, " : "", how);
}

static et_status restart(remote *r, et_error *err)
{
    r->epoch++;
    et_status st = start(r, err);
    if (st != ET_OK)
        r->dead = true;
    return st;
}

/* ---- the backend table -------------------------------------------------- */

static et_status stale(const remote *r, uint64_t epoch, const char *what,
                       et_error *err)
{
    return et_errorf(err, ET_ERR_DEVICE,
                     "%s from worker epoch %llu, now %llu: re-create it", what,
                     (unsigned long long)epoch, (unsigned long long)r->epoch);
}

static et_status rm_alloc(void *ctx, size_t bytes, et_buffer **out,
                          et_error *err)
{
    remote *r = ctx;
    *out = NULL;
    remote_buffer *b = malloc(sizeof *b);
    if (!b) {
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    }
    et_wire_req q = {.op = ET_WIRE_ALLOC, .a = bytes};
    et_wire_ans a;
    et_status st =
        call(r, &q, NULL, lim_transfer(r), &a, NULL, 0, NULL, err);
    if (st != ET_OK) {
        free(b);
        return st;
    }
    b->h = a.a;
    b->epoch = r->epoch;
    *out = (et_buffer *)b;
    return ET_OK;
}

static et_status rm_write(void *ctx, et_buffer *vb, size_t off,
                          const void *src, size_t n, et_error *err)
{
    remote *r = ctx;
    remote_buffer *b = (remote_buffer *)vb;
    if (b->epoch != r->epoch)
        return stale(r, b->epoch, "buffer", err);
    et_wire_req q = {.op = ET_WIRE_WRITE, .a = b->h, .b = off, .len = n};
    et_wire_ans a;
    return call(r, &q, src, lim_transfer(r), &a, NULL, 0, NULL, err);
}

static et_status rm_read(void *ctx, et_buffer *vb, size_t off, void *dst,
                         size_t n, et_error *err)
{
    remote *r = ctx;
    remote_buffer *b = (remote_buffer *)vb;
    if (b->epoch != r->epoch)
        return stale(r, b->epoch, "buffer", err);
    et_wire_req q = {.op = ET_WIRE_READ, .a = b->h, .b = off, .c = n};
    et_wire_ans a;
    et_status st = call(r, &q, NULL, lim_transfer(r), &a, dst, n, NULL, err);
    if (st == ET_OK && a.len != n) {
        return et_errorf(err, ET_ERR_INTERNAL,
                         "worker returned %llu bytes of %zu",
                         (unsigned long long)a.len, n);
    }
    return st;
}

static et_status rm_fill(void *ctx, et_buffer *vb, size_t off,
                         const void *pattern, size_t psize, size_t n,
                         et_error *err)
{
    remote *r = ctx;
    remote_buffer *b = (remote_buffer *)vb;
    if (b->epoch != r->epoch)
        return stale(r, b->epoch, "buffer", err);
    et_wire_req q = {
        .op = ET_WIRE_FILL, .a = b->h, .b = off, .c = n, .len = psize};
    et_wire_ans a;
    return call(r, &q, pattern, lim_transfer(r), &a, NULL, 0, NULL, err);
}

static void rm_free(void *ctx, et_buffer *vb)
{
    remote *r = ctx;
    remote_buffer *b = (remote_buffer *)vb;
    if (!b)
        return;
    if (b->epoch == r->epoch && !r->dead) {
        et_wire_req q = {.op = ET_WIRE_FREE, .a = b->h};
        et_wire_ans a;
        et_error err;
        call(r, &q, NULL, lim_transfer(r), &a, NULL, 0, NULL, &err);
    }
    free(b);
}

static et_status rm_build(void *ctx, const char *source, const char *name,
                          et_program **out, et_error *err)
{
    remote *r = ctx;
    *out = NULL;
    remote_program *p = calloc(1, sizeof *p);
    size_t nlen = strlen(name), slen = strlen(source);
    char *payload = malloc(nlen + 1 + slen);
    if (!p || !payload) {
        free(p);
        free(payload);
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    }
    memcpy(payload, name, nlen + 1);
    memcpy(payload + nlen + 1, source, slen);
    snprintf(p->name, sizeof p->name, "%s", name);
    char what[160];
    snprintf(what, sizeof what, "kernel '%s'", p->name);
    et_wire_req q = {.op = ET_WIRE_BUILD, .len = nlen + 1 + slen};
    et_wire_ans a;
    /* on success the answer is the compiler's warnings (backend.h) */
    char said[sizeof err->msg];
    et_status st = call(r, &q, payload, lim_build(r), &a, said,
                        sizeof said - 1, what, err);
    free(payload);
    if (st != ET_OK) {
        free(p);
        return st;
    }
    said[a.len < sizeof said ? a.len : 0] = '\0';
    et_errorf(err, ET_OK, "%s", said);
    p->h = a.a;
    p->epoch = r->epoch;
    *out = (et_program *)p;
    return ET_OK;
}

static void rm_pfree(void *ctx, et_program *vp)
{
    remote *r = ctx;
    remote_program *p = (remote_program *)vp;
    if (!p)
        return;
    if (p->epoch == r->epoch && !r->dead) {
        et_wire_req q = {.op = ET_WIRE_PFREE, .a = p->h};
        et_wire_ans a;
        et_error err;
        call(r, &q, NULL, lim_transfer(r), &a, NULL, 0, NULL, &err);
    }
    free(p);
}

static et_status rm_launch(void *ctx, et_program *vp, const et_launch *geom,
                           et_buffer *const *args, const size_t *offsets,
                           int nargs, double *seconds, et_error *err)
{
    remote *r = ctx;
    remote_program *p = (remote_program *)vp;
    if (p->epoch != r->epoch)
        return stale(r, p->epoch, "program", err);
    if (nargs < 0 || nargs > ET_WIRE_MAX_ARGS) {
        return et_errorf(err, ET_ERR_LAUNCH, "%d kernel arguments (max %d)",
                         nargs, ET_WIRE_MAX_ARGS);
    }
    et_wire_launch l = {.geom = *geom};
    for (int i = 0; i < nargs; i++) {
        const remote_buffer *b = (const remote_buffer *)args[i];
        if (b->epoch != r->epoch)
            return stale(r, b->epoch, "buffer", err);
        l.arg[i] = b->h;
        l.off[i] = offsets ? offsets[i] : 0;
    }
    char what[160];
    snprintf(what, sizeof what, "kernel '%s'", p->name);
    et_wire_req q = {.op = ET_WIRE_LAUNCH,
                     .a = p->h,
                     .b = (uint64_t)nargs,
                     .c = seconds != NULL,
                     .len = sizeof l};
    et_wire_ans a;
    bool seen = geom_seen(p, geom);
    double limit = lim_build(r);
    if (seen) {
        limit = lim_launch(r);
        if (limit < 4.0 * p->first_wall)
            limit = 4.0 * p->first_wall;
    }
    double t0 = et_now_s();
    et_status st = call(r, &q, &l, limit, &a, NULL, 0, what, err);
    if (st == ET_OK) {
        double wall = et_now_s() - t0;
        if (!seen && wall > p->first_wall)
            p->first_wall = wall;
        if (!seen && p->n_seen < (int)(sizeof p->seen / sizeof p->seen[0]))
            p->seen[p->n_seen++] = *geom;
        if (seconds)
            *seconds = a.seconds;
    }
    return st;
}

/* Asks the worker to close the device and exit (5 s at most), then reaps
 * it. A worker that answered is on its way out: it gets CLOSED_GRACE_MS
 * to exit, enough for a sanitizer's or valgrind's leak check at exit,
 * which a kill would lose. */
static void stop_worker(remote *r)
{
    bool answered = false;
    if (r->fd >= 0 && r->pid > 0) {
        et_wire_req q = {.op = ET_WIRE_CLOSE};
        et_wire_ans a;
        double deadline = et_now_s() + 5;
        if (io_all(r->fd, &q, sizeof q, true, deadline) == IO_OK)
            answered = io_all(r->fd, &a, sizeof a, false, deadline) == IO_OK;
    }
    char how[160];
    reap(r, false, answered ? CLOSED_GRACE_MS : REAP_GRACE_MS, how,
         sizeof how);
}

static void rm_close(void *ctx)
{
    remote *r = ctx;
    stop_worker(r);
    free(r);
}

static const et_backend_ops remote_ops = {
    .name = "remote",
    .buffer_alloc = rm_alloc,
    .buffer_write = rm_write,
    .buffer_read = rm_read,
    .buffer_fill = rm_fill,
    .buffer_free = rm_free,
    .program_build = rm_build,
    .program_free = rm_pfree,
    .launch = rm_launch,
    .close = rm_close,
};

/* ---- public ------------------------------------------------------------- */

et_status et_device_open_isolated(const char *spec,
                                  const et_remote_limits *limits,
                                  et_device **out, et_error *err)
{
    *out = NULL;
    remote *r = calloc(1, sizeof *r);
    et_device *dev = calloc(1, sizeof *dev);
    if (!r || !dev) {
        free(r);
        free(dev);
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    }
    snprintf(r->spec, sizeof r->spec, "%s", spec ? spec : "");
    if (limits)
        r->lim = *limits;
    r->fd = -1;
    r->epoch = 1;
    et_status st = start(r, err);
    if (st != ET_OK) {
        free(r);
        free(dev);
        return st;
    }
    dev->ops = &remote_ops;
    dev->ctx = r;
    dev->info = r->info;
    *out = dev;
    return ET_OK;
}

int et_device_is_isolated(const et_device *dev)
{
    return dev && dev->ops == &remote_ops;
}

uint64_t et_device_epoch(const et_device *dev)
{
    if (!et_device_is_isolated(dev))
        return 0;
    return ((const remote *)dev->ctx)->epoch;
}

int et_device_worker_pid(const et_device *dev)
{
    if (!et_device_is_isolated(dev))
        return 0;
    return (int)((const remote *)dev->ctx)->pid;
}

et_status et_device_recycle(et_device *dev, et_error *err)
{
    if (!et_device_is_isolated(dev))
        return ET_OK;
    remote *r = dev->ctx;
    if (r->dead) {
        return et_errorf(err, ET_ERR_DEVICE,
                         "device worker is not running (restart failed)");
    }
    stop_worker(r);
    return restart(r, err);
}

et_status et_remote_test_hook(et_device *dev, et_remote_hook hook,
                              et_error *err)
{
    if (!et_device_is_isolated(dev)) {
        return et_errorf(err, ET_ERR_INPUT, "not an isolated device");
    }
    remote *r = dev->ctx;
    et_wire_req q = {.op = ET_WIRE_HOOK, .a = (uint64_t)hook};
    et_wire_ans a;
    return call(r, &q, NULL, lim_launch(r), &a, NULL, 0, NULL, err);
}
