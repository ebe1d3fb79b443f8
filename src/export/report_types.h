/*
 * report_types.h - the options and result of the HTML report (report.h),
 * apart so that its parts (report_int.h) see them without the driver.
 */
#ifndef SH5_EXPORT_REPORT_TYPES_H
#define SH5_EXPORT_REPORT_TYPES_H

#include <stddef.h>
#include <stdint.h>

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

#endif /* SH5_EXPORT_REPORT_TYPES_H */
