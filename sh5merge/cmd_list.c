/* cmd_list.c - sh5merge list: what a job file holds. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_util.h"
#include "common/outfile.h"
#include "commands.h"
#include "sync/jobevents.h"
#include "common/error.h"
#include "merge/jobfile.h"
#include "merge_integ.h"
#include "profile/reader.h"
#include "profile/series.h"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: sh5merge list -i JOB.h5\n"
"\n"
"List the steps, nodes, series, fields (unit, kind), sample counts and\n"
"time spans of a job file.\n"
"\n"
"  -i, --input FILE   the job file (ours or sh5util's)\n"
"  -h, --help         this help\n"
"\n"
"Exit status: 0 ok, 1 error, 2 usage.\n");
}

static void fmt_time(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Time (ns) of row `row`: SyncTimeNs, else EpochTimeNs, else EpochTime. */
static int row_time(struct sh5_cursor *c, uint64_t row, void *buf,
		    int64_t *ns)
{
	c->pos = row;
	if (sh5_cursor_read(c, buf, 1) != 1)
		return -1;
	*ns = ((union sh5_value *)buf)[c->s->has_sync_ns ?
					SH5_SLOT_SYNC(c->s) : 2].i;
	return 0;
}

static void print_fields(const struct sh5_series *s)
{
	size_t i;

	printf("      fields:");
	for (i = 0; i < s->nfields; i++)
		printf(" %s[%s%s%s]", s->fields[i].name, s->fields[i].unit,
		       s->fields[i].unit[0] ? "," : "",
		       sh5_fkind_name(s->fields[i].kind));
	printf("%s%s\n", s->has_time_ns ? " (+EpochTimeNs)" : "",
	       s->has_sync_ns ? " (+SyncTimeNs)" : "");
}

/* The job's line: id, steps, user, cluster, whether sh5merge wrote it. */
static void print_job(hid_t f, const char *input)
{
	char sval[128];
	long long val;

	printf("%s:", input);
	if (sh5_attr_get_int(f, "Job ID", &val) == 0)
		printf(" job %lld", val);
	if (sh5_attr_get_int(f, "Number of Steps", &val) == 0)
		printf(", %lld step%s", val, val == 1 ? "" : "s");
	if (sh5_attr_get_str(f, "User", sval, sizeof(sval)) == 0)
		printf(", user %s", sval);
	if (sh5_attr_get_str(f, "Cluster", sval, sizeof(sval)) == 0)
		printf(", cluster %s", sval);
	printf("%s\n", H5Lexists(f, "Merge", H5P_DEFAULT) > 0 ?
		       "" : " (no /Merge: not written by sh5merge)");
	if (H5Lexists(f, "Merge", H5P_DEFAULT) > 0) {
		hid_t g = H5Gopen2(f, "Merge", H5P_DEFAULT);

		if (g >= 0 && sh5_attr_get_int(g, "Partial", &val) == 0 && val)
			printf("PARTIAL: see /Merge/Inputs and /Merge/Missing\n");
		if (g >= 0)
			H5Gclose(g);
	}
	merge_integ_list_job(f);
}

/* The step's line (nodes, tasks) and its events line. */
static void print_step(hid_t f, const char *step)
{
	char np[256];
	long long val;
	hid_t g;

	snprintf(np, sizeof(np), "/Steps/%s", step);
	printf("step %s", step);
	if ((g = H5Gopen2(f, np, H5P_DEFAULT)) >= 0) {
		if (sh5_attr_get_int(g, "Number of Nodes", &val) == 0)
			printf(": %lld node%s", val, val == 1 ? "" : "s");
		if (sh5_attr_get_int(g, "Number of Tasks", &val) == 0)
			printf(", %lld task%s", val, val == 1 ? "" : "s");
		H5Gclose(g);
	}
	printf("\n");
	if ((g = H5Gopen2(f, np, H5P_DEFAULT)) >= 0) {
		size_t et;
		uint64_t en;
		int es;

		sh5_evstep_count(g, &et, &en, &es);
		if (et)
			printf("  events: %zu task%s, %" PRIu64 " events%s\n",
			       et, et == 1 ? "" : "s", en,
			       es ? " (corrected: SyncTimeNs)" : "");
		H5Gclose(g);
	}
}

/* The node's line (index, tasks, sh5 or stock) of node group np. */
static void print_node(hid_t f, const char *node, const char *np)
{
	long long val;
	hid_t g;

	printf("  node %s", node);
	if ((g = H5Gopen2(f, np, H5P_DEFAULT)) >= 0) {
		if (sh5_attr_get_int(g, "Node Index", &val) == 0)
			printf(" (index %lld", val);
		else
			printf(" (");
		if (sh5_attr_get_int(g, "Number of Tasks", &val) == 0)
			printf(", %lld task%s", val, val == 1 ? "" : "s");
		printf(", %s)\n", H5Aexists(g, "Job ID") > 0 ?
		       "sh5" : "stock");
		merge_integ_list_node(g);
		H5Gclose(g);
	} else {
		printf("\n");
	}
}

/* What was listed last: a line for each change. */
struct list_last {
	char step[64];
	char node[SH5_NAME_MAX];
	char kind[2 * SH5_NAME_MAX];
};

/* The series line of entry e (node group np): samples and time span,
 * and its fields once per kind of series and node.  buf: 4096 bytes. */
static void print_series(hid_t f, const struct sh5_jf_entry *e,
			 const char *np, void *buf, struct list_last *last)
{
	char full[512], t0[32], t1[32], kind[2 * SH5_NAME_MAX];
	struct sh5_series *s;
	struct sh5_cursor cur;
	int64_t a = 0, b = 0;
	hid_t d;

	snprintf(full, sizeof(full), "%s/%s", np, e->path);
	if ((d = H5Dopen2(f, full, H5P_DEFAULT)) < 0)
		return;
	s = sh5_series_from_dataset(e->parent, e->name, d, NULL);
	if (!s) {
		printf("    %-16s (not a series)\n", e->path);
		H5Dclose(d);
		return;
	}
	if (sh5_cursor_open(&cur, d, s, 0, NULL) == 0) {
		if (s->ops->record_size(s) <= 4096 && cur.nrows &&
		    row_time(&cur, 0, buf, &a) == 0 &&
		    row_time(&cur, cur.nrows - 1, buf, &b) == 0) {
			fmt_time(a, t0, sizeof(t0));
			fmt_time(b, t1, sizeof(t1));
			printf("    %-16s %8" PRIu64 " samples  %s .. %s"
			       " (%.0f s)\n", e->path, cur.nrows, t0,
			       t1, ((double)b - (double)a) / 1e9);
		} else {
			printf("    %-16s %8" PRIu64 " samples\n",
			       e->path, cur.nrows);
		}
		sh5_cursor_close(&cur);
	}
	/* Fields once per kind of series and node. */
	snprintf(kind, sizeof(kind), "%s/%s", s->ops->name,
		 e->parent[0] ? e->parent : e->name);
	if (strcmp(kind, last->kind)) {
		print_fields(s);
		snprintf(last->kind, sizeof(last->kind), "%s", kind);
	}
	sh5_series_destroy(s);
	H5Dclose(d);
}

/* Options: *input.  -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, const char **input)
{
	static const struct option lopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'i': *input = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!*input || optind < argc) {
		cli_error(NULL, "list: -i JOB.h5 is required");
		usage(stderr);
		return 2;
	}
	return -1;
}

int cmd_list(int argc, char **argv)
{
	const char *input = NULL;
	struct sh5_jf_entry *v = NULL;
	struct sh5_error err = { "" };
	struct list_last last = { "", "", "" };
	size_t n = 0, i;
	hid_t f;
	void *buf = NULL;
	int rc;

	if ((rc = parse_args(argc, argv, &input)) >= 0)
		return rc;
	if (sh5_infile_check(input, &err) < 0) {
		cli_error(NULL, "%s", err.text);
		return 1;
	}
	sh5_error_h5_silence();
	if ((f = H5Fopen(input, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0) {
		sh5_errprintf_h5(&err, "cannot open");
		cli_error(input, "%s", err.text);
		return 1;
	}
	if (sh5_jobfile_list(f, input, &v, &n, &err) < 0) {
		cli_error(NULL, "%s", err.text);
		H5Fclose(f);
		return 1;
	}
	print_job(f, input);
	if (!(buf = malloc(4096)))
		goto out;
	for (i = 0; i < n; i++) {
		struct sh5_jf_entry *e = &v[i];
		char np[256];

		if (strcmp(e->step, last.step)) {
			print_step(f, e->step);
			snprintf(last.step, sizeof(last.step), "%s", e->step);
			last.node[0] = '\0';
			last.kind[0] = '\0';
		}
		sh5_jobfile_node_path(e, np, sizeof(np));
		if (strcmp(e->node, last.node)) {
			print_node(f, e->node, np);
			snprintf(last.node, sizeof(last.node), "%s", e->node);
		}
		print_series(f, e, np, buf, &last);
	}
out:
	free(buf);
	free(v);
	H5Fclose(f);
	if (fflush(stdout) != 0) {
		cli_error("stdout", "write error");
		return 1;
	}
	return 0;
}
