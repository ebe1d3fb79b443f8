/*
 * runstats.h - one-pass, mergeable running statistics.
 *
 * A struct sh5_runstats accumulates count, sum, minimum, maximum and the
 * central moments M2..M4 of a stream of doubles with the update formulas
 * of Welford and Pébay, so that two partial results merged with
 * sh5_runstats_merge() equal (to rounding) one pass over all the values.
 * This is what lets per-node statistics be combined into job statistics.
 *
 * The accessors follow Chimbuko's RunStats: stddev is the sample standard
 * deviation (n - 1), skewness = sqrt(n) * M3 / M2^1.5 and kurtosis is the
 * excess kurtosis n * M4 / M2^2 - 3; both are 0 when M2 is zero or
 * negligible against the mean (constant data).
 *
 * The struct is a plain value: no allocation, copy it freely.
 */
#ifndef SH5_RUNSTATS_H
#define SH5_RUNSTATS_H

#include <stdint.h>

struct sh5_runstats {
	uint64_t n;
	double sum;
	double min, max;
	double mean;
	double m2, m3, m4;
};

/* Reset rs to the empty state (count 0). */
void sh5_runstats_init(struct sh5_runstats *rs);

/* Add one value.  Non-finite values (NaN, +-Inf) are ignored, so that a
 * broken sample cannot poison every moment; returns 0 when the value was
 * added, -1 (errno EDOM) when it was ignored. */
int sh5_runstats_push(struct sh5_runstats *rs, double x);

/* a := a merged with b (b unchanged).  a and b may be the same object. */
void sh5_runstats_merge(struct sh5_runstats *a, const struct sh5_runstats *b);

/* Accessors.  On an empty object they all return 0. */
uint64_t sh5_runstats_count(const struct sh5_runstats *rs);
double sh5_runstats_accumulate(const struct sh5_runstats *rs);
double sh5_runstats_min(const struct sh5_runstats *rs);
double sh5_runstats_max(const struct sh5_runstats *rs);
double sh5_runstats_mean(const struct sh5_runstats *rs);
/* Population variance M2/n and sample variance M2/(n-1) (0 when n < 2). */
double sh5_runstats_variance(const struct sh5_runstats *rs);
double sh5_runstats_stddev(const struct sh5_runstats *rs);
double sh5_runstats_skewness(const struct sh5_runstats *rs);
double sh5_runstats_kurtosis(const struct sh5_runstats *rs);

/*
 * SSTD test of x against the model rs (Chimbuko's original detector):
 * x is an outlier when count >= 2, stddev > 0 and x lies outside
 * mean +- sigma * stddev.  A model with stddev 0 (constant data) flags
 * nothing.  Returns 1 for an outlier, 0 otherwise; when score is not
 * NULL it receives |x - mean| / stddev (0 when stddev is 0 or count < 2).
 */
int sh5_runstats_is_outlier(const struct sh5_runstats *rs, double x,
			    double sigma, double *score);

#endif /* SH5_RUNSTATS_H */
