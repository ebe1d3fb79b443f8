/* jobevents_ids.c - see jobevents.h: after reading, the checks that tie
 * a step's events together: world ranks -> locations, communicators and
 * their members, the definition of every id a record uses
 * (jobevents_int.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sync/jobevents.h"
#include "sync/jobevents_int.h"
#include "sync/trace.h"	/* sh5_trace_op_class() */
#include "common/sort.h"

int sh5_jev_set_ranks(struct sh5_evstep *s, struct sh5_error *errp)
{
	size_t i, k;

	for (i = 0; i < s->ntasks; i++) {
		struct sh5_evtask *t = &s->tasks[i];

		if (i && t->task == s->tasks[i - 1].task) {
			errno = EINVAL;
			return sh5_errprintf(errp, "%s: task %" PRIu32 " has "
					     "events on two nodes (also %s)",
					     t->path, t->task,
					     s->tasks[i - 1].path);
		}
		for (k = 0; k < t->nev; k++)
			if (t->ev[k].kind == SH5EV_K_RANK) {
				if (t->ev[k].peer < 0) {
					errno = EINVAL;
					return sh5_errprintf(errp, "%s: record "
						"%zu: RANK with world rank %"
						PRId32, t->path, k,
						t->ev[k].peer);
				}
				t->world_rank = t->ev[k].peer;
				break;
			}
	}
	/* A map world rank -> location when the ranks are dense enough
	 * (they are 0..n-1 in a sane step), else a search per lookup. */
	for (i = 0, k = 0; i < s->ntasks; i++)
		if (s->tasks[i].world_rank >= 0 &&
		    (size_t)s->tasks[i].world_rank + 1 > k)
			k = (size_t)s->tasks[i].world_rank + 1;
	if (k && k <= 4 * s->ntasks + 1024 &&
	    (s->rank_loc = malloc(k * sizeof(*s->rank_loc)))) {
		s->nrank_loc = k;
		for (i = 0; i < k; i++)
			s->rank_loc[i] = -1;
	}
	for (i = 0; i < s->ntasks; i++) {
		int32_t r = s->tasks[i].world_rank;
		int64_t other = -1;

		if (r < 0)
			continue;
		if (s->rank_loc) {
			other = s->rank_loc[r];
			s->rank_loc[r] = s->tasks[i].task;
		} else {
			for (k = 0; k < i; k++)
				if (s->tasks[k].world_rank == r)
					other = s->tasks[k].task;
		}
		if (other >= 0) {
			errno = EINVAL;
			return sh5_errprintf(errp, "%s: world rank %" PRId32
					     " is also task %" PRId64 "'s",
					     s->tasks[i].path, r, other);
		}
	}
	return 0;
}

/* Location of world rank r >= 0 from a RANK record, or -1. */
static int64_t ranked(const struct sh5_evstep *s, int32_t r)
{
	size_t i;

	if (s->rank_loc)
		return (size_t)r < s->nrank_loc ? s->rank_loc[r] : -1;
	for (i = 0; i < s->ntasks; i++)
		if (s->tasks[i].world_rank == r)
			return s->tasks[i].task;
	return -1;
}

int64_t sh5_evstep_loc(const struct sh5_evstep *s, int32_t r)
{
	int64_t l;

	if (r < 0)
		return -1;
	l = ranked(s, r);
	return l >= 0 ? l : r;
}

/* Same, warning once about the fallback. */
static int64_t loc_of(struct sh5_evstep *s, int32_t r, int *warned)
{
	int64_t l;

	if (r < 0)
		return -1;
	if ((l = ranked(s, r)) >= 0)
		return l;
	if (!*warned) {
		sh5_jev_warnf(s, "world rank %" PRId32 " has no RANK record: taken as "
		      "task %" PRId32, r, r);
		*warned = 1;
	}
	return r;
}

const char *sh5_evstep_region(const struct sh5_evtask *t, uint32_t id,
			      uint32_t *flags)
{
	size_t i;

	for (i = 0; i < t->nregions; i++)
		if (t->regions[i].region == id) {
			if (flags)
				*flags = t->regions[i].flags;
			return t->regions[i].name;
		}
	if (flags)
		*flags = 0;
	return "?";
}

uint64_t sh5_evstep_comm(const struct sh5_evtask *t, uint32_t local)
{
	size_t i;

	for (i = 0; i < t->ncomms; i++)
		if (t->comms[i].local == local)
			return t->comms[i].global;
	if (local == 0)
		return 0;
	if (local == 1 && t->world_rank >= 0)
		return ((uint64_t)t->world_rank + 1) << 32;
	return UINT64_MAX;
}

static struct sh5_evcomm *comm_get(struct sh5_evstep *s, uint64_t g,
				   size_t *cap)
{
	size_t i;

	for (i = 0; i < s->ncomms; i++)
		if (s->comms[i].global == g)
			return &s->comms[i];
	if (s->ncomms == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		struct sh5_evcomm *v = realloc(s->comms, c * sizeof(*v));

		if (!v)
			return NULL;
		s->comms = v;
		*cap = c;
	}
	memset(&s->comms[s->ncomms], 0, sizeof(s->comms[0]));
	s->comms[s->ncomms].global = g;
	return &s->comms[s->ncomms++];
}

int sh5_jev_mem_cmp(const void *pa, const void *pb)
{
	const struct sh5_evstore_member *a = pa, *b = pb;

	if (a->global != b->global)
		return a->global < b->global ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return a->world_rank < b->world_rank ? -1 : a->world_rank >
							     b->world_rank;
}

static int comm_cmp(const void *pa, const void *pb)
{
	const struct sh5_evcomm *a = pa, *b = pb;

	return a->global < b->global ? -1 : a->global > b->global;
}

static int wr_cmp(const void *pa, const void *pb)
{
	const struct sh5_evtask *const *a = pa, *const *b = pb;

	return (*a)->world_rank < (*b)->world_rank ? -1 :
	       (*a)->world_rank > (*b)->world_rank;
}

/* MPI_COMM_WORLD's members: tasks with a RANK record by world rank, or
 * (no RANK record at all) every task ascending. */
static int world_members(struct sh5_evstep *s, struct sh5_evcomm *c)
{
	struct sh5_evtask **v;
	size_t i, n = 0;

	if (!(v = malloc((s->ntasks + 1) * sizeof(*v))) ||
	    !(c->tasks = malloc((s->ntasks + 1) * sizeof(*c->tasks)))) {
		free(v);
		return -1;
	}
	for (i = 0; i < s->ntasks; i++)
		if (s->tasks[i].world_rank >= 0)
			v[n++] = &s->tasks[i];
	if (!n)
		for (i = 0; i < s->ntasks; i++)
			v[n++] = &s->tasks[i];
	else
		sh5_qsort(v, n, sizeof(*v), wr_cmp);
	for (i = 0; i < n; i++)
		c->tasks[i] = v[i]->task;
	c->size = n;
	free(v);
	return 0;
}

/* errno ENOMEM and "out of memory" in errp; -1. */
static int nomem(struct sh5_error *errp)
{
	errno = ENOMEM;
	return sh5_errprintf(errp, "out of memory");
}

/* The communicators of the tasks' Comms rows: sizes must agree. */
static int comm_sizes(struct sh5_evstep *s, size_t *cap,
		      struct sh5_error *errp)
{
	struct sh5_evcomm *c;
	size_t i, k;

	for (i = 0; i < s->ntasks; i++) {
		struct sh5_evtask *t = &s->tasks[i];

		for (k = 0; k < t->ncomms; k++) {
			uint64_t g = t->comms[k].global;

			if (g == 0)
				continue;
			if (!(c = comm_get(s, g, cap)))
				return nomem(errp);
			if (c->size && c->size != (size_t)t->comms[k].size) {
				errno = EINVAL;
				return sh5_errprintf(errp, "%s: communicator "
					"%" PRIu64 " of size %" PRId32 ", "
					"elsewhere %zu", t->path, g,
					t->comms[k].size, c->size);
			}
			c->size = (size_t)t->comms[k].size;
		}
	}
	return 0;
}

/* Member lists: duplicates (several nodes) collapse, conflicts and
 * wrong sizes are errors. */
static int comm_members(struct sh5_evstep *s, struct sh5_evstore_member *mem,
			size_t *nmem, struct sh5_error *errp)
{
	size_t i, k, j;
	int warned = 0;
	struct sh5_evcomm *c;

	sh5_qsort(mem, *nmem, sizeof(*mem), sh5_jev_mem_cmp);
	for (i = 0, j = 0; i < *nmem; i++)
		if (!j || sh5_jev_mem_cmp(&mem[i], &mem[j - 1]))
			mem[j++] = mem[i];
	*nmem = j;
	for (i = 0; i < *nmem; i = k) {
		uint64_t g = mem[i].global;

		for (k = i; k < *nmem && mem[k].global == g; k++)
			;
		for (j = 0; j < s->ncomms; j++)
			if (s->comms[j].global == g)
				break;
		if (j == s->ncomms || g == 0) {
			errno = EINVAL;
			return sh5_errprintf(errp, "CommMembers: rows for "
				"communicator %" PRIu64 ", which %s", g,
				g ? "no Comms row defines" :
				"is MPI_COMM_WORLD (members from RANK)");
		}
		c = &s->comms[j];
		if (k - i != c->size) {
			errno = EINVAL;
			return sh5_errprintf(errp, "CommMembers: communicator "
				"%" PRIu64 " has %zu member rows, its size is "
				"%zu", g, k - i, c->size);
		}
		if (!(c->tasks = malloc(c->size * sizeof(*c->tasks))))
			return nomem(errp);
		for (j = i; j < k; j++) {
			int64_t loc;

			if (mem[j].rank != (int32_t)(j - i)) {
				errno = EINVAL;
				return sh5_errprintf(errp, "CommMembers: "
					"communicator %" PRIu64 ": ranks not "
					"0..%zu once each", g, c->size - 1);
			}
			loc = loc_of(s, mem[j].world_rank, &warned);
			if (loc < 0 || loc > UINT32_MAX) {
				errno = EINVAL;
				return sh5_errprintf(errp, "CommMembers: "
					"communicator %" PRIu64 ": world rank "
					"%" PRId32, g, mem[j].world_rank);
			}
			c->tasks[j - i] = (uint32_t)loc;
		}
	}
	return 0;
}

/* MPI_COMM_SELF of each ranked task. */
static int comm_selves(struct sh5_evstep *s, size_t *cap,
		       struct sh5_error *errp)
{
	struct sh5_evcomm *c;
	size_t i;

	for (i = 0; i < s->ntasks; i++) {
		struct sh5_evtask *t = &s->tasks[i];
		uint64_t g;

		if (t->world_rank < 0)
			continue;
		g = ((uint64_t)t->world_rank + 1) << 32;
		if (!(c = comm_get(s, g, cap)))
			return nomem(errp);
		if (!c->tasks) {
			if (!(c->tasks = malloc(sizeof(*c->tasks))))
				return nomem(errp);
			c->tasks[0] = t->task;
			c->size = 1;
		}
	}
	return 0;
}

int sh5_jev_build_comms(struct sh5_evstep *s, struct sh5_evstore_member *mem,
			size_t *nmem, struct sh5_error *errp)
{
	size_t cap = 0;
	struct sh5_evcomm *c;

	if (!(c = comm_get(s, 0, &cap)) || world_members(s, c) < 0)
		return nomem(errp);
	if (comm_sizes(s, &cap, errp) < 0 ||
	    comm_members(s, mem, nmem, errp) < 0 ||
	    comm_selves(s, &cap, errp) < 0)
		return -1;
	sh5_qsort(s->comms, s->ncomms, sizeof(*s->comms), comm_cmp);
	return 0;
}

static int op_rooted(unsigned op)
{
	enum sh5_coll_class c = sh5_trace_op_class(op);

	return c == SH5_COLL_1TON || c == SH5_COLL_NTO1;
}

static int region_defined(const struct sh5_evtask *t, uint32_t id)
{
	size_t i;

	for (i = 0; i < t->nregions; i++)
		if (t->regions[i].region == id)
			return 1;
	return 0;
}

/* Every record of every task: known kind, defined ids, mapped peers. */
int sh5_jev_check_records(struct sh5_evstep *s, struct sh5_error *errp)
{
	size_t i, k;
	int warned = 0;

	for (i = 0; i < s->ntasks; i++) {
		struct sh5_evtask *t = &s->tasks[i];

		for (k = 0; k < t->nev; k++) {
			const struct sh5ev_rec *e = &t->ev[k];
			const char *what = NULL;

			switch (e->kind) {
			case SH5EV_K_ENTER:
			case SH5EV_K_EXIT:
				if (!region_defined(t, e->id))
					what = "region id without definition";
				break;
			case SH5EV_K_SEND:
			case SH5EV_K_RECV:
				if (sh5_evstep_comm(t, e->id) == UINT64_MAX)
					what = "communicator id without "
					       "definition";
				else if (e->peer < 0)
					what = "negative peer";
				else
					loc_of(s, e->peer, &warned);
				break;
			case SH5EV_K_CBEGIN:
			case SH5EV_K_CEND:
				if (e->op == SH5EV_OP_NONE ||
				    e->op >= SH5EV_OP_COUNT)
					what = "unknown collective operation";
				else if (sh5_evstep_comm(t, e->id) ==
					 UINT64_MAX)
					what = "communicator id without "
					       "definition";
				else if (op_rooted(e->op) && e->peer < 0)
					what = "rooted operation without root";
				else if (op_rooted(e->op))
					loc_of(s, e->peer, &warned);
				break;
			case SH5EV_K_PHASE:
			case SH5EV_K_OBJECT:
			case SH5EV_K_RANK:
			case SH5EV_K_LOST:
				break;
			default:
				what = "unknown kind";
			}
			if (what) {
				errno = EINVAL;
				return sh5_errprintf(errp, "%s: record %zu "
					"(kind %u, id %" PRIu32 "): %s",
					t->path, k, e->kind, e->id, what);
			}
		}
	}
	return 0;
}
