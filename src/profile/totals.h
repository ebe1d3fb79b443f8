/*
 * totals.h - series totals as datasets, and running totals folded by key.
 *
 * Shared by the node-step writer (which stores the totals of what it wrote
 * under /<node>/Totals when it closes the file) and by sh5merge (node and
 * step totals of the job file).  Both write them the same way, so a node
 * group copied whole from an intact node-step file reads exactly like one
 * sh5merge assembled.
 */
#ifndef SH5_TOTALS_H
#define SH5_TOTALS_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#include "profile/series.h"

/*
 * Write one total (the ops' total of series s) as a one-record dataset at
 * path, relative to loc, creating intermediate groups.  Attributes:
 * "Series" (the ops name), "Series Count" (count), and "Rows" (records
 * totalled) unless rows is UINT64_MAX.  ftype: the file type to store
 * (a committed one shared by several totals), or -1 for the ops' total
 * file type.  0, or -1 (HDF5's error stack says why).
 */
int sh5_total_write(hid_t loc, const char *path, const struct sh5_series *s,
		    const void *total, size_t count, uint64_t rows,
		    hid_t ftype);

/* Property lists and dataspaces shared by the totals written in a row
 * (sh5_total_put): creating them for each total cost about as much as
 * writing its record. */
struct sh5_total_out {
	hid_t space, scalar, lcpl, dcpl;
	hid_t series_type;        /* type of the last "Series" value */
	const char *series_name;  /* ... whose ops name is this */
};
int sh5_total_out_init(struct sh5_total_out *o);
void sh5_total_out_fini(struct sh5_total_out *o);
/* sh5_total_write with o's lists (loc: where path starts). */
int sh5_total_put(struct sh5_total_out *o, hid_t loc, const char *path,
		  const struct sh5_series *s, const void *total, size_t count,
		  uint64_t rows, hid_t ftype);

/* The file form of a total of s (its ops' total_file_type: Samples,
 * FirstTimeNs, LastTimeNs, then per field Min, Max, Mean and, for delta
 * fields, Sum; little-endian) into out; returns its size (out NULL: only
 * the size). */
size_t sh5_total_pack(const struct sh5_series *s, const void *total,
		      unsigned char *out);

/* Read the total at path (relative to loc) written for series s into
 * total (s->ops->total_size(s) bytes).  0, or -1. */
int sh5_total_read(hid_t loc, const char *path, const struct sh5_series *s,
		   void *total);
/* The same with the memory type mt (s->ops->total_mem_type(s), or one
 * built from an equal series and kept) and the transfer properties dxpl
 * (a conversion buffer of at least mt's size): nothing built per call. */
int sh5_total_read_as(hid_t loc, const char *path, hid_t mt, hid_t dxpl,
		      void *total);

/* Same ops and the same fields (name, type, kind) in the same order:
 * totals of a and b can be merged. */
int sh5_series_same_fields(const struct sh5_series *a,
			   const struct sh5_series *b);

/* A running total under a key ("AllTasks", "Energy", ...). */
struct sh5_totacc {
	char key[2 * SH5_NAME_MAX + 2];
	struct sh5_series *s;   /* owned copy (types and fields) */
	void *total;
	size_t count;
};

/*
 * Fold total (of series s) into the accumulator of *v keyed key (added
 * when new).  Returns 0, 1 when the fields differ from those of the
 * accumulator (not folded), -1 when out of memory.
 */
int sh5_totacc_fold(struct sh5_totacc **v, size_t *n, const char *key,
		    const struct sh5_series *s, const void *total);
void sh5_totacc_free(struct sh5_totacc *v, size_t n);

#endif
