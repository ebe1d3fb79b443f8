/* counters.c - see counters.h */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "export/counters.h"
#include "export/evcounters.h"
#include "export/evlb.h"	/* sh5_evlb_read_step() */
#include "merge/jobread.h"
#include "common/json.h"
#include "common/runstats.h"
#include "common/sort.h"

struct counter {
	char *name;
	struct sh5_runstats total;	/* merged over nodes */
	struct sh5_runstats node;	/* current node (pass 1) */
};

struct app {
	char *step;
	char name[96];
	struct counter *c;
	size_t n, cap;
	/* application events: region and MPI-call counters */
	struct sh5_evstep *evs;
	struct sh5_evstats *evst;
};

struct ctx {
	const struct sh5_counters_opts *o;
	struct sh5_json *j;
	struct app *apps;
	size_t napps, capps;
	struct app *cur;
	int *map;		/* field index -> counter index */
	size_t mapcap;
	/* pass 2, per series */
	struct sh5_runstats nanom;	/* anomalies per io step */
	int entry_open;
	int64_t prev_t;
	int have_prev;
	int64_t created_at;
	/* results */
	uint64_t samples, values, anomalies;
	size_t nkeys;
	struct sh5_counters_anomaly *top; /* min-heap by score */
	size_t ntop;
};

static int64_t now_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static int nomem(struct sh5_error *errp)
{
	errno = ENOMEM;
	return sh5_errprintf(errp, "counters: out of memory");
}

static struct app *find_app(struct ctx *x, const char *step)
{
	size_t i;

	for (i = 0; i < x->napps; i++)
		if (!strcmp(x->apps[i].step, step))
			return &x->apps[i];
	return NULL;
}

/* Index of counter name in a, added when new; -1 on ENOMEM. */
static int counter_index(struct app *a, const char *series,
			 const char *field)
{
	char name[160];
	size_t i;

	snprintf(name, sizeof(name), "%s.%s", series, field);
	for (i = 0; i < a->n; i++)
		if (!strcmp(a->c[i].name, name))
			return (int)i;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		struct counter *nc = realloc(a->c, cap * sizeof(*nc));

		if (!nc)
			return -1;
		a->c = nc;
		a->cap = cap;
	}
	a->c[a->n].name = strdup(name);
	if (!a->c[a->n].name)
		return -1;
	sh5_runstats_init(&a->c[a->n].total);
	sh5_runstats_init(&a->c[a->n].node);
	return (int)a->n++;
}

static int map_fields(struct ctx *x, const struct sh5_jobread_series *s,
		      int create, struct sh5_error *errp)
{
	size_t k;
	int idx;

	if (s->nfields > x->mapcap) {
		int *nm = realloc(x->map, s->nfields * sizeof(*nm));

		if (!nm)
			return nomem(errp);
		x->map = nm;
		x->mapcap = s->nfields;
	}
	for (k = 0; k < s->nfields; k++) {
		if (create) {
			idx = counter_index(x->cur, s->name, s->fields[k]);
			if (idx < 0)
				return nomem(errp);
		} else {
			char name[160];
			size_t i;

			snprintf(name, sizeof(name), "%s.%s", s->name,
				 s->fields[k]);
			idx = -1;
			for (i = 0; i < x->cur->n; i++)
				if (!strcmp(x->cur->c[i].name, name))
					idx = (int)i;
			if (idx < 0) {
				errno = EINVAL;
				return sh5_errprintf(errp, "counters: %s "
						     "changed between passes",
						     name);
			}
		}
		x->map[k] = idx;
	}
	return 0;
}

/* ------------------------------------------------------------ pass 1 */

static int p1_step(void *arg, const struct sh5_jobread_step *st,
		   struct sh5_error *errp)
{
	struct ctx *x = arg;
	struct app *a;

	if (x->napps == x->capps) {
		size_t cap = x->capps ? x->capps * 2 : 4;
		struct app *na = realloc(x->apps, cap * sizeof(*na));

		if (!na)
			return nomem(errp);
		x->apps = na;
		x->capps = cap;
	}
	a = &x->apps[x->napps];
	memset(a, 0, sizeof(*a));
	a->step = strdup(st->name);
	if (!a->step)
		return nomem(errp);
	if (st->job_id[0])
		snprintf(a->name, sizeof(a->name), "%s.%s", st->job_id,
			 st->name);
	else
		snprintf(a->name, sizeof(a->name), "%s", st->name);
	x->napps++;
	x->cur = a;
	return 0;
}

static int p1_series(void *arg, const struct sh5_jobread_series *s,
		     struct sh5_error *errp)
{
	return map_fields(arg, s, 1, errp);
}

static int p1_chunk(void *arg, const struct sh5_jobread_series *s,
		    const struct sh5_jobread_chunk *c, struct sh5_error *errp)
{
	struct ctx *x = arg;
	struct counter *cs = x->cur->c;
	const double *v = c->values;
	size_t i, k, nf = s->nfields;

	(void)errp;
	for (i = 0; i < c->n; i++, v += nf)
		for (k = 0; k < nf; k++)
			if (sh5_runstats_push(&cs[x->map[k]].node, v[k]) == 0)
				x->values++;
	x->samples += c->n;
	return 0;
}

static int p1_node_end(void *arg, const struct sh5_jobread_step *st,
		       const struct sh5_jobread_node *nd,
		       struct sh5_error *errp)
{
	struct ctx *x = arg;
	size_t i;

	(void)st;
	(void)nd;
	(void)errp;
	for (i = 0; i < x->cur->n; i++) {
		sh5_runstats_merge(&x->cur->c[i].total, &x->cur->c[i].node);
		sh5_runstats_init(&x->cur->c[i].node);
	}
	return 0;
}

/* ------------------------------------------------------------ pass 2 */

static int p2_step(void *arg, const struct sh5_jobread_step *st,
		   struct sh5_error *errp)
{
	struct ctx *x = arg;

	x->cur = find_app(x, st->name);
	if (!x->cur) {
		errno = EINVAL;
		return sh5_errprintf(errp, "counters: step %s appeared "
				     "between passes", st->name);
	}
	return 0;
}

static int p2_series(void *arg, const struct sh5_jobread_series *s,
		     struct sh5_error *errp)
{
	struct ctx *x = arg;

	if (map_fields(x, s, 0, errp) < 0)
		return -1;
	sh5_runstats_init(&x->nanom);
	x->entry_open = 0;
	x->have_prev = 0;
	return 0;
}

static int heap_less(const struct sh5_counters_anomaly *a,
		     const struct sh5_counters_anomaly *b)
{
	return a->score < b->score;
}

static void heap_swap(struct sh5_counters_anomaly *h, size_t a, size_t b)
{
	struct sh5_counters_anomaly t = h[a];

	h[a] = h[b];
	h[b] = t;
}

static void sift_down(struct sh5_counters_anomaly *h, size_t n, size_t i)
{
	size_t l, r, m;

	for (;;) {
		l = 2 * i + 1;
		r = l + 1;
		m = i;
		if (l < n && heap_less(&h[l], &h[m]))
			m = l;
		if (r < n && heap_less(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		heap_swap(h, i, m);
		i = m;
	}
}

/* Keep the opts->top highest scores in a min-heap. */
static void keep_top_rec(void *arg, const struct sh5_counters_anomaly *pa)
{
	struct ctx *x = arg;
	struct sh5_counters_anomaly a = *pa, *h = x->top;
	size_t i;

	if (!x->o->top)
		return;
	if (x->ntop == x->o->top && a.score <= h[0].score)
		return;
	if (x->ntop < x->o->top) {
		i = x->ntop++;
		h[i] = a;
		while (i > 0 && heap_less(&h[i], &h[(i - 1) / 2])) {
			heap_swap(h, i, (i - 1) / 2);
			i = (i - 1) / 2;
		}
	} else {
		h[0] = a;
		sift_down(h, x->ntop, 0);
	}
}

static void keep_top(struct ctx *x, const struct sh5_jobread_series *s,
		     int64_t t, size_t k, double value, double score,
		     const struct sh5_runstats *model)
{
	struct sh5_counters_anomaly a;

	if (!x->o->top)
		return;
	if (x->ntop == x->o->top && score <= x->top[0].score)
		return;
	memset(&a, 0, sizeof(a));
	a.time_ns = t;
	snprintf(a.app, sizeof(a.app), "%s", x->cur->name);
	snprintf(a.node, sizeof(a.node), "%s", s->node->name);
	a.task = s->task;
	snprintf(a.counter, sizeof(a.counter), "%s.%s", s->name,
		 s->fields[k]);
	a.value = value;
	a.score = score;
	a.mean = sh5_runstats_mean(model);
	a.stddev = sh5_runstats_stddev(model);
	keep_top_rec(x, &a);
}

static void open_entry(struct ctx *x, const struct sh5_jobread_series *s)
{
	char key[160];

	if (s->task >= 0)
		snprintf(key, sizeof(key), "%s:%" PRId64, s->node->name,
			 s->task);
	else
		snprintf(key, sizeof(key), "%s:%s", s->node->name, s->name);
	sh5_json_object_open(x->j);
	sh5_json_kv_string(x->j, "key", key);
	sh5_json_key(x->j, "data");
	sh5_json_array_open(x->j);
	x->entry_open = 1;
	x->nkeys++;
}

static int p2_chunk(void *arg, const struct sh5_jobread_series *s,
		    const struct sh5_jobread_chunk *c, struct sh5_error *errp)
{
	struct ctx *x = arg;
	struct counter *cs = x->cur->c;
	const double *v = c->values;
	struct sh5_runstats scores;
	size_t i, k, nf = s->nfields;
	double score;
	int64_t t, nan;

	for (i = 0; i < c->n; i++, v += nf) {
		t = c->time_ns[i];
		nan = 0;
		sh5_runstats_init(&scores);
		for (k = 0; k < nf; k++) {
			const struct sh5_runstats *m = &cs[x->map[k]].total;

			if (!sh5_runstats_is_outlier(m, v[k], x->o->sigma,
						     &score))
				continue;
			nan++;
			sh5_runstats_push(&scores, score);
			keep_top(x, s, t, k, v[k], score, m);
		}
		sh5_runstats_push(&x->nanom, (double)nan);
		if (nan) {
			if (!x->entry_open)
				open_entry(x, s);
			sh5_json_object_open(x->j);
			sh5_json_kv_string(x->j, "app", x->cur->name);
			sh5_json_kv_int(x->j, "rank",
					s->task >= 0 ? s->task :
						       s->node->index);
			sh5_json_kv_uint(x->j, "step", c->first + i);
			sh5_json_kv_int(x->j, "min_timestamp",
					(x->have_prev ? x->prev_t : t) / 1000);
			sh5_json_kv_int(x->j, "max_timestamp", t / 1000);
			sh5_json_kv_int(x->j, "n_anomalies", nan);
			sh5_json_key(x->j, "outlier_scores");
			sh5_json_runstats(x->j, &scores);
			sh5_json_object_close(x->j);
			x->anomalies += (uint64_t)nan;
		}
		x->prev_t = t;
		x->have_prev = 1;
	}
	x->samples += c->n;
	return sh5_json_flush(x->j, errp) < 0 ? -1 : 0;
}

static int p2_series_end(void *arg, const struct sh5_jobread_series *s,
			 struct sh5_error *errp)
{
	struct ctx *x = arg;

	(void)s;
	if (!x->entry_open)
		return 0;
	sh5_json_array_close(x->j);
	sh5_json_key(x->j, "stats");
	sh5_json_runstats(x->j, &x->nanom);
	sh5_json_object_close(x->j);
	x->entry_open = 0;
	return sh5_json_flush(x->j, errp) < 0 ? -1 : 0;
}

/* ------------------------------------------------------------ events */

/* Region and MPI-call counters of every step with application events
 * (export/evcounters.h): read after pass 1, kept for pass 2. */
static int read_events(struct ctx *x, const char *path,
		       struct sh5_error *errp)
{
	struct app *a;
	size_t i;

	for (i = 0; i < x->napps; i++) {
		a = &x->apps[i];
		a->evs = sh5_evlb_read_step(path, a->step, errp);
		if (!a->evs)
			return -1;
		if (!a->evs->ntasks)
			continue;
		a->evst = sh5_evstats_build(a->evs, errp);
		if (!a->evst)
			return -1;
		x->values += sh5_evstats_calls(a->evst);
	}
	return 0;
}

static void write_event_counters(struct sh5_json *j, const struct app *a)
{
	size_t k;

	for (k = 0; k < sh5_evstats_count(a->evst); k++) {
		sh5_json_object_open(j);
		sh5_json_kv_string(j, "app", a->name);
		sh5_json_kv_string(j, "counter", sh5_evstats_name(a->evst, k));
		sh5_json_key(j, "stats");
		sh5_json_runstats(j, sh5_evstats_stats(a->evst, k));
		sh5_json_object_close(j);
	}
}

/* ------------------------------------------------------------ export */

static int cmp_top(const void *a, const void *b)
{
	const struct sh5_counters_anomaly *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

static void ctx_free(struct ctx *x)
{
	size_t i, k;

	for (i = 0; i < x->napps; i++) {
		for (k = 0; k < x->apps[i].n; k++)
			free(x->apps[i].c[k].name);
		free(x->apps[i].c);
		free(x->apps[i].step);
		sh5_evstats_free(x->apps[i].evst);
		sh5_evstep_free(x->apps[i].evs);
	}
	free(x->apps);
	free(x->map);
	free(x->top);
}

/* "counter_stats" (when there are any); returns the counters written. */
static size_t write_counter_stats(struct ctx *x)
{
	struct sh5_json *j = x->j;
	size_t i, k, ncounters = 0;

	for (i = 0; i < x->napps; i++)
		ncounters += x->apps[i].n +
			     sh5_evstats_count(x->apps[i].evst);
	if (!ncounters)
		return 0;
	sh5_json_key(j, "counter_stats");
	sh5_json_array_open(j);
	for (i = 0; i < x->napps; i++) {
		for (k = 0; k < x->apps[i].n; k++) {
			sh5_json_object_open(j);
			sh5_json_kv_string(j, "app", x->apps[i].name);
			sh5_json_kv_string(j, "counter",
					   x->apps[i].c[k].name);
			sh5_json_key(j, "stats");
			sh5_json_runstats(j, &x->apps[i].c[k].total);
			sh5_json_object_close(j);
		}
		write_event_counters(j, &x->apps[i]);
	}
	sh5_json_array_close(j);
	return ncounters;
}

/* Pass 2 and the event anomalies: the entries of "anomaly" (open). */
static int write_anomalies(struct ctx *x, struct sh5_jobread *jr,
			   struct sh5_error *errp)
{
	static const struct sh5_jobread_ops pass2 = {
		.step_begin = p2_step,
		.series_begin = p2_series,
		.chunk = p2_chunk,
		.series_end = p2_series_end,
	};
	size_t i;

	if (sh5_jobread_walk(jr, x->o->step, &pass2, x, errp) < 0)
		return -1;
	for (i = 0; i < x->napps; i++)
		if (x->apps[i].evst &&
		    sh5_evstats_anomalies(x->apps[i].evst, x->apps[i].evs,
					  x->j, x->apps[i].name, x->o->sigma,
					  keep_top_rec, x, &x->anomalies,
					  &x->nkeys, errp) < 0)
			return -1;
	return 0;
}

/* The counts and the top anomalies (highest score first) into res. */
static void fill_result(struct ctx *x, struct sh5_counters_result *res,
			size_t ncounters, uint64_t values)
{
	res->napps = x->napps;
	res->ncounters = ncounters;
	res->samples = x->samples;
	res->values = values;
	res->anomalies = x->anomalies;
	res->nkeys = x->nkeys;
	if (x->ntop > 1)
		sh5_qsort(x->top, x->ntop, sizeof(*x->top), cmp_top);
	res->ntop = x->ntop;
	res->top = x->top;
	x->top = NULL;
}

int sh5_counters_export(const char *path, struct sh5_json *j,
			const struct sh5_counters_opts *opts,
			struct sh5_counters_result *res,
			struct sh5_error *errp)
{
	static const struct sh5_jobread_ops pass1 = {
		.step_begin = p1_step,
		.series_begin = p1_series,
		.chunk = p1_chunk,
		.node_end = p1_node_end,
	};
	struct sh5_jobread *jr;
	struct ctx x;
	size_t ncounters;
	uint64_t values;
	int rc = -1;

	memset(&x, 0, sizeof(x));
	x.o = opts;
	x.j = j;
	if (res)
		memset(res, 0, sizeof(*res));
	if (!(opts->sigma > 0) || !isfinite(opts->sigma)) {
		errno = EINVAL;
		return sh5_errprintf(errp, "counters: sigma must be > 0");
	}
	if (opts->top) {
		x.top = calloc(opts->top, sizeof(*x.top));
		if (!x.top)
			return nomem(errp);
	}
	x.created_at = opts->created_at_ms ? opts->created_at_ms : now_ms();
	jr = sh5_jobread_open(path, errp);
	if (!jr)
		goto out;
	if (sh5_jobread_walk(jr, opts->step, &pass1, &x, errp) < 0)
		goto out;
	if (read_events(&x, path, errp) < 0)
		goto out;
	values = x.values;
	x.samples = 0;

	sh5_json_object_open(j);
	sh5_json_kv_int(j, "version", 2);
	sh5_json_kv_int(j, "created_at", x.created_at);
	ncounters = write_counter_stats(&x);
	sh5_json_key(j, "anomaly_stats");
	sh5_json_object_open(j);
	sh5_json_kv_int(j, "created_at", x.created_at);
	sh5_json_key(j, "anomaly");
	if (sh5_json_array_open(j) < 0)
		goto json_error;
	if (write_anomalies(&x, jr, errp) < 0)
		goto out;
	sh5_json_array_close(j);
	sh5_json_key(j, "func");
	sh5_json_array_open(j);
	sh5_json_array_close(j);
	sh5_json_object_close(j);
	if (sh5_json_object_close(j) < 0)
		goto json_error;
	if (res)
		fill_result(&x, res, ncounters, values);
	rc = 0;
	goto out;
json_error:
	sh5_json_flush(j, errp);
out:
	sh5_jobread_close(jr);
	ctx_free(&x);
	return rc;
}

void sh5_counters_result_free(struct sh5_counters_result *res)
{
	if (!res)
		return;
	free(res->top);
	res->top = NULL;
	res->ntop = 0;
}
