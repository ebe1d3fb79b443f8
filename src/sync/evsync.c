/* evsync.c - see evsync.h */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync/jobevents.h"
#include "sync/evsync.h"
#include "sync/syncrun.h"
#include "sync/trace.h"

static void say(void (*report)(void *, int, const char *, const char *),
		void *arg, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void say(void (*report)(void *, int, const char *, const char *),
		void *arg, const char *file, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!report)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	report(arg, 0, file, msg);
}

/* Events/SyncTimeNs/<task> of each task: times[k] in the CSV's order
 * (tasks ascending, records in order). */
static int store(hid_t file, const struct sh5_evstep *s,
		 const int64_t *times, struct sh5_error *errp)
{
	size_t i, k = 0;

	for (i = 0; i < s->ntasks; i++) {
		const struct sh5_evtask *t = &s->tasks[i];
		char gpath[300], dpath[320];
		const char *slash = strrchr(t->path, '/');
		hsize_t dims[1] = { t->nev }, chunk[1];
		hid_t g = -1, sp = -1, dcpl = -1, d = -1;
		int ok;

		if (!slash)
			continue;
		snprintf(gpath, sizeof(gpath), "%.*s/%s",
			 (int)(slash - t->path), t->path, SH5_EVSTORE_SYNC);
		snprintf(dpath, sizeof(dpath), "%s/%" PRIu32, gpath, t->task);
		chunk[0] = t->nev < SH5_EVSTORE_CHUNK ? t->nev :
							SH5_EVSTORE_CHUNK;
		ok = (H5Lexists(file, gpath, H5P_DEFAULT) > 0 ||
		      (g = H5Gcreate2(file, gpath, H5P_DEFAULT, H5P_DEFAULT,
				      H5P_DEFAULT)) >= 0) &&
		     (sp = H5Screate_simple(1, dims, NULL)) >= 0 &&
		     (dcpl = H5Pcreate(H5P_DATASET_CREATE)) >= 0 &&
		     (!t->nev || (H5Pset_chunk(dcpl, 1, chunk) >= 0 &&
				  H5Pset_deflate(dcpl, 1) >= 0)) &&
		     (d = H5Dcreate2(file, dpath, H5T_STD_I64LE, sp,
				     H5P_DEFAULT, dcpl, H5P_DEFAULT)) >= 0 &&
		     (!t->nev || H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL,
					  H5S_ALL, H5P_DEFAULT,
					  times + k) >= 0);
		if (!ok)
			sh5_errprintf_h5(errp, "%s: cannot write", dpath);
		if (d >= 0)
			H5Dclose(d);
		if (dcpl >= 0)
			H5Pclose(dcpl);
		if (sp >= 0)
			H5Sclose(sp);
		if (g >= 0)
			H5Gclose(g);
		if (!ok)
			return -1;
		k += t->nev;
	}
	return 0;
}

/* Step s's records as a trace, through the CSV written in memory: *tp
 * gets the trace, *bufp the CSV (the caller frees both).  Returns 1 with
 * a trace to correct, 0 when the step is skipped (reported), -1 fatal. */
static int step_trace(const struct sh5_evstep *s, const char *fname,
		      const char *name, struct sh5_evsync_stats *st,
		      void (*report)(void *, int, const char *, const char *),
		      void *arg, struct sh5_trace **tp, char **bufp,
		      struct sh5_error *errp)
{
	struct sh5_error e = { "" };
	struct sh5_trace *t;
	size_t len = 0, i;
	FILE *f;

	if (!(f = open_memstream(bufp, &len))) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "%s: out of memory", name);
	}
	if (sh5_evstep_write_csv(s, f, name, 0, &e) < 0) {
		fclose(f);
		say(report, arg, fname, "%s not synchronized: %s", name,
		    e.text);
		st->problems++;
		return 0;
	}
	if (fclose(f) != 0)
		return sh5_errprintf(errp, "%s: out of memory", name);
	if (!(t = sh5_trace_read_mem(*bufp, len, name, &e)))
		return sh5_errprintf(errp, "%s", e.text);
	*tp = t;
	if (t->nproblems) {
		size_t n = t->nproblems < 4 ? t->nproblems : 4;

		for (i = 0; i < n; i++)
			say(report, arg, fname, "%s: %s", name,
			    t->problem[i].text);
		say(report, arg, fname, "%s not synchronized: %zu problem%s "
		    "(`sh5merge events --raw` writes the trace, `sh5merge "
		    "sync --allow-partial` corrects the rest)", name,
		    t->nproblems, t->nproblems == 1 ? "" : "s");
		st->problems += t->nproblems;
		return 0;
	}
	if (t->nev != s->nev) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: %zu events in the trace, %"
				     PRIu64 " records", name, t->nev, s->nev);
	}
	return 1;
}

/* Add a synchronized step to st: its counts, its violations before (raw
 * times) and after (r's), the largest mu. */
static void add_stats(struct sh5_evsync_stats *st, const struct sh5_trace *t,
		      const int64_t *raw, const struct sh5_syncrun_result *r)
{
	uint64_t p2p, coll;

	st->synced++;
	st->events += t->nev;
	st->messages += t->nmsg;
	if (sh5_timesync_violations(t, raw, r->mu_intra, r->mu_inter, &p2p,
				    &coll) == 0) {
		st->viol_p2p_before += p2p;
		st->viol_coll_before += coll;
	}
	if (sh5_timesync_violations(t, r->times, r->mu_intra, r->mu_inter,
				    &p2p, &coll) == 0) {
		st->viol_p2p_after += p2p;
		st->viol_coll_after += coll;
	}
	if (st->synced == 1 || r->mu_intra > st->mu_intra) {
		st->mu_intra = r->mu_intra;
		st->src_intra = r->src_intra;
	}
	if (st->synced == 1 || r->mu_inter > st->mu_inter) {
		st->mu_inter = r->mu_inter;
		st->src_inter = r->src_inter;
	}
}

/* One step: 0 done or skipped (reported), -1 fatal. */
static int one_step(hid_t file, const char *fname, const char *step,
		    struct sh5_evsync_stats *st,
		    void (*report)(void *, int, const char *, const char *),
		    void *arg, struct sh5_error *errp)
{
	struct sh5_error e = { "" };
	struct sh5_evstep *s = NULL;
	struct sh5_trace *t = NULL;
	struct sh5_syncrun_opts so;
	struct sh5_syncrun_result r = { 0 };
	char path[300], name[320], *buf = NULL;
	size_t i;
	int64_t *raw = NULL;
	hid_t g;
	int rc = 0;

	snprintf(path, sizeof(path), "/Steps/%s", step);
	snprintf(name, sizeof(name), "events of step %s", step);
	if ((g = H5Gopen2(file, path, H5P_DEFAULT)) < 0)
		return 0;
	s = sh5_evstep_read(g, step, &e);
	H5Gclose(g);
	if (!s) {
		say(report, arg, fname, "%s not synchronized: %s", name,
		    e.text);
		st->problems++;
		return 0;
	}
	for (i = 0; i < s->nwarnings && i < 8; i++)
		say(report, arg, fname, "%s: %s", name, s->warning[i]);
	if (!s->ntasks)
		goto out;
	rc = step_trace(s, fname, name, st, report, arg, &t, &buf, errp);
	if (rc <= 0)
		goto out;
	rc = 0;
	if (!(raw = malloc((t->nev + 1) * sizeof(*raw)))) {
		errno = ENOMEM;
		rc = sh5_errprintf(errp, "%s: out of memory", name);
		goto out;
	}
	memcpy(raw, t->time, t->nev * sizeof(*raw));
	sh5_syncrun_opts_init(&so);
	if (sh5_syncrun(t, &so, &r, &e) < 0) {
		say(report, arg, fname, "%s not synchronized: %s", name,
		    e.text);
		st->problems += t->nproblems ? t->nproblems : 1;
		goto out;
	}
	if (store(file, s, r.times, errp) < 0) {
		rc = -1;
		goto out;
	}
	add_stats(st, t, raw, &r);
out:
	free(r.times);
	free(raw);
	free(buf);
	sh5_trace_destroy(t);
	sh5_evstep_free(s);
	return rc;
}

int sh5_evsync_job(hid_t file, const char *fname,
		   struct sh5_evsync_stats *st,
		   void (*report)(void *arg, int error, const char *file,
				  const char *msg),
		   void *report_arg, struct sh5_error *errp)
{
	char **steps = NULL;
	size_t n = 0, i;
	int rc = 0;

	memset(st, 0, sizeof(*st));
	st->src_intra = st->src_inter = SH5_MU_NODATA;
	if (sh5_evjob_steps(file, &steps, &n, errp) < 0)
		return -1;
	st->steps = n;
	for (i = 0; i < n && rc == 0; i++)
		rc = one_step(file, fname, steps[i], st, report, report_arg,
			      errp);
	sh5_evjob_steps_free(steps, n);
	return rc;
}
