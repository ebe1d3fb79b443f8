/*
 * evsync.h - the controlled logical clock on the events of a job file
 * (`sh5merge merge --sync clc`): for each step with events, the raw
 * event trace (sh5_evstep_write_csv(), in memory) goes through exactly
 * the pipeline of `sh5merge sync` with its defaults (sh5_syncrun()), and
 * the corrected times are stored as Events/SyncTimeNs/<task> beside each
 * task's records (events/evstore.h).
 */
#ifndef SH5_EVSYNC_H
#define SH5_EVSYNC_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "sync/timesync.h"

struct sh5_evsync_stats {
	size_t steps;			/* steps with events */
	size_t synced;			/* ... given SyncTimeNs */
	uint64_t events;		/* records of the synchronized steps */
	uint64_t messages;		/* matched messages */
	uint64_t problems;		/* problems of the traces (a step
					 * with any is not synchronized) */
	uint64_t viol_p2p_before, viol_coll_before;	/* raw times */
	uint64_t viol_p2p_after, viol_coll_after;	/* corrected */
	int64_t mu_intra, mu_inter;	/* used (the largest over steps) */
	enum sh5_mu_source src_intra, src_inter;
};

/*
 * Synchronize the events of every step of the job file open in file
 * (writable; fname names it in messages).  A step whose events cannot
 * be read or whose trace has problems keeps its raw times only: it is
 * reported through report (error 0) and counted, not an error.
 * Returns 0 with st filled, or -1 with errno and errp set when the job
 * file cannot be written (or memory runs out).
 */
int sh5_evsync_job(hid_t file, const char *fname,
		   struct sh5_evsync_stats *st,
		   void (*report)(void *arg, int error, const char *file,
				  const char *msg),
		   void *report_arg, struct sh5_error *errp);

#endif /* SH5_EVSYNC_H */
