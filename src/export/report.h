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
#include "export/report_types.h"

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
