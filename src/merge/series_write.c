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

int mg_write_series(struct mstate *m, struct sh5_nodestep *ns,
			struct sh5_ns_series *e, hid_t gout, const char *gpath,
			struct finfo *f, void *total, int sync)
{
	const struct sh5_series *s = e->series;
	const struct sh5_series_ops *ops = s->ops;
	struct sh5_cursor c;
	struct sh5_error err = { "" };
	hid_t din = -1, dout = -1, ft = -1, sp = -1, dcpl = -1, lcpl = -1,
	      ms = -1, fsp = -1;
	hsize_t dims[1], maxd[1] = { H5S_UNLIMITED }, chunk[1];
	size_t rows_per_buf = m->buf_bytes / ops->record_size(s);
	uint64_t done = 0;
	char full[512];
	int rc = -1, copen = 0;
	struct sh5_recmap *map = NULL;
	void *wbuf = NULL;
	size_t wbuf_len = 0;
	hid_t dapl = -1;
	int raw;

	rows_per_buf = mg_rows_per_buffer(m, s);
	ops->total_init(s, total);
	if ((din = H5Dopen2(ns->node, e->path, H5P_DEFAULT)) < 0 ||
	    sh5_cursor_open(&c, din, s, ns->salvaged ? ns->real_eof : 0,
			    &err) < 0) {
		sh5_errprintf_h5(&err, "cannot open");
		mg_report(m, 1, f->in->path, "%s: %s; series left out", e->path,
		       err.text);
		f->lost += e->nrows;
		if (din >= 0)
			H5Dclose(din);
		return 0;
	}
	copen = 1;
	dims[0] = c.good_rows;
	chunk[0] = c.good_rows < 1 ? 1 :
		   c.good_rows > CHUNK_ROWS_MAX ? CHUNK_ROWS_MAX : c.good_rows;
	if ((ft = ops->file_type(s)) < 0 ||
	    (sp = H5Screate_simple(1, dims, maxd)) < 0 ||
	    (lcpl = mg_lcpl_intermediate()) < 0)
		goto h5fail;
	/* Compressed chunks of an intact input already in our file type
	 * are copied as they are (raw): no recompression, and the job file
	 * stays as small as the inputs.  The records are still decoded,
	 * for the totals and to find damage. */
	raw = !ns->salvaged && c.chunk_rows && mg_raw_copyable(din, ft);
	if (raw) {
		if ((dcpl = H5Dget_create_plist(din)) < 0)
			goto h5fail;
	} else if ((dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
		   H5Pset_chunk(dcpl, 1, chunk) < 0 ||
		   /* Synchronized series cannot be copied raw: compress
		    * them as the plugin does. */
		   (sync && (H5Pset_shuffle(dcpl) < 0 ||
			     H5Pset_deflate(dcpl, 4) < 0))) {
		goto h5fail;
	}
	/* No chunk cache: whole chunks go straight from our buffer to the
	 * file (a cache would calloc and copy each chunk first). */
	if ((dapl = H5Pcreate(H5P_DATASET_ACCESS)) < 0 ||
	    H5Pset_chunk_cache(dapl, 0, 0, 1.0) < 0)
		goto h5fail;
	dout = H5Dcreate2(gout, e->path, ft, sp, lcpl, dcpl, dapl);
	if (dout < 0 || sh5_series_write_attrs(s, dout, NULL) < 0)
		goto h5fail;
	if ((fsp = H5Dget_space(dout)) < 0)
		goto h5fail;
	/* Pack records into the file layout ourselves (HDF5's compound
	 * conversion is the slow part of a merge) and write them as they
	 * are; HDF5 converts only when no map applies. */
	if (!raw && (map = sh5_recmap_build(c.mtype, ft)) &&
	    !(wbuf = malloc(rows_per_buf * H5Tget_size(ft)))) {
		sh5_recmap_free(map);
		map = NULL;
	}
	for (;;) {
		int how;
		size_t n = mg_feed_read(m, (size_t)(f - m->fi),
				     (size_t)(e - ns->series), &c, m->buf,
				     rows_per_buf, total, sync, &how);
		hsize_t start[1] = { done }, cnt[1] = { n };

		if (!n)
			break;
		if (how & FEED_NODATA) {
			/* Totalled by the child, the chunks copied raw. */
			if (!raw) {
				sh5_errprintf(m->errp, "%s: %s: the reading "
					      "process is out of step",
					      f->in->path, e->path);
				m->write_failed = 1;
				goto out;
			}
			done += n;
			continue;
		}
		if (sync)
			m->o->hooks->sync_rows(m->o->hooks->arg, s, m->buf, n);
		if (raw) {
			if (!(how & FEED_TOTALED))
				ops->total_add(s, total, m->buf, n);
			done += n;
			continue;
		}
		if (map && !(how & FEED_PACKED))
			sh5_recmap_apply(map, m->buf, wbuf, n);
		if ((ms = H5Screate_simple(1, cnt, NULL)) < 0 ||
		    H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start, NULL, cnt,
					NULL) < 0 ||
		    H5Dwrite(dout, (how & FEED_PACKED) || map ? ft : c.mtype,
			     ms, fsp, H5P_DEFAULT,
			     (how & FEED_PACKED) ? m->buf :
			     map ? wbuf : m->buf) < 0)
			goto h5fail;
		H5Sclose(ms);
		ms = -1;
		if (!(how & FEED_TOTALED))
			ops->total_add(s, total, m->buf, n);
		done += n;
	}
	if (raw && copy_chunks(din, dout, c.chunk_rows, done, &wbuf,
			       &wbuf_len) < 0)
		goto h5fail;
	if (done < dims[0]) {
		dims[0] = done;
		if (H5Dset_extent(dout, dims) < 0)
			goto h5fail;
	}
	f->written += done;
	m->st->samples += done;
	if (c.damaged || done < e->nrows) {
		uint64_t lost = e->nrows - done;

		f->lost += lost;
		m->st->lost += lost;
		if (strcmp(f->status, "salvaged")) {
			/* Damage the first pass did not see. */
			f->status = "salvaged";
			snprintf(f->reason, sizeof(f->reason), "%.60s: %.180s",
				 e->path, c.reason);
			mg_report(m, 1, f->in->path, "damaged: %s: %s; %" PRIu64
			       " of %" PRIu64 " samples lost", e->path,
			       c.reason, lost, e->nrows);
		}
	}
	snprintf(full, sizeof(full), "%s/%s", gpath, e->path);
	if (mg_add_check(m, full, done) < 0) {
		sh5_errprintf(m->errp, "out of memory");
		goto out;
	}
	rc = 0;
	goto out;
h5fail:
	mg_h5err(m->errp, "%s: cannot write %s/%s", m->o->output,
			 gpath, e->path);
	m->write_failed = 1;
out:
	sh5_recmap_free(map);
	free(wbuf);
	if (dapl >= 0)
		H5Pclose(dapl);
	if (ms >= 0)
		H5Sclose(ms);
	if (fsp >= 0)
		H5Sclose(fsp);
	if (dout >= 0)
		H5Dclose(dout);
	if (lcpl >= 0)
		H5Pclose(lcpl);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (sp >= 0)
		H5Sclose(sp);
	if (ft >= 0)
		H5Tclose(ft);
	if (copen)
		sh5_cursor_close(&c);
	H5Dclose(din);
	return rc;
}
