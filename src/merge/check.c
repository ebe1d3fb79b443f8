/* check.c - the first pass over one input: checksum, open, read its
 * metadata, decide whether it can be copied whole (see merge_int.h). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checksum.h"
#include "common/h5attr.h"
#include "common/outfile.h"
#include "profile/totals.h"
#include "merge/merge_int.h"

/* Inputs up to this size are held in memory by a checking child
 * (default 64 MiB; SH5MERGE_MAP_MAX bytes, 0: none), larger ones read in
 * pieces: the child's memory does not grow with the length of the job.
 * Those up to MERGE_READ_MAX (SH5MERGE_READ_MAX, at most
 * MERGE_INMEM_MAX) are read whole into a heap image, the others mapped:
 * a mapping made and removed for each input cost about a tenth of a
 * merge of 1024 small files (the mmap, its page faults, the munmap).
 * At most two read images at a time (the held input's and the next),
 * the one not in use kept for the next input (spare_image). */
#define MERGE_MAP_MAX ((uint64_t)64 << 20)
#define MERGE_READ_MAX ((uint64_t)4 << 20)

static uint64_t env_bytes(const char *name, uint64_t dflt)
{
	const char *e = getenv(name);
	char *end;
	unsigned long long v;

	if (!e || !*e)
		return dflt;
	errno = 0;
	v = strtoull(e, &end, 10);
	return errno || *end ? dflt : (uint64_t)v;
}

static uint64_t map_max(void)
{
	return env_bytes("SH5MERGE_MAP_MAX", MERGE_MAP_MAX);
}

static uint64_t read_max(void)
{
	uint64_t v = env_bytes("SH5MERGE_READ_MAX", MERGE_READ_MAX);

	return v < MERGE_INMEM_MAX ? v : MERGE_INMEM_MAX;
}

/* A buffer of read_max() bytes for an input read whole, or NULL. */
static void *image_get(struct mstate *m)
{
	void *p = m->spare_image;

	m->spare_image = NULL;
	return p ? p : malloc((size_t)read_max());
}

/* Release an input's image of len bytes: read whole (len <= read_max())
 * or mapped. */
static void image_put(struct mstate *m, void *p, size_t len)
{
	if (len > read_max())
		munmap(p, len);
	else if (!m->spare_image)
		m->spare_image = p;
	else
		free(p);
}

/* Read all of fd (want bytes, as stat said) into an image: 0 with *map,
 * *size and *crc; 1 when there is no image to read into (or the file
 * is empty by now); -1 on a read error (errno). */
static int read_image(struct mstate *m, int fd, uint64_t want, void **map,
		      uint64_t *size, uint32_t *crc)
{
	unsigned char *p = image_get(m);
	uint64_t total = 0;
	ssize_t n = 0;

	if (!p)
		return 1;
	/* No further than the size it had (stamp.c reports a change). */
	while (total < want &&
	       (n = read(fd, p + total, (size_t)(want - total))) > 0)
		total += (uint64_t)n;
	if (n < 0 || total == 0) {
		int e = errno;

		image_put(m, p, 0);
		errno = e;
		return n < 0 ? -1 : 1;
	}
	*map = p;
	*size = total;
	*crc = sh5_crc32(0, p, (size_t)total);
	return 0;
}

/* An error text that names path ("PATH: reason"): the reason alone. */
static const char *reason_of(const char *text, const char *path)
{
	size_t pl = strlen(path);

	return !strncmp(text, path, pl) && text[pl] == ':' ? text + pl + 2 :
							     text;
}

static int file_crc(struct mstate *m, const char *path, uint32_t *crc,
		    uint64_t *size, void **map, struct sh5_error *errp)
{
	struct sh5_error e = { "" };
	long dir_uid = m->dir_uid;
	void *buf = m->buf;
	size_t len = m->buf_bytes;
	uint32_t c = 0;
	uint64_t total = 0, want;
	struct stat st;
	ssize_t n = 0;
	int r;
	/* The directory entry itself, a regular file: not what a symlink
	 * a task made names, not a FIFO (which blocked the merge). */
	int fd = sh5_infile_open_entry(path, &st, &e);

	if (fd < 0)
		return sh5_errprintf(errp, "%s", reason_of(e.text, path));
	/* A second name of a file someone else owns (a hard link a task
	 * made to a file it cannot read, where fs.protected_hardlinks is
	 * off): not read as root for the user. */
	if (st.st_nlink > 1 && dir_uid >= 0 && (long)st.st_uid != dir_uid) {
		close(fd);
		errno = EPERM;
		return sh5_errprintf(errp, "a hard link (%ju links) to a file "
				     "of uid %ld, not of the directory's "
				     "owner (uid %ld): not read",
				     (uintmax_t)st.st_nlink, (long)st.st_uid,
				     dir_uid);
	}
	/* In memory in a checking child: read whole when small (one
	 * read), else mapped (no copy out of the page cache). */
	if (map && st.st_size > 0 && (uint64_t)st.st_size <= map_max() &&
	    (uint64_t)st.st_size <= read_max() &&
	    (r = read_image(m, fd, (uint64_t)st.st_size, map, size,
			    crc)) <= 0) {
		close(fd);
		if (r == 0)
			return 0;
		return sh5_errprintf(errp, "read error: %s", strerror(errno));
	}
	if (map && st.st_size > 0 && (uint64_t)st.st_size <= map_max() &&
	    (uint64_t)st.st_size > read_max()) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ,
			       MAP_PRIVATE | MAP_POPULATE, fd, 0);

		if (p != MAP_FAILED) {
			/* A file cut short while mapped raises SIGBUS: in
			 * the checking child only, which marks the file.
			 * The caller unmaps it (*size bytes). */
			c = sh5_crc32(0, p, (size_t)st.st_size);
			close(fd);
			*map = p;
			*crc = c;
			*size = (uint64_t)st.st_size;
			return 0;
		}
	}
	/* No further than the size it had here: a file a task keeps
	 * writing ends the read (its growth is reported, stamp.c). */
	want = (uint64_t)st.st_size;
	while (total < want &&
	       (n = read(fd, buf, want - total < len ? (size_t)(want - total) :
			 len)) > 0) {
		c = sh5_crc32(c, buf, (size_t)n);
		total += (uint64_t)n;
	}
	if (n < 0) {
		sh5_errprintf(errp, "read error: %s", strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	*crc = c;
	*size = total;
	return 0;
}

static int whole_ok(struct mstate *m, struct sh5_nodestep *ns,
		    struct finfo *f, const unsigned char *map);

/* What the node group of ns says: the probe hook, its index, tasks,
 * start, user and cluster; its attributes read. */
static void check_node(struct mstate *m, struct finfo *f,
		       struct sh5_nodestep *ns, char *user, char *cluster)
{
	f->usable = 1;
	f->status = "merged";
	f->kind = ns->kind;
	/* probe's value may be a mask of what it found (mergesync.c:
	 * measurements, events); any > 0 is a hit. */
	if (m->o->hooks && m->o->hooks->probe) {
		int hit = m->o->hooks->probe(m->o->hooks->arg, ns->node);

		f->probe_hit = hit > 0 ? hit : 0;
	}
	f->node_index = ns->node_index;
	f->ntasks = ns->ntasks;
	f->has_start = ns->has_start;
	f->start_ns = ns->start_ns;
	f->nnodes = ns->nnodes;
	f->step_tasks = ns->step_tasks;
	if (!user[0])
		snprintf(user, 64, "%s", ns->user);
	if (!cluster[0])
		snprintf(cluster, 64, "%s", ns->cluster);
	if ((f->lost_objects = ns->bad_attrs))
		snprintf(f->reason, sizeof(f->reason), "%u unreadable "
			 "attribute%s of /%s", f->lost_objects,
			 f->lost_objects == 1 ? "" : "s", ns->node_name);
}

/* One series dataset (not of a whole copy): its attributes and chunk
 * index, or in a salvaged file its records. */
static void check_series(struct finfo *f, struct sh5_nodestep *ns,
			 struct sh5_ns_series *e)
{
	struct sh5_cursor c;
	hid_t d;

	if ((d = e->dset >= 0 ? e->dset :
		 H5Dopen2(ns->node, e->path, H5P_DEFAULT)) < 0) {
		f->lost += e->nrows;
		if (!f->reason[0])
			snprintf(f->reason, sizeof(f->reason),
				 "%.60s: cannot open", e->path);
		return;
	}
	if (sh5_attrs_read(d, NULL, 0)) {
		f->lost_objects++;
		if (!f->reason[0])
			snprintf(f->reason, sizeof(f->reason),
				 "%.60s: unreadable attributes", e->path);
	}
	if (!ns->salvaged) {
		hsize_t nchunks = 0;
		hid_t dcpl = H5Dget_create_plist(d);

		/* Walk the chunk index (the metadata a damaged file may
		 * crash HDF5 with); the records themselves are checked as
		 * the second pass reads them. */
		if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED)
			H5Dget_num_chunks(d, H5S_ALL, &nchunks);
		if (dcpl >= 0)
			H5Pclose(dcpl);
	} else if (sh5_cursor_open(&c, d, e->series, ns->real_eof,
				   NULL) == 0) {
		if (c.damaged) {
			f->lost += sh5_cursor_lost(&c);
			if (!f->reason[0])
				snprintf(f->reason, sizeof(f->reason),
					 "%.60s: %.180s", e->path, c.reason);
		}
		sh5_cursor_close(&c);
	}
	if (d != e->dset)
		H5Dclose(d);
}

/* The objects of the node group that are not series. */
static void check_others(struct finfo *f, struct sh5_nodestep *ns)
{
	struct sh5_error err = { "" };
	size_t i;

	for (i = 0; i < ns->nother; i++) {
		H5O_info_t oi;

		if (H5Oget_info_by_name2(ns->node, ns->other[i], &oi,
					 H5O_INFO_BASIC, H5P_DEFAULT) < 0 ||
		    (oi.type == H5O_TYPE_DATASET &&
		     mg_copy_dataset(ns->node, ns->other[i], -1, &err) < 0)) {
			if (!f->reason[0])
				snprintf(f->reason, sizeof(f->reason),
					 "%.60s: unreadable object",
					 ns->other[i]);
			f->lost_objects++;
		}
	}
}

/* The highest task id of a Tasks series so far, in f->max_task. */
static void note_task(struct finfo *f, const struct sh5_series *s)
{
	char *end;
	long t;

	if (s->ops != sh5_series_ops_lookup("Tasks", "0"))
		return;
	errno = 0;
	t = strtol(s->name, &end, 10);
	/* A task id beyond INT_MAX is no task of Slurm's. */
	if (!errno && !*end && t <= INT_MAX && t > f->max_task)
		f->max_task = t;
}

/* Open input f for the first pass (map: its bytes mapped for the CRC, or
 * NULL).  The one-pass child copies it next, the one-pass feeder reads
 * its records: a small input is read whole, once.  Mapped, HDF5 reads
 * the same bytes from the map (no read at all; the map is kept with the
 * handle until it is closed), else with one read at the open (one
 * instead of one per chunk; the stock plugin's chunks are 10 records).
 * The handle, or NULL with f->reason set. */
static struct sh5_nodestep *open_input(struct mstate *m, struct finfo *f,
				       void *map)
{
	struct sh5_error err = { "" };
	struct sh5_nodestep *ns;
	int inmem = (m->onepass || m->onefeed) && m->in_child &&
		    !getenv("SH5MERGE_NO_INMEM");

	if (inmem && map && f->size <= MERGE_INMEM_MAX)
		ns = sh5_nodestep_open_image(f->in->path, f->in->node,
					     m->o->job, f->in->step_id, map,
					     (size_t)f->size, &err);
	else
		ns = sh5_nodestep_open_mem(f->in->path, f->in->node,
					   m->o->job, f->in->step_id,
					   inmem && m->onefeed ?
					   MERGE_INMEM_MAX : 0, &err);
	if (!ns)
		snprintf(f->reason, sizeof(f->reason), "%s",
			 reason_of(err.text, f->in->path));
	return ns;
}

/* First pass over one input: checksum, open, and read all the metadata
 * the second pass will read (attributes, object headers, chunk indexes,
 * other objects), so that damage to it is known before anything is
 * written.  Damaged records are found as the second pass reads them.
 * Fills f; reports nothing (it runs in a child process). */
void mg_check_file(struct mstate *m, struct finfo *f, char *user,
		   char *cluster)
{
	struct sh5_error err = { "" };
	struct sh5_nodestep *ns;
	void *map = NULL;
	size_t i;
	int whole;

	f->status = "skipped";
	f->node_index = f->ntasks = f->nnodes = f->step_tasks = -1;
	f->max_task = -1;
	if (file_crc(m, f->in->path, &f->crc, &f->size,
		     m->in_child ? &map : NULL, &err) < 0) {
		snprintf(f->reason, sizeof(f->reason), "%s", err.text);
		return;
	}
	mg_test_hold(f->in->path);
	if (!(ns = open_input(m, f, map))) {
		if (map)
			image_put(m, map, (size_t)f->size);
		return;
	}
	check_node(m, f, ns, user, cluster);
	/* A whole copy's datasets are all read (attributes, every chunk
	 * checksummed) by whole_ok(): not again below. */
	whole = whole_ok(m, ns, f, map);
	for (i = 0; i < ns->nseries; i++) {
		f->samples += ns->series[i].nrows;
		note_task(f, ns->series[i].series);
		if (!whole)
			check_series(f, ns, &ns->series[i]);
	}
	check_others(f, ns);
	if (ns->damage[0] || f->lost || f->lost_objects) {
		char tmp[256];

		f->status = "salvaged";
		snprintf(tmp, sizeof(tmp), "%.120s%s%.120s", ns->damage,
			 ns->damage[0] && f->reason[0] ? "; " : "", f->reason);
		snprintf(f->reason, sizeof(f->reason), "%s", tmp);
	} else if ((f->whole = whole)) {
		snprintf(f->node_name, sizeof(f->node_name), "%s",
			 ns->node_name);
	}
	if ((m->onepass && f->whole) ||
	    (m->onefeed && m->in_child && f->usable &&
	     !(f->whole && m->feed_totals))) {
		/* Copied (one-pass child) or read (one-pass feeder) next
		 * from this handle: its metadata cached. */
		mg_held_close(m);
		m->held = ns;
		m->held_idx = f->in - m->in;
		if (map && ns->file_image) {
			/* HDF5 reads it from there until the close. */
			m->held_map = map;
			m->held_map_len = (size_t)f->size;
			map = NULL;
		}
	} else {
		sh5_nodestep_close(ns);
	}
	if (map)
		image_put(m, map, (size_t)f->size);
}

void mg_held_close(struct mstate *m)
{
	sh5_nodestep_close(m->held);
	m->held = NULL;
	if (m->held_map)
		image_put(m, m->held_map, m->held_map_len);
	m->held_map = NULL;
}

/* The fields of s as sh5_series_same_fields() compares them (FNV-1a):
 * totals of series with equal signatures fold alike. */
static uint64_t series_sig(const struct sh5_series *s)
{
	uint64_t h = 14695981039346656037ull;
	size_t i;

#define SIG_MIX(p, n) do { \
		const unsigned char *q_ = (const unsigned char *)(p); \
		size_t n_ = (n); \
		while (n_--) { h ^= *q_++; h *= 1099511628211ull; } \
	} while (0)
	SIG_MIX(&s->ops, sizeof(s->ops));
	SIG_MIX(&s->nfields, sizeof(s->nfields));
	for (i = 0; i < s->nfields; i++) {
		SIG_MIX(s->fields[i].name, strlen(s->fields[i].name) + 1);
		SIG_MIX(&s->fields[i].type, sizeof(s->fields[i].type));
		SIG_MIX(&s->fields[i].kind, sizeof(s->fields[i].kind));
	}
#undef SIG_MIX
	return h;
}

/* The memory type of the totals of s (signature sig) and transfer
 * properties for it, built once per signature (closed with m), or
 * NULL. */
static const struct tcache *total_mtype(struct mstate *m,
					const struct sh5_series *s,
					uint64_t sig)
{
	struct tcache *v;
	size_t i, n;

	for (i = 0; i < m->ntc; i++)
		if (m->tc[i].sig == sig)
			return &m->tc[i];
	if (!(v = realloc(m->tc, (m->ntc + 1) * sizeof(*v))))
		return NULL;
	m->tc = v;
	v += m->ntc;
	if ((v->mt = s->ops->total_mem_type(s)) < 0)
		return NULL;
	/* A conversion buffer of its size, not HDF5's 1 MiB. */
	n = H5Tget_size(v->mt);
	if ((v->dxpl = H5Pcreate(H5P_DATASET_XFER)) < 0 ||
	    H5Pset_buffer(v->dxpl, n < 4096 ? 4096 : n, NULL, NULL) < 0) {
		if (v->dxpl >= 0)
			H5Pclose(v->dxpl);
		H5Tclose(v->mt);
		return NULL;
	}
	v->sig = sig;
	m->ntc++;
	return v;
}

/* Read the stored total at tpath (for series s, signature sig) onto the
 * end of f's blob; *ofs, *len: where.  0 or -1. */
static int blob_total(struct mstate *m, struct finfo *f, hid_t node,
		      const char *tpath, const struct sh5_series *s,
		      uint64_t sig, uint64_t *ofs, uint64_t *len)
{
	size_t n = s->ops->total_size(s);
	unsigned char *b = realloc(f->blob, f->blob_len + n);
	const struct tcache *tc;
	int r;

	if (!b)
		return -1;
	f->blob = b;
	if ((tc = total_mtype(m, s, sig)))
		r = sh5_total_read_as(node, tpath, tc->mt, tc->dxpl,
				      b + f->blob_len);
	else
		r = sh5_total_read(node, tpath, s, b + f->blob_len);
	if (r < 0)
		return -1;
	*ofs = f->blob_len;
	*len = n;
	f->blob_len += n;
	return 0;
}

/* A uint64 attribute of the object at path (relative to loc), or
 * UINT64_MAX. */
static uint64_t attr_u64(hid_t loc, const char *path, const char *name)
{
	hid_t a = H5Aopen_by_name(loc, path, name, H5P_DEFAULT, H5P_DEFAULT);
	uint64_t v = UINT64_MAX;

	if (a >= 0) {
		if (H5Aread(a, H5T_NATIVE_UINT64, &v) < 0)
			v = UINT64_MAX;
		H5Aclose(a);
	}
	return v;
}

/*
 * Can the node group of ns be copied whole into the job file, without
 * decoding its records?  When the file is ours and intact, every series
 * dataset is chunked with the fletcher32 filter last and every stored
 * chunk passes it (checked on the raw chunk: no inflating), and the
 * writer's totals (Totals/<path>, Totals/AllTasks) are readable and cover
 * exactly the rows of the datasets.  Anything else goes the normal way
 * (records decoded, totalled, damage salvaged).  When it can, f->ents
 * lists the series and f->blob holds the totals the merge folds into the
 * step's (those of the series other than tasks, and AllTasks): read here,
 * in the checking child, so the merge need not open them.
 */
/* The writer's total at tpath covers rows rows (its "Rows"; and count
 * series, its "Series Count", unless count < 0); with blob, its value is
 * read onto f's blob (*ofs, *len).  The dataset is opened once.  1 or 0. */
static int stored_total_ok(struct mstate *m, struct finfo *f, hid_t node,
			   const char *tpath, const struct sh5_series *s,
			   uint64_t sig, uint64_t rows, long long count,
			   int blob, uint64_t *ofs, uint64_t *len)
{
	long long c = -1;
	hid_t d;
	int ok;

	/* Only its rows (a task's): no need to open the dataset. */
	if (count < 0 && !blob)
		return attr_u64(node, tpath, "Rows") == rows;
	if ((d = H5Dopen2(node, tpath, H5P_DEFAULT)) < 0)
		return 0;
	ok = (count < 0 || (sh5_attr_get_int(d, "Series Count", &c) == 0 &&
			    c == count)) &&
	     attr_u64(d, ".", "Rows") == rows &&
	     (!blob || blob_total(m, f, d, ".", s, sig, ofs, len) == 0);
	H5Dclose(d);
	return ok;
}

/* Every stored chunk of d (rows [0, nrows) in chunks of cr) passes its
 * fletcher32: on the mapped file, else read raw into *raw. */
static int chunks_ok(hid_t d, struct sh5_nodestep *ns, struct finfo *f,
		     hsize_t cr, uint64_t nrows, const unsigned char *map,
		     void **raw, size_t *rlen)
{
	hsize_t off[1];
	int good = 1;

	for (off[0] = 0; good && off[0] < nrows; off[0] += cr) {
		hsize_t size = 0;
		haddr_t addr = HADDR_UNDEF;
		unsigned fmask = 0;
		uint32_t mask = 0;

		if (H5Dget_chunk_info_by_coord(d, off, &fmask, &addr,
					       &size) < 0 ||
		    !size || fmask || addr == HADDR_UNDEF ||
		    addr > ns->size || size > ns->size - addr)
			return 0;
		if (map) {
			/* The file is mapped (its CRC): no read. */
			good = addr + size <= f->size &&
			       sh5_fletcher32_ok(map + addr, (size_t)size);
			continue;
		}
		if (size > *rlen) {
			void *r = realloc(*raw, (size_t)size);

			if (!r)
				return 0;
			*raw = r;
			*rlen = (size_t)size;
		}
		good = H5Dread_chunk(d, H5P_DEFAULT, off, &mask, *raw) >= 0 &&
		       !mask && sh5_fletcher32_ok(*raw, (size_t)size);
	}
	return good;
}

/* Series e of ns as whole_ok() wants it (w filled, its stored total, but
 * a task's, onto f's blob).  1 or 0. */
static int whole_series(struct mstate *m, struct sh5_nodestep *ns,
			struct finfo *f,
			struct sh5_ns_series *e, struct whole_ent *w,
			const unsigned char *map, void **raw, size_t *rlen)
{
	const struct sh5_series *s = e->series;
	hid_t d = e->dset >= 0 ? e->dset :
				 H5Dopen2(ns->node, e->path, H5P_DEFAULT);
	hid_t dcpl = d >= 0 ? H5Dget_create_plist(d) : -1;
	char tpath[2 * SH5_NAME_MAX + 16];
	hsize_t cr = 0;
	unsigned flags, cd[8];
	size_t ncd = 8;
	int nf, good, task = !strcmp(s->ops->name, "Task");

	snprintf(w->path, sizeof(w->path), "%s", e->path);
	w->rows = e->nrows;
	w->task = task;
	w->sig = series_sig(s);
	snprintf(tpath, sizeof(tpath), "Totals/%s", e->path);
	good = dcpl >= 0 && !sh5_attrs_read(d, NULL, 0) &&
	       H5Pget_layout(dcpl) == H5D_CHUNKED &&
	       H5Pget_chunk(dcpl, 1, &cr) == 1 && cr > 0 &&
	       (nf = H5Pget_nfilters(dcpl)) > 0 &&
	       H5Pget_filter2(dcpl, (unsigned)nf - 1, &flags, &ncd, cd,
			      0, NULL, NULL) == H5Z_FILTER_FLETCHER32 &&
	       /* Exactly the datasets under Tasks are tasks. */
	       task == !strcmp(e->parent, "Tasks") &&
	       stored_total_ok(m, f, ns->node, tpath, s, w->sig, e->nrows,
			       -1, !task, &w->tofs, &w->tlen);
	if (good)
		good = chunks_ok(d, ns, f, cr, e->nrows, map, raw, rlen);
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (d >= 0 && d != e->dset)
		H5Dclose(d);
	return good;
}

/* Every task in the writer's node total (Totals/AllTasks), kept with the
 * first task (first).  1 or 0. */
static int whole_alltasks(struct mstate *m, struct sh5_nodestep *ns,
			  struct finfo *f,
			  size_t first, size_t ntasks, uint64_t task_rows)
{
	struct whole_ent *w = &f->ents[first];

	return stored_total_ok(m, f, ns->node, "Totals/AllTasks",
			       ns->series[first].series, w->sig, task_rows,
			       (long long)ntasks, 1, &w->tofs, &w->tlen);
}

static int whole_ok(struct mstate *m, struct sh5_nodestep *ns,
		    struct finfo *f, const unsigned char *map)
{
	void *raw = NULL;
	size_t i, rlen = 0, ntasks = 0, first_task = SIZE_MAX;
	uint64_t task_rows = 0;
	int ok = 0;

	if (ns->kind != SH5_NODESTEP_OURS || !ns->has_totals ||
	    ns->salvaged || ns->damage[0])
		return 0;
	for (i = 0; i < ns->nother; i++) {
		H5O_info_t oi;

		if (H5Oget_info_by_name2(ns->node, ns->other[i], &oi,
					 H5O_INFO_BASIC, H5P_DEFAULT) < 0 ||
		    oi.type != H5O_TYPE_DATASET)
			return 0;
	}
	if (!(f->ents = calloc(ns->nseries ? ns->nseries : 1,
			       sizeof(*f->ents))))
		return 0;
	f->nents = ns->nseries;
	for (i = 0; i < ns->nseries; i++) {
		if (!whole_series(m, ns, f, &ns->series[i], &f->ents[i], map,
				  &raw, &rlen))
			goto out;
		if (f->ents[i].task) {
			if (first_task == SIZE_MAX)
				first_task = i;
			ntasks++;
			task_rows += ns->series[i].nrows;
		}
	}
	if (ntasks &&
	    !whole_alltasks(m, ns, f, first_task, ntasks, task_rows))
		goto out;
	ok = 1;
out:
	if (!ok) {
		free(f->ents);
		f->ents = NULL;
		f->nents = 0;
		free(f->blob);
		f->blob = NULL;
		f->blob_len = 0;
	}
	free(raw);
	return ok;
}
