/* syncrun.c - see syncrun.h (moved here from sh5merge/cmd_sync.c). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/prefault.h"
#include "sync/syncrun.h"

void sh5_syncrun_opts_init(struct sh5_syncrun_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->clc = 1;
	o->mu_ns = -1;
	o->mu_intra_ns = -1;
	o->gamma = 0.99;
}

const char *sh5_syncrun_mu_source(enum sh5_mu_source s)
{
	switch (s) {
	case SH5_MU_GIVEN:
		return "given";
	case SH5_MU_DIRECTIVE:
		return "directive";
	case SH5_MU_ESTIMATED:
		return "estimated";
	default:
		return "no messages: 0";
	}
}

static void phase(const struct sh5_syncrun_opts *o, const char *name)
{
	if (o->phase)
		o->phase(o->phase_arg, name);
}

/* r's minimum latencies and their sources: options, directives, then
 * the data (estimated from times only when some class is not given).
 * Returns 0, or -1 with errp filled. */
static int choose_mu(const struct sh5_trace *t,
		     const struct sh5_syncrun_opts *o,
		     const int64_t *times, struct sh5_syncrun_result *r,
		     struct sh5_error *errp)
{
	/* Minimum latencies: options, directives, then the data
	 * (estimated only when some class is not given). */
	if ((o->mu_ns < 0 && (t->mu_inter < 0 ||
			      (t->mu_intra < 0 && o->mu_intra_ns < 0))) &&
	    sh5_timesync_mu_estimate(t, times, &r->mu_intra, &r->src_intra,
				     &r->mu_inter, &r->src_inter, errp) < 0)
		return -1;
	if (o->mu_ns >= 0) {
		r->mu_inter = r->mu_intra = o->mu_ns;
		r->src_inter = r->src_intra = SH5_MU_GIVEN;
	} else {
		if (t->mu_inter >= 0) {
			r->mu_inter = t->mu_inter;
			r->src_inter = SH5_MU_DIRECTIVE;
		}
		if (t->mu_intra >= 0) {
			r->mu_intra = t->mu_intra;
			r->src_intra = SH5_MU_DIRECTIVE;
		}
	}
	if (o->mu_intra_ns >= 0) {
		r->mu_intra = o->mu_intra_ns;
		r->src_intra = SH5_MU_GIVEN;
	}
	return 0;
}

/* The controlled logical clock over times (and its stats when asked).
 * Returns 0, or -1 with errp filled. */
static int run_clc(struct sh5_trace *t, const struct sh5_syncrun_opts *o,
		   int64_t *times, struct sh5_syncrun_result *r,
		   struct sh5_error *errp)
{
	struct sh5_clc_params prm;

	sh5_clc_params_init(&prm);
	prm.gamma = o->gamma;
	prm.rate = 1.0 - o->gamma;
	prm.mu_intra = r->mu_intra;
	prm.mu_inter = r->mu_inter;
	prm.allow_partial = o->allow_partial;
	/* Without stats the input times are not needed any more:
	 * the CLC works in them (8 bytes per event less). */
	if (!o->stats)
		prm.work = t->time;
	if (sh5_timesync_clc(t, &prm, times, &r->cr, errp) < 0)
		return -1;
	phase(o, "clc");
	if (o->stats) {
		if (sh5_timesync_stage_stats(t, times, NULL, r->mu_intra,
					     r->mu_inter, &r->st[2]) < 0) {
			sh5_errprintf(errp, "%s", strerror(errno));
			return -1;
		}
		r->nst = 3;
	}
	return 0;
}

int sh5_syncrun(struct sh5_trace *t, const struct sh5_syncrun_opts *o,
		struct sh5_syncrun_result *r, struct sh5_error *errp)
{
	int64_t *times;

	memset(r, 0, sizeof(*r));
	r->src_intra = r->src_inter = SH5_MU_NODATA;
	times = malloc((t->nev + 1) * sizeof(*times));
	if (!times) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "out of memory for %zu events",
				     t->nev);
	}
	/* Written whole, in order, next. */
	sh5_prefault(times, (t->nev + 1) * sizeof(*times));
	sh5_timesync_offset(t, times);
	phase(o, "offset");

	if (choose_mu(t, o, times, r, errp) < 0)
		goto error;
	phase(o, "mu");

	if (o->stats) {
		if (sh5_timesync_stage_stats(t, t->time, t->time, r->mu_intra,
					     r->mu_inter, &r->st[0]) < 0 ||
		    sh5_timesync_stage_stats(t, times, t->time, r->mu_intra,
					     r->mu_inter, &r->st[1]) < 0) {
			sh5_errprintf(errp, "%s", strerror(errno));
			goto error;
		}
		r->nst = 2;
		phase(o, "stats");
	}
	if (o->clc && run_clc(t, o, times, r, errp) < 0)
		goto error;
	r->times = times;
	return 0;
error:
	free(times);
	if (!errno)
		errno = EINVAL;
	return -1;
}
