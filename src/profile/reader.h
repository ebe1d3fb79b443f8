/*
 * reader.h - open a node-step file and read its series by chunks.
 *
 * A node-step file is what one slurmstepd wrote for one node of one step:
 * ours (acct_gather_profile/sh5: root attribute "sh5 Format Version",
 * node attributes "Job ID", "Step ID", ...) or Slurm's stock
 * acct_gather_profile/hdf5 (no root attribute, H5PT packet tables).  The
 * reader detects which, checks the file belongs to the expected job, step
 * and node, and lists its series (struct sh5_series, built with
 * sh5_series_from_dataset) and its other objects (ClockOffsets, ...).
 *
 * Damaged files.  A file cut short (a killed writer, a full disk, an
 * interrupted copy) is opened through a private sparse copy extended to
 * the length the superblock records; every chunk that lies wholly inside
 * the bytes that really exist is read, the rest is reported as lost with
 * a reason.  Chunks that fail to read, or were never written, end the
 * series the same way.  Nothing is ever invented: zero-filled rows from
 * missing chunks are not returned.
 *
 * Memory: a cursor holds no rows of its own; the caller passes a buffer.
 */
#ifndef SH5_READER_H
#define SH5_READER_H

#include <stdint.h>
#include <sys/types.h>
#include <hdf5.h>

#include "common/error.h"
#include "profile/series.h"

enum sh5_nodestep_kind {
	SH5_NODESTEP_OURS = 1,  /* root attribute "sh5 Format Version" */
	SH5_NODESTEP_STOCK = 2, /* Slurm's acct_gather_profile/hdf5 */
};

/* One series of a node-step file. */
struct sh5_ns_series {
	struct sh5_series *series; /* owned */
	char parent[SH5_NAME_MAX]; /* "Tasks" or "" (the node group) */
	char path[2 * SH5_NAME_MAX + 2]; /* relative to the node group */
	uint64_t nrows;            /* rows the dataset claims */
};

struct sh5_nodestep {
	char *path;            /* as given */
	uint64_t size;         /* bytes on disk */
	enum sh5_nodestep_kind kind;
	hid_t file;
	hid_t node;            /* the node group */
	char node_name[SH5_NAME_MAX];
	/* From our node attributes; has_job_id == 0 for stock files. */
	int has_job_id;
	uint32_t job_id;
	char step[32];         /* "Step ID" attribute or "" */
	/* Stock and ours; -1 when absent. */
	int node_index;
	int ntasks;
	int nnodes;            /* "Number of Nodes" when the writer sets it */
	int step_tasks;        /* "Step Tasks" (tasks of the whole step) */
	/* Salvage: the file was shorter than its superblock says. */
	int salvaged;
	uint64_t real_eof;     /* bytes that exist (== size) */
	char damage[256];      /* file-level damage, or "" */
	char *tmp_copy;        /* private sparse copy, removed on close */
	/* Series and other objects (relative paths), in name order. */
	size_t nseries;
	struct sh5_ns_series *series;
	size_t nother;
	char **other;
	/* Our writer's /<node>/Totals group is there (not listed above). */
	int has_totals;
	/* A /<node>/Events group (application events): its members are
	 * listed in other[] as "Events/<name>". */
	int has_events;
};

/*
 * Open path as the node-step file of node `node` of job `job_id`, step
 * `step` ("0", "batch", "extern", ...).  node or step may be NULL to skip
 * that check.  Returns a new handle (sh5_nodestep_close) or NULL with errp
 * set to a reason that names the file: not readable (errno kept), not an
 * HDF5 file, not a node-step file, of another job/step/node, damaged
 * beyond use.  A damaged but usable file opens with ns->damage or the
 * cursors' reasons telling what was lost.
 */
struct sh5_nodestep *sh5_nodestep_open(const char *path, const char *node,
				       uint32_t job_id, const char *step,
				       struct sh5_error *errp);
void sh5_nodestep_close(struct sh5_nodestep *ns);

/*
 * Cursor over one series dataset (of a node-step file or a job file).
 * real_eof: bytes of the file that really exist, or 0 when the file is
 * intact (no chunk-address checks).  The dataset id is borrowed.
 */
struct sh5_cursor {
	hid_t dset;
	hid_t mtype;           /* ops->mem_type */
	hid_t rtype;           /* native file type for the fast path, or -1 */
	struct sh5_recmap *map; /* rtype records -> mtype records */
	void *raw;             /* raw_rows records of rtype */
	size_t raw_rows;
	int direct;            /* chunks in rtype's layout, decoded here */
	int f_shuffle, f_deflate, f_fletcher; /* their index in the
						 * pipeline, or -1 */
	void *zbuf, *tbuf;     /* a stored chunk, an unshuffled one */
	size_t zlen, tlen;
	hid_t fspace;
	const struct sh5_series *s;
	uint64_t nrows;        /* rows the dataset claims */
	uint64_t pos;          /* next row */
	hsize_t chunk_rows;    /* 0 if not chunked */
	uint64_t real_eof;
	uint64_t good_rows;    /* rows known readable (<= nrows) */
	int damaged;
	char reason[200];
};

/*
 * Prepare a cursor.  Checks, when the dataset is chunked, that every chunk
 * was written (and lies inside real_eof); the rows after the first
 * missing chunk are marked lost up front.  0 or -1 with errp set.
 */
int sh5_cursor_open(struct sh5_cursor *c, hid_t dset,
		    const struct sh5_series *s, uint64_t real_eof,
		    struct sh5_error *errp);
/*
 * Read up to max rows into buf (max * ops->record_size bytes, the ops'
 * memory layout; slot 2 is filled from EpochTime when the file has no
 * EpochTimeNs).  Returns the rows read, 0 at the end or at damage (then
 * c->damaged is set, c->reason says why and sh5_cursor_lost() how many
 * rows were lost), -1 never: read errors become damage.
 */
size_t sh5_cursor_read(struct sh5_cursor *c, void *buf, size_t max);
uint64_t sh5_cursor_lost(const struct sh5_cursor *c);
void sh5_cursor_close(struct sh5_cursor *c);

/*
 * Copy records between two compound layouts member by member (by name).
 * HDF5's compound conversion costs about a microsecond per record; a map
 * built once per series copies 8-byte members directly.  Built only when
 * every member of src that dst also has is 8 bytes wide and of the same
 * class (integer or float) in both; else NULL (use HDF5's conversion).
 * Members of dst that src lacks are zeroed.
 */
struct sh5_recmap;
struct sh5_recmap *sh5_recmap_build(hid_t src, hid_t dst);
void sh5_recmap_apply(const struct sh5_recmap *m, const void *src, void *dst,
		      size_t n);
void sh5_recmap_free(struct sh5_recmap *m);

/*
 * Open a dataset by path relative to loc and return its series (NULL with
 * errp set if it is not one).  parent as for sh5_series_from_dataset.
 */
struct sh5_series *sh5_reader_series(hid_t dset, const char *parent,
				     const char *name,
				     struct sh5_error *errp);

/*
 * Is t a datatype HDF5 can convert without reading out of bounds?  HDF5
 * 1.10 trusts the sizes, precisions and offsets a file declares; a damaged
 * type message makes its conversions read past their buffers.  Checks
 * them, recursively.  1 sane, 0 not.
 */
int sh5_type_sane(hid_t t);

/* Attribute helpers: 0 or -1 (absent, unreadable or of an insane type). */
int sh5_attr_get_int(hid_t obj, const char *name, long long *out);
int sh5_attr_get_str(hid_t obj, const char *name, char *buf, size_t len);

/* Readable step name for a step id from a file name: "batch", "extern",
 * "interactive", "pending" for Slurm's special numbers, else the id. */
const char *sh5_step_name(const char *id, char *buf, size_t len);

#endif /* SH5_READER_H */
