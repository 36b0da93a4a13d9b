/*
 * farm.h - a task farm over the ranks of an MPI job: rank 0 hands out
 * task numbers 0..n-1 to whichever rank asks (one task per free rank) and
 * receives each task's result as bytes; the other ranks ask, run a task,
 * send its result and ask again until rank 0 says there is no more.
 * Campaigns (api/campaign.c) spread their problems this way.
 *
 * Messages: ASK (empty), TASK {int32 task, -1 = no more}, DONE {int32
 * task, result bytes}. Waiting never spins (see scale.h). Without MPI
 * both functions return ET_ERR_UNSUPPORTED.
 */
#ifndef ET_SCALE_FARM_H
#define ET_SCALE_FARM_H

#include "scale/scale.h"

#include <stddef.h>

/* Rank 0: a task's result from rank `rank` (the bytes live during the
 * call). */
typedef void (*et_farm_done_fn)(void *arg, int task, int rank,
                                const void *blob, size_t n);
/* Another rank: runs task, *blob (malloc'ed, freed by the farm) and *n
 * its result; NULL and 0 for none. */
typedef void (*et_farm_run_fn)(void *arg, int task, void **blob,
                               size_t *n);

/* Rank 0: hands out n_tasks tasks and returns when every rank was told
 * that there are no more. */
et_status et_farm_master(et_scale *s, int n_tasks, et_farm_done_fn done,
                         void *arg, et_error *err);
/* Any other rank: runs tasks until there are no more. */
et_status et_farm_worker(et_scale *s, et_farm_run_fn run, void *arg,
                         et_error *err);

#endif
