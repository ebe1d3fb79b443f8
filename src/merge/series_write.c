/* series_write.c - one series of an input into the job file (see
 * merge_int.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge/merge_int.h"

/* Copy the stored chunks holding rows [0, rows) from din to dout. */
static int copy_chunks(hid_t din, hid_t dout, hsize_t cr, uint64_t rows,
		       void **buf, size_t *len)
{
	hsize_t off[1];

	for (off[0] = 0; off[0] < rows; off[0] += cr) {
		hsize_t size = 0;
		uint32_t filters = 0;

		if (H5Dget_chunk_storage_size(din, off, &size) < 0 || !size)
			return -1;
		if (size > *len) {
			void *nb = realloc(*buf, (size_t)size);

			if (!nb)
				return -1;
			*buf = nb;
			*len = (size_t)size;
		}
		if (H5Dread_chunk(din, H5P_DEFAULT, off, &filters, *buf) < 0 ||
		    H5Dwrite_chunk(dout, H5P_DEFAULT, filters, off,
				   (size_t)size, *buf) < 0)
			return -1;
	}
	return 0;
}

/* One series being written: its input, its output, how. */
struct sw {
	struct mstate *m;
	struct sh5_nodestep *ns;
	struct sh5_ns_series *e;
	struct finfo *f;
	const struct sh5_series *s;
	struct sh5_cursor c;
	hid_t din, dout, ft, fsp;
	struct sh5_recmap *map;
	void *wbuf;             /* packed records, or raw chunks */
	size_t wbuf_len, rows_per_buf;
	void *total;
	int raw, sync;
	uint64_t done;          /* rows written */
};

/* The output dataset of w (w->ft, dout, fsp; raw or not, map, wbuf) in
 * gout.  0, or -1 on an HDF5 failure. */
static int sw_create(struct sw *w, hid_t gout)
{
	hid_t sp = -1, dcpl = -1, lcpl = -1, dapl = -1;
	hsize_t dims[1], maxd[1] = { H5S_UNLIMITED }, chunk[1];
	uint64_t good = w->c.good_rows;
	int rc = -1;

	dims[0] = good;
	chunk[0] = good < 1 ? 1 : good > CHUNK_ROWS_MAX ? CHUNK_ROWS_MAX :
							    good;
	if ((w->ft = w->s->ops->file_type(w->s)) < 0 ||
	    (sp = H5Screate_simple(1, dims, maxd)) < 0 ||
	    (lcpl = mg_lcpl_intermediate()) < 0)
		goto out;
	/* Compressed chunks of an intact input already in our file type
	 * are copied as they are (raw): no recompression, and the job file
	 * stays as small as the inputs.  The records are still decoded,
	 * for the totals and to find damage. */
	w->raw = !w->ns->salvaged && w->c.chunk_rows &&
		 mg_raw_copyable(w->din, w->ft);
	if (w->raw) {
		if ((dcpl = H5Dget_create_plist(w->din)) < 0)
			goto out;
	} else if ((dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
		   H5Pset_chunk(dcpl, 1, chunk) < 0 ||
		   /* Synchronized series cannot be copied raw: compress
		    * them as the plugin does. */
		   (w->sync && (H5Pset_shuffle(dcpl) < 0 ||
				H5Pset_deflate(dcpl, 4) < 0))) {
		goto out;
	}
	/* No chunk cache: whole chunks go straight from our buffer to the
	 * file (a cache would calloc and copy each chunk first). */
	if ((dapl = H5Pcreate(H5P_DATASET_ACCESS)) < 0 ||
	    H5Pset_chunk_cache(dapl, 0, 0, 1.0) < 0)
		goto out;
	w->dout = H5Dcreate2(gout, w->e->path, w->ft, sp, lcpl, dcpl, dapl);
	if (w->dout < 0 || sh5_series_write_attrs(w->s, w->dout, NULL) < 0 ||
	    (w->fsp = H5Dget_space(w->dout)) < 0)
		goto out;
	/* Pack records into the file layout ourselves (HDF5's compound
	 * conversion is the slow part of a merge) and write them as they
	 * are; HDF5 converts only when no map applies. */
	if (!w->raw && (w->map = sh5_recmap_build(w->c.mtype, w->ft)) &&
	    !(w->wbuf = malloc(w->rows_per_buf * H5Tget_size(w->ft)))) {
		sh5_recmap_free(w->map);
		w->map = NULL;
	}
	rc = 0;
out:
	if (dapl >= 0)
		H5Pclose(dapl);
	if (lcpl >= 0)
		H5Pclose(lcpl);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (sp >= 0)
		H5Sclose(sp);
	return rc;
}

/* Write n records of m->buf (FEED_ flags how) at row w->done.  0, or -1
 * on an HDF5 failure. */
static int sw_put(struct sw *w, size_t n, int how)
{
	struct mstate *m = w->m;
	hsize_t start[1] = { w->done }, cnt[1] = { n };
	hid_t ms;
	int rc;

	if (w->map && !(how & FEED_PACKED))
		sh5_recmap_apply(w->map, m->buf, w->wbuf, n);
	if ((ms = H5Screate_simple(1, cnt, NULL)) < 0)
		return -1;
	rc = H5Sselect_hyperslab(w->fsp, H5S_SELECT_SET, start, NULL, cnt,
				 NULL) < 0 ||
	     H5Dwrite(w->dout, (how & FEED_PACKED) || w->map ? w->ft :
		      w->c.mtype, ms, w->fsp, H5P_DEFAULT,
		      (how & FEED_PACKED) ? m->buf :
		      w->map ? w->wbuf : m->buf) < 0 ? -1 : 0;
	H5Sclose(ms);
	return rc;
}

/* Every record of the series, as the reader gives them: written (or,
 * raw, only totalled), synchronized, totalled.  0, -1 on an HDF5
 * failure, -2 on another error (errp set). */
static int sw_rows(struct sw *w)
{
	struct mstate *m = w->m;
	const struct sh5_series_ops *ops = w->s->ops;

	for (;;) {
		int how;
		size_t n = mg_feed_read(m, (size_t)(w->f - m->fi),
					(size_t)(w->e - w->ns->series), &w->c,
					m->buf, w->rows_per_buf, w->total,
					w->sync, &how);

		if (!n)
			return 0;
		if (how & FEED_NODATA) {
			/* Totalled by the child, the chunks copied raw. */
			if (!w->raw) {
				sh5_errprintf(m->errp, "%s: %s: the reading "
					      "process is out of step",
					      w->f->in->path, w->e->path);
				return -2;
			}
			w->done += n;
			continue;
		}
		if (w->sync)
			m->o->hooks->sync_rows(m->o->hooks->arg, w->s, m->buf,
					       n);
		if (!w->raw && sw_put(w, n, how) < 0)
			return -1;
		if (!(how & FEED_TOTALED))
			ops->total_add(w->s, w->total, m->buf, n);
		w->done += n;
	}
}

/* What was written and lost, counted and reported; the dataset noted
 * for the verification.  0, or -1 (out of memory, errp set). */
static int sw_account(struct sw *w, const char *gpath)
{
	struct mstate *m = w->m;
	struct finfo *f = w->f;
	const struct sh5_ns_series *e = w->e;
	char full[512];

	f->written += w->done;
	m->st->samples += w->done;
	if (w->c.damaged || w->done < e->nrows) {
		uint64_t lost = e->nrows - w->done;

		f->lost += lost;
		m->st->lost += lost;
		if (strcmp(f->status, "salvaged")) {
			/* Damage the first pass did not see. */
			f->status = "salvaged";
			snprintf(f->reason, sizeof(f->reason), "%.60s: %.180s",
				 e->path, w->c.reason);
			mg_report(m, 1, f->in->path, "damaged: %s: %s; %" PRIu64
				  " of %" PRIu64 " samples lost", e->path,
				  w->c.reason, lost, e->nrows);
		}
	}
	snprintf(full, sizeof(full), "%s/%s", gpath, e->path);
	if (mg_add_check(m, full, w->done) < 0)
		return sh5_errprintf(m->errp, "out of memory");
	return 0;
}

int mg_write_series(struct mstate *m, struct sh5_nodestep *ns,
		    struct sh5_ns_series *e, hid_t gout, const char *gpath,
		    struct finfo *f, void *total, int sync)
{
	struct sw w;
	struct sh5_error err = { "" };
	hsize_t dims[1];
	int rc = -1, r;

	memset(&w, 0, sizeof(w));
	w.m = m;
	w.ns = ns;
	w.e = e;
	w.f = f;
	w.s = e->series;
	w.total = total;
	w.sync = sync;
	w.dout = w.ft = w.fsp = -1;
	w.rows_per_buf = mg_rows_per_buffer(m, w.s);
	w.s->ops->total_init(w.s, total);
	if ((w.din = H5Dopen2(ns->node, e->path, H5P_DEFAULT)) < 0 ||
	    sh5_cursor_open(&w.c, w.din, w.s, ns->salvaged ? ns->real_eof : 0,
			    &err) < 0) {
		sh5_errprintf_h5(&err, "cannot open");
		mg_report(m, 1, f->in->path, "%s: %s; series left out", e->path,
			  err.text);
		f->lost += e->nrows;
		if (w.din >= 0)
			H5Dclose(w.din);
		return 0;
	}
	dims[0] = w.c.good_rows;
	if (sw_create(&w, gout) < 0 || (r = sw_rows(&w)) == -1)
		goto h5fail;
	if (r == -2) {
		m->write_failed = 1;
		goto out;
	}
	if (w.raw && copy_chunks(w.din, w.dout, w.c.chunk_rows, w.done,
				 &w.wbuf, &w.wbuf_len) < 0)
		goto h5fail;
	if (w.done < dims[0]) {
		dims[0] = w.done;
		if (H5Dset_extent(w.dout, dims) < 0)
			goto h5fail;
	}
	if (sw_account(&w, gpath) == 0)
		rc = 0;
	goto out;
h5fail:
	mg_h5err(m->errp, "%s: cannot write %s/%s", m->o->output, gpath,
		 e->path);
	m->write_failed = 1;
out:
	sh5_recmap_free(w.map);
	free(w.wbuf);
	if (w.fsp >= 0)
		H5Sclose(w.fsp);
	if (w.dout >= 0)
		H5Dclose(w.dout);
	if (w.ft >= 0)
		H5Tclose(w.ft);
	sh5_cursor_close(&w.c);
	H5Dclose(w.din);
	return rc;
}
