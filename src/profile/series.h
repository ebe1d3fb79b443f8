/*
 * series.h - profile series: field definitions, ops tables, the factory.
 *
 * A series is one time series of samples: a task's samples, a node's
 * energy, filesystem or network samples, or any dataset a gather plugin
 * defines.  Each record holds the stock time members, the fields the
 * gather plugin declared, and our high-resolution time stamp.
 *
 * In memory every record is an array of 8-byte slots (union sh5_value):
 *
 *   slot 0  ElapsedTime  uint64  seconds since the step started
 *   slot 1  EpochTime    uint64  Slurm's sample time (whole seconds)
 *   slot 2  EpochTimeNs  int64   the plugin's clock at the sample (ns)
 *   slot 3+i             field i (uint64 or double)
 *
 * In the file the compound members come in the stock order (ElapsedTime,
 * EpochTime, the fields) with EpochTimeNs last; HDF5 converts by member
 * name.  Files of Slurm's stock plugin lack EpochTimeNs: a series read
 * from such a file has has_time_ns == 0 and slot 2 is derived from
 * EpochTime.
 *
 * One ops table per series type (Task, Energy, Filesystem, Network) and a
 * generic one for anything else; the factory never returns NULL.  The
 * tables differ in what they know about fields (kind: delta or level,
 * unit) and where the series lives; the record handling is shared.
 */
#ifndef SH5_SERIES_H
#define SH5_SERIES_H

#include <stdint.h>
#include <stdio.h>
#include <hdf5.h>

#include "common/error.h"

#define SH5_NAME_MAX 64
#define SH5_TIME_SLOTS 3 /* ElapsedTime, EpochTime, EpochTimeNs */

union sh5_value {
	uint64_t u;
	int64_t i;
	double d;
};

enum sh5_ftype {
	SH5_FT_U64 = 1,
	SH5_FT_DOUBLE = 2,
};

enum sh5_fkind {
	SH5_FK_LEVEL = 0, /* a momentary value: min/max/mean make sense */
	SH5_FK_DELTA = 1, /* a count over the sample interval: sums make sense */
};

struct sh5_field {
	char name[SH5_NAME_MAX];
	enum sh5_ftype type;
	enum sh5_fkind kind;
	char unit[16];
};

struct sh5_series_ops;

struct sh5_series {
	const struct sh5_series_ops *ops;
	char name[SH5_NAME_MAX];  /* dataset name: "3", "Energy", ... */
	size_t nfields;
	struct sh5_field *fields; /* owned */
	int has_time_ns;          /* file carries EpochTimeNs */
	int has_sync_ns;          /* file carries SyncTimeNs (job files) */
};

/*
 * Totals of a series (the "summary" type of the seed).  In memory: a fixed
 * header then, per field, four doubles (min, max, mean, sum).  In the file
 * delta fields keep Sum, Min, Max, Mean; level fields Min, Max, Mean (a sum
 * of levels means nothing).  Time stamps are never summed.
 */
struct sh5_total_head {
	uint64_t samples;
	int64_t first_ns;
	int64_t last_ns;
	uint64_t pad;
};
struct sh5_total_field {
	double min, max, mean, sum;
};

struct sh5_series_ops {
	const char *name;  /* "Task", "Energy", "Filesystem", "Network", "Generic" */
	const char *group; /* parent group in the node group ("Tasks") or NULL */

	/* Fields this type knows (name, kind, unit); others are levels. */
	const struct sh5_field *known;
	size_t nknown;

	/* Bytes of one memory record (dataset_size of the seed). */
	size_t (*record_size)(const struct sh5_series *s);
	/* HDF5 types; the caller closes the returned id.  <0 on error. */
	hid_t (*mem_type)(const struct sh5_series *s);
	hid_t (*file_type)(const struct sh5_series *s);
	/* Totals: size of the memory total, and its HDF5 types. */
	size_t (*total_size)(const struct sh5_series *s);
	hid_t (*total_mem_type)(const struct sh5_series *s);
	hid_t (*total_file_type)(const struct sh5_series *s);
	/* init_job_series: an empty total. */
	void (*total_init)(const struct sh5_series *s, void *total);
	/* series_total: fold n records into a total (streaming). */
	void (*total_add)(const struct sh5_series *s, void *total,
			  const void *recs, size_t n);
	/* merge_step_series: fold one total into another (tasks into a
	 * node, nodes into a step). */
	void (*total_merge)(const struct sh5_series *s, void *dst,
			    const void *src);
	/* extract_series / extract_totals: CSV.  header != 0 writes the
	 * header line instead of data.  prefix is written first on each
	 * data line (e.g. "0,node1,3,") and prefix_names on the header. */
	int (*extract_series)(const struct sh5_series *s, FILE *f, int header,
			      const char *prefix, const void *recs, size_t n);
	int (*extract_totals)(const struct sh5_series *s, FILE *f, int header,
			      const char *prefix, const void *total);
};

/*
 * The factory: the ops of the series named name whose parent group is
 * parent (NULL or "" for the node group).  Tasks/<n> gives Task; Energy,
 * Filesystem, Network give theirs; anything else the generic ops.  Never
 * NULL.  The returned table is static.
 */
const struct sh5_series_ops *sh5_series_ops_lookup(const char *parent,
						   const char *name);

/* All ops tables, NULL-terminated (for listings and tests). */
extern const struct sh5_series_ops *const sh5_series_all_ops[];

/*
 * Build a series from field names and types (as a gather plugin declares
 * them).  Kinds and units come from the ops' known fields.  Returns a new
 * series (free with sh5_series_destroy) or NULL with errno set (EINVAL:
 * empty or too long names, duplicate fields, a field named like a time
 * member; ENOMEM).
 */
struct sh5_series *sh5_series_create(const char *parent, const char *name,
				     const char *const *field_names,
				     const enum sh5_ftype *types, size_t n,
				     struct sh5_error *errp);

/*
 * Build a series from a dataset's file type (a compound with at least
 * ElapsedTime and EpochTime).  Reads kinds and units from the dataset's
 * "Field Kinds"/"Field Units" attributes when present, else the ops'
 * knowledge.  Returns NULL with errp set if the type is not a series.
 */
struct sh5_series *sh5_series_from_dataset(const char *parent,
					   const char *name, hid_t dset,
					   struct sh5_error *errp);

/* As sh5_series_from_dataset, from dset's file type ft (left open),
 * reading the "Field Kinds"/"Field Units" attributes only if attrs (the
 * ops' knowledge else: what a CSV of the rows needs). */
struct sh5_series *sh5_series_from_type(const char *parent, const char *name,
					hid_t dset, hid_t ft, int attrs,
					struct sh5_error *errp);
/* A copy of t named name under parent, which must give the same ops
 * (else NULL, EINVAL): the description of another dataset of t's type. */
struct sh5_series *sh5_series_dup(const struct sh5_series *t,
				  const char *parent, const char *name,
				  struct sh5_error *errp);

void sh5_series_destroy(struct sh5_series *s);

/* Index of a field by name, or -1. */
int sh5_series_field_index(const struct sh5_series *s, const char *name);

/* Slot accessors for a memory record. */
static inline union sh5_value *sh5_record_slot(const struct sh5_series *s,
					       void *recs, size_t row,
					       size_t slot)
{
	return (union sh5_value *)recs +
	       row * (SH5_TIME_SLOTS + s->nfields + 1) + slot;
}
/* Field i of row as a double. */
double sh5_record_field(const struct sh5_series *s, const void *recs,
			size_t row, size_t i);

/* Number of 8-byte slots per memory record (time slots, fields, and one
 * slot for SyncTimeNs). */
static inline size_t sh5_record_slots(const struct sh5_series *s)
{
	return SH5_TIME_SLOTS + s->nfields + 1;
}
#define SH5_SLOT_SYNC(s) (SH5_TIME_SLOTS + (s)->nfields)

/* Memory-total accessors. */
static inline struct sh5_total_head *sh5_total_head(void *total)
{
	return total;
}
static inline struct sh5_total_field *sh5_total_field(void *total, size_t i)
{
	return (struct sh5_total_field *)((char *)total +
					  sizeof(struct sh5_total_head)) + i;
}

/* Kind and unit names for attributes. */
const char *sh5_fkind_name(enum sh5_fkind k);
int sh5_fkind_from_name(const char *name, enum sh5_fkind *out);

/*
 * Write the "Series", "Field Units" and "Field Kinds" attributes on a
 * dataset.  0 or -1 with errp set.
 */
int sh5_series_write_attrs(const struct sh5_series *s, hid_t dset,
			   struct sh5_error *errp);

#endif /* SH5_SERIES_H */
