/* extract_par.c - the time series CSV in two threads (see
 * extract_int.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "common/fdio.h"
#include "merge/extract_int.h"
#include "profile/series_csv.h"

/* Can every row go through sh5_extract_emit_rows' buffer (the worker
 * has no FILE)? */
int sh5_extract_all_buffered(const struct sh5_extract *o,
			     const struct sh5_extract_sel *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char prefix[256];

		sh5_extract_prefix(o, &v[i], prefix, sizeof(prefix));
		if (strlen(prefix) + SH5_FMT_ROW_MAX(v[i].s->nfields) >
		    SH5_FMT_ROW_LINE)
			return 0;
	}
	return 1;
}

/* Rows per segment of a cursor: whole chunks, about SEG_ROWS
 * (SH5MERGE_EXTRACT_SEGMENT overrides it, for tests). */
static uint64_t seg_rows(uint64_t cr)
{
	uint64_t want = SEG_ROWS;
	const char *e = getenv("SH5MERGE_EXTRACT_SEGMENT");

	if (e && strtoull(e, NULL, 10) > 0)
		want = strtoull(e, NULL, 10);
	if (!cr)
		return want;
	return cr >= want ? cr : want / cr * cr;
}

/* Below this many stored rows in all (SH5MERGE_EXTRACT_PAR_ROWS
 * overrides it; 0 under SH5MERGE_EXTRACT_SEGMENT, for tests) one thread
 * does it all: two threads cost more CPU in HDF5's lock and the ring's
 * hand-overs (13 % on 0.92 M rows, 30 % on 230k) and gain no wall time
 * up to about 2 M rows, none at all when the other CPU is busy. */
#define PAR_ROWS (1u << 21)

static uint64_t par_rows(void)
{
	const char *e = getenv("SH5MERGE_EXTRACT_PAR_ROWS");

	if (e)
		return strtoull(e, NULL, 10);
	return getenv("SH5MERGE_EXTRACT_SEGMENT") ? 0 : PAR_ROWS;
}

/* Are there at least min stored rows in v? */
static int rows_at_least(const struct sh5_extract_sel *v, size_t n,
			 uint64_t min)
{
	uint64_t rows = 0;
	size_t i;

	for (i = 0; i < n && rows < min; i++) {
		hid_t sp = H5Dget_space(v[i].dset);
		hssize_t np;

		if (sp < 0)
			continue;
		np = H5Sget_simple_extent_npoints(sp);
		if (np > 0)
			rows += (uint64_t)np;
		H5Sclose(sp);
	}
	return rows >= min;
}

/* How a series is cut, worked out before the fork so that both
 * processes agree without opening every series: rows and chunk rows as
 * the cursor finds them, and the global index of its first segment. */
struct segs {
	uint64_t nrows, step, first, count;
};

static void plan_segments(const struct sh5_extract_sel *v, size_t n,
			  struct segs *sg)
{
	uint64_t g = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		hid_t sp = H5Dget_space(v[i].dset);
		hid_t dcpl = H5Dget_create_plist(v[i].dset);
		hsize_t dims[1] = { 0 }, cdims[1] = { 0 };
		uint64_t cr = 0;

		sg[i].nrows = 0;
		if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
		    H5Sget_simple_extent_dims(sp, dims, NULL) == 1)
			sg[i].nrows = dims[0];
		if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED &&
		    H5Pget_chunk(dcpl, 1, cdims) == 1 && cdims[0] > 0)
			cr = cdims[0];
		if (sp >= 0)
			H5Sclose(sp);
		if (dcpl >= 0)
			H5Pclose(dcpl);
		sg[i].step = seg_rows(cr);
		sg[i].first = g;
		sg[i].count = (sg[i].nrows + sg[i].step - 1) / sg[i].step;
		g += sg[i].count;
	}
}

/* Does the process of parity `mine` own a segment of this series? */
static int owns(const struct segs *sg, unsigned mine)
{
	return sg->count > 1 || (sg->count == 1 && (sg->first & 1) == mine);
}

/* The worker's CSV goes to the calling thread in blocks through a ring
 * of QSLOTS blocks of OUT_BUFFER bytes: data blocks, then, at the end of
 * each of its segments, one end block that says whether the segment met
 * damage (the series ends there, as in one thread). */
#define QSLOTS 4

struct block {
	char *p;
	size_t len;       /* bytes of CSV (data block) */
	int end;          /* 0 data, 1 end of segment, 2 end at damage,
			   * 3 the series could not be opened (reason),
			   * 4 the worker is out of memory */
	uint64_t lost;
	char reason[200];
};

struct worker {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct block b[QSLOTS];
	size_t head, count; /* the next block to take; blocks handed over */
	int stop;           /* the taker gave up */
	size_t slot;        /* the block the worker fills (not counted) */
	struct obuf ob;     /* into that block */
	const struct sh5_extract *o;
	struct sh5_extract_sel *v;
	size_t n;
	const struct segs *sg;
};

/* Hand the block being filled over (len bytes, end as in struct block)
 * and wait for a free one.  0, or -1 when the taker gave up. */
static int hand_over(struct worker *w, int end, uint64_t lost,
		     const char *reason)
{
	struct block *bk = &w->b[w->slot];
	int stop;

	bk->len = w->ob.len;
	bk->end = end;
	bk->lost = lost;
	snprintf(bk->reason, sizeof(bk->reason), "%s", reason);
	pthread_mutex_lock(&w->lock);
	w->count++;
	pthread_cond_broadcast(&w->cond);
	while (w->count == QSLOTS && !w->stop)
		pthread_cond_wait(&w->cond, &w->lock);
	stop = w->stop;
	w->slot = (w->head + w->count) % QSLOTS;
	pthread_mutex_unlock(&w->lock);
	w->ob.p = w->b[w->slot].p;
	w->ob.len = 0;
	return stop ? -1 : 0;
}

/* The worker's obuf flush: a full data block handed over. */
static int worker_flush(struct obuf *b)
{
	struct worker *w = b->arg;

	if (!b->len)
		return 0;
	return hand_over(w, 0, 0, "");
}

/* The worker's segments of series i (an open cursor c): 0, or -1 the
 * taker gave up. */
static int worker_series(struct worker *w, size_t i, struct sh5_cursor *c,
			 void *buf)
{
	const struct segs *sg = &w->sg[i];
	char prefix[256];
	uint64_t k, at;
	int r;

	sh5_extract_prefix(w->o, &w->v[i], prefix, sizeof(prefix));
	for (k = 0; k < sg->count; k++) {
		if (!((sg->first + k) & 1))
			continue;
		at = k * sg->step;
		r = sh5_extract_segment(c, &w->v[i], prefix, buf, at,
					at + sg->step < sg->nrows ?
					at + sg->step : sg->nrows, &w->ob);
		if (r < 0 || worker_flush(&w->ob) < 0 ||
		    hand_over(w, r ? 2 : 1, r ? sh5_cursor_lost(c) : 0,
			      r ? c->reason : "") < 0)
			return -1;
	}
	return 0;
}

/* The worker thread: its (odd) segments, in order, into the ring. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	void *buf = malloc(ROW_BUFFER);
	size_t i;

	sh5_error_h5_silence();
	if (!buf) {
		hand_over(w, 4, 0, "");
		return NULL;
	}
	for (i = 0; i < w->n; i++) {
		struct sh5_cursor c;
		struct sh5_error err = { "" };
		int r;

		if (!owns(&w->sg[i], 1))
			continue;
		if (sh5_cursor_open(&c, w->v[i].dset, w->v[i].s, 0,
				    &err) < 0) {
			hand_over(w, 3, 0, err.text);
			break;
		}
		r = worker_series(w, i, &c, buf);
		sh5_cursor_close(&c);
		if (r < 0)
			break;
	}
	free(buf);
	return NULL;
}

/* The next block of the worker (waits for it); give it back with
 * put_back(). */
static struct block *take(struct worker *w)
{
	struct block *bk;

	pthread_mutex_lock(&w->lock);
	while (!w->count)
		pthread_cond_wait(&w->cond, &w->lock);
	bk = &w->b[w->head];
	pthread_mutex_unlock(&w->lock);
	return bk;
}

static void put_back(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	w->head = (w->head + 1) % QSLOTS;
	w->count--;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Write (or drop) one segment of the worker into out.  1 when it ended
 * at damage (*fr filled), 0 ok, -1 the worker is out of memory, -2
 * writing the output failed, -3 the worker could not open the series
 * (fr->reason). */
static int take_segment(struct worker *w, struct obuf *out, int drop,
			struct block *fr)
{
	for (;;) {
		struct block *bk = take(w);
		int r = 0;

		if (bk->end) {
			*fr = *bk;
			r = bk->end == 4 ? -1 : bk->end == 3 ? -3 :
			    bk->end == 2;
			put_back(w);
			return r;
		}
		/* Straight to the output after what this thread holds:
		 * the bytes cross no other buffer. */
		if (!drop && bk->len &&
		    (sh5_obuf_flush(out) < 0 ||
		     sh5_fd_write_all(fileno(out->out), bk->p, bk->len) < 0)) {
			if (!*out->out_errno)
				*out->out_errno = errno ? errno : EIO;
			r = -2;
		} else if (!drop && bk->len) {
			sh5_extract_wrote(fileno(out->out));
		}
		put_back(w);
		if (r)
			return r;
	}
}

/* A failure of the worker's segment of e (take_segment's r < 0) into
 * errp; writing the output failed (-2) is the caller's. */
static void worker_error(const struct sh5_extract *o,
			 const struct sh5_extract_sel *e, int r,
			 const struct block *fr, struct sh5_error *errp)
{
	if (r == -3)
		sh5_errprintf(errp, "%s: %s/%s/%s: %s", o->input, e->e.step,
			      e->e.node, e->e.path, fr->reason);
	else if (r == -1)
		sh5_errprintf(errp, "%s: out of memory", o->input);
}

/* This thread's side of series e: its own segments formatted here, the
 * worker's written from the ring (or dropped after damage), in order.
 * 0, or -1 failed (*werr: writing the output failed, else errp set). */
static int own_series(const struct sh5_extract *o, struct sh5_extract_sel *e,
		      const struct segs *sg, struct worker *w,
		      struct obuf *out, void *buf, int *werr,
		      struct sh5_error *errp)
{
	struct sh5_cursor c;
	struct sh5_error err = { "" };
	char prefix[256], reason[200] = "";
	uint64_t k, at, lost = 0;
	int dead = 0, open = 0, r, rc = -1;

	sh5_extract_prefix(o, e, prefix, sizeof(prefix));
	for (k = 0; k < sg->count; k++) {
		at = k * sg->step;
		if ((sg->first + k) & 1) {
			struct block fr;

			r = take_segment(w, out, dead, &fr);
			if (r < 0) {
				worker_error(o, e, r, &fr, errp);
				*werr = r == -2;
				goto out;
			}
			if (r && !dead) {
				dead = 1;
				lost = fr.lost;
				snprintf(reason, sizeof(reason), "%s",
					 fr.reason);
			}
			continue;
		}
		if (dead)
			continue;
		if (!open && sh5_cursor_open(&c, e->dset, e->s, 0, &err) < 0) {
			sh5_errprintf(errp, "%s: %s/%s/%s: %s", o->input,
				      e->e.step, e->e.node, e->e.path,
				      err.text);
			goto out;
		}
		open = 1;
		r = sh5_extract_segment(&c, e, prefix, buf, at,
					at + sg->step < sg->nrows ?
					at + sg->step : sg->nrows, out);
		if (r < 0) {
			*werr = 1;
			goto out;
		}
		if (r) {
			dead = 1;
			lost = sh5_cursor_lost(&c);
			snprintf(reason, sizeof(reason), "%s", c.reason);
		}
	}
	if (open)
		sh5_cursor_close(&c);
	open = 0;
	if (dead)
		sh5_extract_warn_lost(o, e, lost, reason);
	rc = 0;
out:
	if (open)
		sh5_cursor_close(&c);
	return rc;
}

/* The worker's state and ring for v; 0, or -1 (nothing to free). */
static int worker_init(struct worker *w, const struct sh5_extract *o,
		       struct sh5_extract_sel *v, size_t n,
		       const struct segs *sg)
{
	size_t i;

	memset(w, 0, sizeof(*w));
	for (i = 0; i < QSLOTS; i++)
		if (!(w->b[i].p = malloc(OUT_BUFFER)))
			goto error;
	w->o = o;
	w->v = v;
	w->n = n;
	w->sg = sg;
	w->ob.p = w->b[0].p;
	w->ob.flush = worker_flush;
	w->ob.arg = w;
	w->ob.out_errno = NULL;
	if (pthread_mutex_init(&w->lock, NULL) != 0)
		goto error;
	if (pthread_cond_init(&w->cond, NULL) != 0) {
		pthread_mutex_destroy(&w->lock);
		goto error;
	}
	return 0;
error:
	for (i = 0; i < QSLOTS; i++)
		free(w->b[i].p);
	return -1;
}

static void worker_free(struct worker *w)
{
	size_t i;

	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	for (i = 0; i < QSLOTS; i++)
		free(w->b[i].p);
}

/* 0 done (a write error is left in ferror(out->out) or *out->out_errno
 * for the caller to report), -1 failed (errp set), 1 no worker could be
 * started (HDF5 not thread-safe, no memory or thread) or the job is too
 * short for one (par_rows). */
int sh5_extract_par(const struct sh5_extract *o, struct sh5_extract_sel *v,
		    size_t n, struct obuf *out, void *buf,
		    struct sh5_error *errp)
{
	hbool_t safe = 0;
	int rc = -1, werr = 0;
	struct segs *sg;
	struct worker w;
	pthread_t tid;
	size_t i;

	if (H5is_library_threadsafe(&safe) < 0 || !safe ||
	    !rows_at_least(v, n, par_rows()))
		return 1;
	if (!(sg = calloc(n ? n : 1, sizeof(*sg))))
		return 1;
	plan_segments(v, n, sg);
	if (worker_init(&w, o, v, n, sg) < 0) {
		free(sg);
		return 1;
	}
	if (pthread_create(&tid, NULL, worker_main, &w) != 0) {
		worker_free(&w);
		free(sg);
		return 1;
	}
	for (i = 0; i < n; i++) {
		if (own_series(o, &v[i], &sg[i], &w, out, buf, &werr,
			       errp) < 0)
			goto out;
		if (o->progress)
			o->progress(o->arg, i + 1, n);
	}
	rc = 0;
out:
	pthread_mutex_lock(&w.lock);
	w.stop = 1;
	pthread_cond_broadcast(&w.cond);
	pthread_mutex_unlock(&w.lock);
	pthread_join(tid, NULL);
	worker_free(&w);
	free(sg);
	return werr ? 0 : rc;
}
