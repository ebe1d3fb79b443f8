/*
 * writer_int.h - the node-step writer's state, shared by writer.c (set-up,
 * attributes, appends), writer_chunks.c (datasets, chunks, flush) and
 * writer_close.c (totals, close).
 */
#ifndef SH5_PROFILE_WRITER_INT_H
#define SH5_PROFILE_WRITER_INT_H

#include <pthread.h>
#include <stddef.h>

#include <hdf5.h>

#include "profile/writer.h"
#include "profile/zdeflate.h"
#include "profile/zinc.h"

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
				    * (shuffled), zero padded; NULL if none
				    * (recompress, or no deflate) */
	int cur_final;             /* it was last written in final form
				    * (configured level), not partial */
	struct sh5_zinc *zi;       /* the last chunk, coded as its rows
				    * come (default method); then cur
				    * stays NULL */
	int zi_last;               /* it was last written re-coded (complete
				    * or at close) */
	/* pending, protected by w->lock */
	unsigned char *buf;
	size_t n, cap;
};

struct sh5_writer {
	char path[4096];
	char node[SH5_NAME_MAX];
	struct sh5_writer_opts opts;
	hid_t file, node_grp;
	int fd;                    /* with opts.defer_file: the node-step
				    * file's descriptor (a duplicate) until
				    * open_file() created it, else -1 */
	hid_t scalar;              /* a scalar dataspace for attributes */
	char **anames;             /* node attributes written so far */
	size_t nanames;
	pthread_mutex_t lock;      /* tables array, pending buffers, flags */
	pthread_mutex_t io_lock;   /* every HDF5 call */
	struct table **tables;     /* stable pointers: flush keeps one
				    * while adds may grow the array */
	size_t ntables, cap;
	int clock_id;              /* table of ClockOffsets, or -1 */
	struct sh5_zdeflate *zd;   /* final chunks' compressor (io_lock) */
	hid_t gcpl;                /* groups: no modification times */
	hid_t dcpl;                /* the last datasets' creation list */
	hsize_t dcpl_rows;         /* ... for chunks of this many rows */
	hid_t pgrp;                /* the last datasets' group (not the
				    * node group), or -1 */
	char pname[SH5_NAME_MAX];  /* ... its name */
	/* The file types of the series datasets, committed to the file
	 * (anonymously) once per kind of series (sh5_series_same_fields);
	 * io_lock. */
	const struct sh5_series **kinds;
	hid_t *ktypes;
	size_t nkinds;
	int closed, failed;
	struct sh5_writer_stats st;
};

/* With opts.defer_file: create the file (and the node group) if not yet
 * done; caller holds io_lock.  0, or -1 with errp set (the writer is
 * then failed). */
int sh5_writer_open_file(struct sh5_writer *w, struct sh5_error *errp);

#endif
