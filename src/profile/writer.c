/* writer.c - see writer.h */
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
#include "common/h5attr.h"
#include "profile/totals.h"
#include "profile/writer.h"
#include "profile/zdeflate.h"
#include "profile/zpartial.h"

#define FORMAT_VERSION 1

/* A table: one dataset fed from a pending buffer. */
struct table {
	char parent[SH5_NAME_MAX]; /* "" for the node group */
	char name[SH5_NAME_MAX];
	struct sh5_series *series; /* NULL for ClockOffsets */
	size_t rec_size;
	size_t chunk_rows;
	hid_t dset;                /* -1 until created */
	hsize_t rows;              /* rows in the file */
	void *total;               /* ops total of those rows (series) */
	/* Series tables: chunks written by write_direct(). */
	size_t fsize;              /* file record size */
	hsize_t done;              /* rows in complete chunks (the file's) */
	unsigned char *cur;        /* the last chunk's rows, filtered layout
				    * (shuffled), zero padded; NULL if none */
	int cur_final;             /* it was last written in final form
				    * (configured level), not partial */
	struct sh5_zpartial zp;    /* the last chunk's rows, unshuffled,
				    * deflated as they come (partial
				    * chunks of intermediate flushes) */
	/* pending, protected by w->lock */
	unsigned char *buf;
	size_t n, cap;
};

struct sh5_writer {
	char path[4096];
	char node[SH5_NAME_MAX];
	struct sh5_writer_opts opts;
	hid_t file, node_grp;
	pthread_mutex_t lock;      /* tables array, pending buffers, flags */
	pthread_mutex_t io_lock;   /* every HDF5 call */
	struct table **tables;     /* stable pointers: flush keeps one
				    * while adds may grow the array */
	size_t ntables, cap;
	int clock_id;              /* table of ClockOffsets, or -1 */
	struct sh5_zdeflate *zd;   /* final chunks' compressor (io_lock) */
	int closed, failed;
	struct sh5_writer_stats st;
};

void sh5_writer_opts_init(struct sh5_writer_opts *o)
{
	o->compression = 4;
	o->shuffle = 1;
	o->max_pending = 1u << 20;
	o->chunk_rows = 0;
	o->append_partial = 0;
}

/*
 * Chunk length: ten minutes of samples, at least 512 and at most 4096
 * records.  Measured on real task and network samples
 * (bench/sh5_replay -r, doc/format.md "Storage"): shuffle + deflate
 * needs a few hundred records per chunk to reach its ratio (bytes per
 * sample: 17.2 at 32 records, 14.2 at 128, 13.2 at 256, 12.7 at 300,
 * 11.8 at 600, 11.9 at 1200) -- hence the floor, which at Slurm's usual
 * 30 s sampling gives chunks of about 4 hours.  The ceiling bounds the
 * flush cost: the last, partial chunk of a series is compressed and
 * written again at every flush (and its old copy freed), so a flush
 * costs up to one chunk per series (4096 task records: 360 KiB).
 * Slurm's gather plugins sample at most once a second, i.e. 600
 * records: 53 KiB per task and flush.
 */
size_t sh5_writer_chunk_rows(double hz)
{
	double rows = (hz > 0 ? hz : 1.0) * 600.0;

	if (rows < 512)
		return 512;
	if (rows > 4096)
		return 4096;
	return (size_t)rows;
}


/*
 * File creation properties.  Smaller B-tree nodes than HDF5's defaults:
 * the first index node of every chunked dataset is allocated whole, and
 * with the default istore_k (32: 64 chunks per node, 2096 bytes) it was
 * the largest fixed cost of a node-step file (10 KiB for 4 tasks and the
 * network); 4 gives 8 chunks (40 minutes at 1 Hz) in 304 bytes, and the
 * tree grows as a job runs on (one more entry per chunk either way).
 * Likewise the group B-tree (sym_k 16 -> 4; 4 is also the leaf default).
 * Both are superblock fields every HDF5 release since 1.6 reads; the file
 * format is still the earliest (H5Pset_libver_bounds with 1.8 bounds made
 * long files larger here: more space lost to rewritten metadata).
 */
static hid_t file_create_plist(void)
{
	hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);

	if (fcpl >= 0 && (H5Pset_istore_k(fcpl, 4) < 0 ||
			  H5Pset_sym_k(fcpl, 4, 4) < 0)) {
		H5Pclose(fcpl);
		return -1;
	}
	return fcpl;
}

struct sh5_writer *sh5_writer_create(const char *path, int fd,
				     const char *node,
				     const struct sh5_writer_opts *opts,
				     struct sh5_error *errp)
{
	struct sh5_writer *w;
	char fdpath[64];
	const char *open_path = path;
	hid_t fapl = -1, fcpl = -1;
	int32_t ver = FORMAT_VERSION;

	if (!node || !node[0] || strlen(node) >= SH5_NAME_MAX ||
	    strchr(node, '/')) {
		errno = EINVAL;
		sh5_errprintf(errp, "%s: invalid node name '%s'", path,
			      node ? node : "");
		return NULL;
	}
	if (!(w = calloc(1, sizeof(*w)))) {
		sh5_errprintf(errp, "%s: out of memory", path);
		return NULL;
	}
	snprintf(w->path, sizeof(w->path), "%s", path);
	snprintf(w->node, sizeof(w->node), "%s", node);
	if (opts)
		w->opts = *opts;
	else
		sh5_writer_opts_init(&w->opts);
	w->file = w->node_grp = -1;
	w->clock_id = -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->io_lock, NULL);
	if (fd >= 0) {
		/* The magic link opens exactly the file on fd, whatever is
		 * at its path now (no symlink can be slipped in). */
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		open_path = fdpath;
	}
	sh5_error_h5_silence();
	if ((fapl = H5Pcreate(H5P_FILE_ACCESS)) < 0)
		goto h5error;
#ifdef HAVE_H5PSET_FILE_LOCKING
	H5Pset_file_locking(fapl, 0, 1);
#endif
	H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
	/* No small-data aggregation: the last chunk of each series is
	 * rewritten (and reallocated) at every flush, and HDF5's 2 KiB
	 * raw-data blocks then left more unused space in short files
	 * (bench/sh5_replay, 2 tasks x 60 samples: 16.5 KB with this, 17.3
	 * KB without, with level-1 partial chunks). */
	H5Pset_small_data_block_size(fapl, 0);
	if ((fcpl = file_create_plist()) >= 0)
		w->file = H5Fcreate(open_path, H5F_ACC_TRUNC, fcpl, fapl);
	if (fcpl >= 0)
		H5Pclose(fcpl);
	H5Pclose(fapl);
	if (w->file < 0)
		goto h5error;
	if (sh5_h5attr_put(w->file, "sh5 Format Version", H5T_STD_I32LE,
			   H5T_NATIVE_INT32, &ver) < 0)
		goto h5error;
	w->node_grp = H5Gcreate2(w->file, node, H5P_DEFAULT, H5P_DEFAULT,
				 H5P_DEFAULT);
	if (w->node_grp < 0)
		goto h5error;
	return w;
h5error:
	sh5_errprintf_h5(errp, "%s: cannot create the HDF5 file", path);
	if (w->node_grp >= 0)
		H5Gclose(w->node_grp);
	if (w->file >= 0)
		H5Fclose(w->file);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->io_lock);
	free(w);
	return NULL;
}

static int attr_common(struct sh5_writer *w, const char *name, hid_t mtype,
		       hid_t ftype, const void *val, struct sh5_error *errp)
{
	int rc;

	pthread_mutex_lock(&w->io_lock);
	rc = sh5_h5attr_put(w->node_grp, name, ftype, mtype, val);
	if (rc < 0)
		sh5_errprintf_h5(errp, "%s: cannot write attribute '%s'",
				 w->path, name);
	pthread_mutex_unlock(&w->io_lock);
	return rc;
}

int sh5_writer_attr_str(struct sh5_writer *w, const char *name,
			const char *value, struct sh5_error *errp)
{
	hid_t st = H5Tcopy(H5T_C_S1);
	int rc;

	/* Fixed-length, like the stock plugin: sh5util reads them so. */
	H5Tset_size(st, strlen(value) + 1);
	rc = attr_common(w, name, st, st, value, errp);
	H5Tclose(st);
	return rc;
}

int sh5_writer_attr_int(struct sh5_writer *w, const char *name, int value,
			struct sh5_error *errp)
{
	return attr_common(w, name, H5T_NATIVE_INT, H5T_NATIVE_INT, &value,
			   errp);
}

int sh5_writer_attr_u32(struct sh5_writer *w, const char *name,
			uint32_t value, struct sh5_error *errp)
{
	return attr_common(w, name, H5T_NATIVE_UINT32, H5T_STD_U32LE, &value,
			   errp);
}

int sh5_writer_attr_i64(struct sh5_writer *w, const char *name,
			int64_t value, struct sh5_error *errp)
{
	return attr_common(w, name, H5T_NATIVE_INT64, H5T_STD_I64LE, &value,
			   errp);
}

int sh5_writer_attr_f64(struct sh5_writer *w, const char *name,
			double value, struct sh5_error *errp)
{
	return attr_common(w, name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, &value,
			   errp);
}

/* Add a table; caller holds w->lock. */
static int add_table(struct sh5_writer *w, const char *parent,
		     const char *name, struct sh5_series *s, size_t rec_size,
		     size_t chunk_rows, struct sh5_error *errp)
{
	size_t i;
	struct table *t;

	for (i = 0; i < w->ntables; i++)
		if (!strcmp(w->tables[i]->name, name) &&
		    !strcmp(w->tables[i]->parent, parent ? parent : "")) {
			errno = EEXIST;
			return sh5_errprintf(errp, "%s: dataset %s%s%s exists",
					     w->path, parent ? parent : "",
					     parent ? "/" : "", name);
		}
	if (parent && (strlen(parent) >= SH5_NAME_MAX || strchr(parent, '/') ||
		       !strcmp(parent, ".") || !strcmp(parent, ".."))) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: invalid group name '%s'",
				     w->path, parent);
	}
	if (strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) {
		errno = EINVAL;
		return sh5_errprintf(errp, "%s: invalid dataset name '%s'",
				     w->path, name);
	}
	if (w->ntables == w->cap) {
		size_t nc = w->cap ? 2 * w->cap : 16;
		struct table **nt = realloc(w->tables, nc * sizeof(*nt));

		if (!nt)
			return sh5_errprintf(errp, "%s: out of memory",
					     w->path);
		w->tables = nt;
		w->cap = nc;
	}
	if (!(t = calloc(1, sizeof(*t))))
		return sh5_errprintf(errp, "%s: out of memory", w->path);
	w->tables[w->ntables] = t;
	snprintf(t->parent, sizeof(t->parent), "%s", parent ? parent : "");
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->series = s;
	t->rec_size = rec_size;
	t->chunk_rows = chunk_rows;
	t->dset = -1;
	sh5_zpartial_init(&t->zp);
	if (s) {
		t->fsize = 16 + 8 * s->nfields + (s->has_time_ns ? 8 : 0) +
			   (s->has_sync_ns ? 8 : 0);
		if (!(t->total = malloc(s->ops->total_size(s)))) {
			free(t);
			return sh5_errprintf(errp, "%s: out of memory",
					     w->path);
		}
		s->ops->total_init(s, t->total);
	}
	return (int)w->ntables++;
}

int sh5_writer_add_series(struct sh5_writer *w, const char *parent,
			  struct sh5_series *s, double sample_hz,
			  struct sh5_error *errp)
{
	int id;

	if (!s)
		return sh5_errprintf(errp, "%s: no series", w->path);
	pthread_mutex_lock(&w->lock);
	if (w->closed) {
		errno = ESHUTDOWN;
		id = sh5_errprintf(errp, "%s: file already closed", w->path);
	} else {
		id = add_table(w, parent && parent[0] ? parent : NULL, s->name,
			       s, s->ops->record_size(s),
			       w->opts.chunk_rows ? w->opts.chunk_rows :
			       sh5_writer_chunk_rows(sample_hz), errp);
	}
	pthread_mutex_unlock(&w->lock);
	if (id < 0)
		sh5_series_destroy(s);
	return id;
}

const struct sh5_series *sh5_writer_series(struct sh5_writer *w, int id)
{
	const struct sh5_series *s = NULL;

	pthread_mutex_lock(&w->lock);
	if (id >= 0 && (size_t)id < w->ntables)
		s = w->tables[id]->series;
	pthread_mutex_unlock(&w->lock);
	return s;
}

static int append_raw(struct sh5_writer *w, int id, const void *rec)
{
	struct table *t;
	int rc = 0;

	pthread_mutex_lock(&w->lock);
	if (w->closed) {
		errno = ESHUTDOWN;
		rc = -1;
		goto out;
	}
	if (id < 0 || (size_t)id >= w->ntables) {
		errno = EINVAL;
		rc = -1;
		goto out;
	}
	t = w->tables[id];
	if (t->n == t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 64;
		unsigned char *nb;

		if (nc > w->opts.max_pending)
			nc = w->opts.max_pending;
		if (t->n >= nc ||
		    !(nb = realloc(t->buf, nc * t->rec_size))) {
			w->st.dropped++;
			errno = ENOBUFS;
			rc = -1;
			goto out;
		}
		t->buf = nb;
		t->cap = nc;
	}
	memcpy(t->buf + t->n * t->rec_size, rec, t->rec_size);
	t->n++;
out:
	pthread_mutex_unlock(&w->lock);
	return rc;
}

int sh5_writer_append(struct sh5_writer *w, int id,
		      const union sh5_value *slots)
{
	return append_raw(w, id, slots);
}

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

int sh5_writer_add_clock(struct sh5_writer *w,
			 const struct sh5_clock_sample *c)
{
	int id;

	pthread_mutex_lock(&w->lock);
	if (w->clock_id < 0 && !w->closed)
		w->clock_id = add_table(w, NULL, "ClockOffsets", NULL,
					sizeof(*c), 64, NULL);
	id = w->clock_id;
	pthread_mutex_unlock(&w->lock);
	if (id < 0) {
		errno = ESHUTDOWN;
		return -1;
	}
	return append_raw(w, id, c);
}

/* Create the dataset of t; io_lock held. */
static int create_dataset(struct sh5_writer *w, struct table *t,
			  struct sh5_error *errp)
{
	hid_t parent = w->node_grp, grp = -1, ftype = -1, sp = -1, dcpl = -1;
	hsize_t dim = 0, maxdim = H5S_UNLIMITED, chunk = t->chunk_rows;
	int rc = -1;

	if (t->parent[0]) {
		htri_t ex = H5Lexists(w->node_grp, t->parent, H5P_DEFAULT);

		grp = ex > 0 ? H5Gopen2(w->node_grp, t->parent, H5P_DEFAULT) :
			       H5Gcreate2(w->node_grp, t->parent, H5P_DEFAULT,
					  H5P_DEFAULT, H5P_DEFAULT);
		if (grp < 0) {
			sh5_errprintf_h5(errp, "%s: cannot create group %s/%s",
					 w->path, w->node, t->parent);
			return -1;
		}
		parent = grp;
	}
	ftype = t->series ? t->series->ops->file_type(t->series) :
			    clock_type(1);
	if (ftype < 0 || (sp = H5Screate_simple(1, &dim, &maxdim)) < 0 ||
	    (dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 ||
	    H5Pset_chunk(dcpl, 1, &chunk) < 0)
		goto h5error;
	if (w->opts.shuffle && H5Pset_shuffle(dcpl) < 0)
		goto h5error;
	if (w->opts.compression > 0 &&
	    H5Pset_deflate(dcpl, (unsigned)w->opts.compression) < 0)
		goto h5error;
	/* Last in the pipeline: a checksum of each stored (compressed)
	 * chunk, which sh5merge checks without decoding the chunk. */
	if ((w->opts.shuffle || w->opts.compression > 0) &&
	    H5Pset_fletcher32(dcpl) < 0)
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
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (sp >= 0)
		H5Sclose(sp);
	if (ftype >= 0)
		H5Tclose(ftype);
	if (grp >= 0)
		H5Gclose(grp);
	return rc;
}

/*
 * Direct chunk writes (series tables).  HDF5 filters a chunk as a whole:
 * through H5Dwrite, the last (partial) chunk of every series was
 * converted, shuffled, deflated at the configured level and checksummed
 * again at every flush, however few records it gained -- measured with
 * callgrind, deflate was most of the plugin's cost per sample.  Here the
 * writer keeps the last chunk itself and writes it with H5Dwrite_chunk:
 *
 * - a complete chunk, and the last one when the file is closed: the
 *   whole declared pipeline (shuffle, deflate at the configured level,
 *   fletcher32), filter mask 0, from the shuffled copy in t->cur (each
 *   record's bytes scattered to their shuffle positions as it arrives);
 * - the partial chunk of an intermediate flush: unshuffled (filter mask
 *   bit of the shuffle filter set, which HDF5 and every reader honour),
 *   deflated from a stream kept open across flushes (src/profile/
 *   zpartial.h: each flush compresses only its own records, the chunk's
 *   zero tail is one hand-coded block), then fletcher32.  Its cost is
 *   proportional to the records added, where recompressing the whole
 *   partial chunk at every flush was quadratic in the chunk.
 *
 * Only a file whose writer never closed it (a killed slurmstepd) keeps
 * masked chunks.  bench/sh5_replay, 2 tasks x 600 samples flushed every
 * 10 s, under callgrind: 711 M instructions through H5Dwrite, 235 M with
 * direct level-1 partial chunks, less with the open stream
 * (doc/performance.md).
 */

/* Store row r of the last chunk from the memory record rec; the row's
 * file bytes (unshuffled) also into row if not NULL. */
static void put_row(struct sh5_writer *w, struct table *t, size_t r,
		    const union sh5_value *rec, unsigned char *row)
{
	const struct sh5_series *s = t->series;
	size_t n = t->chunk_rows, nslots = 0, i, j;
	uint64_t v[SH5_TIME_SLOTS + 128 + 1];
	unsigned char b[8 * (SH5_TIME_SLOTS + 128 + 1)];

	/* File order: ElapsedTime, EpochTime, the fields, EpochTimeNs,
	 * SyncTimeNs; the ns times stored unsigned (HDF5's conversion
	 * clamps a negative to 0). */
	v[nslots++] = rec[0].u;
	v[nslots++] = rec[1].u;
	for (i = 0; i < s->nfields && nslots < 2 + 128; i++)
		v[nslots++] = rec[SH5_TIME_SLOTS + i].u;
	if (s->has_time_ns)
		v[nslots++] = rec[2].i < 0 ? 0 : (uint64_t)rec[2].i;
	if (s->has_sync_ns)
		v[nslots++] = rec[SH5_SLOT_SYNC(s)].i < 0 ? 0 :
			      (uint64_t)rec[SH5_SLOT_SYNC(s)].i;
	for (i = 0; i < nslots; i++) {
		uint64_t le = htole64(v[i]);

		memcpy(b + 8 * i, &le, 8);
	}
	if (row)
		memcpy(row, b, t->fsize);
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

/* Write the partial last chunk (rows t->done ..) from its stored form:
 * unshuffled, so with the shuffle filter's bit in the filter mask. */
static int put_partial(struct sh5_writer *w, struct table *t, size_t used,
		       struct sh5_error *errp)
{
	size_t out;
	hsize_t off = t->done;
	unsigned mask = w->opts.shuffle ? 1u : 0u; /* shuffle is filter 0 */

	if (!(out = sh5_zpartial_chunk(&t->zp,
				       (t->chunk_rows - used) * t->fsize)))
		return sh5_errprintf(errp, "%s: out of memory", w->path);
	if (H5Dwrite_chunk(t->dset, H5P_DEFAULT, mask, &off, out,
			   t->zp.out) < 0)
		return chunk_error(w, t, errp);
	t->cur_final = 0;
	return 0;
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

/* The rows rows[0 .. n) (file bytes, unshuffled) of the last chunk go
 * into its open stream, if partial chunks are deflated. */
static int stream_rows(struct sh5_writer *w, struct table *t,
		       const unsigned char *rows, size_t n,
		       struct sh5_error *errp)
{
	if (w->opts.compression <= 0 || !w->opts.append_partial || !n)
		return 0;
	if (sh5_zpartial_add(&t->zp, rows, n * t->fsize) < 0)
		return sh5_errprintf(errp, "%s: out of memory", w->path);
	return 0;
}

/* Append n memory records to a series table; io_lock held.  With n == 0
 * on a closed writer, rewrites a partial chunk in final form. */
static int write_direct(struct sh5_writer *w, struct table *t,
			const void *buf, size_t n, struct sh5_error *errp)
{
	const unsigned char *p = buf;
	size_t cr = t->chunk_rows, used = (size_t)(t->rows - t->done), i;
	size_t first = used;     /* first row of this call in the chunk */
	int closed, rc = -1;
	hsize_t newdim = t->rows + n;
	unsigned char *rows = NULL;

	if (!n && !t->cur)
		return 0;
	if (!t->cur && !(t->cur = calloc(cr, t->fsize)))
		return sh5_errprintf(errp, "%s: out of memory", w->path);
	if (n && w->opts.compression > 0 && w->opts.append_partial &&
	    !(rows = malloc((n < cr ? n : cr) * t->fsize)))
		return sh5_errprintf(errp, "%s: out of memory", w->path);
	if (n && H5Dset_extent(t->dset, &newdim) < 0) {
		sh5_errprintf_h5(errp, "%s: cannot extend %s/%s%s%s", w->path,
				 w->node, t->parent, t->parent[0] ? "/" : "",
				 t->name);
		goto out;
	}
	for (i = 0; i < n; i++) {
		put_row(w, t, used, (const union sh5_value *)
			(const void *)(p + i * t->rec_size),
			rows ? rows + (used - first) * t->fsize : NULL);
		if (++used < cr)
			continue;
		if (put_chunk(w, t, errp) < 0)
			goto out;
		t->done += cr;
		memset(t->cur, 0, cr * t->fsize);
		sh5_zpartial_reset(&t->zp);
		t->cur_final = 0;
		used = first = 0;
	}
	pthread_mutex_lock(&w->lock);
	closed = w->closed;
	pthread_mutex_unlock(&w->lock);
	if (used && !closed && stream_rows(w, t, rows, used - first,
					   errp) < 0)
		goto out;
	if (used && (closed ? !t->cur_final : n > 0) &&
	    (closed || w->opts.compression <= 0 ? put_chunk(w, t, errp) :
	     w->opts.append_partial ? put_partial(w, t, used, errp) :
	     put_recompressed(w, t, errp)) < 0)
		goto out;
	t->rows = newdim;
	if (n)
		t->series->ops->total_add(t->series, t->total, buf, n);
	rc = 0;
out:
	free(rows);
	return rc;
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

int sh5_writer_flush(struct sh5_writer *w, struct sh5_error *errp)
{
	size_t i, ntables;
	int rc = 0, closed;

	pthread_mutex_lock(&w->io_lock);
	if (w->failed) {
		pthread_mutex_unlock(&w->io_lock);
		errno = EIO;
		return sh5_errprintf(errp, "%s: an earlier write failed",
				     w->path);
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
	for (i = 0; i < ntables && !rc; i++) {
		struct table *t;
		unsigned char *buf;
		size_t n;

		/* Take the pending records; appends go to a fresh buffer. */
		pthread_mutex_lock(&w->lock);
		t = w->tables[i];
		buf = t->buf;
		n = t->n;
		t->buf = NULL;
		t->n = t->cap = 0;
		closed = w->closed;
		pthread_mutex_unlock(&w->lock);
		if (n || t->dset < 0 || (closed && t->cur))
			rc = write_rows(w, t, buf, n, errp);
		if (!rc)
			w->st.written += n;
		free(buf);
	}
	if (!rc && H5Fflush(w->file, H5F_SCOPE_GLOBAL) < 0)
		rc = sh5_errprintf_h5(errp, "%s: cannot flush", w->path);
	if (rc)
		w->failed = 1;
	else
		w->st.flushes++;
	pthread_mutex_unlock(&w->io_lock);
	return rc;
}

int sh5_writer_call(struct sh5_writer *w,
		    int (*fn)(hid_t node, void *arg, struct sh5_error *errp),
		    void *arg, struct sh5_error *errp)
{
	int rc, closed;

	pthread_mutex_lock(&w->io_lock);
	pthread_mutex_lock(&w->lock);
	closed = w->closed;
	pthread_mutex_unlock(&w->lock);
	if (closed || w->failed) {
		errno = closed ? ESHUTDOWN : EIO;
		rc = sh5_errprintf(errp, "%s: %s", w->path,
				   closed ? "file already closed" :
					    "an earlier write failed");
	} else {
		rc = fn(w->node_grp, arg, errp);
	}
	pthread_mutex_unlock(&w->io_lock);
	return rc;
}

void sh5_writer_stats(struct sh5_writer *w, struct sh5_writer_stats *st)
{
	pthread_mutex_lock(&w->lock);
	*st = w->st;
	pthread_mutex_unlock(&w->lock);
}

/* The file type of the totals of series s: committed to the file
 * (anonymously: no link) once per kind of series and shared, so that each
 * total's object header refers to it instead of holding a copy (2.5 KiB
 * for a task).  -1 when it cannot be (the total then holds its own). */
static hid_t total_type(struct sh5_writer *w, const struct sh5_series *s,
			const struct sh5_series **kinds, hid_t *types,
			size_t *nkinds)
{
	size_t i;
	hid_t t;

	for (i = 0; i < *nkinds; i++)
		if (sh5_series_same_fields(kinds[i], s))
			return types[i];
	if ((t = s->ops->total_file_type(s)) < 0)
		return -1;
	if (H5Tcommit_anon(w->file, t, H5P_DEFAULT, H5P_DEFAULT) < 0) {
		H5Tclose(t);
		return -1;
	}
	kinds[*nkinds] = s;
	types[(*nkinds)++] = t;
	return t;
}

/*
 * /<node>/Totals: the total of every series dataset as sh5merge writes it
 * in a job file (Totals/<path>, and Totals/AllTasks over the tasks), each
 * with the number of records it covers ("Rows").  sh5merge uses them
 * instead of decoding the series when they match the datasets.  io_lock
 * held, after a successful final flush.
 */
static int write_totals(struct sh5_writer *w, struct sh5_error *errp)
{
	struct sh5_totacc *all = NULL;
	size_t nall = 0, i, nkinds = 0;
	uint64_t task_rows = 0;
	const struct sh5_series **kinds = calloc(w->ntables + 1,
						 sizeof(*kinds));
	hid_t *types = calloc(w->ntables + 1, sizeof(*types));
	hid_t gcpl = -1, g = -1;
	int rc = -1, fr;

	if (!kinds || !types) {
		sh5_errprintf(errp, "%s: out of memory", w->path);
		goto out;
	}
	/* Totals and its subgroups keep their few links in the group's
	 * object header (HDF5 1.8 groups: tracking the creation order asks
	 * for them), not in a B-tree and heap of their own: 1.6 KiB less. */
	if ((gcpl = H5Pcreate(H5P_GROUP_CREATE)) < 0 ||
	    H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED) < 0 ||
	    (g = H5Gcreate2(w->node_grp, "Totals", H5P_DEFAULT, gcpl,
			    H5P_DEFAULT)) < 0)
		goto h5error;
	for (i = 0; i < w->ntables; i++) {
		struct table *t = w->tables[i];
		hid_t sub;

		if (!t->series || t->dset < 0 || !t->parent[0] ||
		    H5Lexists(g, t->parent, H5P_DEFAULT) > 0)
			continue;
		if ((sub = H5Gcreate2(g, t->parent, H5P_DEFAULT, gcpl,
				      H5P_DEFAULT)) < 0)
			goto h5error;
		H5Gclose(sub);
	}
	for (i = 0; i < w->ntables; i++) {
		struct table *t = w->tables[i];
		char path[3 * SH5_NAME_MAX];

		if (!t->series || t->dset < 0)
			continue;
		snprintf(path, sizeof(path), "Totals/%s%s%s", t->parent,
			 t->parent[0] ? "/" : "", t->name);
		if (sh5_total_write(w->node_grp, path, t->series, t->total, 1,
				    t->rows, total_type(w, t->series, kinds,
							types, &nkinds)) < 0)
			goto h5error;
		if (strcmp(t->series->ops->name, "Task"))
			continue;
		/* Tasks whose fields differ from the first task's are left
		 * out (and their rows): sh5merge then sees Series Count
		 * short and totals the node itself. */
		if ((fr = sh5_totacc_fold(&all, &nall, "AllTasks", t->series,
					  t->total)) < 0) {
			sh5_errprintf(errp, "%s: out of memory", w->path);
			goto out;
		}
		if (!fr)
			task_rows += t->rows;
	}
	if (nall && sh5_total_write(w->node_grp, "Totals/AllTasks", all[0].s,
				    all[0].total, all[0].count, task_rows,
				    total_type(w, all[0].s, kinds, types,
					       &nkinds)) < 0)
		goto h5error;
	rc = 0;
	goto out;
h5error:
	sh5_errprintf_h5(errp, "%s: cannot write the totals", w->path);
out:
	if (g >= 0)
		H5Gclose(g);
	if (gcpl >= 0)
		H5Pclose(gcpl);
	for (i = 0; types && i < nkinds; i++)
		H5Tclose(types[i]);
	free(kinds);
	free(types);
	sh5_totacc_free(all, nall);
	return rc;
}

int sh5_writer_close(struct sh5_writer *w, struct sh5_error *errp)
{
	size_t i;
	int rc = 0;

	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	w->closed = 1;
	pthread_mutex_unlock(&w->lock);
	if (!w->failed)
		rc = sh5_writer_flush(w, errp);
	pthread_mutex_lock(&w->io_lock);
	if (!rc && !w->failed && write_totals(w, errp) < 0)
		rc = -1;
	for (i = 0; i < w->ntables; i++) {
		if (w->tables[i]->dset >= 0)
			H5Dclose(w->tables[i]->dset);
		sh5_series_destroy(w->tables[i]->series);
		free(w->tables[i]->total);
		free(w->tables[i]->buf);
		free(w->tables[i]->cur);
		sh5_zpartial_free(&w->tables[i]->zp);
		free(w->tables[i]);
	}
	free(w->tables);
	sh5_zdeflate_destroy(w->zd);
	if (w->node_grp >= 0)
		H5Gclose(w->node_grp);
	if (w->file >= 0 && H5Fclose(w->file) < 0 && !rc)
		rc = sh5_errprintf_h5(errp, "%s: cannot close", w->path);
	pthread_mutex_unlock(&w->io_lock);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->io_lock);
	free(w);
	return rc;
}
