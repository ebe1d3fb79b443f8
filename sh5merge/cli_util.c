/* cli_util.c - see cli_util.h */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include "cli_util.h"
#include "common/outfile.h"
#include "common/error.h"
#include "sync/jobevents.h"
#include "commands.h"

void cli_error(const char *file, const char *fmt, ...)
{
	va_list ap;

	fputs("sh5merge: ", stderr);
	if (file)
		fprintf(stderr, "%s: ", file);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_warn(const char *file, const char *fmt, ...)
{
	va_list ap;

	if (sh5merge_quiet)
		return;
	fputs("sh5merge: warning: ", stderr);
	if (file)
		fprintf(stderr, "%s: ", file);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	if (e - s >= 2 && ((s[0] == '"' && e[-1] == '"') ||
			   (s[0] == '\'' && e[-1] == '\''))) {
		e[-1] = '\0';
		s++;
	}
	return s;
}

int cli_profile_dir(char *buf, size_t len, char *conf_path, size_t clen)
{
	const char *sc = getenv("SLURM_CONF");
	char sh5[4096] = "", hdf5[4096] = "", line[4096];
	FILE *f;

	if (sc && sc[0] && strrchr(sc, '/')) {
		int dl = (int)(strrchr(sc, '/') - sc);

		snprintf(conf_path, clen, "%.*s/acct_gather.conf", dl, sc);
	} else {
		snprintf(conf_path, clen, "/etc/slurm/acct_gather.conf");
	}
	if (!(f = fopen(conf_path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#'), *eq, *key, *val;

		if (hash)
			*hash = '\0';
		if (!(eq = strchr(line, '=')))
			continue;
		*eq = '\0';
		key = trim(line);
		val = trim(eq + 1);
		if (!strcasecmp(key, "ProfileSH5Dir"))
			snprintf(sh5, sizeof(sh5), "%s", val);
		else if (!strcasecmp(key, "ProfileHDF5Dir"))
			snprintf(hdf5, sizeof(hdf5), "%s", val);
	}
	fclose(f);
	if (sh5[0])
		snprintf(buf, len, "%s", sh5);
	else if (hdf5[0])
		snprintf(buf, len, "%s", hdf5);
	else
		return -1;
	return 0;
}

void cli_progress(const char *what, size_t done, size_t total)
{
	static struct timespec start;
	static int started, shown, tty = -1;
	struct timespec now;
	double el;

	/* Asked once: a call per series costs a system call each. */
	if (tty < 0)
		tty = isatty(2);
	if (sh5merge_quiet || !tty)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!started) {
		start = now;
		started = 1;
	}
	el = (double)(now.tv_sec - start.tv_sec) +
	     (double)(now.tv_nsec - start.tv_nsec) / 1e9;
	if (el < 1.0 && !shown)
		return;
	shown = 1;
	fprintf(stderr, "\r%s: %zu/%zu (%.0f%%) %.0fs ", what, done, total,
		total ? 100.0 * (double)done / (double)total : 100.0, el);
	if (done >= total) {
		fputc('\n', stderr);
		shown = 0;
	}
}

struct sh5_evstep *cli_read_events(const char *in, const char *step,
				   int raw, hid_t *file)
{
	struct sh5_error err = { "" };
	struct sh5_evstep *s = NULL;
	char **steps = NULL, path[300];
	size_t nsteps = 0, i;
	hid_t f, g = -1;

	*file = -1;
	if (sh5_infile_check(in, &err) < 0) {
		cli_error(NULL, "%s", err.text);
		return NULL;
	}
	sh5_error_h5_silence();
	if ((f = H5Fopen(in, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0) {
		cli_error(in, "cannot open as an HDF5 file");
		return NULL;
	}
	if (sh5_evjob_steps(f, &steps, &nsteps, &err) < 0) {
		cli_error(in, "%s", err.text);
		goto out;
	}
	for (i = 0; step && i < nsteps; i++)
		if (!strcmp(steps[i], step))
			break;
	if (!step && nsteps != 1) {
		if (!nsteps)
			cli_error(in, "no step has events");
		else
			cli_error(in, "%zu steps have events (the first: %s): "
				  "choose one with --step", nsteps, steps[0]);
		goto out;
	}
	if (step && i == nsteps) {
		cli_error(in, "step %s has no events", step);
		goto out;
	}
	if (!step)
		step = steps[0];
	snprintf(path, sizeof(path), "/Steps/%s", step);
	if ((g = H5Gopen2(f, path, H5P_DEFAULT)) < 0) {
		cli_error(in, "%s: cannot open", path);
		goto out;
	}
	if (!(s = sh5_evstep_read(g, step, &err))) {
		cli_error(in, "%s", err.text);
		goto out;
	}
	for (i = 0; i < s->nwarnings && i < 8; i++)
		cli_warn(in, "%s", s->warning[i]);
	if (!raw && !s->synced) {
		cli_error(in, "step %s has no corrected event times: merge "
			  "with --sync clc, or use --raw", step);
		sh5_evstep_free(s);
		s = NULL;
	}
out:
	sh5_evjob_steps_free(steps, nsteps);
	if (g >= 0)
		H5Gclose(g);
	if (s)
		*file = f;
	else
		H5Fclose(f);
	return s;
}

int cli_write_out(const char *in, const char *out, cli_writer_fn fn,
		  void *arg)
{
	struct sh5_error err = { "" };
	struct sh5_outfile of = { .fd = -1 };
	FILE *f;

	if (sh5_outfile_open(&of, out, &in, 1, &err) < 0)
		goto error;
	if (!(f = sh5_outfile_fp(&of))) {
		sh5_errprintf(&err, "%s: %s", out, strerror(errno));
		goto error;
	}
	if (fn(arg, f, out, &err) < 0)
		goto error;
	if (sh5_outfile_commit(&of, &err) < 0)
		goto error;
	return 0;
error:
	cli_error(NULL, "%s", err.text);
	sh5_outfile_abort(&of);
	return -1;
}

void cli_heap_hugepages(size_t reserve)
{
#if defined(__linux__) && defined(__GLIBC__) && defined(MADV_HUGEPAGE)
	const size_t huge = 2u << 20;
	uintptr_t lo, hi;
	void *p;

	if (getenv("SH5MERGE_NO_HUGEPAGES"))
		return;
	/* Blocks up to reserve come from the heap, which keeps what is
	 * freed at its top: the heap is grown once, by reserve. */
	mallopt(M_MMAP_THRESHOLD, (int)reserve);
	mallopt(M_TRIM_THRESHOLD, (int)(2 * reserve));
	lo = (uintptr_t)sbrk(0);
	if (!(p = malloc(reserve - 4096)))
		return;
	free(p);
	hi = (uintptr_t)sbrk(0);
	/* Only what the heap grew by (malloc may have taken another
	 * mapping). */
	if (lo == (uintptr_t)-1 || hi < lo + reserve / 2)
		return;
	lo = (lo + huge - 1) & ~(uintptr_t)(huge - 1);
	hi &= ~(uintptr_t)(huge - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
	(void)reserve;
#endif
}
