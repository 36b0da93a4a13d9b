/*
 * remote.h - device work in a worker process (fault isolation).
 *
 * et_device_open_isolated returns an et_device whose function table
 * forwards every call over a socket pair to a worker process
 * (build/eintune-worker) that runs the real backend; callers use it as any
 * other device (et_buffer_*, et_program_*, et_launch_kernel,
 * et_device_close). The worker is started with posix_spawn (the child
 * runs none of the parent's code before exec), so it is safe even after
 * the parent made driver calls or initialised MPI, which may not survive
 * a fork; open isolated devices before any other device all the same, so
 * that the parent never starts driver threads at all.
 *
 * The worker: its own process group (POSIX_SPAWN_SETPGROUP), so ^C in the
 * terminal reaches the parent only, which then closes the device and the
 * worker with it; PR_SET_PDEATHSIG(SIGKILL), armed by the worker after
 * exec and checked against getppid(), so it never outlives its parent
 * (note: the signal fires when the parent *thread* that opened the device
 * exits).
 *
 * Time limits: each request waits at most its limit for the answer.
 * Building a program and the first launch of each program with each
 * launch geometry (where PoCL compiles, per local size) get `build_s`;
 * later launches `launch_s`, or 4 times the wall time of the program's
 * slowest first launch when that is longer (so a kernel that really runs
 * for seconds, such as an untransformed 512^3 f64 matmul on a CPU, is not
 * killed while a hang is still caught); transfers and the
 * rest `transfer_s`. A request over its limit: the worker's process group
 * is killed (SIGKILL), a new worker is started and the device re-opened;
 * the call returns ET_ERR_TIMEOUT. A worker that dies during a request
 * (a driver crash, an abort): restarted the same way, the call returns
 * ET_ERR_CRASH. The reason in err names the request and the signal.
 *
 * After a restart, every buffer and program made before it is gone: the
 * device's epoch (et_device_epoch) has changed, calls on old handles fail
 * with ET_ERR_DEVICE ("... from worker epoch 1, now 2: re-create it"), and
 * freeing old handles is harmless. Callers compare the epoch to decide to
 * re-create their buffers and re-upload inputs (the verifier does this).
 * If the worker cannot be restarted, every later call fails with
 * ET_ERR_DEVICE.
 *
 * Finding the worker, with no environment needed: $ET_WORKER if set (an
 * override), else from the shared library's own location (dladdr of a
 * function in it): DIR/../libexec/eintune/eintune-worker (installed:
 * PREFIX/lib and PREFIX/libexec/eintune) or DIR/eintune-worker (the build
 * tree's build/libeintune.so); else from the program's (/proc/self/exe,
 * for programs linked with the static library): "eintune-worker" next to
 * it, "../eintune-worker" (tests in build/tests/ find
 * build/eintune-worker), "../libexec/eintune/eintune-worker" (an installed
 * bin/eintune); else et_remote_libexecdir/eintune-worker, the
 * installation directory compiled in (make's LIBEXECDIR: `make install`
 * writes its own into the libeintune.a it installs, measure/install_dir.c);
 * else, for each directory D of PATH, D/eintune-worker and
 * D/../libexec/eintune/eintune-worker (an installation whose bin/ is on
 * PATH).
 *
 * Wire format (both ends are the same build): requests and answers are a
 * fixed header of 64-bit fields followed by a payload; see remote.c.
 */
#ifndef ET_REMOTE_H
#define ET_REMOTE_H

#include "measure/backend.h"

#include <stdint.h>

/* Time limits in seconds; the zero value means the defaults. */
typedef struct et_remote_limits {
    double build_s;    /* build and first launch of a program; 0 -> 60 */
    double launch_s;   /* later launches; 0 -> 10 */
    double transfer_s; /* open, alloc, read, write, free; 0 -> 60 */
} et_remote_limits;

/*
 * Starts a worker and opens device `spec` (as et_device_open takes it) in
 * it. The returned device is closed with et_device_close (which stops the
 * worker). Errors: ET_ERR_DEVICE when the worker cannot be found or
 * started (err names the path tried), the worker's et_device_open status
 * otherwise.
 */
et_status et_device_open_isolated(const char *spec,
                                  const et_remote_limits *limits,
                                  et_device **out, et_error *err);

/* True if dev was opened by et_device_open_isolated. */
int et_device_is_isolated(const et_device *dev);

/* Worker generation: 1 after open, +1 at each restart; 0 for a device that
 * is not isolated (its buffers never vanish). */
uint64_t et_device_epoch(const et_device *dev);

/*
 * Replaces the worker by a new one at a quiet moment (no call in flight):
 * the old one closes the device and exits, a new one opens it, the epoch
 * advances (buffers and programs must be re-created, as after a crash).
 * A driver's memory that grows with every program built (PoCL's, about
 * 70 KB a candidate) is given back this way in a long tuning run. Free
 * the buffers and programs you hold first: the old worker exits with
 * whatever is still allocated (the system reclaims it; a sanitized worker
 * reports it as a leak). A device that is not isolated: nothing to do,
 * ET_OK.
 */
et_status et_device_recycle(et_device *dev, et_error *err);

/* Process id of the current worker (0 if none or not isolated). */
int et_device_worker_pid(const et_device *dev);

/* Test hooks, answered by the worker. */
typedef enum et_remote_hook {
    ET_REMOTE_HOOK_ABORT = 0, /* the worker calls abort(): a crash */
    ET_REMOTE_HOOK_HANG,      /* the worker sleeps forever: a timeout
                               * after launch_s */
    ET_REMOTE_HOOK_PING,      /* the worker answers: a health check */
    ET_REMOTE_HOOK_COUNT
} et_remote_hook;

/* Sends a hook request; the status is what a device call would return
 * (ET_ERR_CRASH, ET_ERR_TIMEOUT, ET_OK). */
et_status et_remote_test_hook(et_device *dev, et_remote_hook hook,
                              et_error *err);

/* Path of the worker program as described above; 0 if found (buf set),
 * -1 if not (buf holds the last path tried). */
int et_remote_worker_path(char *buf, size_t cap);

/* The installation's worker directory compiled in (install_dir.c). */
extern const char et_remote_libexecdir[];

#endif
