/* extract.c - see extract.h */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/csvfmt.h"
#include "merge/extract.h"
#include "merge/extract_int.h"
#include "merge/jobfile.h"

/* The node group last opened by open_entry (entries come by node). */
struct node_group {
	char path[256];
	hid_t g;
};

/* Open e's dataset relative to its node group (kept open in ng for the
 * next entries of the node: a path from the root is looked up member by
 * member, a sixth of the cost of opening a series).  Its id or -1. */
static hid_t open_entry(hid_t f, const struct sh5_jf_entry *e,
			struct node_group *ng, hid_t dapl)
{
	char np[256];

	sh5_jobfile_node_path(e, np, sizeof(np));
	/* As the full path "np/path" of up to 511 bytes did. */
	if (strlen(np) + 1 + strlen(e->path) >= 512)
		return -1;
	if (ng->g < 0 || strcmp(np, ng->path)) {
		if (ng->g >= 0)
			H5Gclose(ng->g);
		snprintf(ng->path, sizeof(ng->path), "%s", np);
		if ((ng->g = H5Gopen2(f, np, H5P_DEFAULT)) < 0)
			return -1;
	}
	return H5Dopen2(ng->g, e->path, dapl);
}

/* The descriptions of the series of one extraction, by file type: the
 * datasets of a job file share a few types (one per series kind), and
 * reading a type member by member costs more than comparing it. */
#define TYPE_MEMO 8
struct type_memo {
	hid_t ft[TYPE_MEMO];
	struct sh5_series *s[TYPE_MEMO];
	size_t n;
};

/* e's series description (dataset d): from the memo when one of its
 * type and ops is there; the kind and unit attributes read only if
 * attrs (totals use them, rows do not).  NULL if d is not a series. */
static struct sh5_series *series_of(struct type_memo *tm,
				    const struct sh5_jf_entry *e, hid_t d,
				    int attrs, int *tkind)
{
	const struct sh5_series_ops *ops;
	struct sh5_series *s;
	hid_t ft;
	size_t i;

	*tkind = -1;
	if (attrs)
		return sh5_series_from_dataset(e->parent, e->name, d, NULL);
	if ((ft = H5Dget_type(d)) < 0)
		return NULL;
	ops = sh5_series_ops_lookup(e->parent, e->name);
	for (i = 0; i < tm->n; i++) {
		if (tm->s[i]->ops == ops && H5Tequal(ft, tm->ft[i]) > 0) {
			H5Tclose(ft);
			*tkind = (int)i;
			return sh5_series_dup(tm->s[i], e->parent, e->name,
					      NULL);
		}
	}
	s = sh5_series_from_type(e->parent, e->name, d, ft, 0, NULL);
	if (!s || tm->n == TYPE_MEMO) {
		H5Tclose(ft);
		return s;
	}
	tm->ft[tm->n] = ft;
	*tkind = (int)tm->n;
	tm->s[tm->n++] = s;
	return sh5_series_dup(s, e->parent, e->name, NULL);
}

static void type_memo_free(struct type_memo *tm)
{
	size_t i;

	for (i = 0; i < tm->n; i++) {
		H5Tclose(tm->ft[i]);
		sh5_series_destroy(tm->s[i]);
	}
}

/* Select and open the entries that match the options. */
int sh5_extract_select(hid_t f, struct sh5_extract *o,
		       struct sh5_extract_sel **out, size_t *nout,
		       struct sh5_error *errp)
{
	struct sh5_jf_entry *v = NULL;
	struct sh5_extract_sel *sv = NULL;
	struct node_group ng = { "", -1 };
	struct type_memo tm = { { 0 }, { NULL }, 0 };
	size_t n = 0, i, k = 0;
	char stepname[32] = "";

	hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);

	/* All selected datasets stay open (--field reads them side by
	 * side): no chunk cache per dataset, or memory grows with their
	 * number.  Reads are of many records at a time anyway. */
	H5Pset_chunk_cache(dapl, 0, 0, 1.0);
	if (sh5_jobfile_list(f, o->input, &v, &n, errp) < 0) {
		H5Pclose(dapl);
		return -1;
	}
	if (o->step)
		sh5_step_name(o->step, stepname, sizeof(stepname));
	o->group = !strcmp(o->series, "Tasks");
	for (i = 0; i < n && !o->group; i++)
		o->group = !strcmp(v[i].parent, o->series);
	if (!(sv = calloc(n ? n : 1, sizeof(*sv)))) {
		free(v);
		H5Pclose(dapl);
		return sh5_errprintf(errp, "%s: out of memory", o->input);
	}
	for (i = 0; i < n; i++) {
		struct sh5_jf_entry *e = &v[i];
		hid_t d;

		if (o->step && strcmp(e->step, stepname) &&
		    strcmp(e->step, o->step))
			continue;
		if (o->node && strcmp(e->node, o->node))
			continue;
		if (is_tasks(o)) {
			if (strcmp(e->parent, o->series))
				continue;
			if (o->task && strcmp(e->name, o->task))
				continue;
		} else if (e->parent[0] || strcmp(e->name, o->series)) {
			continue;
		}
		if ((d = open_entry(f, e, &ng, dapl)) < 0)
			continue;
		sv[k].s = series_of(&tm, e, d, o->totals || o->field,
				    &sv[k].tkind);
		if (!sv[k].s) {
			H5Dclose(d);
			continue;
		}
		sv[k].e = *e;
		sv[k].dset = d;
		k++;
	}
	free(v);
	type_memo_free(&tm);
	H5Pclose(dapl);
	if (ng.g >= 0)
		H5Gclose(ng.g);
	*out = sv;
	*nout = k;
	return 0;
}

void sh5_extract_free(struct sh5_extract_sel *v, size_t n, int close_dsets)
{
	size_t i;

	for (i = 0; v && i < n; i++) {
		sh5_series_destroy(v[i].s);
		if (close_dsets)
			H5Dclose(v[i].dset);
	}
	free(v);
}

/* The header an entry's ops write, for checking all entries agree. */
char *sh5_extract_header(const struct sh5_extract_sel *e, int totals)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	if (totals)
		e->s->ops->extract_totals(e->s, m, 1, "", NULL);
	else
		e->s->ops->extract_series(e->s, m, 1, "", NULL, 0);
	fclose(m);
	return buf;
}

/* The time series CSV in this thread.  A cursor goes on from a series to
 * the next of the same file type (sh5_cursor_next: no types or record
 * map built again).  0, or -1 with errp set; write errors are left in
 * ferror(out) or o->out_errno. */
static int one_thread(struct sh5_extract *o, struct sh5_extract_sel *v,
		      size_t n, struct obuf *ob, void *buf,
		      struct sh5_error *errp)
{
	struct sh5_cursor c;
	int open = 0, r;
	size_t i;

	for (i = 0; i < n; i++) {
		struct sh5_error err = { "" };
		char prefix[256];

		sh5_extract_prefix(o, &v[i], prefix, sizeof(prefix));
		if (open && v[i].tkind >= 0 && v[i].tkind == v[i - 1].tkind) {
			r = sh5_cursor_next(&c, v[i].dset, v[i].s, &err);
		} else {
			if (open)
				sh5_cursor_close(&c);
			r = sh5_cursor_open(&c, v[i].dset, v[i].s, 0, &err);
		}
		if ((open = r == 0) == 0)
			return sh5_errprintf(errp, "%s: %s/%s/%s: %s",
					     o->input, v[i].e.step,
					     v[i].e.node, v[i].e.path,
					     err.text);
		/* A write error stays in ferror(out) or o->out_errno. */
		(void)sh5_extract_rows(&c, &v[i], prefix, buf, UINT64_MAX, ob);
		if (c.damaged)
			sh5_extract_warn_lost(o, &v[i], sh5_cursor_lost(&c),
					      c.reason);
		if (sh5_extract_out_failed(ob->out, o->out_errno))
			break;
		if (o->progress)
			o->progress(o->arg, i + 1, n);
	}
	if (open)
		sh5_cursor_close(&c);
	return 0;
}

int sh5_extract_timeseries(struct sh5_extract *o, struct sh5_extract_sel *v,
			   size_t n, FILE *out, struct sh5_error *errp)
{
	void *buf = malloc(ROW_BUFFER);
	struct obuf ob = { malloc(OUT_BUFFER), 0, out, NULL, NULL,
			   &o->out_errno, NULL, NULL };
	int rc = -1;

	if (!buf || !ob.p) {
		free(buf);
		free(ob.p);
		return sh5_errprintf(errp, "%s: out of memory", o->input);
	}
	/* SH5MERGE_NO_FORK: one thread (tests compare both). */
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1 && !getenv("SH5MERGE_NO_FORK") &&
	    sh5_extract_all_buffered(o, v, n)) {
		rc = sh5_extract_par(o, v, n, &ob, buf, errp);
		if (rc <= 0)
			goto out;
		/* no worker: do it here */
	}
	/* One thread writes all: the blocks without the page cache. */
	if (o->out_private)
		sh5_obuf_direct(&ob);
	rc = one_thread(o, v, n, &ob, buf, errp);
out:
	sh5_obuf_flush(&ob); /* an error stays in ferror(out) */
	sh5_obuf_direct_end(&ob); /* or in o->out_errno */
	free(ob.p);
	free(buf);
	return rc;
}

/* The total of one entry: stored under Totals/ or computed. */
static void *entry_total(hid_t f, struct sh5_extract_sel *e)
{
	const struct sh5_series *s = e->s;
	void *t = malloc(s->ops->total_size(s));
	char np[256], full[512];
	hid_t d, mt;

	if (!t)
		return NULL;
	sh5_jobfile_node_path(&e->e, np, sizeof(np));
	snprintf(full, sizeof(full), "%s/Totals/%s", np, e->e.path);
	if (H5Lexists(f, np, H5P_DEFAULT) > 0 &&
	    H5Lexists(f, full, H5P_DEFAULT) <= 0)
		d = -1;
	else
		d = H5Dopen2(f, full, H5P_DEFAULT);
	if (d >= 0) {
		s->ops->total_init(s, t);
		mt = s->ops->total_mem_type(s);
		if (mt >= 0 && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT,
				       t) >= 0) {
			H5Tclose(mt);
			H5Dclose(d);
			return t;
		}
		if (mt >= 0)
			H5Tclose(mt);
		H5Dclose(d);
	}
	/* sh5util's job files have no totals: compute them. */
	{
		struct sh5_cursor c;
		size_t rows = ROW_BUFFER / s->ops->record_size(s), got;
		void *buf = malloc(ROW_BUFFER);

		s->ops->total_init(s, t);
		if (!buf || sh5_cursor_open(&c, e->dset, s, 0, NULL) < 0) {
			free(buf);
			return t;
		}
		while ((got = sh5_cursor_read(&c, buf, rows ? rows : 1)) > 0)
			s->ops->total_add(s, t, buf, got);
		sh5_cursor_close(&c);
		free(buf);
	}
	return t;
}

int sh5_extract_totals(const struct sh5_extract *o, hid_t f,
		       struct sh5_extract_sel *v, size_t n, FILE *out,
		       struct sh5_error *errp)
{
	void *node_t = NULL, *step_t = NULL;
	size_t i;
	int per_node = is_tasks(o) && !o->task;
	int per_step = !o->task && !o->node;
	char prefix[256];

	for (i = 0; i < n; i++) {
		const struct sh5_series *s = v[i].s;
		void *t = entry_total(f, &v[i]);

		if (!t) {
			sh5_errprintf(errp, "%s: out of memory", o->input);
			goto error;
		}
		sh5_extract_prefix(o, &v[i], prefix, sizeof(prefix));
		s->ops->extract_totals(s, out, 0, prefix, t);
		if (per_node) {
			if (!node_t && (node_t = malloc(s->ops->total_size(s))))
				s->ops->total_init(s, node_t);
			if (node_t)
				s->ops->total_merge(s, node_t, t);
		}
		if (per_step) {
			if (!step_t && (step_t = malloc(s->ops->total_size(s))))
				s->ops->total_init(s, step_t);
			if (step_t)
				s->ops->total_merge(s, step_t, t);
		}
		free(t);
		if (per_node && node_t &&
		    (i + 1 == n || strcmp(v[i + 1].e.node, v[i].e.node) ||
		     strcmp(v[i + 1].e.step, v[i].e.step))) {
			snprintf(prefix, sizeof(prefix), "%s,%s,all,",
				 v[i].e.step, v[i].e.node);
			s->ops->extract_totals(s, out, 0, prefix, node_t);
			free(node_t);
			node_t = NULL;
		}
		if (per_step && step_t &&
		    (i + 1 == n || strcmp(v[i + 1].e.step, v[i].e.step))) {
			snprintf(prefix, sizeof(prefix), "%s,all,%s",
				 v[i].e.step, is_tasks(o) ? "all," : "");
			s->ops->extract_totals(s, out, 0, prefix, step_t);
			free(step_t);
			step_t = NULL;
		}
	}
	return 0;
error:
	free(node_t);
	free(step_t);
	return -1;
}

/* --field: one column per entry, one row per EpochTime second. */
struct col {
	struct sh5_cursor c;
	void *buf;
	size_t rows, have, at;
	int field;
	int done;
};

static int col_fill(struct col *k)
{
	if (k->at < k->have)
		return 1;
	k->have = sh5_cursor_read(&k->c, k->buf, k->rows);
	k->at = 0;
	if (!k->have)
		k->done = 1;
	return k->have > 0;
}

static uint64_t col_time(const struct col *k, const struct sh5_series *s)
{
	return ((const union sh5_value *)k->buf)[k->at * sh5_record_slots(s) +
						  1].u;
}

/* Open column i (series v) of the --field table with its share of the
 * row-buffer budget.  0, or -1 with errp set. */
static int col_open(const struct sh5_extract *o, struct sh5_extract_sel *v,
		    struct col *k, size_t budget, struct sh5_error *errp)
{
	size_t rs = v->s->ops->record_size(v->s);

	k->field = sh5_series_field_index(v->s, o->field);
	if (k->field < 0)
		return sh5_errprintf(errp, "%s: %s/%s/%s: no field %s",
				     o->input, v->e.step, v->e.node,
				     v->e.path, o->field);
	k->rows = budget / rs;
	if (k->rows < 16)
		k->rows = 16;
	if (k->rows > 4096)
		k->rows = 4096;
	if (!(k->buf = malloc(k->rows * rs)))
		return sh5_errprintf(errp, "%s: out of memory", o->input);
	if (sh5_cursor_open(&k->c, v->dset, v->s, 0, NULL) < 0) {
		free(k->buf);
		k->buf = NULL;
		return sh5_errprintf(errp, "%s: %s/%s/%s: unreadable",
				     o->input, v->e.step, v->e.node,
				     v->e.path);
	}
	/* Direct chunk reads need a whole chunk per column. */
	k->c.direct = 0;
	return 0;
}

/* One row of the --field table into line: the earliest EpochTime of all
 * columns and each column's value then (empty if it has none).  The
 * length, or 0 when every column is done. */
static size_t aligned_row(struct sh5_extract_sel *v, size_t n,
			  struct col *cols, char *line)
{
	uint64_t tmin = UINT64_MAX;
	size_t len = 0, i;

	for (i = 0; i < n; i++) {
		if (cols[i].done || !col_fill(&cols[i]))
			continue;
		if (col_time(&cols[i], v[i].s) < tmin)
			tmin = col_time(&cols[i], v[i].s);
	}
	if (tmin == UINT64_MAX)
		return 0;
	len = sh5_fmt_u64(line, tmin);
	for (i = 0; i < n; i++) {
		struct col *k = &cols[i];
		const struct sh5_series *s = v[i].s;
		union sh5_value val;
		int have = 0;

		line[len++] = ',';
		/* Several samples in one second: the last one.  The value
		 * is copied out: refilling the buffer overwrites it. */
		while (!k->done && col_fill(k) && col_time(k, s) == tmin) {
			val = ((const union sh5_value *)k->buf)
				[k->at * sh5_record_slots(s) +
				 SH5_TIME_SLOTS + (size_t)k->field];
			have = 1;
			k->at++;
		}
		if (!have)
			continue;
		if (s->fields[k->field].type == SH5_FT_DOUBLE)
			len += sh5_fmt_double(line + len, val.d);
		else
			len += sh5_fmt_u64(line + len, val.u);
	}
	line[len++] = '\n';
	return len;
}

int sh5_extract_aligned(const struct sh5_extract *o, struct sh5_extract_sel *v,
			size_t n, FILE *out, struct sh5_error *errp)
{
	struct col *cols = calloc(n ? n : 1, sizeof(*cols));
	size_t i, multi_step = 0, budget, len;
	char *line = NULL;
	int rc = -1;

	if (!cols)
		goto oom;
	for (i = 1; i < n; i++)
		if (strcmp(v[i].e.step, v[0].e.step))
			multi_step = 1;
	/* Bounded memory: 16 MiB of row buffers across all columns
	 * (SH5MERGE_EXTRACT_BUFFER overrides it, for tests). */
	budget = (16u << 20);
	if (getenv("SH5MERGE_EXTRACT_BUFFER"))
		budget = (size_t)strtoul(getenv("SH5MERGE_EXTRACT_BUFFER"),
					 NULL, 10);
	budget /= n ? n : 1;
	fputs("EpochTime", out);
	for (i = 0; i < n; i++) {
		if (col_open(o, &v[i], &cols[i], budget, errp) < 0)
			goto out;
		fputc(',', out);
		if (multi_step)
			fprintf(out, "%s:", v[i].e.step);
		if (is_tasks(o))
			fprintf(out, "%s:%s", v[i].e.node, v[i].e.name);
		else
			fputs(v[i].e.node, out);
	}
	fputc('\n', out);
	if (!(line = malloc(32 + n * (SH5_FMT_MAX + 1))))
		goto oom;
	while ((len = aligned_row(v, n, cols, line)) > 0)
		if (fwrite(line, 1, len, out) != len)
			break;
	rc = 0;
	goto out;
oom:
	sh5_errprintf(errp, "%s: out of memory", o->input);
out:
	for (i = 0; cols && i < n; i++) {
		if (cols[i].buf)
			sh5_cursor_close(&cols[i].c);
		free(cols[i].buf);
	}
	free(cols);
	free(line);
	return rc;
}
