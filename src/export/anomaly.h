/*
 * anomaly.h - one counter anomaly, as counters.h reports it and
 * evcounters.h finds it (a type alone: no .c of its name).
 */
#ifndef SH5_EXPORT_ANOMALY_H
#define SH5_EXPORT_ANOMALY_H

#include <stdint.h>

struct sh5_counters_anomaly {
	int64_t time_ns;	/* time of the sample */
	char app[96];		/* "<job>.<step>" */
	char node[64];		/* node name */
	int64_t task;		/* global task id, -1 for node-level series */
	char counter[96];	/* "<series>.<field>" */
	double value, score, mean, stddev;
};

#endif /* SH5_EXPORT_ANOMALY_H */
