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
#include "profile/h5check.h"
#include "profile/cursor.h"
#include "profile/recmap.h"

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
	hid_t dset;                /* the dataset, open from the walk to
				    * the close when HDF5 reads the
				    * caller's image (file_image), else
				    * -1 */
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
	int has_start;         /* "Start Time ns" (ours; stock: if set) */
	long long start_ns;
	char user[64];         /* ours: "User", "Cluster"; else "" */
	char cluster[64];
	unsigned bad_attrs;    /* attributes of the node group that cannot
				* be read (all are read as the file opens) */
	/* Salvage: the file was shorter than its superblock says. */
	int salvaged;
	uint64_t real_eof;     /* bytes that exist (== size) */
	char damage[256];      /* file-level damage, or "" */
	char *tmp_copy;        /* private sparse copy, removed on close */
	int file_image;        /* HDF5 reads the caller's image of the file
				* (sh5_nodestep_open_image()) */
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
/* The same; a file of at most mem_max bytes (0: none) is read whole into
 * memory at the open (HDF5's core driver) and read from there: one read
 * instead of one per chunk, memory the file's size until the close. */
struct sh5_nodestep *sh5_nodestep_open_mem(const char *path,
					   const char *node, uint32_t job_id,
					   const char *step, uint64_t mem_max,
					   struct sh5_error *errp);
/* The same, HDF5 reading the file's bytes from img (len bytes, the
 * caller's, read-only, left alive and unchanged until the close; neither
 * copied nor freed): no read of the file.  Each series dataset stays
 * open from the walk to the close (series[i].dset), for a caller that
 * checks them all (the merge) instead of opening each again.  An image HDF5 cannot open
 * (cut short, not HDF5) is opened by path instead, as
 * sh5_nodestep_open() would (the reason, the salvage). */
struct sh5_nodestep *sh5_nodestep_open_image(const char *path,
					     const char *node,
					     uint32_t job_id, const char *step,
					     const void *img, size_t len,
					     struct sh5_error *errp);
void sh5_nodestep_close(struct sh5_nodestep *ns);

#endif /* SH5_READER_H */
