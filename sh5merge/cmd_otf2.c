/* cmd_otf2.c - sh5merge otf2: a step's events as an OTF2 archive. */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <hdf5.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "common/outfile.h"
#include "commands.h"
#include "common/error.h"
#include "sync/jobevents.h"
#include "export/otf2.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: sh5merge otf2 JOB.h5 -o DIR [--step S] [--raw]\n"
		"                     [--groups rank|node]\n"
		"\n"
		"Write the application events of a step as an OTF2 archive\n"
		"(DIR/traces.otf2, DIR/traces.def, DIR/traces/), on the\n"
		"synchronized clock (SyncTimeNs of merge --sync clc).  DIR must"
		"\n"
		"not exist (or be empty); it appears complete or not at all.\n"
		"\n"
		"  -o, --output DIR    the archive directory\n"
		"  -s, --step S        the step (default: the one with events)\n"
		"  -r, --raw           the recorded times, not synchronized\n"
		"      --groups G      location groups: rank (a process per rank,"
		"\n"
		"                      default) or node (one per node)\n"
		"  -h, --help          this help\n");
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

/* The machine name for the system tree: the root "Cluster" attribute. */
static void machine_name(hid_t f, char *buf, size_t len)
{
	hid_t a, t, m;

	snprintf(buf, len, "cluster");
	if (H5Aexists(f, "Cluster") <= 0)
		return;
	a = H5Aopen(f, "Cluster", H5P_DEFAULT);
	if (a < 0)
		return;
	t = H5Aget_type(a);
	if (H5Tget_class(t) == H5T_STRING && !H5Tis_variable_str(t) &&
	    H5Tget_size(t) < len) {
		m = H5Tcopy(t);
		memset(buf, 0, len);
		if (H5Aread(a, m, buf) < 0)
			snprintf(buf, len, "cluster");
		H5Tclose(m);
	}
	H5Tclose(t);
	H5Aclose(a);
}

/* Write the archive into a temporary directory beside out, rename. */
static int write_dir(const struct sh5_evstep *s, const char *in,
		     const char *out, int flags, hid_t f)
{
	struct sh5_error err = { "" };
	struct sh5_otf2_result r;
	size_t len = strlen(out) + 16;
	char *tmp = malloc(len), machine[128];
	mode_t um;

	if (!tmp) {
		cli_error(out, "out of memory");
		return -1;
	}
	snprintf(tmp, len, "%s.tmpXXXXXX", out);
	if (!mkdtemp(tmp)) {
		cli_error(out, "cannot create a temporary directory beside "
			  "it: %s", strerror(errno));
		free(tmp);
		return -1;
	}
	um = umask(0);
	umask(um);
	chmod(tmp, 0777 & ~um);
	machine_name(f, machine, sizeof(machine));
	if (sh5_otf2_write_flags(s, tmp, machine, flags, &r, &err) < 0) {
		cli_error(in, "%s", err.text);
		goto error;
	}
	if (rename(tmp, out) < 0) {
		cli_error(out, errno == ENOTEMPTY || errno == EEXIST ?
			  "exists and is not empty; not replaced" :
			  "cannot rename the temporary directory to it: %s",
			  strerror(errno));
		goto error;
	}
	if (!sh5merge_quiet)
		fprintf(stderr, "sh5merge: %s: otf2: %zu locations, %zu "
			"regions, %zu comms; enter %" PRIu64 ", leave %" PRIu64
			", send %" PRIu64 ", recv %" PRIu64 ", cbegin %" PRIu64
			", cend %" PRIu64 ", phase %" PRIu64 " (%" PRIu64
			" records without an OTF2 event) -> %s\n",
			in, r.locations, r.regions, r.comms, r.enter, r.leave,
			r.send, r.recv, r.cbegin, r.cend, r.phase, r.skipped,
			out);
	free(tmp);
	return 0;
error:
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(tmp);
	return -1;
}

int cmd_otf2(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "raw", no_argument, NULL, 'r' },
		{ "groups", required_argument, NULL, 'g' },
		{ "step", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *in, *out = NULL, *step = NULL;
	struct sh5_evstep *s = NULL;
	hid_t f = -1;
	int raw = 0, c, rc = 1, flags = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:rs:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'r':
			raw = 1;
			break;
		case 's':
			step = optarg;
			break;
		case 'g':
			if (!strcmp(optarg, "node")) {
				flags |= SH5_OTF2_GROUP_NODE;
			} else if (strcmp(optarg, "rank")) {
				fprintf(stderr, "sh5merge: otf2: --groups: "
					"rank or node, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "sh5merge: otf2: bad option '%s'\n",
				argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || !out) {
		fprintf(stderr, "sh5merge: otf2: %s\n", optind != argc - 1 ?
			"want exactly one job file" : "-o DIR is required");
		usage(stderr);
		return 2;
	}
	in = argv[optind];
	if (!(s = cli_read_events(in, step, raw, &f)))
		return 1;
	if (write_dir(s, in, out, flags | (raw ? SH5_OTF2_RAW : 0), f) < 0)
		goto out;
	rc = 0;
out:
	sh5_evstep_free(s);
	H5Fclose(f);
	return rc;
}
