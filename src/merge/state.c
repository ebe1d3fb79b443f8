/* state.c - the merge state: reports, findings, checks to verify,
 * child process set-up (see merge_int.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/fdio.h"
#include "merge/merge_int.h"

/* Children leave signals to the parent (its handlers remove the
 * temporary output). */
void mg_child_signals(void)
{
	/* ... and die with it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
}

/* Seconds a child may read one input without a sign of progress: HDF5
 * loops forever on some damaged files.  SH5MERGE_READ_TIMEOUT overrides
 * it (tests). */
int mg_read_timeout(void)
{
	const char *e = getenv("SH5MERGE_READ_TIMEOUT");
	long v = e ? strtol(e, NULL, 10) : 0;

	return v > 0 && v < 86400 ? (int)v : 120;
}

double mg_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One message of the one-pass child to the merge (it is gone: _exit). */
static void op_send(struct mstate *m, uint32_t type, uint32_t error,
		    uint64_t idx, const void *p, size_t len)
{
	struct op_msg h = { type, error, idx, len };

	if (sh5_fd_write_all(m->op_fd, &h, sizeof(h)) < 0 ||
	    (len && sh5_fd_write_all(m->op_fd, p, len) < 0))
		_exit(3);
}

void mg_op_start(struct mstate *m, size_t idx)
{
	__atomic_store_n(m->op_at, (uint64_t)idx, __ATOMIC_RELEASE);
}

void mg_report(struct mstate *m, int error, const char *file,
	       const char *fmt, ...)
{
	char msg[512], both[4096 + 512];
	size_t fl = file ? strlen(file) : 0;
	va_list ap;

	/* What went wrong in an input that changed while it was read is
	 * the change, reported once before the end (mergejob.c). */
	if (error && mg_changed_path(m, file))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (m->defer) {
		/* Held back until the first pass is known (onefeed.c);
		 * counted then. */
		struct dreport *v = realloc(m->dr, (m->ndr + 1) * sizeof(*v));

		if (v) {
			m->dr = v;
			v += m->ndr;
			v->error = error;
			v->file = file ? strdup(file) : NULL;
			v->msg = strdup(msg);
			if (v->msg && (v->file || !file)) {
				m->ndr++;
				return;
			}
			free(v->file);
			free(v->msg);
		}
		/* Out of memory: counted, so that the merge stops. */
		m->st->problems++;
		return;
	}
	if (error)
		m->st->problems++;
	if (m->onepass) {
		/* Relayed: the merge shows them if it keeps this pass. */
		if (fl > 4095)
			fl = 4095;
		memcpy(both, file ? file : "", fl);
		both[fl] = '\0';
		memcpy(both + fl + 1, msg, strlen(msg) + 1);
		op_send(m, OP_REPORT, (uint32_t)error, file != NULL, both,
			fl + 1 + strlen(msg) + 1);
		return;
	}
	if (m->o->report)
		m->o->report(m->o->arg, error, file, msg);
}

int mg_add_missing(struct mstate *m, const char *fmt, ...)
{
	char msg[512], **v;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Not told when an input changed: what is missing then follows
	 * from the change, reported instead (mergejob.c). */
	if (!mg_any_changed(m))
		mg_report(m, 1, m->o->dir, "%s", msg);
	else
		m->st->problems++;
	if (!(v = realloc(m->missing, (m->nmissing + 1) * sizeof(*v))))
		return -1;
	m->missing = v;
	if (!(v[m->nmissing] = strdup(msg)))
		return -1;
	m->nmissing++;
	return 0;
}

int mg_add_check(struct mstate *m, const char *path, uint64_t rows)
{
	struct check *v = realloc(m->checks, (m->nchecks + 1) * sizeof(*v));

	if (!v)
		return -1;
	m->checks = v;
	if (!(v[m->nchecks].path = strdup(path)))
		return -1;
	v[m->nchecks].rows = rows;
	m->nchecks++;
	return 0;
}

/* Write one total as a one-record dataset at path (relative to loc). */
int mg_write_total(struct mstate *m, hid_t loc, const char *path,
		       const struct sh5_series *s, const void *total,
		       size_t count)
{
	if (sh5_total_write(loc, path, s, total, count, UINT64_MAX, -1) < 0)
		return mg_h5err(m->errp, "%s: cannot write totals %s",
			     m->o->output, path);
	return 0;
}

void mg_mstate_free(struct mstate *m)
{
	size_t i;

	for (i = 0; i < m->nmissing; i++)
		free(m->missing[i]);
	free(m->missing);
	for (i = 0; i < m->nchecks; i++)
		free(m->checks[i].path);
	free(m->checks);
	for (i = 0; m->fi && i < m->nin; i++) {
		free(m->fi[i].ents);
		free(m->fi[i].blob);
	}
	for (i = 0; i < m->nsc; i++)
		sh5_series_destroy(m->sc[i].s);
	free(m->sc);
	for (i = 0; i < m->ntc; i++) {
		H5Tclose(m->tc[i].mt);
		H5Pclose(m->tc[i].dxpl);
	}
	free(m->tc);
	free(m->fi);
	free(m->stamp);
	free(m->buf);
	sh5_inputs_free(m->in, m->nin);
}
