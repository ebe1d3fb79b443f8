/*
 * report.h - a self-contained HTML report of a job file.
 *
 * One HTML document: summary, time series per node and per task on the
 * job's (synchronized) time axis, clock offsets per node raw and
 * corrected, the application events (timeline per rank, load per rank
 * and phase, imbalance, communication matrix) when the job has them, and
 * counter statistics with anomalies.  Everything is inline (CSS, a small
 * dependency-free script, the data as one JSON block): the page fetches
 * nothing and works from file://.  doc/report.md describes the contents
 * and the downsampling.
 *
 * Memory and size do not grow with the number of samples: every series
 * is reduced to fixed time bins while it is read (see report_int.h).
 */
#ifndef SH5_REPORT_H
#define SH5_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

struct sh5_report_opts {
	const char *step;	/* NULL: every step */
	size_t bins;		/* time bins of line plots (0: 600) */
	size_t heat_budget;	/* bytes of heat-map cells (0: 2 MiB) */
	double sigma;		/* anomaly threshold (0: 6) */
	/* Called now and then with a phase name and done/total (may be
	 * NULL). */
	void (*progress)(void *arg, const char *what, size_t done,
			 size_t total);
	void *progress_arg;
};

struct sh5_report_result {
	size_t nsteps, nnodes, ntasks, nseries;
	uint64_t samples;	/* rows read */
	uint64_t events;	/* event records read */
	size_t nmissing;	/* things the report says are missing */
	char missing[16][160];	/* the first few, for the caller */
};

/*
 * Write the report of the job file at path to out (name used in
 * messages).  Returns 0, or -1 with errp set (not a job file, damaged
 * content, write error).  A job without events, clock offsets or
 * synchronization still gives a report, which says what is missing
 * (also listed in res).
 */
int sh5_report_write(const char *path, FILE *out, const char *name,
		     const struct sh5_report_opts *opts,
		     struct sh5_report_result *res, struct sh5_error *errp);

#endif /* SH5_REPORT_H */
