/*
 * campaign.h - a campaign (tune/campaign.h) spread over the ranks of an
 * MPI job: one problem per free rank (docs/scale-out.md), through the
 * campaign messages of scale.h.
 */
#ifndef ET_SCALE_CAMPAIGN_H
#define ET_SCALE_CAMPAIGN_H

#include "tune/campaign.h"

#include <stdbool.h>

/*
 * Runs campaign c over MPI ranks when this process is one of more than
 * one (o->comm, or an MPI launcher's environment): *scaled true then, r
 * filled on rank 0 (r->rank, r->n_ranks on every rank). *scaled false
 * (ET_OK) when there is no MPI job, or one of a single rank; then the
 * campaign is the caller's to run in this process. ET_ERR_UNSUPPORTED
 * when there is a job but the build has no MPI. d as campaign_run_here's.
 */
et_status et_scale_campaign_run(const et_campaign *c, const campaign_opts *o,
                                et_campaign_report *r, bool *scaled,
                                et_diag *d);

#endif /* ET_SCALE_CAMPAIGN_H */
