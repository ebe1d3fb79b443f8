/* lbdata.c - see lbdata.h */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/evlb.h"
#include "export/evlb_write.h"
#include "merge/jobread.h"
#include "common/json.h"
#include "export/lbdata.h"

#define COLLECTION_ID 1

/* ------------------------------------------------------------ exporter */

/* Per phase accumulators of the task being read. */
enum { D_CPU, D_READ, D_WRITE, ND };	/* delta fields, spread over time */

struct acc {
	double d[ND];
	double rss_max, vm_max, util_sum;
	int64_t n;
};

struct exporter {
	const struct sh5_lbdata_opts *o;
	struct sh5_lbdata_summary *sum;
	const char *stem;
	char job_id[64];
	/* pass 1 */
	int64_t t0, tend;
	int have_time;
	int64_t maxrank;
	size_t nnodes;
	/* pass 2 */
	int64_t lns;		/* phase length in ns */
	int64_t nphases;
	struct acc *acc;
	double *node_load;	/* per phase, current node */
	double *rank_sum, *rank_max, *node_sum, *node_max;
	int64_t *rank_arg, *node_arg;
	char (*node_names)[64];
	unsigned char *seen;
	int fcpu, fread, fwrite, frss, fvm, futil;
	int64_t prev_t;
	int have_prev;
	int64_t ntasks;
	uint64_t samples, json_bytes, file_bytes;
	/* application events of the step (NULL: none): phases from
	 * marks or windows, tasks, objects, communications */
	struct sh5_evlb *evm;
	const struct sh5_evlb_rank *er;	/* of the series being read */
};

/* Marks mode: the phases of a task are its own (evm bounds). */
static int marks(const struct exporter *x)
{
	return x->evm && x->evm->marks;
}

/* Start of phase k (its lower, open bound). */
static int64_t phase_start(const struct exporter *x, int64_t k)
{
	if (marks(x))
		return x->er ? x->er->bound[k] :
			       k == 0 ? INT64_MIN : INT64_MAX;
	return x->t0 + k * x->lns;
}

static int p1_series(void *arg, const struct sh5_jobread_series *s,
		     struct sh5_error *errp)
{
	struct exporter *x = arg;

	(void)errp;
	if (s->task < 0)
		return 1;
	if (s->task > x->maxrank)
		x->maxrank = s->task;
	if (s->nsamples) {
		if (!x->have_time || s->t_first_ns < x->t0)
			x->t0 = s->t_first_ns;
		if (!x->have_time || s->t_last_ns > x->tend)
			x->tend = s->t_last_ns;
		x->have_time = 1;
	}
	return 1;
}

static int p1_step(void *arg, const struct sh5_jobread_step *st,
		   struct sh5_error *errp)
{
	struct exporter *x = arg;

	(void)errp;
	x->nnodes = st->nnodes;
	snprintf(x->job_id, sizeof(x->job_id), "%s", st->job_id);
	return 0;
}

/* Phase holding time t: intervals (start, end], the first one closed. */
static int64_t phase_of(const struct exporter *x, int64_t t)
{
	int64_t off = t - x->t0, k;

	if (marks(x))
		return sh5_evlb_phase_at(x->evm, x->er, t);
	if (off <= 0)
		return 0;
	k = (off - 1) / x->lns;
	return k >= x->nphases ? x->nphases - 1 : k;
}

/* Spread a delta d measured over (a, b] across the phases it overlaps. */
static void spread(struct exporter *x, int64_t a, int64_t b, double d,
		   int which)
{
	int64_t ka, kb, k, lo, hi;
	double total = (double)(b - a);

	if (b <= a) {
		x->acc[phase_of(x, b)].d[which] += d;
		return;
	}
	ka = phase_of(x, a + 1);
	kb = phase_of(x, b);
	if (ka == kb) {
		x->acc[kb].d[which] += d;
		return;
	}
	for (k = ka; k <= kb; k++) {
		lo = k == ka ? a : phase_start(x, k);
		hi = k == kb ? b : phase_start(x, k + 1);
		if (hi > lo)
			x->acc[k].d[which] += d * (double)(hi - lo) / total;
	}
}

static int p2_node(void *arg, const struct sh5_jobread_step *st,
		   const struct sh5_jobread_node *nd, struct sh5_error *errp)
{
	struct exporter *x = arg;

	(void)st;
	(void)errp;
	(void)nd;
	if (x->node_load)
		memset(x->node_load, 0, (size_t)x->nphases * sizeof(double));
	return 0;
}

static int p2_series(void *arg, const struct sh5_jobread_series *s,
		     struct sh5_error *errp)
{
	struct exporter *x = arg;
	int64_t k;

	if (s->task < 0)
		return 1;
	if (s->task > x->maxrank || x->seen[s->task]) {
		errno = EINVAL;
		return sh5_errprintf(errp, "step %s: task %" PRId64 " appears "
				     "twice", s->step->name, s->task);
	}
	x->seen[s->task] = 1;
	for (k = 0; k < x->nphases; k++)
		memset(&x->acc[k], 0, sizeof(x->acc[k]));
	x->fcpu = sh5_jobread_field(s, "CPUTime");
	x->fread = sh5_jobread_field(s, "ReadMB");
	x->fwrite = sh5_jobread_field(s, "WriteMB");
	x->frss = sh5_jobread_field(s, "RSS");
	x->fvm = sh5_jobread_field(s, "VMSize");
	x->futil = sh5_jobread_field(s, "CPUUtilization");
	x->have_prev = 0;
	x->er = x->evm ? sh5_evlb_rank(x->evm, s->task) : NULL;
	return 0;
}

static double fin(double v)
{
	return isfinite(v) ? v : 0.0;
}

static int p2_chunk(void *arg, const struct sh5_jobread_series *s,
		    const struct sh5_jobread_chunk *c, struct sh5_error *errp)
{
	struct exporter *x = arg;
	size_t i, nf = s->nfields;
	int64_t t, a;
	struct acc *p;
	const double *v;

	(void)errp;
	for (i = 0; i < c->n; i++) {
		t = c->time_ns[i];
		v = c->values + i * nf;
		a = x->have_prev ? x->prev_t : t;
		if (x->fcpu >= 0)
			spread(x, a, t, fin(v[x->fcpu]),
			       D_CPU);
		if (x->fread >= 0)
			spread(x, a, t, fin(v[x->fread]),
			       D_READ);
		if (x->fwrite >= 0)
			spread(x, a, t, fin(v[x->fwrite]),
			       D_WRITE);
		p = &x->acc[phase_of(x, t)];
		if (x->frss >= 0 && fin(v[x->frss]) > p->rss_max)
			p->rss_max = v[x->frss];
		if (x->fvm >= 0 && fin(v[x->fvm]) > p->vm_max)
			p->vm_max = v[x->fvm];
		if (x->futil >= 0)
			p->util_sum += fin(v[x->futil]);
		p->n++;
		x->prev_t = t;
		x->have_prev = 1;
	}
	x->samples += c->n;
	return 0;
}

static void fill_attrs(const struct exporter *x, const char *step,
		       const char *node_name, struct sh5_lbdata_kv *kv,
		       size_t *n)
{
	size_t i = 0;

	kv[i].key = "producer";
	kv[i].kind = SH5_LBDATA_KV_STRING;
	kv[i++].s = "sh5merge lbdata " PACKAGE_VERSION;
	kv[i].key = "job_id";
	kv[i].kind = SH5_LBDATA_KV_STRING;
	kv[i++].s = x->job_id;
	kv[i].key = "step";
	kv[i].kind = SH5_LBDATA_KV_STRING;
	kv[i++].s = step;
	kv[i].key = "phase_length";
	kv[i].kind = SH5_LBDATA_KV_DOUBLE;
	kv[i++].d = marks(x) ? 0.0 : (double)x->lns / 1e9;
	if (x->evm) {	/* application events (none: as before) */
		kv[i].key = "phases_from";
		kv[i].kind = SH5_LBDATA_KV_STRING;
		kv[i++].s = marks(x) ? "marks" : "windows";
		kv[i].key = "events";
		kv[i].kind = SH5_LBDATA_KV_INT;
		kv[i++].i = 1;
	}
	if (node_name) {
		kv[i].key = "node_name";
		kv[i].kind = SH5_LBDATA_KV_STRING;
		kv[i++].s = node_name;
	}
	*n = i;
}

static int write_phase_head(struct exporter *x, struct sh5_lbdata_file *f,
			    int64_t k, struct sh5_error *errp)
{
	struct sh5_lbdata_kv kv[2];

	if (marks(x))	/* the bounds differ from rank to rank */
		return sh5_lbdata_file_phase(f, k, 0, NULL, errp);
	kv[0].key = "start_time";
	kv[0].kind = SH5_LBDATA_KV_DOUBLE;
	kv[0].d = (double)(x->t0 + k * x->lns) / 1e9;
	kv[1].key = "end_time";
	kv[1].kind = SH5_LBDATA_KV_DOUBLE;
	kv[1].d = (double)(x->t0 + (k + 1) * x->lns) / 1e9;
	return sh5_lbdata_file_phase(f, k, 2, kv, errp);
}

static int close_counted(struct exporter *x, struct sh5_lbdata_file *f,
			 struct sh5_error *errp)
{
	uint64_t jb = 0, fb = 0;

	if (sh5_lbdata_file_close(f, &jb, &fb, errp) < 0)
		return -1;
	x->json_bytes += jb;
	x->file_bytes += fb;
	return 0;
}

/* The task of a rank in phase k: with events, the rank's entity, its
 * objects and the communications its file holds (export/evlb.h). */
static int write_task(struct exporter *x, struct sh5_lbdata_file *f,
		      const struct sh5_lbdata_task *t, int64_t k,
		      struct sh5_error *errp)
{
	if (x->evm)
		return sh5_evlb_write_phase(x->evm, t->entity.seq_id, k, f, t,
					    errp);
	return sh5_lbdata_file_task(f, t, errp);
}

/* The user_defined figures of a task in phase p; returns how many. */
static size_t task_user(const struct exporter *x, const struct acc *p,
			struct sh5_lbdata_kv *user)
{
	size_t i = 0;

	user[i].key = "task_footprint_bytes";
	user[i].kind = SH5_LBDATA_KV_DOUBLE;
	user[i++].d = p->rss_max * 1024.0;
	user[i].key = "rss_max_kib";
	user[i].kind = SH5_LBDATA_KV_DOUBLE;
	user[i++].d = p->rss_max;
	user[i].key = "vmsize_max_kib";
	user[i].kind = SH5_LBDATA_KV_DOUBLE;
	user[i++].d = p->vm_max;
	user[i].key = "read_mb";
	user[i].kind = SH5_LBDATA_KV_DOUBLE;
	user[i++].d = p->d[D_READ];
	user[i].key = "write_mb";
	user[i].kind = SH5_LBDATA_KV_DOUBLE;
	user[i++].d = p->d[D_WRITE];
	user[i].key = "cpu_utilization_mean";
	user[i].kind = SH5_LBDATA_KV_DOUBLE;
	user[i++].d = p->n ? p->util_sum / (double)p->n : 0.0;
	user[i].key = "samples";
	user[i].kind = SH5_LBDATA_KV_INT;
	user[i++].i = p->n;
	if (x->evm) {
		user[i].key = "cpu_time";
		user[i].kind = SH5_LBDATA_KV_DOUBLE;
		user[i++].d = p->d[D_CPU];
	}
	return i;
}

/* The summary's rank figures of task in phase k. */
static void count_rank_load(struct exporter *x, int64_t task, int64_t k)
{
	const struct acc *p = &x->acc[k];
	double load = x->evm ? sh5_evlb_rank_load(x->evm, task, k,
						  p->d[D_CPU]) :
			       p->d[D_CPU];

	x->rank_sum[k] += load;
	if (load > x->rank_max[k] || x->rank_arg[k] < 0) {
		x->rank_max[k] = load;
		x->rank_arg[k] = task;
	}
	x->node_load[k] += load;
}

/* Open the rank file of the task of series s. */
static struct sh5_lbdata_file *open_rank(struct exporter *x,
					 const struct sh5_jobread_series *s,
					 struct sh5_lbdata_kv *attrs,
					 struct sh5_error *errp)
{
	struct sh5_lbdata_meta m;

	memset(&m, 0, sizeof(m));
	m.rank = s->task;
	m.has_shared_node = 1;
	m.node_id = s->node->index;
	m.node_size = (int64_t)s->node->ntasks;
	m.node_rank = (int64_t)s->local_rank;
	m.num_nodes = (int64_t)x->nnodes;
	m.phase_count = x->nphases;
	fill_attrs(x, s->step->name, s->node->name, attrs, &m.nattrs);
	m.attrs = attrs;
	return sh5_lbdata_file_open(x->o->dir, x->stem, &m, x->o->compress,
				    errp);
}

static int p2_series_end(void *arg, const struct sh5_jobread_series *s,
			 struct sh5_error *errp)
{
	struct exporter *x = arg;
	struct sh5_lbdata_kv attrs[7], user[9];
	struct sh5_lbdata_task t;
	struct sh5_lbdata_file *f;
	const struct acc *p;
	int64_t k;

	f = open_rank(x, s, attrs, errp);
	if (!f)
		return -1;
	memset(&t, 0, sizeof(t));
	t.entity.type = "object";
	t.entity.id = -1;
	t.entity.seq_id = s->task;
	t.entity.collection_id = COLLECTION_ID;
	t.entity.home = s->node->index;
	t.entity.migratable = x->o->migratable ? 1 : 0;
	t.node = s->node->index;
	t.resource = "cpu";
	t.user = user;
	for (k = 0; k < x->nphases; k++) {
		p = &x->acc[k];
		t.nuser = task_user(x, p, user);
		t.time = p->d[D_CPU];
		if (write_phase_head(x, f, k, errp) < 0 ||
		    write_task(x, f, &t, k, errp) < 0) {
			sh5_lbdata_file_abort(f);
			return -1;
		}
		if (x->rank_sum)
			count_rank_load(x, s->task, k);
	}
	x->ntasks++;
	return close_counted(x, f, errp);
}

static int p2_node_end(void *arg, const struct sh5_jobread_step *st,
		       const struct sh5_jobread_node *nd,
		       struct sh5_error *errp)
{
	struct exporter *x = arg;
	int64_t k;

	(void)st;
	(void)errp;
	if (!x->node_load)
		return 0;
	for (k = 0; k < x->nphases; k++) {
		x->node_sum[k] += x->node_load[k];
		if (x->node_arg[k] < 0 || x->node_load[k] > x->node_max[k]) {
			x->node_max[k] = x->node_load[k];
			x->node_arg[k] = nd->index;
			snprintf(x->node_names[k], sizeof(x->node_names[k]),
				 "%s", nd->name);
		}
	}
	return 0;
}

/* A rank without data (gap in the task ids): same phases, no tasks. */
static int write_empty_rank(struct exporter *x, const char *step,
			    int64_t rank, struct sh5_error *errp)
{
	struct sh5_lbdata_meta m;
	struct sh5_lbdata_kv attrs[7];
	struct sh5_lbdata_file *f;
	const struct sh5_evlb_rank *er = sh5_evlb_rank(x->evm, rank);
	struct sh5_lbdata_task t;
	int64_t k;

	memset(&m, 0, sizeof(m));
	m.rank = rank;
	m.phase_count = x->nphases;
	fill_attrs(x, step, NULL, attrs, &m.nattrs);
	m.attrs = attrs;
	f = sh5_lbdata_file_open(x->o->dir, x->stem, &m, x->o->compress,
				 errp);
	if (!f)
		return -1;
	memset(&t, 0, sizeof(t));
	t.entity.type = "object";
	t.entity.id = -1;
	t.entity.seq_id = rank;
	t.entity.collection_id = COLLECTION_ID;
	t.entity.home = er ? er->node : 0;
	t.entity.migratable = x->o->migratable ? 1 : 0;
	t.node = t.entity.home;
	t.resource = "cpu";
	for (k = 0; k < x->nphases; k++) {
		if (write_phase_head(x, f, k, errp) < 0 ||
		    (er && write_task(x, f, &t, k, errp) < 0)) {
			sh5_lbdata_file_abort(f);
			return -1;
		}
	}
	return close_counted(x, f, errp);
}

static void exporter_free(struct exporter *x)
{
	free(x->acc);
	free(x->node_load);
	free(x->rank_sum);
	free(x->rank_max);
	free(x->node_sum);
	free(x->node_max);
	free(x->rank_arg);
	free(x->node_arg);
	free(x->node_names);
	free(x->seen);
}

void sh5_lbdata_summary_free(struct sh5_lbdata_summary *sum)
{
	if (!sum)
		return;
	free(sum->phases);
	sum->phases = NULL;
}

static int alloc_pass2(struct exporter *x)
{
	size_t np = (size_t)x->nphases;
	int64_t k;

	x->acc = calloc(np, sizeof(*x->acc));
	x->seen = calloc((size_t)x->maxrank + 1, 1);
	if (!x->acc || !x->seen)
		return -1;
	if (!x->o->summary)
		return 0;
	x->node_load = calloc(np, sizeof(double));
	x->rank_sum = calloc(np, sizeof(double));
	x->rank_max = calloc(np, sizeof(double));
	x->node_sum = calloc(np, sizeof(double));
	x->node_max = calloc(np, sizeof(double));
	x->rank_arg = calloc(np, sizeof(int64_t));
	x->node_arg = calloc(np, sizeof(int64_t));
	x->node_names = calloc(np, sizeof(*x->node_names));
	if (!x->node_load || !x->rank_sum || !x->rank_max || !x->node_sum ||
	    !x->node_max || !x->rank_arg || !x->node_arg || !x->node_names)
		return -1;
	for (k = 0; k < x->nphases; k++)
		x->rank_arg[k] = x->node_arg[k] = -1;
	return 0;
}

/* The step to export: opts->step, else the first one. */
static int choose_step(struct sh5_jobread *jr, const char *path,
		       const struct sh5_lbdata_opts *opts, const char **step,
		       struct sh5_error *errp)
{
	const char *const *steps;
	size_t nsteps;

	if (sh5_jobread_steps(jr, &steps, &nsteps, errp) < 0)
		return -1;
	if (opts->step) {
		*step = opts->step;
	} else if (nsteps) {
		*step = steps[0];
	} else {
		errno = ENOENT;
		sh5_errprintf(errp, "%s: no steps", path);
		return -1;
	}
	return 0;
}

/* The window phases of the step (x->lns, x->nphases) from its time span
 * and the phase length. */
static int set_windows(struct exporter *x, const char *path,
		       const char *step, const struct sh5_evstep *evs,
		       struct sh5_error *errp)
{
	const struct sh5_lbdata_opts *opts = x->o;
	int64_t span;

	/* Hostile times: the span must fit int64. */
	if (__builtin_sub_overflow(x->tend, x->t0, &span)) {
		errno = ERANGE;
		sh5_errprintf(errp, "%s: step %s: time span out of "
			      "range", path, step);
		return -1;
	}
	/* A length past 126 years is one phase (no unchecked
	 * float-to-integer conversion). */
	if (opts->phase_length > 0 &&
	    opts->phase_length * 1e9 < 4e18) {
		x->lns = (int64_t)llround(opts->phase_length * 1e9);
		if (x->lns < 1)
			x->lns = 1;
	} else if (opts->phase_length > 0) {
		x->lns = INT64_C(4000000000000000000);
	} else {
		x->lns = span > 0 ? span : 1000000000;
	}
	x->nphases = span > 0 ? (span - 1) / x->lns + 1 : 1;
	/* (with phase marks the windows are not used) */
	if (x->nphases > SH5_LBDATA_MAX_PHASES &&
	    !(evs->ntasks && sh5_evlb_has_marks(evs))) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: step %s: phase length %g s gives %"
			      PRId64 " phases (at most %d)", path, step,
			      opts->phase_length, x->nphases,
			      SH5_LBDATA_MAX_PHASES);
		return -1;
	}
	return 0;
}

/* The event model of the step (x->evm), when it has events. */
static int build_model(struct exporter *x, const char *path,
		       const char *step, const struct sh5_evstep *evs,
		       struct sh5_error *errp)
{
	struct sh5_evlb_windows w = { x->t0, x->lns, x->nphases };
	char text[sizeof(errp->text)];

	if (!evs->ntasks)
		return 0;
	x->evm = sh5_evlb_build(evs, &w, SH5_LBDATA_MAX_PHASES, errp);
	if (!x->evm) {
		if (errp) {
			snprintf(text, sizeof(text), "%s", errp->text);
			sh5_errprintf(errp, "%s: step %s: %s", path, step,
				      text);
		}
		return -1;
	}
	x->nphases = x->evm->nphases;
	return 0;
}

/* Pass 1, the events and the phases: everything known before writing. */
static int prepare(struct exporter *x, struct sh5_jobread *jr,
		   const char *path, const char *step,
		   struct sh5_evstep **evs, struct sh5_error *errp)
{
	static const struct sh5_jobread_ops pass1 = {
		.step_begin = p1_step,
		.series_begin = p1_series,
	};
	struct sh5_evstep *e;

	if (sh5_jobread_walk(jr, step, &pass1, x, errp) < 0)
		return -1;
	e = *evs = sh5_evlb_read_step(path, step, errp);
	if (!e)
		return -1;
	if (e->ntasks && e->tasks[e->ntasks - 1].task > x->maxrank)
		x->maxrank = e->tasks[e->ntasks - 1].task;
	if (e->ntasks && !x->have_time)
		x->have_time = sh5_evlb_span(e, &x->t0, &x->tend);
	if (x->maxrank < 0) {
		errno = ENOENT;
		sh5_errprintf(errp, "%s: step %s has no Task series", path,
			      step);
		return -1;
	}
	if (!x->have_time)
		x->t0 = x->tend = 0;
	if (set_windows(x, path, step, e, errp) < 0 ||
	    build_model(x, path, step, e, errp) < 0)
		return -1;
	if (alloc_pass2(x) < 0) {
		errno = ENOMEM;
		sh5_errprintf(errp, "%s: out of memory (%" PRId64 " phases)",
			      path, x->nphases);
		return -1;
	}
	return 0;
}

/* The per-phase figures of the summary. */
static int fill_phases(const struct exporter *x,
		       struct sh5_lbdata_summary *sum,
		       struct sh5_error *errp)
{
	int64_t k;

	sum->phases = calloc((size_t)x->nphases, sizeof(*sum->phases));
	if (!sum->phases) {
		errno = ENOMEM;
		sh5_errprintf(errp, "out of memory");
		return -1;
	}
	for (k = 0; k < x->nphases; k++) {
		struct sh5_lbdata_phase_summary *p = &sum->phases[k];

		p->id = k;
		p->start = (double)(x->t0 + k * x->lns) / 1e9;
		p->end = (double)(x->t0 + (k + 1) * x->lns) / 1e9;
		p->rank_max = x->rank_max[k];
		p->rank_avg = x->rank_sum[k] / (double)(x->maxrank + 1);
		p->rank_argmax = x->rank_arg[k];
		p->node_max = x->node_max[k];
		p->node_avg = x->nnodes ?
				      x->node_sum[k] / (double)x->nnodes :
				      0.0;
		p->node_argmax = x->node_arg[k];
		snprintf(p->node_name, sizeof(p->node_name), "%s",
			 x->node_names[k]);
	}
	return 0;
}

/* The summary of a complete export. */
static int fill_summary(const struct exporter *x, const char *step,
			struct sh5_lbdata_summary *sum,
			struct sh5_error *errp)
{
	snprintf(sum->step, sizeof(sum->step), "%s", step);
	sum->nranks = x->maxrank + 1;
	sum->ntasks = x->ntasks;
	sum->nnodes = x->nnodes;
	sum->nphases = x->nphases;
	sum->phase_length = (double)x->lns / 1e9;
	sum->samples = x->samples;
	if (x->evm) {
		sum->events = 1;
		sum->marks = x->evm->marks;
		sum->comm_edges = x->evm->nedges;
		sum->p2p_matched = x->evm->p2p_matched;
		sum->unmatched = x->evm->unmatched_sends +
				 x->evm->unmatched_recvs;
		sum->objects = x->evm->nobjects;
	}
	sum->json_bytes = x->json_bytes;
	sum->file_bytes = x->file_bytes;
	if (x->o->summary)
		return fill_phases(x, sum, errp);
	return 0;
}

int sh5_lbdata_export(const char *path, const struct sh5_lbdata_opts *opts,
		      struct sh5_lbdata_summary *sum, struct sh5_error *errp)
{
	static const struct sh5_jobread_ops pass2 = {
		.node_begin = p2_node,
		.series_begin = p2_series,
		.chunk = p2_chunk,
		.series_end = p2_series_end,
		.node_end = p2_node_end,
	};
	struct exporter x;
	struct sh5_jobread *jr;
	struct sh5_evstep *evs = NULL;
	const char *step;
	int64_t r;
	int64_t renamed = 0;
	int rc = -1, written = 0;

	memset(&x, 0, sizeof(x));
	x.o = opts;
	x.stem = opts->stem ? opts->stem : "data";
	x.maxrank = -1;
	if (sum)
		memset(sum, 0, sizeof(*sum));
	jr = sh5_jobread_open(path, errp);
	if (!jr)
		return -1;
	if (choose_step(jr, path, opts, &step, errp) < 0 ||
	    prepare(&x, jr, path, step, &evs, errp) < 0)
		goto out;
	written = 1;
	if (sh5_jobread_walk(jr, step, &pass2, &x, errp) < 0)
		goto out;
	for (r = 0; r <= x.maxrank; r++)
		if (!x.seen[r] && write_empty_rank(&x, step, r, errp) < 0)
			goto out;
	for (renamed = 0; renamed <= x.maxrank; renamed++)
		if (sh5_lbdata_commit(opts->dir, x.stem, renamed, 1, errp) < 0)
			goto out;
	written = 0;
	if (sum && fill_summary(&x, step, sum, errp) < 0)
		goto out;
	rc = 0;
out:
	if (written) {
		/* leave nothing behind: the temporaries, and the files
		 * already renamed when a rename failed midway */
		for (r = 0; r <= x.maxrank; r++)
			sh5_lbdata_commit(opts->dir, x.stem, r, 0, NULL);
		for (r = 0; r < renamed; r++)
			sh5_lbdata_unlink_final(opts->dir, x.stem, r);
	}
	exporter_free(&x);
	sh5_evlb_free(x.evm);
	sh5_evstep_free(evs);
	sh5_jobread_close(jr);
	return rc;
}
