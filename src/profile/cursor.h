/*
 * cursor.h - read a series dataset by chunks (see reader.h on damage).
 */
#ifndef SH5_CURSOR_H
#define SH5_CURSOR_H

#include <stdint.h>
#include <hdf5.h>

#include "common/error.h"
#include "profile/series.h"

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
	int native;            /* the file type is rtype (same layout) */
	int flat_type;         /* rtype is ElapsedTime, EpochTime, then the
				* series' fields, 8 bytes each */
	int flat;              /* flat_type and direct: see
				* sh5_cursor_read_flat (the caller may clear
				* it) */
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
 * Move an open cursor c to another dataset of the same file type, with a
 * series s of the same fields (the caller knows: sh5_extract_select
 * compares the types): the types, record map and buffers are kept, the
 * dataset's rows, chunking and filters read again.  0, or -1 with errp
 * set and c closed.
 */
int sh5_cursor_next(struct sh5_cursor *c, hid_t dset,
		    const struct sh5_series *s, struct sh5_error *errp);
/*
 * Read up to max rows into buf (max * ops->record_size bytes, the ops'
 * memory layout; slot 2 is filled from EpochTime when the file has no
 * EpochTimeNs).  Returns the rows read, 0 at the end or at damage (then
 * c->damaged is set, c->reason says why and sh5_cursor_lost() how many
 * rows were lost), -1 never: read errors become damage.
 */
size_t sh5_cursor_read(struct sh5_cursor *c, void *buf, size_t max);
/*
 * When c->flat: the next up to max rows as the file stores them, in the
 * cursor's own buffer (*recs, valid until the next read; records of
 * H5Tget_size(c->rtype) bytes: ElapsedTime, EpochTime, then the fields
 * as the series' slots have them), without the copy into the ops'
 * layout.  Returns the rows, checked as sh5_cursor_read checks them; 0
 * at the end or at damage, or when the chunks cannot be read that way:
 * then c->flat is cleared and sh5_cursor_read goes on from there.
 */
size_t sh5_cursor_read_flat(struct sh5_cursor *c, const void **recs,
			    size_t max);
uint64_t sh5_cursor_lost(const struct sh5_cursor *c);
void sh5_cursor_close(struct sh5_cursor *c);

/*
 * Open a dataset by path relative to loc and return its series (NULL with
 * errp set if it is not one).  parent as for sh5_series_from_dataset.
 */
struct sh5_series *sh5_reader_series(hid_t dset, const char *parent,
				     const char *name,
				     struct sh5_error *errp);

#endif /* SH5_CURSOR_H */
