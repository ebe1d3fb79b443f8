/*
 * counters.h - Chimbuko-style counter statistics and SSTD anomalies.
 *
 * A counter is one numeric field of one series kind, named
 * "<series>.<field>" ("Task.CPUUtilization", "Energy.Power"); its
 * statistics are kept per application, that is per job step ("app" =
 * "<job id>.<step>").  The export reads the job file twice:
 *
 *  1. model: every value is pushed into a running-statistics object of
 *     its node (one pass, Welford/Pébay moments); at the end of each
 *     node those are merged into the step's, so the result equals one
 *     pass over all data (to rounding).
 *  2. detection: every value is tested against its counter's final model
 *     (SSTD: outside mean +- sigma * stddev, Chimbuko's original
 *     detector); anomalies are streamed as they are found.
 *
 * The output is one JSON object in the shape of the packet Chimbuko's
 * parameter server posts (version 2, created_at, counter_stats,
 * anomaly_stats), written through a streaming writer: memory does not grow
 * with the number of samples or anomalies.  See doc/exports.md for the
 * mapping of ranks, io steps and keys.
 */
#ifndef SH5_COUNTERS_H
#define SH5_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "export/anomaly.h"

struct sh5_json;

struct sh5_counters_opts {
	double sigma;		/* SSTD threshold in stddevs (Chimbuko: 6) */
	size_t top;		/* keep the top N anomalies by score */
	const char *step;	/* NULL: every step */
	int64_t created_at_ms;	/* 0: now */
};

struct sh5_counters_result {
	size_t napps;		/* steps exported */
	size_t ncounters;	/* counter_stats entries */
	uint64_t samples;	/* rows read (per pass) */
	uint64_t values;	/* finite values modelled */
	uint64_t anomalies;
	size_t nkeys;		/* anomaly entries (series with anomalies) */
	size_t ntop;		/* top anomalies, highest score first */
	struct sh5_counters_anomaly *top;
};

/*
 * Write the statistics packet of the job file at path to j (one complete
 * JSON value; the caller creates j and calls sh5_json_finish()).  res
 * (may be NULL) receives counts and the top anomalies; free it with
 * sh5_counters_result_free().  Returns 0 or -1 with errp filled.
 */
int sh5_counters_export(const char *path, struct sh5_json *j,
			const struct sh5_counters_opts *opts,
			struct sh5_counters_result *res,
			struct sh5_error *errp);

void sh5_counters_result_free(struct sh5_counters_result *res);

#endif /* SH5_COUNTERS_H */
