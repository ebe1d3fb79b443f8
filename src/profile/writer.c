/* writer.c - see writer.h */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <endian.h>
#include <hdf5.h>

#include "common/h5attr.h"
#include "profile/writer.h"
#include "profile/writer_int.h"

#define FORMAT_VERSION 1

void sh5_writer_opts_init(struct sh5_writer_opts *o)
{
	o->compression = 4;
	o->shuffle = 1;
	o->max_pending = 1u << 20;
	o->chunk_rows = 0;
	o->recompress = 0;
	o->defer_file = 0;
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
 * long files larger here: more space lost to rewritten metadata).  No
 * modification time on the root group (nothing reads them; nor on the
 * node group, its subgroups and the series datasets).
 */
static hid_t file_create_plist(void)
{
	hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);

	if (fcpl >= 0 && (H5Pset_istore_k(fcpl, 4) < 0 ||
			  H5Pset_sym_k(fcpl, 4, 4) < 0 ||
			  H5Pset_obj_track_times(fcpl, 0) < 0)) {
		H5Pclose(fcpl);
		return -1;
	}
	return fcpl;
}

/* The file at open_path, created (truncated) with our properties; the
 * id, or -1. */
static hid_t create_file(const char *open_path)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fcpl = -1, file = -1;

	if (fapl < 0)
		return -1;
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
		file = H5Fcreate(open_path, H5F_ACC_TRUNC, fcpl, fapl);
	if (fcpl >= 0)
		H5Pclose(fcpl);
	H5Pclose(fapl);
	return file;
}

/* The HDF5 file on w->fd (or at w->path without one), its node group and
 * what attributes need; caller holds io_lock.  0 or -1 (errp set, every
 * id left -1). */
static int create_objects(struct sh5_writer *w, struct sh5_error *errp)
{
	char fdpath[64];
	const char *open_path = w->path;
	int32_t ver = FORMAT_VERSION;

	if (w->fd >= 0) {
		/* The magic link opens exactly the file on fd, whatever is
		 * at its path now (no symlink can be slipped in). */
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", w->fd);
		open_path = fdpath;
	}
	sh5_error_h5_silence();
	w->file = create_file(open_path);
	if (w->file < 0 || (w->scalar = H5Screate(H5S_SCALAR)) < 0 ||
	    (w->gcpl = H5Pcreate(H5P_GROUP_CREATE)) < 0 ||
	    H5Pset_obj_track_times(w->gcpl, 0) < 0)
		goto h5error;
	if (sh5_h5attr_add(w->file, "sh5 Format Version", H5T_STD_I32LE,
			   H5T_NATIVE_INT32, &ver, w->scalar) < 0)
		goto h5error;
	w->node_grp = H5Gcreate2(w->file, w->node, H5P_DEFAULT, w->gcpl,
				 H5P_DEFAULT);
	if (w->node_grp < 0)
		goto h5error;
	return 0;
h5error:
	sh5_errprintf_h5(errp, "%s: cannot create the HDF5 file", w->path);
	if (w->node_grp >= 0)
		H5Gclose(w->node_grp);
	if (w->gcpl >= 0)
		H5Pclose(w->gcpl);
	if (w->scalar >= 0)
		H5Sclose(w->scalar);
	if (w->file >= 0)
		H5Fclose(w->file);
	w->file = w->node_grp = w->scalar = w->gcpl = -1;
	return -1;
}

int sh5_writer_open_file(struct sh5_writer *w, struct sh5_error *errp)
{
	int rc;

	if (w->file >= 0)
		return 0;
	if (w->failed) {
		errno = EIO;
		return sh5_errprintf(errp, "%s: an earlier write failed",
				     w->path);
	}
	rc = create_objects(w, errp);
	if (w->fd >= 0) {
		close(w->fd);
		w->fd = -1;
	}
	if (rc < 0)
		w->failed = 1;
	return rc;
}

struct sh5_writer *sh5_writer_create(const char *path, int fd,
				     const char *node,
				     const struct sh5_writer_opts *opts,
				     struct sh5_error *errp)
{
	struct sh5_writer *w;

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
	w->file = w->node_grp = w->scalar = w->gcpl = w->dcpl = w->pgrp = -1;
	w->clock_id = -1;
	w->fd = fd;
	if (w->opts.defer_file && fd >= 0 &&
	    (w->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		sh5_errprintf(errp, "%s: cannot keep the file open: %s", path,
			      strerror(errno));
		free(w);
		return NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->io_lock, NULL);
	if (w->opts.defer_file)
		return w;
	if (create_objects(w, errp) < 0) {
		pthread_mutex_destroy(&w->lock);
		pthread_mutex_destroy(&w->io_lock);
		free(w);
		return NULL;
	}
	w->fd = -1; /* the caller's */
	return w;
}

/* Note name as written to the node group: 1 if it was already (the
 * attribute is then replaced), 0 if new, -1 when out of memory. */
static int attr_seen(struct sh5_writer *w, const char *name)
{
	char **nv;
	size_t i;

	for (i = 0; i < w->nanames; i++)
		if (!strcmp(w->anames[i], name))
			return 1;
	if (!(nv = realloc(w->anames, (w->nanames + 1) * sizeof(*nv))) ||
	    !(nv[w->nanames] = strdup(name))) {
		if (nv)
			w->anames = nv;
		return -1;
	}
	w->anames = nv;
	w->nanames++;
	return 0;
}

static int attr_common(struct sh5_writer *w, const char *name, hid_t mtype,
		       hid_t ftype, const void *val, struct sh5_error *errp)
{
	int rc = -1, seen;

	pthread_mutex_lock(&w->io_lock);
	if (sh5_writer_open_file(w, errp) < 0)
		goto out;
	/* A new name needs no lookup (HDF5's create makes its own). */
	seen = attr_seen(w, name);
	if (seen < 0)
		sh5_errprintf(errp, "%s: out of memory", w->path);
	else if ((rc = seen ? sh5_h5attr_put(w->node_grp, name, ftype, mtype,
					     val) :
			      sh5_h5attr_add(w->node_grp, name, ftype, mtype,
					     val, w->scalar)) < 0)
		sh5_errprintf_h5(errp, "%s: cannot write attribute '%s'",
				 w->path, name);
out:
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
	} else if ((rc = sh5_writer_open_file(w, errp)) == 0) {
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
