/* cmd_merge.c - sh5merge merge: node-step files -> one job file. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "common/error.h"
#include "merge/merge.h"
#include "merge/ready.h"
#include "merge_integ.h"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: sh5merge merge -j JOB[.STEP][,JOB[.STEP]...] [OPTIONS]\n"
"\n"
"Merge the node-step profile files of a job into one job file.\n"
"\n"
"  -j, --jobs LIST        jobs and steps (all steps of a job when no step is\n"
"                         given; steps by number or batch, extern,\n"
"                         interactive, pending)\n"
"  -p, --profile-dir DIR  where the files are (default: ProfileSH5Dir, else\n"
"                         ProfileHDF5Dir, of acct_gather.conf)\n"
"  -u, --user NAME        owner of the files: DIR/NAME/ (default: you)\n"
"  -o, --output FILE      job file (default ./job_JOB.h5; one job only)\n"
"  -f, --force            overwrite an existing job file\n"
"      --remove-inputs    delete the merged inputs once the job file is\n"
"                         written and verified (damaged inputs are kept)\n"
"      --allow-partial    write the job file despite missing or damaged\n"
"                         inputs (recorded in /Merge), exit 0\n"
"      --wait SECONDS     first wait up to SECONDS for every node-step file\n"
"                         of the job to be closed by its writer (then\n"
"                         merge what is there; 0: do not wait, default)\n"
"  -q, --quiet            no progress, no warnings\n"
"  -h, --help             this help\n");
	merge_integ_usage(f);
	fprintf(f,
"\n"
"Exit status: 0 merged, 1 error (nothing written unless --allow-partial),\n"
"2 usage.\n");
}

/* The temporary output, removed if a signal ends the merge. */
static char temp_buf[4096];
static volatile sig_atomic_t temp_set;

static void on_temp(void *arg, const char *path)
{
	(void)arg;
	temp_set = 0;
	if (path) {
		snprintf(temp_buf, sizeof(temp_buf), "%s", path);
		temp_set = 1;
	}
}

static void on_signal(int sig)
{
	if (temp_set)
		unlink(temp_buf);
	signal(sig, SIG_DFL);
	raise(sig);
}

struct ctx {
	int allow_partial;
};

static void on_report(void *arg, int error, const char *file,
		      const char *msg)
{
	struct ctx *c = arg;

	/* 2: fails the merge even with --allow-partial. */
	if (error > 1 || (error && !c->allow_partial))
		cli_error(file, "%s", msg);
	else
		cli_warn(file, "%s", msg);
}

static void on_progress(void *arg, int phase, size_t done, size_t total)
{
	(void)arg;
	cli_progress(phase == 1 ? "checking" : "merging", done, total);
}

struct jobsel {
	uint32_t job;
	int all;
	const char **steps;
	size_t nsteps;
};

static int parse_jobs(char *list, struct jobsel **out, size_t *n)
{
	char *save = NULL, *tok;
	struct jobsel *v = NULL;
	size_t cnt = 0, i;

	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *dot = strchr(tok, '.'), *end;
		unsigned long long j;
		struct jobsel *nv;

		if (dot)
			*dot = '\0';
		errno = 0;
		j = strtoull(tok, &end, 10);
		if (errno || *end || end == tok || j == 0 || j > UINT32_MAX ||
		    (dot && (!dot[1] || strlen(dot + 1) >= 32))) {
			cli_error(NULL, "invalid job '%s'", tok);
			goto error;
		}
		for (i = 0; i < cnt && v[i].job != j; i++)
			;
		if (i == cnt) {
			if (!(nv = realloc(v, (cnt + 1) * sizeof(*v))))
				goto error;
			v = nv;
			memset(&v[cnt++], 0, sizeof(*v));
			v[i].job = (uint32_t)j;
		}
		if (!dot) {
			v[i].all = 1;
		} else {
			const char **ns = realloc(v[i].steps,
						  (v[i].nsteps + 1) *
						  sizeof(*ns));

			if (!ns)
				goto error;
			v[i].steps = ns;
			ns[v[i].nsteps++] = dot + 1;
		}
	}
	*out = v;
	*n = cnt;
	return 0;
error:
	for (i = 0; i < cnt; i++)
		free(v[i].steps);
	free(v);
	return -1;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0 && v <= 86400))
		return -1;
	*out = v;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --wait: poll until every node-step file of the job is complete (ready.h)
 * or wait_s seconds have passed; then the merge runs either way (its
 * checks report what is still missing). */
static void wait_ready(const struct sh5_merge_opts *o, double wait_s)
{
	double end = now_s() + wait_s, pause = 0.2;
	struct sh5_ready r;

	for (;;) {
		struct sh5_error err = { "" };
		int rc = sh5_merge_ready(o->dir, o->job, o->steps, o->nsteps,
					 &r, &err);
		double left = end - now_s();

		if (rc > 0)
			return;
		if (rc < 0) {
			cli_warn(NULL, "--wait: %s", err.text);
			return;
		}
		if (left <= 0) {
			cli_warn(NULL, "job %" PRIu32 ": files not complete "
				 "after %g s (%zu of %zu closed): %s; merging "
				 "what is there", o->job, wait_s, r.complete,
				 r.files, r.why);
			return;
		}
		if (pause > left)
			pause = left;
		usleep((useconds_t)(pause * 1e6));
		if (pause < 2)
			pause *= 2;
	}
}

/* What the command line says besides the merge options. */
struct margs {
	char *jobs, *pdir, *user, *output;
	double wait_s;
};

/* Parse the options into o, mi and a.  -1 to go on, else the exit
 * status (0 after --help, 2 on a usage error). */
static int parse_args(int argc, char **argv, struct sh5_merge_opts *o,
		      struct merge_integ *mi, struct margs *a)
{
	static const struct option lopts[] = {
		{ "jobs", required_argument, NULL, 'j' },
		{ "profile-dir", required_argument, NULL, 'p' },
		{ "user", required_argument, NULL, 'u' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "remove-inputs", no_argument, NULL, 'R' },
		{ "allow-partial", no_argument, NULL, 'P' },
		{ "wait", required_argument, NULL, 'W' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		MERGE_INTEG_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "j:p:u:o:fqh", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'j': a->jobs = optarg; break;
		case 'p': a->pdir = optarg; break;
		case 'u': a->user = optarg; break;
		case 'o': a->output = optarg; break;
		case 'f': o->force = 1; break;
		case 'R': o->remove_inputs = 1; break;
		case 'P': o->allow_partial = 1; break;
		case 'W':
			if (parse_seconds(optarg, &a->wait_s) < 0) {
				cli_error(NULL, "--wait: '%s' is not a number "
					  "of seconds (0 to 86400)", optarg);
				return 2;
			}
			break;
		case 'q': sh5merge_quiet = 1; break;
		case 'h': usage(stdout); return 0;
		case '?': usage(stderr); return 2;
		default:
			if (merge_integ_option(mi, c, optarg))
				return 2;
		}
	}
	if (optind < argc || !a->jobs) {
		cli_error(NULL, optind < argc ? "unexpected argument '%s'" :
			  "merge: -j JOB is required%s",
			  optind < argc ? argv[optind] : "");
		usage(stderr);
		return 2;
	}
	return -1;
}

/* -o: one job, a path that fits, a regular file if it exists.  0, or
 * the exit status. */
static int check_output(const char *output, size_t nsel)
{
	struct stat ost;

	if (!output)
		return 0;
	if (nsel > 1) {
		cli_error(NULL, "-o names one file: give one job");
		return 2;
	}
	if (strlen(output) >= PATH_MAX) {
		cli_error(NULL, "%.60s...: %s", output, strerror(ENAMETOOLONG));
		return 1;
	}
	/* HDF5 needs a regular file it can seek and rename. */
	if (stat(output, &ost) == 0 && !S_ISREG(ost.st_mode)) {
		cli_error(output, "not a regular file (merge writes an "
			  "HDF5 file and renames it into place)");
		return 1;
	}
	return 0;
}

/* The profile directory of the user: DIR/USER into dir.  0, or the exit
 * status. */
static int find_dir(const char *pdir, const char *user, char *dir,
		    size_t size)
{
	char conf_dir[4096], conf_path[4096];

	if (!pdir) {
		if (cli_profile_dir(conf_dir, sizeof(conf_dir), conf_path,
				    sizeof(conf_path)) < 0) {
			cli_error(conf_path, "no ProfileSH5Dir or "
				  "ProfileHDF5Dir (give -p DIR)");
			return 1;
		}
		pdir = conf_dir;
	}
	if (!user) {
		struct passwd *pw = getpwuid(getuid());

		if (!pw) {
			cli_error(NULL, "cannot find your user name (give "
				  "--user)");
			return 1;
		}
		user = pw->pw_name;
	}
	if ((size_t)snprintf(dir, size, "%s/%s", pdir, user) >= size) {
		cli_error(NULL, "%.60s...: profile directory path longer than "
			  "%zu bytes", pdir, size - 1);
		return 1;
	}
	return 0;
}

/* The outcome of one job's merge on stderr.  1 when it failed. */
static int merge_outcome(const struct sh5_merge_opts *o,
			 const struct sh5_merge_stats *st, int rc,
			 const struct sh5_error *err)
{
	char whole[48] = "";

	if (rc < 0) {
		cli_error(NULL, "%s", err->text);
		return 1;
	}
	if (rc > 0 && !o->allow_partial) {
		cli_error(o->output, "not written: %zu problem%s (see above; "
			  "--allow-partial writes what is there)",
			  st->problems, st->problems == 1 ? "" : "s");
		return 1;
	}
	if (sh5merge_quiet)
		return 0;
	if (st->whole)
		snprintf(whole, sizeof(whole), " (%zu copied whole)",
			 st->whole);
	fprintf(stderr, "sh5merge: %s: %zu step%s, %zu node file%s%s, %"
		PRIu64 " samples%s%s\n", o->output, st->steps,
		st->steps == 1 ? "" : "s", st->merged,
		st->merged == 1 ? "" : "s", whole, st->samples,
		rc > 0 ? " (partial: see /Merge)" : "",
		st->removed ? ", inputs removed" : "");
	return 0;
}

/* Merge job sel (into output, else ./job_JOB.h5).  0, or 1 on failure. */
static int merge_one(struct sh5_merge_opts *o, struct merge_integ *mi,
		     struct ctx *ctx, const struct jobsel *sel,
		     const struct margs *a)
{
	struct sh5_merge_stats st;
	struct sh5_error err = { "" };
	static char outbuf[64];
	int rc, status;

	o->job = sel->job;
	o->steps = sel->all ? NULL : sel->steps;
	o->nsteps = sel->all ? 0 : sel->nsteps;
	if (a->output) {
		o->output = a->output;
	} else {
		snprintf(outbuf, sizeof(outbuf), "./job_%" PRIu32 ".h5",
			 sel->job);
		o->output = outbuf;
	}
	if (a->wait_s > 0)
		wait_ready(o, a->wait_s);
	if (merge_integ_begin(mi, o, on_report, ctx))
		return 1;
	rc = sh5_merge_job(o, &st, &err);
	status = merge_outcome(o, &st, rc, &err);
	if (merge_integ_end(mi, o, rc == 0 || (rc > 0 && o->allow_partial)))
		status = 1;
	return status;
}

int cmd_merge(int argc, char **argv)
{
	struct merge_integ mi;
	struct sh5_merge_opts o;
	struct ctx ctx = { 0 };
	struct margs a = { NULL, NULL, NULL, NULL, 0 };
	char dir[8192], options[2048];
	struct jobsel *sel = NULL;
	size_t nsel = 0, i, ol = 0;
	int status = 0;

	sh5_error_h5_silence();
	memset(&o, 0, sizeof(o));
	merge_integ_init(&mi);
	if ((status = parse_args(argc, argv, &o, &mi, &a)) >= 0)
		return status;
	status = 0;
	options[0] = '\0';
	for (i = 0; i < (size_t)argc && ol < sizeof(options) - 1; i++)
		ol += (size_t)snprintf(options + ol, sizeof(options) - ol,
				       "%s%s", i ? " " : "", argv[i]);
	if (parse_jobs(a.jobs, &sel, &nsel) < 0) {
		usage(stderr);
		return 2;
	}
	if (!nsel) {
		cli_error(NULL, "merge: -j '%s' names no job (want JOB[.STEP]"
			  "[,JOB[.STEP]...])", a.jobs);
		usage(stderr);
		return 2;
	}
	if ((status = merge_integ_check(&mi, nsel)) ||
	    (status = check_output(a.output, nsel)) ||
	    (status = find_dir(a.pdir, a.user, dir, sizeof(dir))))
		goto out;
	signal(SIGXFSZ, SIG_IGN); /* a file size limit is a write error */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	ctx.allow_partial = o.allow_partial;
	o.dir = dir;
	o.options = options;
	o.report = on_report;
	o.progress = on_progress;
	o.temp_path = on_temp;
	o.arg = &ctx;
	for (i = 0; i < nsel; i++)
		if (merge_one(&o, &mi, &ctx, &sel[i], &a))
			status = 1;
out:
	for (i = 0; i < nsel; i++)
		free(sel[i].steps);
	free(sel);
	if (status) {
		/* After a failed write HDF5 may hold a half-closed file that
		 * crashes its exit handler: leave without it. */
		fflush(NULL);
		_exit(status);
	}
	return status;
}
