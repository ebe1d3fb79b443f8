/*
 * report_series.c - the time series of a step, reduced while read.
 *
 * Pass 1 walks the step without reading samples (time span, nodes,
 * tasks, series and their units).  Pass 2 reads every sample once and
 * adds it to a (row, bin) cell of its field: rows are nodes for
 * node-level series and tasks for Task series (nodes, the tasks of each
 * averaged, when the step has more than RP_TASK_ROWS tasks); bins split
 * the step's time span into opts.bins equal parts.  Delta fields (counts
 * over the sample interval) become rates (per second).  Output per
 * field: min, mean and max over rows per bin, the rows themselves when
 * few, and a heat map (one byte per cell) with as many bins as the heat
 * budget allows.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export/report_int.h"
#include "profile/series.h"

#define RP_TASK_ROWS 256
#define RP_LINE_ROWS 16

struct rf {
	char series[64], field[64], unit[24], raw_unit[16];
	double raw_sum;		/* sum of the recorded values */
	int delta, task_rows;
	size_t nrows;
	float *sum;		/* nrows * bins */
	uint32_t *cnt;
	double n, mean, m2, min, max;	/* of the plotted values */
};

struct rs {
	struct rp *r;
	size_t bins;
	size_t nf;
	struct rf *f;
	int task_rows;		/* Task rows are tasks, not nodes */
	size_t *node_base;	/* first task row of each node */
	/* current series */
	int cur_skip;
	size_t cur_row;
	int *cur_map;		/* jobread field -> rf index or -1 */
	size_t cur_nmap;
	int64_t prev_t;
	int have_prev;
	int pass;
};

static int find_field(struct rs *s, const char *series, const char *field)
{
	size_t i;

	for (i = 0; i < s->nf; i++)
		if (!strcmp(s->f[i].series, series) &&
		    !strcmp(s->f[i].field, field))
			return (int)i;
	return -1;
}

static void read_units(struct rs *s, const struct sh5_jobread_series *se,
		       size_t first)
{
	char p[512];
	struct sh5_series *sr;
	struct sh5_error e;
	hid_t d;
	size_t i;
	int k;

	if (se->task >= 0)
		snprintf(p, sizeof(p), "/Steps/%s/Nodes/%s/Tasks/%lld",
			 se->step->name, se->node->group, (long long)se->task);
	else
		snprintf(p, sizeof(p), "/Steps/%s/Nodes/%s/%s",
			 se->step->name, se->node->group, se->name);
	H5E_BEGIN_TRY
	{
		d = H5Dopen2(s->r->file, p, H5P_DEFAULT);
	}
	H5E_END_TRY;
	if (d < 0)
		return;
	sr = sh5_series_from_dataset("", se->name, d, &e);
	H5Dclose(d);
	if (!sr)
		return;
	for (i = first; i < s->nf; i++) {
		k = sh5_series_field_index(sr, s->f[i].field);
		if (k < 0)
			continue;
		s->f[i].delta = sr->fields[k].kind == SH5_FK_DELTA;
		snprintf(s->f[i].raw_unit, sizeof(s->f[i].raw_unit), "%s",
			 sr->fields[k].unit);
		snprintf(s->f[i].unit, sizeof(s->f[i].unit), "%s%s",
			 sr->fields[k].unit, s->f[i].delta ? "/s" : "");
	}
	sh5_series_destroy(sr);
}

static int p1_node(void *arg, const struct sh5_jobread_step *st,
		   const struct sh5_jobread_node *nd, struct sh5_error *errp)
{
	struct rs *s = arg;
	struct rp *r = s->r;
	size_t i;
	void *p;

	(void)st;
	p = realloc(r->node_group, (r->nnodes + 1) * sizeof(*r->node_group));
	if (!p)
		goto nomem;
	r->node_group = p;
	snprintf(r->node_group[r->nnodes], 64, "%s", nd->group);
	p = realloc(r->node_name, (r->nnodes + 1) * sizeof(*r->node_name));
	if (!p)
		goto nomem;
	r->node_name = p;
	snprintf(r->node_name[r->nnodes], 64, "%s", nd->name);
	p = realloc(r->task_id, (r->ntasks + nd->ntasks + 1) * sizeof(int64_t));
	if (!p)
		goto nomem;
	r->task_id = p;
	p = realloc(r->task_node, (r->ntasks + nd->ntasks + 1) *
					  sizeof(size_t));
	if (!p)
		goto nomem;
	r->task_node = p;
	p = realloc(s->node_base, (r->nnodes + 1) * sizeof(size_t));
	if (!p)
		goto nomem;
	s->node_base = p;
	s->node_base[r->nnodes] = r->ntasks;
	for (i = 0; i < nd->ntasks; i++) {
		r->task_id[r->ntasks] = nd->tasks[i];
		r->task_node[r->ntasks++] = r->nnodes;
	}
	r->nnodes++;
	return 0;
nomem:
	return sh5_errprintf(errp, "out of memory");
}

static int p1_series(void *arg, const struct sh5_jobread_series *se,
		     struct sh5_error *errp)
{
	struct rs *s = arg;
	struct rp *r = s->r;
	size_t i, first = s->nf;
	void *p;

	if (se->nsamples) {
		if (r->t0 == INT64_MAX || se->t_first_ns < r->t0)
			r->t0 = se->t_first_ns;
		if (se->t_last_ns > r->t1)
			r->t1 = se->t_last_ns;
	}
	if (se->time_source == 2)
		r->synced = 1;
	for (i = 0; i < se->nfields; i++) {
		if (find_field(s, se->name, se->fields[i]) >= 0)
			continue;
		p = realloc(s->f, (s->nf + 1) * sizeof(*s->f));
		if (!p)
			return sh5_errprintf(errp, "out of memory");
		s->f = p;
		memset(&s->f[s->nf], 0, sizeof(*s->f));
		snprintf(s->f[s->nf].series, 64, "%s", se->name);
		snprintf(s->f[s->nf].field, 64, "%s", se->fields[i]);
		s->f[s->nf].min = INFINITY;
		s->f[s->nf].max = -INFINITY;
		s->nf++;
	}
	if (first < s->nf)
		read_units(s, se, first);
	return 1;
}

static int p2_series(void *arg, const struct sh5_jobread_series *se,
		     struct sh5_error *errp)
{
	struct rs *s = arg;
	size_t i;
	int k;

	if (se->nfields > s->cur_nmap) {
		int *p = realloc(s->cur_map, se->nfields * sizeof(int));

		if (!p)
			return sh5_errprintf(errp, "out of memory");
		s->cur_map = p;
		s->cur_nmap = se->nfields;
	}
	for (i = 0; i < se->nfields; i++) {
		k = find_field(s, se->name, se->fields[i]);
		s->cur_map[i] = k;
	}
	if (se->task >= 0 && s->task_rows)
		s->cur_row = s->node_base[se->node->position] + se->local_rank;
	else
		s->cur_row = se->node->position;
	s->have_prev = 0;
	return se->nsamples ? 0 : 1;
}

static int p2_chunk(void *arg, const struct sh5_jobread_series *se,
		    const struct sh5_jobread_chunk *c, struct sh5_error *errp)
{
	struct rs *s = arg;
	struct rp *r = s->r;
	double span = (double)(r->t1 - r->t0) + 1.0;
	size_t i, k;

	(void)errp;
	for (i = 0; i < c->n; i++) {
		int64_t t = c->time_ns[i];
		double dt = s->have_prev ? (double)(t - s->prev_t) / 1e9 : 0;
		double x = (double)(t - r->t0) / span * (double)s->bins;
		size_t b;

		if (x < 0)
			x = 0;
		b = (size_t)x;
		if (b >= s->bins)
			b = s->bins - 1;
		for (k = 0; k < se->nfields; k++) {
			struct rf *f;
			double v = c->values[i * se->nfields + k], d;
			size_t cell;

			if (s->cur_map[k] < 0 || !isfinite(v))
				continue;
			f = &s->f[s->cur_map[k]];
			f->raw_sum += v;
			if (f->delta) {
				if (dt <= 0)
					continue;
				v /= dt;
			}
			if (s->cur_row >= f->nrows)
				continue;
			cell = s->cur_row * s->bins + b;
			f->sum[cell] += (float)v;
			f->cnt[cell]++;
			f->n++;
			d = v - f->mean;
			f->mean += d / f->n;
			f->m2 += d * (v - f->mean);
			if (v < f->min)
				f->min = v;
			if (v > f->max)
				f->max = v;
		}
		s->prev_t = t;
		s->have_prev = 1;
	}
	r->res->samples += c->n;
	return 0;
}

static int p2_node(void *arg, const struct sh5_jobread_step *st,
		   const struct sh5_jobread_node *nd, struct sh5_error *errp)
{
	struct rs *s = arg;

	(void)st;
	(void)errp;
	if (s->r->o.progress)
		s->r->o.progress(s->r->o.progress_arg, "series",
				 nd->position, s->r->nnodes);
	return 0;
}

static double cell_mean(const struct rf *f, size_t bins, size_t row,
			size_t b0, size_t b1)
{
	double sum = 0;
	uint64_t n = 0;
	size_t b;

	for (b = b0; b < b1; b++) {
		sum += f->sum[row * bins + b];
		n += f->cnt[row * bins + b];
	}
	return n ? sum / (double)n : NAN;
}

/* Heat map of f: rows x heat_bins bytes, 0..254, 255 = no data. */
static int write_heat(struct rs *s, struct rf *f, size_t heat_bins,
		      struct sh5_error *errp)
{
	struct sh5_json *j = s->r->j;
	size_t b, row, nb = s->bins;
	double lo = INFINITY, hi = -INFINITY;
	unsigned char *q;
	double *m;

	q = malloc(f->nrows * heat_bins + 1);
	m = malloc((f->nrows * heat_bins + 1) * sizeof(double));
	if (!q || !m) {
		free(q);
		free(m);
		return sh5_errprintf(errp, "out of memory");
	}
	for (row = 0; row < f->nrows; row++)
		for (b = 0; b < heat_bins; b++) {
			double v = cell_mean(f, nb, row, b * nb / heat_bins,
					     (b + 1) * nb / heat_bins);

			m[row * heat_bins + b] = v;
			if (isnan(v))
				continue;
			if (v < lo)
				lo = v;
			if (v > hi)
				hi = v;
		}
	for (b = 0; b < f->nrows * heat_bins; b++) {
		double v = m[b];

		if (isnan(v))
			q[b] = 255;
		else if (hi > lo)
			q[b] = (unsigned char)lrint((v - lo) / (hi - lo) * 254);
		else
			q[b] = 127;
	}
	sh5_json_key(j, "heat");
	sh5_json_object_open(j);
	sh5_json_kv_uint(j, "bins", heat_bins);
	sh5_json_key(j, "lo");
	rp_num(j, lo);
	sh5_json_key(j, "hi");
	rp_num(j, hi);
	sh5_json_key(j, "q");
	rp_base64(j, q, f->nrows * heat_bins);
	sh5_json_object_close(j);
	free(q);
	free(m);
	return 0;
}

static int write_field(struct rs *s, struct rf *f, size_t heat_bins,
		       struct sh5_error *errp)
{
	struct sh5_json *j = s->r->j;
	size_t b, row, nb = s->bins;
	double *m;

	sh5_json_object_open(j);
	sh5_json_kv_string(j, "s", f->series);
	sh5_json_kv_string(j, "f", f->field);
	sh5_json_kv_string(j, "u", f->unit);
	sh5_json_kv_bool(j, "delta", f->delta);
	sh5_json_kv_string(j, "rows", f->task_rows ? "task" : "node");
	sh5_json_kv_uint(j, "n", f->nrows);
	sh5_json_key(j, "stats");
	sh5_json_object_open(j);
	sh5_json_kv_double(j, "count", f->n);
	sh5_json_key(j, "mean");
	rp_num(j, f->n ? f->mean : NAN);
	sh5_json_key(j, "sd");
	rp_num(j, f->n > 1 ? sqrt(f->m2 / (f->n - 1)) : NAN);
	sh5_json_key(j, "min");
	rp_num(j, f->min);
	sh5_json_key(j, "max");
	rp_num(j, f->max);
	sh5_json_key(j, "sum");
	rp_num(j, f->raw_sum);
	sh5_json_kv_string(j, "unit", f->raw_unit);
	sh5_json_object_close(j);
	/* per bin over rows: min, mean, max of the rows' means */
	m = malloc(3 * nb * sizeof(double));
	if (!m)
		return sh5_errprintf(errp, "out of memory");
	for (b = 0; b < nb; b++) {
		double mn = INFINITY, mx = -INFINITY, sum = 0;
		size_t n = 0;

		for (row = 0; row < f->nrows; row++) {
			double v = cell_mean(f, nb, row, b, b + 1);

			if (isnan(v))
				continue;
			sum += v;
			n++;
			if (v < mn)
				mn = v;
			if (v > mx)
				mx = v;
		}
		m[b] = n ? mn : NAN;
		m[nb + b] = n ? sum / (double)n : NAN;
		m[2 * nb + b] = n ? mx : NAN;
	}
	sh5_json_key(j, "agg");
	sh5_json_array_open(j);
	for (b = 0; b < 3 * nb; b++)
		rp_num(j, m[b]);
	sh5_json_array_close(j);
	free(m);
	if (f->nrows <= RP_LINE_ROWS) {
		sh5_json_key(j, "lines");
		sh5_json_array_open(j);
		for (row = 0; row < f->nrows; row++)
			for (b = 0; b < nb; b++)
				rp_num(j, cell_mean(f, nb, row, b, b + 1));
		sh5_json_array_close(j);
	}
	if (write_heat(s, f, heat_bins, errp) < 0)
		return -1;
	return sh5_json_object_close(j);
}

static int rp_alloc_fields(struct rs *s, struct sh5_error *errp)
{
	struct rp *r = s->r;
	size_t i;

	s->task_rows = r->ntasks <= RP_TASK_ROWS;
	for (i = 0; i < s->nf; i++) {
		struct rf *f = &s->f[i];

		f->task_rows = !strcmp(f->series, "Task") && s->task_rows;
		f->nrows = f->task_rows ? r->ntasks : r->nnodes;
		f->sum = calloc(f->nrows * s->bins + 1, sizeof(float));
		f->cnt = calloc(f->nrows * s->bins + 1, sizeof(uint32_t));
		if (!f->sum || !f->cnt)
			return sh5_errprintf(errp, "out of memory for %zu x "
					     "%zu bins", f->nrows, s->bins);
	}
	return 0;
}

void rp_series_free(struct rp *r)
{
	free(r->node_group);
	free(r->node_name);
	r->node_name = NULL;
	free(r->task_id);
	free(r->task_node);
	r->node_group = NULL;
	r->task_id = NULL;
	r->task_node = NULL;
	r->nnodes = r->ntasks = 0;
}

int rp_series(struct rp *r, const char *step, struct sh5_error *errp)
{
	struct sh5_jobread_ops p1 = { .node_begin = p1_node,
				      .series_begin = p1_series };
	struct sh5_jobread_ops p2 = { .node_begin = p2_node,
				      .series_begin = p2_series,
				      .chunk = p2_chunk };
	struct rs s = { .r = r };
	struct sh5_json *j = r->j;
	size_t i, cells = 0, heat_bins;
	int rc = -1;

	s.bins = r->o.bins;
	rp_series_free(r);
	r->t0 = INT64_MAX;
	r->t1 = INT64_MIN;
	r->synced = 0;
	if (sh5_jobread_walk(r->jr, step, &p1, &s, errp) < 0)
		goto out;
	if (r->t0 == INT64_MAX)
		r->t0 = r->t1 = 0;
	if (rp_alloc_fields(&s, errp) < 0)
		goto out;
	if (sh5_jobread_walk(r->jr, step, &p2, &s, errp) < 0)
		goto out;
	r->res->nnodes += r->nnodes;
	r->res->ntasks += r->ntasks;
	r->res->nseries += s.nf;
	for (i = 0; i < s.nf; i++)
		cells += s.f[i].nrows;
	heat_bins = cells ? r->o.heat_budget / cells : s.bins;
	if (heat_bins > s.bins)
		heat_bins = s.bins;
	if (heat_bins < 16)
		heat_bins = 16 < s.bins ? 16 : s.bins;
	sh5_json_kv_int(j, "t0", r->t0);
	sh5_json_kv_int(j, "t1", r->t1);
	sh5_json_kv_bool(j, "synced", r->synced);
	sh5_json_kv_uint(j, "bins", s.bins);
	sh5_json_key(j, "nodes");
	sh5_json_array_open(j);
	for (i = 0; i < r->nnodes; i++)
		sh5_json_string(j, r->node_name[i]);
	sh5_json_array_close(j);
	sh5_json_key(j, "tasks");
	sh5_json_array_open(j);
	for (i = 0; i < r->ntasks; i++)
		sh5_json_int(j, r->task_id[i]);
	sh5_json_array_close(j);
	sh5_json_key(j, "task_node");
	sh5_json_array_open(j);
	for (i = 0; i < r->ntasks; i++)
		sh5_json_uint(j, r->task_node[i]);
	sh5_json_array_close(j);
	sh5_json_key(j, "series");
	sh5_json_array_open(j);
	for (i = 0; i < s.nf; i++)
		if (write_field(&s, &s.f[i], heat_bins, errp) < 0)
			goto out;
	sh5_json_array_close(j);
	if (!s.nf)
		rp_missing(r, "step %s: no time series", step);
	rc = 0;
out:
	for (i = 0; i < s.nf; i++) {
		free(s.f[i].sum);
		free(s.f[i].cnt);
	}
	free(s.f);
	free(s.node_base);
	free(s.cur_map);
	return rc;
}
