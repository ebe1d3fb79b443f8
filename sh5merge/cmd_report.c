/* cmd_report.c - sh5merge report: a self-contained HTML report. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "export/report.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: sh5merge report JOB.h5 -o REPORT.html [--step S]\n"
		"                       [--bins N] [--sigma S]\n"
		"\n"
		"Write one self-contained HTML file (inline SVG, CSS and script,"
		"\n"
		"nothing fetched) with the job's summary, time series per node"
		"\n"
		"and task, clock offsets, application events (timeline, phases,"
		"\n"
		"imbalance, communication matrix) and counter anomalies.\n"
		"\n"
		"  -o, --output FILE   the HTML file (written whole or not at "
		"all)\n"
		"  -s, --step S        only this step (default: every step)\n"
		"      --bins N        time bins of the line plots (default "
		"600)\n"
		"      --sigma S       anomaly threshold in standard deviations"
		"\n"
		"                      (default 6)\n"
		"  -h, --help          this help\n");
}

static void progress(void *arg, const char *what, size_t done,
		     size_t total)
{
	(void)arg;
	cli_progress(what, done, total);
}

static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int write_out(const char *in, const char *out,
		     const struct sh5_report_opts *o,
		     struct sh5_report_result *res)
{
	struct sh5_error err = { "" };
	size_t len = strlen(out) + 16;
	char *tmp = malloc(len);
	FILE *f = NULL;
	int fd = -1, c;
	mode_t um;

	if (!tmp) {
		cli_error(out, "out of memory");
		return -1;
	}
	snprintf(tmp, len, "%s.tmpXXXXXX", out);
	if ((fd = mkstemp(tmp)) < 0 || !(f = fdopen(fd, "w"))) {
		cli_error(out, "cannot create a temporary file beside it: %s",
			  strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		free(tmp);
		return -1;
	}
	um = umask(0);
	umask(um);
	if (fchmod(fd, 0666 & ~um) < 0) {
		cli_error(tmp, "chmod: %s", strerror(errno));
		goto error;
	}
	if (sh5_report_write(in, f, out, o, res, &err) < 0) {
		cli_error(NULL, "%s", err.text);
		goto error;
	}
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		cli_error(out, "write error: %s", strerror(errno));
		goto error;
	}
	c = fclose(f);
	f = NULL;
	if (c != 0) {
		cli_error(out, "write error: %s", strerror(errno));
		goto error;
	}
	if (rename(tmp, out) < 0) {
		cli_error(out, "cannot rename %s to it: %s", tmp,
			  strerror(errno));
		goto error;
	}
	free(tmp);
	return 0;
error:
	if (f)
		fclose(f);
	unlink(tmp);
	free(tmp);
	return -1;
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "step", required_argument, NULL, 's' },
		{ "bins", required_argument, NULL, 'b' },
		{ "sigma", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct sh5_report_opts o = { .progress = progress };
	struct sh5_report_result res;
	const char *out = NULL, *in;
	char *end;
	size_t i;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 's':
			o.step = optarg;
			break;
		case 'b':
			errno = 0;
			o.bins = strtoul(optarg, &end, 10);
			if (errno || *end || o.bins < 16 || o.bins > 10000) {
				cli_error(NULL, "--bins: want 16..10000, not "
					  "'%s'", optarg);
				return 2;
			}
			break;
		case 'g':
			o.sigma = strtod(optarg, &end);
			if (*end || !(o.sigma > 0)) {
				cli_error(NULL, "--sigma: want a positive "
					  "number, not '%s'", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || !out) {
		usage(stderr);
		return 2;
	}
	in = argv[optind];
	if (access(in, R_OK) < 0) {
		cli_error(in, "%s", strerror(errno));
		return 1;
	}
	if (same_file(in, out)) {
		cli_error(out, "is the input; refusing to overwrite it");
		return 1;
	}
	if (write_out(in, out, &o, &res) < 0)
		return 1;
	for (i = 0; i < res.nmissing && i < 16; i++)
		cli_warn(in, "%s", res.missing[i]);
	if (!sh5merge_quiet)
		fprintf(stderr, "sh5merge: %s: report: %zu steps, %zu nodes, "
			"%zu tasks, %zu counters, %llu samples, %llu events "
			"-> %s\n", in, res.nsteps, res.nnodes, res.ntasks,
			res.nseries, (unsigned long long)res.samples,
			(unsigned long long)res.events, out);
	return 0;
}
