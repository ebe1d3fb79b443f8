/* probe.c - the checking children of the first pass and what follows
 * it: findings per step, the synchronization decision (see merge_int.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fdio.h"
#include "merge/merge_int.h"

/* Report what the first pass found about one input. */
static void report_file(struct mstate *m, struct finfo *f)
{
	if (!f->usable)
		mg_report(m, 1, f->in->path, "%s", f->reason);
	else if (!strcmp(f->status, "salvaged"))
		mg_report(m, 1, f->in->path, "damaged: %s; %" PRIu64 " of %"
		       PRIu64 " samples lost, the rest salvaged", f->reason,
		       f->lost, f->samples);
}

/* The first pass runs in child processes: HDF5 1.10 can crash on some
 * damaged files (it trusts heap and index contents), and such a crash must
 * only mark that file as bad.  Child k of P (one per CPU, at most 4)
 * checks inputs k, k + P, k + 2P, ... and sends one message per input;
 * when a child dies, the input it was on is marked and a new child takes
 * the rest of its share. */


void mg_probe_check(struct mstate *m, size_t idx, struct probe_msg *msg)
{
	memset(msg, 0, sizeof(*msg));
	msg->idx = idx;
	msg->f = m->fi[idx];
	mg_check_file(m, &msg->f, msg->user, msg->cluster);
}

size_t mg_probe_msg_len(const struct probe_msg *msg)
{
	return sizeof(*msg) + msg->f.nents * sizeof(*msg->f.ents) +
	       msg->f.blob_len;
}

int mg_probe_msg_send(int fd, const struct probe_msg *msg)
{
	if (sh5_fd_write_all(fd, msg, sizeof(*msg)) < 0 ||
	    (msg->f.nents &&
	     sh5_fd_write_all(fd, msg->f.ents, msg->f.nents *
			      sizeof(*msg->f.ents)) < 0) ||
	    (msg->f.blob_len &&
	     sh5_fd_write_all(fd, msg->f.blob, msg->f.blob_len) < 0))
		return -1;
	return 0;
}

/* The first input from i on (by stride) not checked yet (inputs the
 * one-pass child crashed or hung on are marked before the first pass). */
static size_t next_unprobed(const struct mstate *m, size_t i, size_t stride)
{
	while (i < m->nin && m->fi[i].probed)
		i += stride;
	return i;
}

static int spawn_prober(struct mstate *m, struct prober *p, size_t first,
			size_t stride)
{
	int pfd[2];
	pid_t pid;
	size_t i;

	if (pipe(pfd) < 0)
		return -1;
	if ((pid = fork()) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		mg_child_signals();
		close(pfd[0]);
		m->in_child = 1;
		for (i = first; i < m->nin; i += stride) {
			struct probe_msg msg;

			if (m->fi[i].probed)
				continue;
			mg_probe_check(m, i, &msg);
			if (mg_probe_msg_send(pfd[1], &msg) < 0)
				_exit(3);
			free(msg.f.ents);
			free(msg.f.blob);
		}
		_exit(0);
	}
	close(pfd[1]);
	p->pid = pid;
	p->fd = pfd[0];
	p->next = next_unprobed(m, first, stride);
	p->live = 1;
	p->since = mg_now_s();
	return 0;
}

/* Check inputs first, first + stride, ... in this process (no child
 * could be started for them). */
static void check_here(struct mstate *m, size_t first, size_t stride)
{
	size_t i;

	for (i = first; i < m->nin; i += stride) {
		if (m->fi[i].probed)
			continue;
		mg_check_file(m, &m->fi[i], m->user, m->cluster);
		m->fi[i].probed = 1;
		m->probe.done++;
	}
}

/* Start the checking children: par of them (at most 4). */
void mg_probe_start(struct mstate *m, size_t par)
{
	struct probers *ps = &m->probe;
	size_t i, k;

	if (par < 1)
		par = 1;
	if (par > 4)
		par = 4;
	if (par > m->nin)
		par = m->nin;
	ps->par = par;
	ps->done = 0;
	for (i = 0; i < m->nin; i++) {
		m->fi[i].in = &m->in[i];
		ps->done += m->fi[i].probed;
	}
	for (k = 0; k < par; k++)
		if (next_unprobed(m, k, par) >= m->nin) {
			/* Its share was checked before (mg_onefeed_gate()). */
			ps->pr[k].live = 0;
		} else if (spawn_prober(m, &ps->pr[k], k, par) < 0) {
			/* No child: check this share here. */
			ps->pr[k].live = 0;
			check_here(m, k, par);
		}
}

/* Nothing left to hear from (cannot happen while inputs are unchecked):
 * mark the rest. */
static void probe_none_left(struct mstate *m)
{
	size_t i;

	for (i = 0; i < m->nin; i++)
		if (!m->fi[i].probed) {
			m->fi[i].probed = 1;
			m->fi[i].usable = 0;
			m->fi[i].status = "skipped";
			snprintf(m->fi[i].reason, sizeof(m->fi[i].reason),
				 "could not be checked");
			m->probe.done++;
		}
}

/* Read the message of p's child about its current input (and the series
 * and totals of a whole input that follow it).  1 when one came, 0 when
 * the child ended. */
static int probe_read_msg(struct prober *p, struct probe_msg *msg)
{
	size_t off = 0;

	while (off < sizeof(*msg)) {
		ssize_t r = read(p->fd, (char *)msg + off, sizeof(*msg) - off);

		if (r <= 0)
			break;
		off += (size_t)r;
	}
	if (off != sizeof(*msg) || msg->idx != p->next)
		return 0;
	mg_probe_msg_tail(p->fd, msg);
	return 1;
}

void mg_probe_msg_tail(int fd, struct probe_msg *msg)
{
	/* The series and totals of a whole input follow. */
	msg->f.ents = NULL;
	msg->f.blob = NULL;
	if ((msg->f.nents &&
	     (msg->f.nents > 1u << 20 ||
	      !(msg->f.ents = calloc(msg->f.nents, sizeof(*msg->f.ents))) ||
	      sh5_fd_read_all(fd, msg->f.ents, msg->f.nents *
			      sizeof(*msg->f.ents)) < 0)) ||
	    (msg->f.blob_len &&
	     (msg->f.blob_len > 1u << 26 ||
	      !(msg->f.blob = malloc(msg->f.blob_len)) ||
	      sh5_fd_read_all(fd, msg->f.blob, msg->f.blob_len) < 0))) {
		/* A short message: the child died; taken as the normal
		 * way's problem. */
		free(msg->f.ents);
		free(msg->f.blob);
		msg->f.ents = NULL;
		msg->f.blob = NULL;
		msg->f.nents = msg->f.blob_len = 0;
		msg->f.whole = 0;
	}
}

/* Keep what p's child found about its input; on to its next one. */
static void probe_take(struct mstate *m, struct prober *p,
		       struct probe_msg *msg)
{
	struct probers *ps = &m->probe;

	mg_probe_keep(m, msg);
	p->next = next_unprobed(m, p->next + ps->par, ps->par);
	p->since = mg_now_s();
}

void mg_probe_keep(struct mstate *m, const struct probe_msg *msg)
{
	m->fi[msg->idx] = msg->f;
	m->fi[msg->idx].probed = 1;
	if (!m->user[0])
		memcpy(m->user, msg->user, 64);
	if (!m->cluster[0])
		memcpy(m->cluster, msg->cluster, 64);
	m->probe.done++;
	if (m->o->progress)
		m->o->progress(m->o->arg, 1, m->probe.done, m->nin);
}

void mg_probe_mark(struct mstate *m, size_t idx, int hung, int st)
{
	struct finfo *f = &m->fi[idx];

	f->usable = 0;
	f->status = "skipped";
	if (hung)
		snprintf(f->reason, sizeof(f->reason), "corrupt: HDF5 does "
			 "not finish reading it (stopped after %d s)",
			 mg_read_timeout());
	else if (mg_changed(m, idx, f->reason, sizeof(f->reason)))
		;
	else if (WIFSIGNALED(st))
		snprintf(f->reason, sizeof(f->reason), "corrupt: reading it "
			 "crashes HDF5 (signal %d)", WTERMSIG(st));
	else
		snprintf(f->reason, sizeof(f->reason), "could not be checked");
	f->probed = 1;
	m->probe.done++;
}

/* p's child ended (hung: killed as stuck): done, or it died on p->next,
 * which is marked; a new child takes the rest of its share. */
static void probe_ended(struct mstate *m, struct prober *p, int hung)
{
	struct probers *ps = &m->probe;
	size_t par = ps->par;
	int st = 0;

	close(p->fd);
	p->live = 0;
	waitpid(p->pid, &st, 0);
	if (p->next >= m->nin)
		return;
	mg_probe_mark(m, p->next, hung, st);
	if (p->next + par < m->nin &&
	    spawn_prober(m, p, p->next + par, par) < 0)
		check_here(m, p->next + par, par);
}

/* Take what the children sent (waiting up to a second for it). */
static void probe_poll(struct mstate *m)
{
	struct probers *ps = &m->probe;
	struct pollfd pf[4];
	size_t map[4], n = 0, i, k;

	for (k = 0; k < ps->par; k++)
		if (ps->pr[k].live) {
			pf[n].fd = ps->pr[k].fd;
			pf[n].events = POLLIN;
			map[n++] = k;
		}
	if (!n) {
		probe_none_left(m);
		return;
	}
	if (poll(pf, n, 1000) < 0)
		return;
	for (i = 0; i < n; i++) {
		struct prober *p = &ps->pr[map[i]];
		struct probe_msg msg;
		int hung = 0;

		if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) {
			if (mg_now_s() - p->since < mg_read_timeout())
				continue;
			/* Stuck on this input: end it. */
			kill(p->pid, SIGKILL);
			hung = 1;
		}
		if (!hung && probe_read_msg(p, &msg)) {
			probe_take(m, p, &msg);
			continue;
		}
		probe_ended(m, p, hung);
	}
}

/* Wait until input idx is checked (idx == m->nin: all of them, and the
 * children are gone). */
void mg_probe_until(struct mstate *m, size_t idx)
{
	struct probers *ps = &m->probe;
	size_t k;

	if (idx < m->nin) {
		while (!m->fi[idx].probed)
			probe_poll(m);
		return;
	}
	while (ps->done < m->nin)
		probe_poll(m);
	for (k = 0; k < ps->par; k++)
		if (ps->pr[k].live) {
			close(ps->pr[k].fd);
			waitpid(ps->pr[k].pid, NULL, 0);
			ps->pr[k].live = 0;
		}
}

/* One child checks the inputs from its current one on: replace it with
 * par children sharing them (the second pass started early had it alone,
 * leaving it a CPU). */
void mg_probe_widen(struct mstate *m, size_t par)
{
	struct probers *ps = &m->probe;
	struct prober *p = &ps->pr[0];
	size_t from = p->next, k;

	if (par > 4)
		par = 4;
	if (ps->par != 1 || !p->live || par < 2 || from + 1 >= m->nin)
		return;
	kill(p->pid, SIGKILL);
	close(p->fd);
	waitpid(p->pid, NULL, 0);
	p->live = 0;
	if (par > m->nin - from)
		par = m->nin - from;
	ps->par = par;
	for (k = 0; k < par; k++)
		if (spawn_prober(m, &ps->pr[k], from + k, par) < 0) {
			ps->pr[k].live = 0;
			check_here(m, from + k, par);
		}
}

/* Stop the children still checking (the merge ended early). */
void mg_probe_stop(struct mstate *m)
{
	struct probers *ps = &m->probe;
	size_t k;

	for (k = 0; k < ps->par; k++)
		if (ps->pr[k].live) {
			kill(ps->pr[k].pid, SIGKILL);
			close(ps->pr[k].fd);
			waitpid(ps->pr[k].pid, NULL, 0);
			ps->pr[k].live = 0;
		}
}

/* What the usable inputs of a step say about it. */
struct step_tally {
	size_t usable;
	uint64_t samples;
	long max_task, tasks, max_index, nnodes, step_tasks;
	int tasks_known;
	const char *st_from, *nn_from; /* who said so */
};

static void step_tally(struct mstate *m, size_t lo, size_t hi,
		       struct step_tally *t)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	t->max_task = t->max_index = t->nnodes = t->step_tasks = -1;
	t->tasks_known = 1;
	for (i = lo; i < hi; i++) {
		struct finfo *f = &m->fi[i];

		if (!f->usable)
			continue;
		t->usable++;
		t->samples += f->samples;
		if (f->max_task > t->max_task)
			t->max_task = f->max_task;
		if (f->ntasks >= 0)
			t->tasks += f->ntasks;
		else
			t->tasks_known = 0;
		if (f->node_index > t->max_index)
			t->max_index = f->node_index;
		if (f->nnodes > t->nnodes) {
			t->nnodes = f->nnodes;
			t->nn_from = f->in->file;
		}
		if (f->step_tasks > t->step_tasks) {
			t->step_tasks = f->step_tasks;
			t->st_from = f->in->file;
		}
	}
}

/* Node indexes 0 .. max_index without a file, as ranges.  0 or -1. */
static int missing_indexes(struct mstate *m, size_t lo, size_t hi,
			   long max_index, const char *nn_from)
{
	const char *step = m->in[lo].step;
	long k, first = -1;
	char *seen;
	size_t i;

	if (max_index < 0 || max_index >= 1000000 ||
	    !(seen = calloc((size_t)max_index + 1, 1)))
		return 0;
	for (i = lo; i < hi; i++)
		if (m->fi[i].usable && m->fi[i].node_index >= 0)
			seen[m->fi[i].node_index] = 1;
	for (k = 0; k <= max_index + 1; k++) {
		if (k <= max_index && !seen[k]) {
			if (first < 0)
				first = k;
			continue;
		}
		if (first < 0)
			continue;
		if (mg_add_missing(m, "step %s: node index%s %ld%s%.0ld "
				   "missing (no node-step file%s%s%s)",
				   step, k - 1 > first ? "es" : "", first,
				   k - 1 > first ? "-" : "",
				   k - 1 > first ? k - 1 : 0,
				   nn_from ? "; per " : "",
				   nn_from ? nn_from : "",
				   nn_from ? "'s Number of Nodes" : "") < 0) {
			free(seen);
			return -1;
		}
		first = -1;
	}
	free(seen);
	return 0;
}

/* Findings per step that no single file shows: missing nodes or tasks,
 * empty steps. */
static int check_step(struct mstate *m, size_t lo, size_t hi)
{
	const char *step = m->in[lo].step;
	struct step_tally t;

	step_tally(m, lo, hi, &t);
	if (!t.usable)
		return mg_add_missing(m, "step %s: no usable node-step file",
				      step);
	if (!t.samples && mg_add_missing(m, "step %s: empty step (no "
					 "samples in %zu node-step file%s)",
					 step, t.usable,
					 t.usable == 1 ? "" : "s") < 0)
		return -1;
	/* Node indexes: 0 .. max(index, Number of Nodes - 1). */
	if (t.nnodes - 1 > t.max_index && strcmp(step, "batch") &&
	    strcmp(step, "interactive"))
		t.max_index = t.nnodes - 1;
	else
		t.nn_from = NULL;
	if (missing_indexes(m, lo, hi, t.max_index, t.nn_from) < 0)
		return -1;
	/* Tasks: the nodes present run `tasks` tasks; a higher task id,
	 * or our files' "Step Tasks", means tasks of a missing node. */
	/* (Slurm gives the batch step the job's task count.) */
	if (t.tasks_known && t.step_tasks > t.max_task + 1 &&
	    strspn(step, "0123456789") == strlen(step))
		t.max_task = t.step_tasks - 1;
	else
		t.st_from = NULL;
	if (t.tasks_known && t.max_task + 1 > t.tasks &&
	    mg_add_missing(m, "step %s: %ld task%s missing (the step runs "
			   "%ld%s%s%s, the nodes present %ld)", step,
			   t.max_task + 1 - t.tasks,
			   t.max_task + 1 - t.tasks == 1 ? "" : "s",
			   t.max_task + 1, t.st_from ? " according to the "
			   "Step Tasks of " : "", t.st_from ? t.st_from : "",
			   "", t.tasks) < 0)
		return -1;
	return 0;
}

/*
 * After the whole first pass: its reports, the findings per step, the
 * synchronization decision (hooks->checked).  Returns whether series may
 * be synchronized (0 or 1), or -1 with errp set.  Once per merge.
 */
int mg_pass1_done(struct mstate *m)
{
	const struct sh5_merge_hooks *hk = m->o->hooks;
	size_t i, lo;
	int sync_maybe, any = 0;

	if (m->pass1_state)
		return m->pass1_state - 1;
	mg_probe_until(m, m->nin);
	for (i = 0; i < m->nin; i++)
		report_file(m, &m->fi[i]);
	for (lo = 0; lo < m->nin; lo = i) {
		for (i = lo; i < m->nin &&
		     !strcmp(m->in[i].step, m->in[lo].step); i++)
			;
		if (check_step(m, lo, i) < 0) {
			errno = ENOMEM;
			return sh5_errprintf(m->errp, "out of memory");
		}
	}
	m->st->skipped = 0;
	for (i = 0; i < m->nin; i++)
		if (!m->fi[i].usable)
			m->st->skipped++;
	sync_maybe = hk && hk->sync_rows && !hk->never_sync;
	if (hk && hk->checked) {
		for (i = 0; i < m->nin; i++)
			any |= m->fi[i].usable ? m->fi[i].probe_hit : 0;
		if ((sync_maybe = hk->checked(hk->arg, any, m->errp)) < 0)
			return -1;
		sync_maybe = sync_maybe && hk->sync_rows;
	}
	m->pass1_state = sync_maybe + 1;
	return sync_maybe;
}

/*
 * Before input i is written while the first pass still runs (m->early):
 * wait for its check.  0 to go on; 1 when the second pass must start
 * over the normal way (the input is not whole, or may be synchronized).
 */
int mg_early_gate(struct mstate *m, size_t i)
{
	const struct sh5_merge_hooks *hk = m->o->hooks;
	struct finfo *f = &m->fi[i];

	if (m->onepass && !f->probed) {
		/* The one-pass child: the check just before the copy. */
		mg_op_start(m, i);
		mg_check_file(m, f, m->user, m->cluster);
		f->probed = 1;
		m->probe.done++;
		if (m->o->progress)
			m->o->progress(m->o->arg, 1, m->probe.done, m->nin);
	}
	mg_probe_until(m, i);
	if (!f->usable || !f->whole)
		return 1;
	if (f->probe_hit && hk && hk->sync_rows && !hk->never_sync)
		return 1;
	return 0;
}
