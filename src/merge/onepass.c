/* onepass.c - the result of the one-pass child and the merge's watch on
 * it (see merge_int.h, mergejob.c). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fdio.h"
#include "merge/merge_int.h"

void mg_op_end(struct mstate *m, int rc, int partial)
{
	struct op_end e;
	struct op_input *v = calloc(m->nin ? m->nin : 1, sizeof(*v));
	struct op_msg h;
	size_t i;

	if (!v)
		_exit(3);
	memset(&e, 0, sizeof(e));
	e.rc = rc;
	e.partial = partial;
	e.st = *m->st;
	snprintf(e.err, sizeof(e.err), "%s", m->errp->text);
	for (i = 0; i < m->nin; i++) {
		v[i].usable = m->fi[i].usable;
		v[i].merged = m->fi[i].status &&
			      !strcmp(m->fi[i].status, "merged");
		v[i].size = m->fi[i].size;
		e.any |= m->fi[i].usable ? m->fi[i].probe_hit : 0;
	}
	memset(&h, 0, sizeof(h));
	h.type = OP_END;
	h.len = sizeof(e) + m->nin * sizeof(*v);
	if (sh5_fd_write_all(m->op_fd, &h, sizeof(h)) < 0 ||
	    sh5_fd_write_all(m->op_fd, &e, sizeof(e)) < 0 ||
	    (m->nin && sh5_fd_write_all(m->op_fd, v, m->nin * sizeof(*v)) < 0))
		_exit(3);
	_exit(0);
}

/* The reports of the child, kept until its pass is kept or dropped. */
struct op_reports {
	struct op_rep {
		int error, has_file;
		char *text;     /* "file\0msg\0" */
	} *v;
	size_t n;
};

static void reports_free(struct op_reports *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		free(r->v[i].text);
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

/* Read one OP_REPORT's text (len bytes) into r.  0, or -1. */
static int report_take(struct op_reports *r, int fd, const struct op_msg *h)
{
	struct op_rep *v;
	char *t;

	if (h->len < 2 || h->len > 8192 || !(t = malloc(h->len)))
		return -1;
	if (sh5_fd_read_all(fd, t, h->len) < 0 || t[h->len - 1] ||
	    !memchr(t, '\0', h->len - 1) ||
	    !(v = realloc(r->v, (r->n + 1) * sizeof(*v)))) {
		free(t);
		return -1;
	}
	r->v = v;
	v[r->n].error = h->error != 0;
	v[r->n].has_file = h->idx != 0;
	v[r->n++].text = t;
	return 0;
}

/* The child's pass is kept: its reports shown, its counts taken, the
 * hooks told what the first pass found (as the child told its copy of
 * them: node_begin and node_end ran there only). */
static void op_keep(struct mstate *m, struct op_reports *r,
		    const struct op_end *e, const struct op_input *v)
{
	const struct sh5_merge_hooks *hk = m->o->hooks;
	struct sh5_error err = { "" };
	size_t i;

	if (hk && hk->checked)
		hk->checked(hk->arg, e->any, &err);

	for (i = 0; i < r->n && m->o->report; i++) {
		const char *file = r->v[i].text;

		m->o->report(m->o->arg, r->v[i].error,
			     r->v[i].has_file ? file : NULL,
			     file + strlen(file) + 1);
	}
	*m->st = e->st;
	for (i = 0; i < m->nin; i++) {
		m->fi[i].in = &m->in[i];
		m->fi[i].usable = v[i].usable;
		m->fi[i].status = v[i].merged ? "merged" : v[i].usable ?
				  "salvaged" : "skipped";
		m->fi[i].size = v[i].size;
	}
}

/* The child was killed by a signal (st) or hung on input cur: marked as
 * the first pass marks such an input, which is then not checked again.
 * (A child that exited otherwise marks nothing: checked again.) */
static void op_mark(struct mstate *m, size_t cur, int hung, int st)
{
	struct finfo *f = &m->fi[cur];

	if (!hung && !WIFSIGNALED(st))
		return;
	f->in = &m->in[cur];
	f->usable = 0;
	f->status = "skipped";
	f->probed = 1;
	if (hung)
		snprintf(f->reason, sizeof(f->reason), "corrupt: HDF5 does "
			 "not finish reading it (stopped after %d s)",
			 mg_read_timeout());
	else if (!mg_changed(m, cur, f->reason, sizeof(f->reason)))
		snprintf(f->reason, sizeof(f->reason), "corrupt: reading it "
			 "crashes HDF5 (signal %d)", WTERMSIG(st));
}

/* Read the END message's body (h->len bytes) into *e and *v. */
static int end_take(struct mstate *m, int fd, const struct op_msg *h,
		    struct op_end *e, struct op_input **v)
{
	if (h->len != sizeof(*e) + m->nin * sizeof(**v) ||
	    !(*v = calloc(m->nin ? m->nin : 1, sizeof(**v))))
		return -1;
	if (sh5_fd_read_all(fd, e, sizeof(*e)) < 0 ||
	    (m->nin && sh5_fd_read_all(fd, *v, m->nin * sizeof(**v)) < 0)) {
		free(*v);
		*v = NULL;
		return -1;
	}
	return 0;
}

/* The input the child is on (m->op_at), SIZE_MAX before the first. */
static size_t op_at(const struct mstate *m)
{
	uint64_t at = __atomic_load_n(m->op_at, __ATOMIC_ACQUIRE);

	return at <= m->nin ? (size_t)at : SIZE_MAX;
}

/* Follow the child's messages until its END (1), or until it dies or
 * hangs (0; *hung).  Where it is, is looked at on every wake-up (at
 * least 4 a second), so an input's time starts at most 0.25 s late. */
static int op_follow(struct mstate *m, int fd, pid_t pid,
		     struct op_reports *r, struct op_end *e,
		     struct op_input **v, int *hung)
{
	double since = mg_now_s();
	size_t cur = SIZE_MAX;

	for (;;) {
		struct pollfd pf = { fd, POLLIN, 0 };
		struct op_msg h;
		int pr = poll(&pf, 1, 250);

		if (op_at(m) != cur) {
			cur = op_at(m);
			since = mg_now_s();
		}
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0) {
			/* Past the inputs (verification, fsync): no
			 * HDF5 on an input, no limit. */
			if (cur == m->nin ||
			    mg_now_s() - since < mg_read_timeout())
				continue;
			/* Stuck on this input: end it. */
			kill(pid, SIGKILL);
			*hung = 1;
			return 0;
		}
		if (pr < 0 || sh5_fd_read_all(fd, &h, sizeof(h)) < 0)
			return 0;
		if (h.type == OP_REPORT) {
			if (report_take(r, fd, &h) < 0)
				return 0;
		} else if (h.type == OP_END) {
			return end_take(m, fd, &h, e, v) == 0;
		} else {
			return 0;
		}
	}
}

int mg_op_wait(struct mstate *m, int fd, pid_t pid, int *partial)
{
	struct op_reports r = { NULL, 0 };
	struct op_input *v = NULL;
	struct op_end e;
	size_t cur = SIZE_MAX;
	int hung = 0, st = 0, done, rc = 1;

	memset(&e, 0, sizeof(e));
	done = op_follow(m, fd, pid, &r, &e, &v, &hung);
	close(fd);
	waitpid(pid, &st, 0);
	cur = op_at(m);	/* where it died or hung: final once it is gone */
	if (done && e.rc != 1) {
		op_keep(m, &r, &e, v);
		*partial = e.partial;
		rc = 0;
		if (e.rc < 0) {
			errno = EIO;
			rc = sh5_errprintf(m->errp, "%s", e.err);
		}
	} else if (!done && cur < m->nin) {
		op_mark(m, cur, hung, st);
	}
	reports_free(&r);
	free(v);
	return rc;
}
