/* onefeed.c - the one-pass feeder: the reader child of the second pass
 * also checks each input (what a checking child of the first pass does)
 * just before it reads it, so that an input that is not copied whole is
 * opened by HDF5 once in the children instead of twice (see
 * merge_int.h, mergejob.c).
 *
 * The child sends, per input from the one it started at: FEED_CHECKED
 * with the check's struct probe_msg (inputs not checked before), the
 * records of its series as the reader does (usable inputs that are not
 * copied whole), FEED_DONE.  The merge takes an input's check before it
 * opens the input itself (its own HDF5 reading comes after a child's,
 * as in the two passes).  A crash or hang of the child during a check
 * marks that input as a checking child's would; during the records, the
 * series as the reader's would; a new child goes on after it. */
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

/* The child is gone or stuck (hung: killed): reaped; when it was on the
 * check of input i, i is marked.  A child that died on an earlier
 * input's records (already read here) marks nothing. */
static void child_lost(struct mstate *m, size_t i, int hung)
{
	int st = 0;

	if (hung)
		kill(m->feed_pid, SIGKILL);
	close(m->feed_fd);
	m->feed_fd = -1;
	m->feed_have = 0;
	waitpid(m->feed_pid, &st, 0);
	if (m->feed_at == i)
		mg_probe_mark(m, i, hung, st);
}

/* The next header from the child in m->feed_head.  0; 1 when the child
 * ended; 2 when it shows no progress for the read timeout. */
static int next_head(struct mstate *m)
{
	struct pollfd pf = { m->feed_fd, POLLIN, 0 };
	int pr;

	if (m->feed_have)
		return 0;
	while ((pr = poll(&pf, 1, mg_read_timeout() * 1000)) < 0 &&
	       errno == EINTR)
		;
	if (pr == 0)
		return 2;
	if (pr < 0 || sh5_fd_read_all(m->feed_fd, &m->feed_head,
				      sizeof(m->feed_head)) < 0)
		return 1;
	m->feed_have = 1;
	return 0;
}

/* The check of input i from the child.  0 when it came (kept), 1 when
 * the child was lost (i may be marked), -1 when the child is out of
 * step (stopped). */
static int take_check(struct mstate *m, size_t i)
{
	struct feed_head *h = &m->feed_head;
	struct probe_msg msg;
	int r;

	for (;;) {
		if ((r = next_head(m)) != 0) {
			child_lost(m, i, r == 2);
			return 1;
		}
		if (h->status == FEED_CHECKED)
			break;
		/* Left over from an input written before: passed over. */
		if (h->file >= i || mg_feed_discard(m) < 0) {
			mg_feeder_stop(m);
			return -1;
		}
	}
	m->feed_have = 0;
	if (h->file != i || h->bytes < sizeof(msg) ||
	    sh5_fd_read_all(m->feed_fd, &msg, sizeof(msg)) < 0 ||
	    msg.idx != i) {
		mg_feeder_stop(m);
		return -1;
	}
	mg_probe_msg_tail(m->feed_fd, &msg);
	mg_probe_keep(m, &msg);
	return 0;
}

int mg_onefeed_gate(struct mstate *m, size_t i)
{
	const struct sh5_merge_hooks *hk = m->o->hooks;
	struct finfo *f = &m->fi[i];

	while (!f->probed) {
		if (m->feed_fd < 0)
			mg_feeder_start(m, i);
		if (m->feed_fd < 0 || take_check(m, i) < 0)
			return 1; /* no child, or out of step */
	}
	/* Without --allow-partial a problem stops the merge: the normal
	 * way checks the rest and stops. */
	if (!m->o->allow_partial &&
	    (!f->usable || !strcmp(f->status, "salvaged")))
		return 1;
	if (f->usable && f->probe_hit && hk && hk->sync_rows &&
	    !hk->never_sync)
		return 1;
	return 0;
}

void mg_onefeed_drop(struct mstate *m)
{
	size_t i;

	for (i = 0; i < m->ndr; i++) {
		free(m->dr[i].file);
		free(m->dr[i].msg);
	}
	free(m->dr);
	m->dr = NULL;
	m->ndr = 0;
	m->defer = 0;
}

/* The reports held back, shown and counted. */
static void held_show(struct mstate *m)
{
	const struct sh5_merge_opts *o = m->o;
	size_t i;

	for (i = 0; i < m->ndr; i++) {
		struct dreport *d = &m->dr[i];

		if (d->error)
			m->st->problems++;
		if (o->report)
			o->report(o->arg, d->error, d->file, d->msg);
	}
	mg_onefeed_drop(m);
}

int mg_onefeed_failed(struct mstate *m, size_t ncpu)
{
	struct sh5_error keep = { "" };

	if (m->onefeed_ended) {
		/* The first pass's end failed: nothing written shows, as
		 * after the two passes. */
		mg_onefeed_drop(m);
		return -1;
	}
	if (m->errp)
		keep = *m->errp;
	m->defer = 0;
	/* The first pass finished by the checking children (the inputs
	 * not checked yet), its reports and findings. */
	mg_probe_start(m, ncpu);
	if (mg_pass1_done(m) < 0 || m->st->skipped == m->nin ||
	    (m->st->problems && !m->o->allow_partial)) {
		/* The two passes would have stopped here, before writing. */
		mg_onefeed_drop(m);
		return 1;
	}
	held_show(m);
	if (m->errp)
		*m->errp = keep;
	return -1;
}

int mg_onefeed_end(struct mstate *m)
{
	const struct sh5_merge_opts *o = m->o;
	int r;

	m->defer = 0;
	m->onefeed_ended = 1;
	/* Every input is checked: the reports of the first pass, its
	 * findings per step, the hooks told. */
	if ((r = mg_pass1_done(m)) < 0)
		return -1;
	if (r || m->st->skipped == m->nin ||
	    (m->st->problems && !o->allow_partial))
		return 1;
	/* Then what the writing found, as after the two passes. */
	held_show(m);
	return 0;
}
