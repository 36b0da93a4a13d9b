/*
 * load.h - a kernel to be loaded in a caller's own OpenCL or CUDA context
 * (measure/user_kernel.h builds and launches it there): the kernel of the
 * given opts, or of the best known kernel's, rendered for the device's
 * own limits and backend, and the check of tune/deliver.h made in that
 * context: a kernel that is not the one a trial verified is run on host
 * inputs of its own at every size it serves and compared with the
 * reference.
 *
 * Nothing here opens a device, a context or a database: the caller hands
 * in the device's description, the opts and a function that runs the
 * built kernel on host arrays. Not thread-safe per kernel.
 */
#ifndef ET_TUNE_LOAD_H
#define ET_TUNE_LOAD_H

#include "db/db.h"
#include "einsum/einsum.h"
#include "measure/backend.h"
#include "transforms/kernel.h"
#include "tune/best.h"

#include <stdbool.h>
#include <stdint.h>

/* A kernel rendered to be loaded. */
typedef struct et_load_kernel {
    char opts[ET_DB_OPTS_LEN];  /* the opts applied, canonical text */
    char name[160];             /* the rendered kernel's name */
    et_launch launch;           /* its geometry at the problem's sizes */
    int open_axis;              /* the axis taken at launch, -1 */
    bool reproduced;            /* the very kernel a trial verified */
    int64_t tune_at;            /* open axis: the trial's tune-at size */
    et_kernel *kern;            /* with an open axis: the kernel, for the
                                 * geometry at other sizes (owned: free
                                 * with et_kernel_free) */
} et_load_kernel;

/*
 * The kernel of e (best's einsum, with an open axis, when best is set)
 * for the device info describes, with list[0..n-1] applied (best's opts
 * mapped onto e, or the caller's), rendered for the device's backend into
 * *r and described in *k (open_axis -1 and kern NULL on entry). On
 * failure the status with err filled; *refused is set when it was the
 * opts that broke a rule (err gives the reason).
 */
et_status et_load_render(const et_einsum *e, const et_device_info *info,
                         const et_best *best, const et_opt *list, int n,
                         et_load_kernel *k, et_rendered *r, bool *refused,
                         et_error *err);

/* Runs the built kernel once with geometry g on host data: in[0..n_in-1]
 * (in_bytes each) into out (out_bytes). */
typedef et_status (*et_load_run_fn)(void *arg, const et_launch *g,
                                    const void *const *in,
                                    const size_t *in_bytes, int n_in,
                                    void *out, size_t out_bytes,
                                    et_error *err);

/*
 * The check of tune/deliver.h in the caller's context: k, built for
 * backend be and run through run(arg, ...), is run on inputs of its own
 * at e's sizes (3 input sets), and with an open axis at 1, 2, a prime
 * below its tune-at size, that size and e's (one set each), and compared
 * with the reference. device names the device in messages. ET_ERR_BUILD
 * when it fails; a run's status when it could not be checked.
 */
et_status et_load_verify(et_load_kernel *k, const et_einsum *e,
                         et_backend_kind be, const char *device,
                         et_load_run_fn run, void *arg, et_error *err);

#endif /* ET_TUNE_LOAD_H */
