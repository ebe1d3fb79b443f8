/* jobevents_csv.c - sh5_evstep_write_csv(): a step's events as
 * event-trace CSV version 1 (see jobevents.h and
 * ../shared/notes/event-trace-csv.md). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sync/jobevents.h"
#include "sync/trace.h"	/* sh5_trace_op_name(), sh5_trace_op_class() */

static int rooted(unsigned op)
{
	enum sh5_coll_class c = sh5_trace_op_class(op);

	return c == SH5_COLL_1TON || c == SH5_COLL_NTO1;
}

static struct sh5_evcomm *comm_find(const struct sh5_evstep *s, uint64_t g)
{
	size_t lo = 0, hi = s->ncomms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->comms[mid].global == g)
			return &s->comms[mid];
		if (s->comms[mid].global < g)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Mark the communicators used (1: p2p, 2: collective); check those a
 * collective uses have members. */
static int comms_used(const struct sh5_evstep *s, unsigned char *used,
		      struct sh5_error *errp)
{
	size_t i, k;

	for (i = 0; i < s->ntasks; i++) {
		const struct sh5_evtask *t = &s->tasks[i];

		for (k = 0; k < t->nev; k++) {
			const struct sh5ev_rec *e = &t->ev[k];
			struct sh5_evcomm *c;
			uint64_t g;

			if (e->kind < SH5EV_K_SEND || e->kind > SH5EV_K_CEND)
				continue;
			g = sh5_evstep_comm(t, e->id);
			if (g == UINT64_MAX || !(c = comm_find(s, g))) {
				errno = EINVAL;
				return sh5_errprintf(errp, "%s: record %zu: "
					"communicator without definition",
					t->path, k);
			}
			if (e->kind >= SH5EV_K_CBEGIN && !c->tasks) {
				errno = EINVAL;
				return sh5_errprintf(errp, "%s: record %zu: "
					"collective on communicator %" PRIu64
					", whose members were not recorded",
					t->path, k, g);
			}
			used[c - s->comms] |= e->kind >= SH5EV_K_CBEGIN ? 2 : 1;
		}
	}
	return 0;
}

static int write_header(const struct sh5_evstep *s, FILE *f,
			const unsigned char *used)
{
	size_t i, k;

	fputs("#sh5-trace 1\n", f);
	for (i = 0; i < s->ncomms; i++) {
		const struct sh5_evcomm *c = &s->comms[i];

		/* MPI_COMM_WORLD always, the others when used. */
		if (!c->tasks || (c->global != 0 && !used[i]))
			continue;
		fprintf(f, "#comm %" PRIu64, c->global);
		for (k = 0; k < c->size; k++)
			fprintf(f, " %" PRIu32, c->tasks[k]);
		fputc('\n', f);
	}
	for (i = 0; i < s->nnodes; i++) {
		int any = 0;

		for (k = 0; k < s->ntasks; k++) {
			if (s->tasks[k].node != i)
				continue;
			if (!any)
				fprintf(f, "#node %" PRId32, s->nodes[i].index);
			any = 1;
			fprintf(f, " %" PRIu32, s->tasks[k].task);
		}
		if (any)
			fputc('\n', f);
	}
	return 0;
}

static void write_event(const struct sh5_evstep *s,
			const struct sh5_evtask *t, const struct sh5ev_rec *e,
			int64_t time, FILE *f)
{
	uint64_t g;

	switch (e->kind) {
	case SH5EV_K_SEND:
	case SH5EV_K_RECV:
		g = sh5_evstep_comm(t, e->id);
		fprintf(f, "%" PRIu32 ",%" PRId64 ",%s,%" PRId64 ",%" PRId32
			",%" PRIu64 ",,%" PRIu64 "\n", t->task, time,
			e->kind == SH5EV_K_SEND ? "SEND" : "RECV",
			sh5_evstep_loc(s, e->peer), e->tag, g, e->bytes);
		break;
	case SH5EV_K_CBEGIN:
	case SH5EV_K_CEND:
		g = sh5_evstep_comm(t, e->id);
		fprintf(f, "%" PRIu32 ",%" PRId64 ",%s,%s,,%" PRIu64 ",",
			t->task, time,
			e->kind == SH5EV_K_CBEGIN ? "CBEGIN" : "CEND",
			sh5_trace_op_name(e->op), g);
		if (rooted(e->op))
			fprintf(f, "%" PRId64, sh5_evstep_loc(s, e->peer));
		fprintf(f, ",%" PRIu64 "\n", e->bytes);
		break;
	default:
		fprintf(f, "%" PRIu32 ",%" PRId64 ",INT,,,,,\n", t->task,
			time);
	}
}

int sh5_evstep_write_csv(const struct sh5_evstep *s, FILE *f,
			 const char *name, int use_sync,
			 struct sh5_error *errp)
{
	unsigned char *used;
	size_t i, k, o;

	if (use_sync && !s->synced) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: step %s has no corrected "
				     "event times (SyncTimeNs)", name,
				     s->step);
	}
	if (!(used = calloc(s->ncomms + 1, 1))) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "out of memory");
	}
	if (comms_used(s, used, errp) < 0) {
		free(used);
		return -1;
	}
	write_header(s, f, used);
	free(used);
	for (i = 0; i < s->ntasks; i++) {
		const struct sh5_evtask *t = &s->tasks[i];
		const struct sh5_evnode *n = &s->nodes[t->node];

		/* OFFSET lines go in by the raw local time, in both forms,
		 * so that the two files differ in event times only. */
		for (k = 0, o = 0; k < t->nev; k++) {
			for (; o < n->noff &&
			       n->off[o].local_ns <= t->ev[k].time_ns; o++)
				fprintf(f, "%" PRIu32 ",%" PRId64 ",OFFSET,%"
					PRId64 ",%" PRId64 ",,,\n", t->task,
					n->off[o].local_ns,
					n->off[o].offset_ns, n->off_rtt[o]);
			write_event(s, t, &t->ev[k],
				    use_sync ? t->sync[k] : t->ev[k].time_ns,
				    f);
		}
		for (; o < n->noff; o++)
			fprintf(f, "%" PRIu32 ",%" PRId64 ",OFFSET,%" PRId64
				",%" PRId64 ",,,\n", t->task,
				n->off[o].local_ns, n->off[o].offset_ns,
				n->off_rtt[o]);
		if (ferror(f))
			break;
	}
	if (fflush(f) != 0 || ferror(f)) {
		if (!errno)
			errno = EIO;
		return sh5_errprintf(errp, "%s: write error: %s", name,
				     strerror(errno));
	}
	return 0;
}
