/*
 * evcounters.h - execution-time statistics of regions and MPI calls from
 * application events, for `sh5merge counters` (doc/exports.md,
 * "Region and MPI-call statistics").
 *
 * A call is an ENTER/EXIT pair of one region on one task, paired on a
 * per-task stack (an EXIT closes the innermost open ENTER of its region;
 * regions left open inside it are dropped; an EXIT without ENTER is
 * ignored).  Its value is its inclusive duration in seconds (SyncTimeNs
 * when the step has them, else TimeNs).  The counter of a call is
 * "MPI.<region name>" for regions defined with SH5EV_F_MPI, else
 * "Region.<region name>".  Statistics are per counter over all tasks of
 * the step (struct sh5_runstats); anomalies are SSTD against them.
 */
#ifndef SH5_EXPORT_EVCOUNTERS_H
#define SH5_EXPORT_EVCOUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "export/anomaly.h"
#include "common/error.h"
#include "sync/jobevents.h"
#include "common/runstats.h"

struct sh5_json;

struct sh5_evcall {
	const struct sh5_evtask *task;
	const char *counter;	/* "MPI.<name>" or "Region.<name>" */
	uint64_t index;		/* calls completed before on this task */
	int64_t t_enter, t_exit;	/* ns */
	double seconds;
};

/* Called for every call of every task (tasks ascending, calls in EXIT
 * order); return -1 (errp set) to stop the walk. */
typedef int (*sh5_evcall_fn)(void *arg, const struct sh5_evcall *c,
			     struct sh5_error *errp);

/* Walk the calls of s.  Returns 0, or -1 with errp set (ENOMEM or the
 * callback's failure). */
int sh5_evcalls_walk(const struct sh5_evstep *s, sh5_evcall_fn fn, void *arg,
		     struct sh5_error *errp);

struct sh5_evstats;

/* Statistics of every counter of s (pass 1).  Returns a new object (free
 * with sh5_evstats_free()) or NULL with errno and errp set. */
struct sh5_evstats *sh5_evstats_build(const struct sh5_evstep *s,
				      struct sh5_error *errp);
void sh5_evstats_free(struct sh5_evstats *st);

/* Counters, sorted by name; calls counted. */
size_t sh5_evstats_count(const struct sh5_evstats *st);
const char *sh5_evstats_name(const struct sh5_evstats *st, size_t i);
const struct sh5_runstats *sh5_evstats_stats(const struct sh5_evstats *st,
					     size_t i);
uint64_t sh5_evstats_calls(const struct sh5_evstats *st);

/* Receives every anomaly (for a top-N list). */
typedef void (*sh5_evstats_top_fn)(void *arg,
				   const struct sh5_counters_anomaly *a);

/*
 * Pass 2: test every call against its counter's statistics (SSTD,
 * sigma) and write one anomaly entry per task with anomalies into j
 * (inside the "anomaly" array): key "<node name>:<task>:regions", data
 * items {app, rank = task, step = the call's index, min/max_timestamp =
 * its ENTER/EXIT in microseconds, n_anomalies 1, outlier_scores}, stats
 * = RunStats of n_anomalies over every call of the task.  *nanom and
 * *nkeys are increased.  Returns 0 or -1 with errp set.
 */
int sh5_evstats_anomalies(const struct sh5_evstats *st,
			  const struct sh5_evstep *s, struct sh5_json *j,
			  const char *app, double sigma,
			  sh5_evstats_top_fn top, void *arg,
			  uint64_t *nanom, size_t *nkeys,
			  struct sh5_error *errp);

#endif /* SH5_EXPORT_EVCOUNTERS_H */
