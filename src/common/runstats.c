/* runstats.c - see runstats.h */
#include "config.h"

#include <errno.h>
#include <math.h>

#include "common/runstats.h"

void sh5_runstats_init(struct sh5_runstats *rs)
{
	rs->n = 0;
	rs->sum = 0.0;
	rs->min = 0.0;
	rs->max = 0.0;
	rs->mean = 0.0;
	rs->m2 = 0.0;
	rs->m3 = 0.0;
	rs->m4 = 0.0;
}

int sh5_runstats_push(struct sh5_runstats *rs, double x)
{
	double n, delta, dn, dn2, term1;

	if (!isfinite(x)) {
		errno = EDOM;
		return -1;
	}
	if (rs->n == 0) {
		rs->n = 1;
		rs->sum = x;
		rs->min = x;
		rs->max = x;
		rs->mean = x;
		rs->m2 = rs->m3 = rs->m4 = 0.0;
		return 0;
	}
	rs->n++;
	n = (double)rs->n;
	delta = x - rs->mean;
	dn = delta / n;
	dn2 = dn * dn;
	term1 = delta * dn * (n - 1.0);
	rs->mean += dn;
	rs->m4 += term1 * dn2 * (n * n - 3.0 * n + 3.0) + 6.0 * dn2 * rs->m2 -
		  4.0 * dn * rs->m3;
	rs->m3 += term1 * dn * (n - 2.0) - 3.0 * dn * rs->m2;
	rs->m2 += term1;
	rs->sum += x;
	if (x < rs->min)
		rs->min = x;
	if (x > rs->max)
		rs->max = x;
	return 0;
}

void sh5_runstats_merge(struct sh5_runstats *a, const struct sh5_runstats *b)
{
	struct sh5_runstats r;
	double na, nb, n, d, d2, d3, d4;

	if (b->n == 0)
		return;
	if (a->n == 0) {
		*a = *b;
		return;
	}
	na = (double)a->n;
	nb = (double)b->n;
	n = na + nb;
	d = b->mean - a->mean;
	d2 = d * d;
	d3 = d2 * d;
	d4 = d2 * d2;

	r.n = a->n + b->n;
	r.sum = a->sum + b->sum;
	r.min = a->min < b->min ? a->min : b->min;
	r.max = a->max > b->max ? a->max : b->max;
	r.mean = a->mean + d * nb / n;
	r.m2 = a->m2 + b->m2 + d2 * na * nb / n;
	r.m3 = a->m3 + b->m3 + d3 * na * nb * (na - nb) / (n * n) +
	       3.0 * d * (na * b->m2 - nb * a->m2) / n;
	r.m4 = a->m4 + b->m4 +
	       d4 * na * nb * (na * na - na * nb + nb * nb) / (n * n * n) +
	       6.0 * d2 * (na * na * b->m2 + nb * nb * a->m2) / (n * n) +
	       4.0 * d * (na * b->m3 - nb * a->m3) / n;
	*a = r;
}

uint64_t sh5_runstats_count(const struct sh5_runstats *rs)
{
	return rs->n;
}

double sh5_runstats_accumulate(const struct sh5_runstats *rs)
{
	return rs->sum;
}

double sh5_runstats_min(const struct sh5_runstats *rs)
{
	return rs->n ? rs->min : 0.0;
}

double sh5_runstats_max(const struct sh5_runstats *rs)
{
	return rs->n ? rs->max : 0.0;
}

double sh5_runstats_mean(const struct sh5_runstats *rs)
{
	return rs->n ? rs->mean : 0.0;
}

double sh5_runstats_variance(const struct sh5_runstats *rs)
{
	if (rs->n < 2 || rs->m2 <= 0.0)
		return 0.0;
	return rs->m2 / ((double)rs->n - 1.0);
}

double sh5_runstats_stddev(const struct sh5_runstats *rs)
{
	return sqrt(sh5_runstats_variance(rs));
}

/* M2 zero or lost in rounding against the mean: the data are constant. */
static int flat(const struct sh5_runstats *rs)
{
	return rs->n < 2 || rs->m2 <= 0.0 ||
	       rs->m2 <= 1e-28 * (double)rs->n * rs->mean * rs->mean;
}

double sh5_runstats_skewness(const struct sh5_runstats *rs)
{
	if (flat(rs))
		return 0.0;
	return sqrt((double)rs->n) * rs->m3 / pow(rs->m2, 1.5);
}

double sh5_runstats_kurtosis(const struct sh5_runstats *rs)
{
	if (flat(rs))
		return 0.0;
	return (double)rs->n * rs->m4 / (rs->m2 * rs->m2) - 3.0;
}

int sh5_runstats_is_outlier(const struct sh5_runstats *rs, double x,
			    double sigma, double *score)
{
	double sd, dev;

	if (score)
		*score = 0.0;
	if (rs->n < 2 || !isfinite(x))
		return 0;
	sd = sh5_runstats_stddev(rs);
	if (!(sd > 0.0))
		return 0;
	dev = fabs(x - rs->mean);
	if (score)
		*score = dev / sd;
	return dev > sigma * sd;
}
