/* writer_chunks.c - the writer's datasets, chunk assembly, flush (writer.h) */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <endian.h>
#include <hdf5.h>
#include <zlib.h>

#include "common/checksum.h"
#include "profile/totals.h"
#include "profile/writer.h"
#include "profile/writer_int.h"
#include "profile/zdeflate.h"
#include "profile/zinc.h"

static hid_t clock_type(int file)
{
	hid_t t = H5Tcreate(H5T_COMPOUND, file ? 32 :
					   sizeof(struct sh5_clock_sample));
	hid_t i64 = file ? H5T_STD_I64LE : H5T_NATIVE_INT64;
	hid_t u32 = file ? H5T_STD_U32LE : H5T_NATIVE_UINT32;

	H5Tinsert(t, "LocalTimeNs", file ? 0 :
		  offsetof(struct sh5_clock_sample, local_ns), i64);
	H5Tinsert(t, "OffsetNs", file ? 8 :
		  offsetof(struct sh5_clock_sample, offset_ns), i64);
	H5Tinsert(t, "RoundTripNs", file ? 16 :
		  offsetof(struct sh5_clock_sample, rtt_ns), i64);
	H5Tinsert(t, "Stratum", file ? 24 :
		  offsetof(struct sh5_clock_sample, stratum), u32);
	H5Tinsert(t, "Phase", file ? 28 :
		  offsetof(struct sh5_clock_sample, phase), u32);
	return t;
}

/*
 * The file type of series s, committed to the file (anonymously: no link)
 * for the first series of its kind and shared by the next ones, whose
 * object headers then refer to it instead of holding a copy of their own
 * (about 650 bytes and 35 k instructions less per task dataset after the
 * first: bench/sh5_replay of 8 tasks, one sample each).  The writer
 * keeps it (closed at close; *kept set); -1 when it cannot be built, and
 * a type of the caller's when it cannot be committed or kept.
 */
static hid_t series_type(struct sh5_writer *w, const struct sh5_series *s,
			 int *kept)
{
	const struct sh5_series **nk;
	hid_t *nt, t;
	size_t i;

	*kept = 0;
	for (i = 0; i < w->nkinds; i++)
		if (sh5_series_same_fields(w->kinds[i], s) &&
		    w->kinds[i]->has_time_ns == s->has_time_ns &&
		    w->kinds[i]->has_sync_ns == s->has_sync_ns) {
			*kept = 1;
			return w->ktypes[i];
		}
	if ((t = s->ops->file_type(s)) < 0 ||
	    H5Tcommit_anon(w->file, t, H5P_DEFAULT, H5P_DEFAULT) < 0)
		return t;
	if ((nk = realloc(w->kinds, (w->nkinds + 1) * sizeof(*nk))))
		w->kinds = nk;
	if ((nt = realloc(w->ktypes, (w->nkinds + 1) * sizeof(*nt))))
		w->ktypes = nt;
	if (!nk || !nt)
		return t;
	w->kinds[w->nkinds] = s;
	w->ktypes[w->nkinds++] = t;
	*kept = 1;
	return t;
}

/* The creation list of the datasets of chunk rows, kept by the writer
 * for the next dataset of the same chunk (creating and closing one cost
 * ~36 k instructions per dataset); -1 when it cannot be made. */
static hid_t dataset_plist(struct sh5_writer *w, hsize_t chunk)
{
	hid_t p;

	if (w->dcpl >= 0 && w->dcpl_rows == chunk)
		return w->dcpl;
	if (w->dcpl >= 0)
		H5Pclose(w->dcpl);
	w->dcpl = -1;
	/* No modification time (nothing reads it): one message less in
	 * the header, and none to rewrite at every flush.  Last in the
	 * pipeline: a checksum of each stored (compressed) chunk, which
	 * sh5merge checks without decoding the chunk. */
	if ((p = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
	    H5Pset_chunk(p, 1, &chunk) < 0 ||
	    H5Pset_obj_track_times(p, 0) < 0 ||
	    (w->opts.shuffle && H5Pset_shuffle(p) < 0) ||
	    (w->opts.compression > 0 &&
	     H5Pset_deflate(p, (unsigned)w->opts.compression) < 0) ||
	    ((w->opts.shuffle || w->opts.compression > 0) &&
	     H5Pset_fletcher32(p) < 0)) {
		if (p >= 0)
			H5Pclose(p);
		return -1;
	}
	w->dcpl = p;
	w->dcpl_rows = chunk;
	return p;
}

/* The group name of the node group (the node group itself for ""),
 * created when missing, kept open by the writer for the next dataset of
 * the same group (the tasks); -1 when it cannot be opened. */
static hid_t parent_group(struct sh5_writer *w, const char *name)
{
	htri_t ex;
	hid_t g;

	if (!name[0])
		return w->node_grp;
	if (w->pgrp >= 0 && !strcmp(w->pname, name))
		return w->pgrp;
	if (w->pgrp >= 0)
		H5Gclose(w->pgrp);
	w->pgrp = -1;
	ex = H5Lexists(w->node_grp, name, H5P_DEFAULT);
	g = ex > 0 ? H5Gopen2(w->node_grp, name, H5P_DEFAULT) :
		     H5Gcreate2(w->node_grp, name, H5P_DEFAULT, w->gcpl,
				H5P_DEFAULT);
	if (g >= 0) {
		w->pgrp = g;
		snprintf(w->pname, sizeof(w->pname), "%s", name);
	}
	return g;
}

/* Create the dataset of t; io_lock held. */
static int create_dataset(struct sh5_writer *w, struct table *t,
			  struct sh5_error *errp)
{
	hid_t parent, ftype = -1, sp = -1, dcpl;
	hsize_t dim = 0, maxdim = H5S_UNLIMITED;
	int rc = -1, kept = 0;

	if ((parent = parent_group(w, t->parent)) < 0) {
		sh5_errprintf_h5(errp, "%s: cannot create group %s/%s",
				 w->path, w->node, t->parent);
		return -1;
	}
	ftype = t->series ? series_type(w, t->series, &kept) : clock_type(1);
	if (ftype < 0 || (sp = H5Screate_simple(1, &dim, &maxdim)) < 0 ||
	    (dcpl = dataset_plist(w, t->chunk_rows)) < 0)
		goto h5error;
	t->dset = H5Dcreate2(parent, t->name, ftype, sp, H5P_DEFAULT, dcpl,
			     H5P_DEFAULT);
	if (t->dset < 0)
		goto h5error;
	if (t->series && sh5_series_write_attrs(t->series, t->dset, errp) < 0)
		goto out;
	rc = 0;
	goto out;
h5error:
	sh5_errprintf_h5(errp, "%s: cannot create dataset %s/%s%s%s", w->path,
			 w->node, t->parent, t->parent[0] ? "/" : "", t->name);
out:
	if (sp >= 0)
		H5Sclose(sp);
	if (ftype >= 0 && !kept)
		H5Tclose(ftype);
	return rc;
}

/*
 * Direct chunk writes (series tables).  HDF5 filters a chunk as a whole:
 * through H5Dwrite, the last (partial) chunk of every series was
 * converted, shuffled, deflated at the configured level and checksummed
 * again at every flush, however few records it gained -- measured with
 * callgrind, deflate was most of the plugin's cost per sample.  Here the
 * writer keeps the last chunk itself and writes it with H5Dwrite_chunk,
 * filter mask 0 (the whole declared pipeline: shuffle, deflate,
 * fletcher32), in one of two ways:
 *
 * - default (shuffle and deflate on): the chunk is coded as its records
 *   come (src/profile/zinc.h: each byte plane run-length coded with
 *   fixed Huffman codes, kept across flushes); a flush writes the chunk
 *   as it stands, zero padded, at a cost of its new records plus one
 *   pass over the compressed chunk.  Every form written is final; a
 *   complete chunk, and the last one at close, are then coded again
 *   with their own Huffman code (sh5_zinc_recode()) when shorter.
 * - recompress (writer option) or no deflate: the shuffled chunk kept
 *   raw in t->cur; a complete chunk, and the last one at close, deflated
 *   at the configured level, the partial chunk of an intermediate flush
 *   recompressed whole at level 1 with zlib's run-length strategy
 *   (quadratic in the chunk).
 *
 * bench/plugin_icount.sh and doc/performance.md have the figures.
 */

/* The file bytes of memory record rec (b: room for the largest). */
static void file_row(const struct table *t, const union sh5_value *rec,
		     unsigned char *b)
{
	const struct sh5_series *s = t->series;
	size_t i, nf = s->nfields < 128 ? s->nfields : 128;
	uint64_t le;

	/* File order: ElapsedTime, EpochTime, the fields, EpochTimeNs,
	 * SyncTimeNs; the ns times stored unsigned (HDF5's conversion
	 * clamps a negative to 0). */
	le = htole64(rec[0].u);
	memcpy(b, &le, 8);
	le = htole64(rec[1].u);
	memcpy(b + 8, &le, 8);
	b += 16;
	for (i = 0; i < nf; i++, b += 8) {
		le = htole64(rec[SH5_TIME_SLOTS + i].u);
		memcpy(b, &le, 8);
	}
	if (s->has_time_ns) {
		le = htole64(rec[2].i < 0 ? 0 : (uint64_t)rec[2].i);
		memcpy(b, &le, 8);
		b += 8;
	}
	if (s->has_sync_ns) {
		le = htole64(rec[SH5_SLOT_SYNC(s)].i < 0 ? 0 :
			     (uint64_t)rec[SH5_SLOT_SYNC(s)].i);
		memcpy(b, &le, 8);
	}
}

#define ROW_MAX (8 * (SH5_TIME_SLOTS + 128 + 1))

/* Store row r of the last chunk (t->cur) from the memory record rec. */
static void put_row(struct sh5_writer *w, struct table *t, size_t r,
		    const union sh5_value *rec)
{
	size_t n = t->chunk_rows, j;
	unsigned char b[ROW_MAX];

	file_row(t, rec, b);
	if (!w->opts.shuffle) {
		memcpy(t->cur + r * t->fsize, b, t->fsize);
		return;
	}
	for (j = 0; j < t->fsize; j++)
		t->cur[j * n + r] = b[j];
}
/* Append HDF5's fletcher32 (little-endian) after len bytes; new length. */
static size_t add_fletcher(unsigned char *z, size_t len)
{
	uint32_t c = sh5_fletcher32(z, len);

	z[len++] = (unsigned char)c;
	z[len++] = (unsigned char)(c >> 8);
	z[len++] = (unsigned char)(c >> 16);
	z[len++] = (unsigned char)(c >> 24);
	return len;
}

static int chunk_error(struct sh5_writer *w, struct table *t,
		       struct sh5_error *errp)
{
	return sh5_errprintf_h5(errp, "%s: cannot write a chunk of %s/%s%s%s",
				w->path, w->node, t->parent,
				t->parent[0] ? "/" : "", t->name);
}

/* Write the last chunk (starting at row t->done) in final form: the
 * whole pipeline, deflate at the configured level. */
static int put_chunk(struct sh5_writer *w, struct table *t,
		     struct sh5_error *errp)
{
	size_t bytes = t->chunk_rows * t->fsize, out = bytes;
	hsize_t off = t->done;
	unsigned char *z = NULL;
	const unsigned char *data = t->cur;
	int fletcher = w->opts.shuffle || w->opts.compression > 0, rc = -1;

	if (w->opts.compression > 0 || fletcher) {
		size_t zlen = w->opts.compression > 0 ?
			      sh5_zdeflate_bound(bytes) : bytes;

		if (!(z = malloc(zlen + 4)))
			return sh5_errprintf(errp, "%s: out of memory",
					     w->path);
		if (w->opts.compression > 0) {
			if ((!w->zd && !(w->zd = sh5_zdeflate_create(
						 w->opts.compression))) ||
			    sh5_zdeflate(w->zd, z, &zlen, t->cur, bytes) < 0) {
				sh5_errprintf(errp, "%s: %s: deflate failed",
					      w->path, t->name);
				goto out;
			}
		} else {
			memcpy(z, t->cur, bytes);
		}
		out = zlen;
		if (fletcher)
			out = add_fletcher(z, out);
		data = z;
	}
	if (H5Dwrite_chunk(t->dset, H5P_DEFAULT, 0, &off, out, data) < 0) {
		chunk_error(w, t, errp);
		goto out;
	}
	t->cur_final = 1;
	rc = 0;
out:
	free(z);
	return rc;
}

/* The partial last chunk recompressed whole (shuffled, level 1,
 * run-length strategy, filter mask 0): quadratic in the chunk, but its
 * copy in the file stays small. */
static int put_recompressed(struct sh5_writer *w, struct table *t,
			    struct sh5_error *errp)
{
	size_t bytes = t->chunk_rows * t->fsize;
	uLongf zlen = compressBound(bytes);
	hsize_t off = t->done;
	unsigned char *z = malloc(zlen + 4);
	z_stream s;
	int rc = -1;

	if (!z)
		return sh5_errprintf(errp, "%s: out of memory", w->path);
	memset(&s, 0, sizeof(s));
	if (deflateInit2(&s, 1, Z_DEFLATED, 15, 8, Z_RLE) != Z_OK) {
		sh5_errprintf(errp, "%s: %s: deflate failed", w->path,
			      t->name);
		goto out;
	}
	s.next_in = t->cur;
	s.avail_in = (uInt)bytes;
	s.next_out = z;
	s.avail_out = (uInt)zlen;
	rc = deflate(&s, Z_FINISH) == Z_STREAM_END ? 0 : -1;
	zlen = s.total_out;
	deflateEnd(&s);
	if (rc < 0) {
		sh5_errprintf(errp, "%s: %s: deflate failed", w->path,
			      t->name);
		goto out;
	}
	zlen = add_fletcher(z, zlen);
	rc = -1;
	if (H5Dwrite_chunk(t->dset, H5P_DEFAULT, 0, &off, zlen, z) < 0) {
		chunk_error(w, t, errp);
		goto out;
	}
	t->cur_final = 0;
	rc = 0;
out:
	free(z);
	return rc;
}

/* Write the last chunk as zinc codes it (final form, filter mask 0); a
 * complete chunk, or the last one at close (last), re-coded with its own
 * Huffman code when that is shorter (zrecode.h): it then fits in the
 * space of the chunk's previous, longer copy. */
static int put_zinc(struct sh5_writer *w, struct table *t, int last,
		    struct sh5_error *errp)
{
	size_t len = 0, cap = last ? sh5_zinc_bound(t->zi) : 0;
	hsize_t off = t->done;
	const void *c = NULL;
	void *r = NULL;
	int rc = 0;

	/* re-coded if shorter, without coding zinc's form first */
	if (last && (r = malloc(cap)) &&
	    (len = sh5_zinc_recode(t->zi, r, cap)))
		c = r;
	if (!c && !(c = sh5_zinc_chunk(t->zi, &len))) {
		free(r);
		return sh5_errprintf(errp, "%s: out of memory", w->path);
	}
	if (H5Dwrite_chunk(t->dset, H5P_DEFAULT, 0, &off, len, c) < 0)
		rc = chunk_error(w, t, errp);
	t->zi_last = last;
	free(r);
	return rc;
}

/* Append n memory records to a series table through its incremental
 * coder; io_lock held.  Every chunk written is final: nothing to do at
 * close (n == 0). */
static int write_zinc(struct sh5_writer *w, struct table *t,
		      const void *buf, size_t n, struct sh5_error *errp)
{
	const unsigned char *p = buf;
	size_t cr = t->chunk_rows, i, used;
	hsize_t newdim = t->rows + n;
	unsigned char b[ROW_MAX];
	int closed;

	pthread_mutex_lock(&w->lock);
	closed = w->closed;
	pthread_mutex_unlock(&w->lock);
	if (!n) /* at close: the last chunk re-coded, if not yet */
		return closed && t->zi && sh5_zinc_rows(t->zi) &&
		       !t->zi_last ? put_zinc(w, t, 1, errp) : 0;
	if (!t->zi && !(t->zi = sh5_zinc_create(t->fsize, cr)))
		return errno == EINVAL ?
		       sh5_errprintf(errp, "%s: %s: cannot code chunks of %zu "
				     "records of %zu bytes", w->path, t->name,
				     cr, t->fsize) :
		       sh5_errprintf(errp, "%s: out of memory", w->path);
	if (H5Dset_extent(t->dset, &newdim) < 0)
		return sh5_errprintf_h5(errp, "%s: cannot extend %s/%s%s%s",
					w->path, w->node, t->parent,
					t->parent[0] ? "/" : "", t->name);
	used = sh5_zinc_rows(t->zi);
	for (i = 0; i < n; i++) {
		file_row(t, (const union sh5_value *)
			 (const void *)(p + i * t->rec_size), b);
		if (sh5_zinc_add(t->zi, b) < 0)
			return sh5_errprintf(errp, "%s: out of memory",
					     w->path);
		if (++used < cr)
			continue;
		if (put_zinc(w, t, 1, errp) < 0)
			return -1;
		t->done += cr;
		sh5_zinc_reset(t->zi);
		used = 0;
	}
	if (used && put_zinc(w, t, closed, errp) < 0)
		return -1;
	t->rows = newdim;
	t->series->ops->total_add(t->series, t->total, buf, n);
	return 0;
}

/* Append n memory records to a series table (the recompress method, or
 * no deflate); io_lock held.  With n == 0
 * on a closed writer, rewrites a partial chunk in final form. */
static int write_direct(struct sh5_writer *w, struct table *t,
			const void *buf, size_t n, struct sh5_error *errp)
{
	const unsigned char *p = buf;
	size_t cr = t->chunk_rows, used = (size_t)(t->rows - t->done), i;
	int closed;
	hsize_t newdim = t->rows + n;

	if (!w->opts.recompress && w->opts.shuffle &&
	    w->opts.compression > 0)
		return write_zinc(w, t, buf, n, errp);
	if (!n && !t->cur)
		return 0;
	if (!t->cur && !(t->cur = calloc(cr, t->fsize)))
		return sh5_errprintf(errp, "%s: out of memory", w->path);
	if (n && H5Dset_extent(t->dset, &newdim) < 0)
		return sh5_errprintf_h5(errp, "%s: cannot extend %s/%s%s%s",
					w->path, w->node, t->parent,
					t->parent[0] ? "/" : "", t->name);
	for (i = 0; i < n; i++) {
		put_row(w, t, used, (const union sh5_value *)
			(const void *)(p + i * t->rec_size));
		if (++used < cr)
			continue;
		if (put_chunk(w, t, errp) < 0)
			return -1;
		t->done += cr;
		memset(t->cur, 0, cr * t->fsize);
		t->cur_final = 0;
		used = 0;
	}
	pthread_mutex_lock(&w->lock);
	closed = w->closed;
	pthread_mutex_unlock(&w->lock);
	if (used && (closed ? !t->cur_final : n > 0) &&
	    (closed || w->opts.compression <= 0 ? put_chunk(w, t, errp) :
	     put_recompressed(w, t, errp)) < 0)
		return -1;
	t->rows = newdim;
	if (n)
		t->series->ops->total_add(t->series, t->total, buf, n);
	return 0;
}

static int write_rows(struct sh5_writer *w, struct table *t,
		      const void *buf, size_t n, struct sh5_error *errp)
{
	hsize_t start = t->rows, count = n, newdim = t->rows + n;
	hid_t fsp = -1, msp = -1, mtype = -1, dxpl = -1;
	int rc = -1;

	if (t->dset < 0 && create_dataset(w, t, errp) < 0)
		return -1;
	if (t->series)
		return write_direct(w, t, buf, n, errp);
	if (!n)
		return 0;
	mtype = t->series ? t->series->ops->mem_type(t->series) :
			    clock_type(0);
	/*
	 * The memory and file layouts differ (member order), so HDF5
	 * converts through a type-conversion buffer and a background
	 * buffer.  By default both are 1 MiB, and the background buffer is
	 * zeroed (calloc) at every H5Dwrite: measured with callgrind, that
	 * memset was a third of the writer's instructions and kept 2 MiB
	 * resident.  Sized to the records written (a record's memory
	 * layout is at least as large as its file layout), both cost what
	 * the data does.
	 */
	if ((dxpl = H5Pcreate(H5P_DATASET_XFER)) < 0 ||
	    H5Pset_buffer(dxpl, n * t->rec_size, NULL, NULL) < 0)
		goto h5error;
	if (mtype < 0 || H5Dset_extent(t->dset, &newdim) < 0 ||
	    (fsp = H5Dget_space(t->dset)) < 0 ||
	    H5Sselect_hyperslab(fsp, H5S_SELECT_SET, &start, NULL, &count,
				NULL) < 0 ||
	    (msp = H5Screate_simple(1, &count, NULL)) < 0 ||
	    H5Dwrite(t->dset, mtype, msp, fsp, dxpl, buf) < 0)
		goto h5error;
	t->rows = newdim;
	if (t->series)
		t->series->ops->total_add(t->series, t->total, buf, n);
	rc = 0;
	goto out;
h5error:
	sh5_errprintf_h5(errp, "%s: cannot append to %s/%s%s%s", w->path,
			 w->node, t->parent, t->parent[0] ? "/" : "", t->name);
out:
	if (dxpl >= 0)
		H5Pclose(dxpl);
	if (msp >= 0)
		H5Sclose(msp);
	if (fsp >= 0)
		H5Sclose(fsp);
	if (mtype >= 0)
		H5Tclose(mtype);
	return rc;
}

/*
 * The tables in the order a flush writes their chunks: shortest records
 * first (a fixed order), the tables' own order among equals.  A chunk
 * that grows no longer fits in its previous copy; HDF5 frees that copy
 * and places the new one in a freed piece that fits, or at the end of
 * the file.  Written small series first, each larger chunk's previous
 * copy joins the hole the smaller one left before it and the new copy
 * fits there, so what stays free between flushes is about the smaller
 * chunk.  Replaying a real 200 s step (sh5_replay, five flush phases)
 * in the plugin's order (tasks before the network) left 7.7 to 8.0 KB
 * unaccounted, in this order 3.7 to 5.4.  The plugin's own files still
 * lose one task chunk's copy when the flush at close adds a record to
 * it alone.  NULL if out of memory (then the tables' own order).
 */
static struct table **flush_order(struct sh5_writer *w, size_t n)
{
	struct table **o = malloc((n ? n : 1) * sizeof(*o));
	size_t i, j;

	if (!o)
		return NULL;
	pthread_mutex_lock(&w->lock);
	for (i = 0; i < n; i++)
		o[i] = w->tables[i];
	pthread_mutex_unlock(&w->lock);
	for (i = 1; i < n; i++) {
		struct table *t = o[i];

		for (j = i; j > 0 && o[j - 1]->fsize > t->fsize; j--)
			o[j] = o[j - 1];
		o[j] = t;
	}
	return o;
}

int sh5_writer_flush(struct sh5_writer *w, struct sh5_error *errp)
{
	struct table **order;
	size_t i, ntables;
	int rc = 0, closed;

	pthread_mutex_lock(&w->io_lock);
	if (w->failed) {
		pthread_mutex_unlock(&w->io_lock);
		errno = EIO;
		return sh5_errprintf(errp, "%s: an earlier write failed",
				     w->path);
	}
	if (sh5_writer_open_file(w, errp) < 0) {
		pthread_mutex_unlock(&w->io_lock);
		return -1;
	}
	pthread_mutex_lock(&w->lock);
	ntables = w->ntables;
	pthread_mutex_unlock(&w->lock);
	/* New datasets first, then the chunks: the object headers stay
	 * together at the front of the file, the samples after them (as
	 * when HDF5 wrote the chunks at H5Fflush), which is what a
	 * truncated file keeps best. */
	for (i = 0; i < ntables && !rc; i++) {
		struct table *t;

		pthread_mutex_lock(&w->lock);
		t = w->tables[i];
		pthread_mutex_unlock(&w->lock);
		if (t->dset < 0)
			rc = create_dataset(w, t, errp);
	}
	order = flush_order(w, ntables);
	for (i = 0; i < ntables && !rc; i++) {
		struct table *t;
		unsigned char *buf;
		size_t n;

		/* Take the pending records; appends go to a fresh buffer. */
		pthread_mutex_lock(&w->lock);
		t = order ? order[i] : w->tables[i];
		buf = t->buf;
		n = t->n;
		t->buf = NULL;
		t->n = t->cap = 0;
		closed = w->closed;
		pthread_mutex_unlock(&w->lock);
		if (n || t->dset < 0 || (closed && (t->cur || t->zi)))
			rc = write_rows(w, t, buf, n, errp);
		if (!rc)
			w->st.written += n;
		free(buf);
	}
	free(order);
	if (!rc && H5Fflush(w->file, H5F_SCOPE_GLOBAL) < 0)
		rc = sh5_errprintf_h5(errp, "%s: cannot flush", w->path);
	if (rc)
		w->failed = 1;
	else
		w->st.flushes++;
	pthread_mutex_unlock(&w->io_lock);
	return rc;
}
