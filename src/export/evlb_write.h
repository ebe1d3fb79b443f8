/*
 * evlb_write.h - a rank's phase of the event model (evlb.h) written into
 * an LBDatafile rank file (lbfile.h).
 */
#ifndef SH5_EXPORT_EVLB_WRITE_H
#define SH5_EXPORT_EVLB_WRITE_H

#include <stdint.h>

#include "common/error.h"
#include "export/evlb.h"
#include "export/lbfile.h"

/*
 * Write what rank `task` holds in phase k into f (its phase is open):
 * its own task entity built from tmpl (tmpl->time replaced by the
 * outside-MPI time minus its declared objects' load, clamped at 0, when
 * the task has events; tmpl->user extended with the event figures) if
 * it is present in k, then its objects, then the edges it holds
 * (SendRecv and CollectionToNode in the sender's file, Broadcast in the
 * recipient's, as vt logs broadcasts receive-side).  A task without
 * events keeps tmpl as it is (present in phase 0 only in marks mode).
 * Returns 0 or -1 with errp set.
 */
int sh5_evlb_write_phase(const struct sh5_evlb *m, int64_t task, int64_t k,
			 struct sh5_lbdata_file *f,
			 const struct sh5_lbdata_task *tmpl,
			 struct sh5_error *errp);

#endif /* SH5_EXPORT_EVLB_WRITE_H */
