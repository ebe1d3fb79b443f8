/* evcounters.c - see evcounters.h */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/evcounters.h"
#include "export/evstack.h"
#include "common/json.h"
#include "common/sort.h"

int sh5_evcalls_walk(const struct sh5_evstep *s, sh5_evcall_fn fn, void *arg,
		     struct sh5_error *errp)
{
	struct sh5_evstack st = { 0 };
	struct sh5_evstack_ent ent;
	struct sh5_evcall c;
	char name[SH5EV_NAME_MAX + 16];
	const struct sh5_evtask *t;
	uint32_t flags;
	size_t i, k;
	int64_t tm;
	int rc = -1;

	for (i = 0; i < s->ntasks; i++) {
		t = &s->tasks[i];
		sh5_evstack_reset(&st);
		memset(&c, 0, sizeof(c));
		c.task = t;
		c.counter = name;
		for (k = 0; k < t->nev; k++) {
			const struct sh5ev_rec *e = &t->ev[k];

			tm = t->sync ? t->sync[k] : e->time_ns;
			if (e->kind == SH5EV_K_ENTER) {
				sh5_evstep_region(t, e->id, &flags);
				if (sh5_evstack_push(&st, e->id, flags, tm,
						     k) < 0) {
					sh5_errprintf(errp, "events: out of "
						      "memory");
					goto out;
				}
			} else if (e->kind == SH5EV_K_EXIT &&
				   sh5_evstack_pop(&st, e->id, &ent)) {
				const char *rn = sh5_evstep_region(t, e->id,
								   &flags);

				snprintf(name, sizeof(name), "%s.%s",
					 flags & SH5EV_F_MPI ? "MPI" :
							       "Region", rn);
				c.t_enter = ent.t;
				c.t_exit = tm;
				c.seconds = (double)(tm - ent.t) / 1e9;
				if (fn(arg, &c, errp) < 0)
					goto out;
				c.index++;
			}
		}
	}
	rc = 0;
out:
	sh5_evstack_free(&st);
	return rc;
}

struct evcounter {
	char *name;
	struct sh5_runstats rs;
};

struct sh5_evstats {
	struct evcounter *c;
	size_t n, cap, last;
	uint64_t calls;
};

static int cmp_counter(const void *a, const void *b)
{
	return strcmp(((const struct evcounter *)a)->name,
		      ((const struct evcounter *)b)->name);
}

/* The counter called name, added when missing; NULL on ENOMEM. */
static struct evcounter *counter_get(struct sh5_evstats *st,
				     const char *name)
{
	size_t i;

	if (st->n && !strcmp(st->c[st->last].name, name))
		return &st->c[st->last];
	for (i = 0; i < st->n; i++)
		if (!strcmp(st->c[i].name, name)) {
			st->last = i;
			return &st->c[i];
		}
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 16;
		struct evcounter *nc = realloc(st->c, cap * sizeof(*nc));

		if (!nc)
			return NULL;
		st->c = nc;
		st->cap = cap;
	}
	st->c[st->n].name = strdup(name);
	if (!st->c[st->n].name)
		return NULL;
	sh5_runstats_init(&st->c[st->n].rs);
	st->last = st->n;
	return &st->c[st->n++];
}

static int push_call(void *arg, const struct sh5_evcall *c,
		     struct sh5_error *errp)
{
	struct sh5_evstats *st = arg;
	struct evcounter *ec = counter_get(st, c->counter);

	if (!ec) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "events: out of memory");
	}
	if (sh5_runstats_push(&ec->rs, c->seconds) == 0)
		st->calls++;
	return 0;
}

struct sh5_evstats *sh5_evstats_build(const struct sh5_evstep *s,
				      struct sh5_error *errp)
{
	struct sh5_evstats *st = calloc(1, sizeof(*st));

	if (!st) {
		errno = ENOMEM;
		sh5_errprintf(errp, "events: out of memory");
		return NULL;
	}
	if (sh5_evcalls_walk(s, push_call, st, errp) < 0) {
		sh5_evstats_free(st);
		return NULL;
	}
	sh5_qsort(st->c, st->n, sizeof(*st->c), cmp_counter);
	return st;
}

void sh5_evstats_free(struct sh5_evstats *st)
{
	size_t i;

	if (!st)
		return;
	for (i = 0; i < st->n; i++)
		free(st->c[i].name);
	free(st->c);
	free(st);
}

size_t sh5_evstats_count(const struct sh5_evstats *st)
{
	return st ? st->n : 0;
}

const char *sh5_evstats_name(const struct sh5_evstats *st, size_t i)
{
	return st->c[i].name;
}

const struct sh5_runstats *sh5_evstats_stats(const struct sh5_evstats *st,
					     size_t i)
{
	return &st->c[i].rs;
}

uint64_t sh5_evstats_calls(const struct sh5_evstats *st)
{
	return st ? st->calls : 0;
}

/* ------------------------------------------------------------ pass 2 */

struct anom {
	const struct sh5_evstats *st;
	const struct sh5_evstep *s;
	struct sh5_json *j;
	const char *app;
	double sigma;
	sh5_evstats_top_fn top;
	void *arg;
	const struct sh5_evtask *cur;
	struct sh5_runstats nanom;	/* of the current task */
	int open;
	uint64_t anomalies;
	size_t keys;
};

static const char *node_name(const struct sh5_evstep *s,
			     const struct sh5_evtask *t)
{
	return t->node < s->nnodes ? s->nodes[t->node].name : "?";
}

static int close_task(struct anom *a, struct sh5_error *errp)
{
	if (a->open) {
		sh5_json_array_close(a->j);
		sh5_json_key(a->j, "stats");
		sh5_json_runstats(a->j, &a->nanom);
		sh5_json_object_close(a->j);
		a->open = 0;
	}
	sh5_runstats_init(&a->nanom);
	return sh5_json_flush(a->j, errp) < 0 ? -1 : 0;
}

static void report(struct anom *a, const struct sh5_evcall *c,
		   const struct sh5_runstats *m, double score)
{
	struct sh5_runstats sc;
	struct sh5_counters_anomaly an;
	char key[160];

	if (!a->open) {
		snprintf(key, sizeof(key), "%s:%" PRIu32 ":regions",
			 node_name(a->s, c->task), c->task->task);
		sh5_json_object_open(a->j);
		sh5_json_kv_string(a->j, "key", key);
		sh5_json_key(a->j, "data");
		sh5_json_array_open(a->j);
		a->open = 1;
		a->keys++;
	}
	sh5_runstats_init(&sc);
	sh5_runstats_push(&sc, score);
	sh5_json_object_open(a->j);
	sh5_json_kv_string(a->j, "app", a->app);
	sh5_json_kv_int(a->j, "rank", c->task->task);
	sh5_json_kv_uint(a->j, "step", c->index);
	sh5_json_kv_int(a->j, "min_timestamp", c->t_enter / 1000);
	sh5_json_kv_int(a->j, "max_timestamp", c->t_exit / 1000);
	sh5_json_kv_int(a->j, "n_anomalies", 1);
	sh5_json_key(a->j, "outlier_scores");
	sh5_json_runstats(a->j, &sc);
	sh5_json_object_close(a->j);
	a->anomalies++;
	if (!a->top)
		return;
	memset(&an, 0, sizeof(an));
	an.time_ns = c->t_exit;
	snprintf(an.app, sizeof(an.app), "%s", a->app);
	snprintf(an.node, sizeof(an.node), "%s", node_name(a->s, c->task));
	an.task = c->task->task;
	snprintf(an.counter, sizeof(an.counter), "%s", c->counter);
	an.value = c->seconds;
	an.score = score;
	an.mean = sh5_runstats_mean(m);
	an.stddev = sh5_runstats_stddev(m);
	a->top(a->arg, &an);
}

static int test_call(void *arg, const struct sh5_evcall *c,
		     struct sh5_error *errp)
{
	struct anom *a = arg;
	struct evcounter key, *ec;
	double score;
	int out;

	if (c->task != a->cur) {
		if (close_task(a, errp) < 0)
			return -1;
		a->cur = c->task;
	}
	key.name = (char *)c->counter;
	ec = bsearch(&key, a->st->c, a->st->n, sizeof(*ec), cmp_counter);
	if (!ec) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: counter %s changed between "
				     "passes", c->task->path, c->counter);
	}
	out = sh5_runstats_is_outlier(&ec->rs, c->seconds, a->sigma, &score);
	sh5_runstats_push(&a->nanom, out ? 1.0 : 0.0);
	if (out)
		report(a, c, &ec->rs, score);
	return 0;
}

int sh5_evstats_anomalies(const struct sh5_evstats *st,
			  const struct sh5_evstep *s, struct sh5_json *j,
			  const char *app, double sigma,
			  sh5_evstats_top_fn top, void *arg,
			  uint64_t *nanom, size_t *nkeys,
			  struct sh5_error *errp)
{
	struct anom a;

	memset(&a, 0, sizeof(a));
	a.st = st;
	a.s = s;
	a.j = j;
	a.app = app;
	a.sigma = sigma;
	a.top = top;
	a.arg = arg;
	sh5_runstats_init(&a.nanom);
	if (sh5_evcalls_walk(s, test_call, &a, errp) < 0 ||
	    close_task(&a, errp) < 0)
		return -1;
	*nanom += a.anomalies;
	*nkeys += a.keys;
	return 0;
}
