/* merge_integ.c - see merge_integ.h */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "merge_integ.h"
#include "profile/reader.h"

void merge_integ_init(struct merge_integ *mi)
{
	memset(mi, 0, sizeof(*mi));
	mi->sync = SH5_SYNC_AUTO;
	sh5_mergeexport_opts_init(&mi->ex);
}

void merge_integ_usage(FILE *f)
{
	fprintf(f,
"      --sync METHOD      timestamp synchronization: auto (default: clc\n"
"                         when the files carry events, else offset when\n"
"                         they carry clock-offset measurements, else\n"
"                         none), none, offset (SyncTimeNs beside the\n"
"                         original times), clc (offset for the samples;\n"
"                         the events through the controlled logical\n"
"                         clock, as `sh5merge sync`: Events/SyncTimeNs)\n"
"      --lbdata DIR       also export vt LBDatafiles of the first step to DIR\n"
"        --phase-length SEC  phase window (default 60; 0: one phase)\n"
"        --compress MODE     none (default) or brotli\n"
"        --stem NAME         file name stem (default data)\n"
"      --counters FILE    also write Chimbuko-style counter statistics\n"
"        --sigma S           anomaly threshold in stddevs (default 6)\n");
}

static int bad(const char *opt, const char *arg, const char *why)
{
	cli_error(NULL, "merge: bad %s '%s'%s%s", opt, arg, why ? ": " : "",
		  why ? why : "");
	return 2;
}

static int parse_num(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !isfinite(*out) ? -1 : 0;
}

int merge_integ_option(struct merge_integ *mi, int c, const char *arg)
{
	double d;

	switch (c) {
	case MI_OPT_SYNC:
		if (sh5_sync_method_parse(arg, &mi->sync) < 0)
			return bad("--sync", arg, "auto, none, offset or clc");
		return 0;
	case MI_OPT_LBDATA:
		if (!arg[0])
			return bad("--lbdata", arg, NULL);
		mi->ex.lbdata.dir = arg;
		return 0;
	case MI_OPT_PHASE:
		if (parse_num(arg, &d) < 0 || d < 0)
			return bad("--phase-length", arg, NULL);
		mi->ex.lbdata.phase_length = d;
		mi->export_opts |= 1;
		return 0;
	case MI_OPT_COMPRESS:
		if (!strcmp(arg, "none"))
			mi->ex.lbdata.compress = SH5_LBDATA_PLAIN;
		else if (!strcmp(arg, "brotli"))
			mi->ex.lbdata.compress = SH5_LBDATA_BROTLI;
		else
			return bad("--compress", arg, "none or brotli");
		mi->export_opts |= 1;
		return 0;
	case MI_OPT_STEM:
		if (!arg[0] || strchr(arg, '/'))
			return bad("--stem", arg, NULL);
		mi->ex.lbdata.stem = arg;
		mi->export_opts |= 1;
		return 0;
	case MI_OPT_COUNTERS:
		if (!arg[0])
			return bad("--counters", arg, NULL);
		mi->ex.counters_path = arg;
		return 0;
	case MI_OPT_SIGMA:
		if (parse_num(arg, &d) < 0 || d <= 0)
			return bad("--sigma", arg, NULL);
		mi->ex.counters.sigma = d;
		mi->export_opts |= 2;
		return 0;
	}
	return 2;
}

int merge_integ_check(struct merge_integ *mi, size_t njobs)
{
	if ((mi->export_opts & 1) && !mi->ex.lbdata.dir) {
		cli_error(NULL, "merge: --phase-length, --compress and --stem "
			  "go with --lbdata DIR");
		return 2;
	}
	if ((mi->export_opts & 2) && !mi->ex.counters_path) {
		cli_error(NULL, "merge: --sigma goes with --counters FILE");
		return 2;
	}
	if ((mi->ex.lbdata.dir || mi->ex.counters_path) && njobs > 1) {
		cli_error(NULL, "merge: --lbdata and --counters name one "
			  "output: give one job");
		return 2;
	}
	return 0;
}

int merge_integ_begin(struct merge_integ *mi, struct sh5_merge_opts *o,
		      void (*report)(void *, int, const char *, const char *),
		      void *arg)
{
	struct sh5_error err = { "" };

	sh5_mergesync_destroy(mi->ms);
	mi->ms = sh5_mergesync_create(mi->sync, o, report, arg, &err);
	if (!mi->ms) {
		cli_error(NULL, "merge: %s", err.text);
		o->hooks = NULL;
		return 1;
	}
	sh5_mergesync_hooks(mi->ms, &mi->hooks);
	o->hooks = &mi->hooks;
	return 0;
}

static void print_sync(const struct sh5_merge_opts *o,
		       const struct sh5_mergesync_stats *st)
{
	if (sh5merge_quiet)
		return;
	if (st->method == SH5_SYNC_CLC)
		fprintf(stderr, "sh5merge: %s: sync clc: %zu of %zu step%s "
			"with events synchronized (%" PRIu64 " events, %"
			PRIu64 " messages; clock-condition violations %"
			PRIu64 " before, %" PRIu64 " after; mu intra %" PRId64
			" ns, inter %" PRId64 " ns)%s\n", o->output,
			st->ev.synced, st->ev.steps,
			st->ev.steps == 1 ? "" : "s", st->ev.events,
			st->ev.messages,
			st->ev.viol_p2p_before + st->ev.viol_coll_before,
			st->ev.viol_p2p_after + st->ev.viol_coll_after,
			st->ev.mu_intra, st->ev.mu_inter,
			st->ev.problems ? "; see the warnings" : "");
	if (st->method != SH5_SYNC_OFFSET && st->method != SH5_SYNC_CLC) {
		fprintf(stderr, "sh5merge: %s: sync none%s\n", o->output,
			st->requested == SH5_SYNC_AUTO ?
			" (no clock-offset measurements)" : "");
		return;
	}
	fprintf(stderr, "sh5merge: %s: sync offset: %zu of %zu node file%s "
		"corrected (%zu measurements, %zu noisy left out), max "
		"correction %.6f s, error bound %.3f ms\n", o->output,
		st->corrected, st->nodes, st->nodes == 1 ? "" : "s",
		st->measurements, st->dropped,
		(double)st->max_correction_ns / 1e9,
		(double)st->error_bound_ns / 1e6);
}

int merge_integ_end(struct merge_integ *mi, const struct sh5_merge_opts *o,
		    int merged)
{
	struct sh5_mergesync_stats st;
	struct sh5_lbdata_summary ls;
	struct sh5_counters_result cr;
	struct sh5_error err = { "" };
	int rc = 0;

	if (mi->ms && merged) {
		sh5_mergesync_stats(mi->ms, &st);
		print_sync(o, &st);
	}
	sh5_mergesync_destroy(mi->ms);
	mi->ms = NULL;
	if (!merged || (!mi->ex.lbdata.dir && !mi->ex.counters_path))
		return 0;
	if (sh5_mergeexport_run(o->output, &mi->ex, &ls, &cr, &err) < 0) {
		cli_error(NULL, "%s (exports not written; the job file is "
			  "complete: rerun 'sh5merge lbdata/counters -i %s')",
			  err.text, o->output);
		rc = 1;
	} else if (!sh5merge_quiet) {
		if (mi->ex.lbdata.dir && ls.marks)
			fprintf(stderr, "sh5merge: %s: step %s: %" PRId64
				" rank files, %" PRId64 " phases from "
				"application marks, %" PRIu64
				" communications\n", mi->ex.lbdata.dir,
				ls.step, ls.nranks, ls.nphases, ls.comm_edges);
		else if (mi->ex.lbdata.dir)
			fprintf(stderr, "sh5merge: %s: step %s: %" PRId64
				" rank files, %" PRId64 " phases of %g s\n",
				mi->ex.lbdata.dir, ls.step, ls.nranks,
				ls.nphases, ls.phase_length);
		if (mi->ex.counters_path)
			fprintf(stderr, "sh5merge: %s: %zu counters, %" PRIu64
				" anomalies beyond %g sigma\n",
				mi->ex.counters_path, cr.ncounters,
				cr.anomalies, mi->ex.counters.sigma);
	}
	sh5_lbdata_summary_free(&ls);
	sh5_counters_result_free(&cr);
	return rc;
}

void merge_integ_list_job(hid_t file)
{
	char m[32] = "", req[32] = "";
	hid_t g;

	if (H5Lexists(file, "Merge", H5P_DEFAULT) <= 0 ||
	    (g = H5Gopen2(file, "Merge", H5P_DEFAULT)) < 0)
		return;
	if (sh5_attr_get_str(g, "Sync Method", m, sizeof(m)) == 0) {
		sh5_attr_get_str(g, "Sync Requested", req, sizeof(req));
		printf("sync: %s%s%s%s (times: %s)\n", m, req[0] ? " (asked: " :
		       "", req, req[0] ? ")" : "", strcmp(m, "none") ?
		       "SyncTimeNs, the reference clock" :
		       "EpochTimeNs, each node's clock");
	}
	H5Gclose(g);
}

void merge_integ_list_node(hid_t g)
{
	struct sh5_mergesync_node nr;

	if (sh5_mergesync_node_read(g, &nr) < 0)
		return;
	if (!nr.measurements) {
		printf("    sync: none (no clock-offset measurement: "
		       "SyncTimeNs = EpochTimeNs)\n");
		return;
	}
	printf("    sync: %s, %" PRIu32 " measurement%s, max correction "
	       "%.6f s", nr.method, nr.measurements,
	       nr.measurements == 1 ? "" : "s",
	       (double)nr.max_correction_ns / 1e9);
	if (!isnan(nr.drift_ppm))
		printf(", drift %.1f ppm", nr.drift_ppm);
	printf(", error bound %.3f ms", (double)nr.error_bound_ns / 1e6);
	if (nr.dropped)
		printf(" (%" PRIu32 " noisy left out)", nr.dropped);
	printf("\n");
}
