/* clockpoints.c - see clockpoints.h */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync/clockpoints.h"
#include "common/sort.h"

/* A measurement whose round trip exceeds 4 times the node's median plus
 * this is left out (its error bound is half its round trip). */
#define RTT_SLACK_NS INT64_C(50000)

/* One ClockOffsets record as read (HDF5 converts by member name). */
struct clock_rec {
	int64_t local_ns;
	int64_t offset_ns;
	int64_t rtt_ns;
	uint32_t stratum;
	uint32_t phase;
};

static hid_t clock_mem_type(void)
{
	hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct clock_rec));

	if (t < 0)
		return -1;
	if (H5Tinsert(t, "LocalTimeNs", HOFFSET(struct clock_rec, local_ns),
		      H5T_NATIVE_INT64) < 0 ||
	    H5Tinsert(t, "OffsetNs", HOFFSET(struct clock_rec, offset_ns),
		      H5T_NATIVE_INT64) < 0 ||
	    H5Tinsert(t, "RoundTripNs", HOFFSET(struct clock_rec, rtt_ns),
		      H5T_NATIVE_INT64) < 0 ||
	    H5Tinsert(t, "Stratum", HOFFSET(struct clock_rec, stratum),
		      H5T_NATIVE_UINT32) < 0 ||
	    H5Tinsert(t, "Phase", HOFFSET(struct clock_rec, phase),
		      H5T_NATIVE_UINT32) < 0) {
		H5Tclose(t);
		return -1;
	}
	return t;
}

static int i64_cmp(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;

	return a < b ? -1 : a > b;
}

/* Median of v[0..n-1] (n > 0; sorts v). */
static int64_t median_of(int64_t *v, size_t n)
{
	sh5_qsort(v, n, sizeof(*v), i64_cmp);
	return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

struct pt_rtt {
	struct sh5_offset_point p;
	int64_t rtt;
};

static int ptr_cmp(const void *pa, const void *pb)
{
	const struct pt_rtt *a = pa, *b = pb;

	return a->p.local_ns < b->p.local_ns ? -1 :
	       a->p.local_ns > b->p.local_ns;
}

/* The usable measurements of r[0..n-1] into pr (rtt: scratch of n),
 * counting the others in cp->bad and cp->dropped and the largest error
 * in cp->err_ns.  Returns how many are usable. */
static size_t filter_points(const struct clock_rec *r, size_t n,
			    int64_t *rtt, struct pt_rtt *pr,
			    struct sh5_clock_points *cp)
{
	int64_t median;
	size_t i, k;

	/* Usable: a synchronised server, a round trip >= 0.  Their median
	 * round trip sets the bar for noisy ones (see below). */
	for (i = 0, k = 0; i < n; i++) {
		if (r[i].rtt_ns < 0 || r[i].stratum < 1 || r[i].stratum > 15)
			cp->bad++;
		else
			rtt[k++] = r[i].rtt_ns;
	}
	median = k ? median_of(rtt, k) : -1;
	for (i = 0, k = 0; i < n; i++) {
		if (r[i].rtt_ns < 0 || r[i].stratum < 1 || r[i].stratum > 15)
			continue;
		/* A round trip far above the node's usual one (a busy
		 * network or host) bounds the offset's error by half of
		 * it: leave it out while better measurements exist. */
		if (median >= 0 && r[i].rtt_ns > 4 * median + RTT_SLACK_NS) {
			cp->dropped++;
			continue;
		}
		pr[k].p.local_ns = r[i].local_ns;
		pr[k].p.offset_ns = r[i].offset_ns;
		pr[k].rtt = r[i].rtt_ns;
		k++;
		if (r[i].rtt_ns / 2 > cp->err_ns)
			cp->err_ns = r[i].rtt_ns / 2;
	}
	return k;
}

void sh5_clock_points_free(struct sh5_clock_points *cp)
{
	if (!cp)
		return;
	free(cp->pts);
	free(cp->rtt);
	memset(cp, 0, sizeof(*cp));
}

long sh5_clock_points_read(hid_t node, struct sh5_clock_points *cp,
			   char *why, size_t whylen)
{
	hid_t d = -1, sp = -1, mt = -1;
	hsize_t dims[1] = { 0 };
	struct clock_rec *r = NULL;
	struct pt_rtt *pr = NULL;
	int64_t *rtt = NULL;
	size_t i, k, n;
	long rc = -1;

	memset(cp, 0, sizeof(*cp));
	if (H5Lexists(node, "ClockOffsets", H5P_DEFAULT) <= 0)
		return 0;
	if ((d = H5Dopen2(node, "ClockOffsets", H5P_DEFAULT)) < 0 ||
	    (sp = H5Dget_space(d)) < 0 ||
	    H5Sget_simple_extent_dims(sp, dims, NULL) != 1 ||
	    (mt = clock_mem_type()) < 0) {
		snprintf(why, whylen, "ClockOffsets unreadable");
		goto out;
	}
	n = (size_t)dims[0];
	if (dims[0] > (hsize_t)(SIZE_MAX / 64) ||
	    (n && (!(r = malloc(n * sizeof(*r))) ||
		   !(rtt = malloc(n * sizeof(*rtt))) ||
		   !(pr = malloc(n * sizeof(*pr)))))) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	if (n && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, r) < 0) {
		snprintf(why, whylen, "ClockOffsets unreadable (not "
			 "LocalTimeNs, OffsetNs, RoundTripNs, Stratum, Phase?)");
		goto out;
	}
	k = filter_points(r, n, rtt, pr, cp);
	cp->total = n;
	/* The plugin writes them in time order; sort only if not. */
	for (i = 1; i < k; i++)
		if (pr[i].p.local_ns < pr[i - 1].p.local_ns)
			break;
	if (i < k)
		sh5_qsort(pr, k, sizeof(*pr), ptr_cmp);
	if (k && (!(cp->pts = malloc(k * sizeof(*cp->pts))) ||
		  !(cp->rtt = malloc(k * sizeof(*cp->rtt))))) {
		sh5_clock_points_free(cp);
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	for (i = 0; i < k; i++) {
		cp->pts[i] = pr[i].p;
		cp->rtt[i] = pr[i].rtt;
	}
	cp->n = k;
	rc = (long)k;
out:
	free(r);
	free(rtt);
	free(pr);
	if (mt >= 0)
		H5Tclose(mt);
	if (sp >= 0)
		H5Sclose(sp);
	if (d >= 0)
		H5Dclose(d);
	return rc;
}
