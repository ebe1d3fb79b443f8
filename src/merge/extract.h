/*
 * extract.h - series or totals of a job file as CSV (sh5merge extract).
 *
 * Select the series of a job file by step, node, task and series name,
 * then write their rows (one CSV row per sample, after a key prefix),
 * their totals, or one field of each aligned by EpochTime.  Output goes
 * to a FILE; errors come back in struct sh5_error (naming the input or
 * the output), warnings (rows lost to damage) and progress through
 * hooks.  Nothing here prints.
 */
#ifndef SH5_EXTRACT_H
#define SH5_EXTRACT_H

#include <stddef.h>
#include <stdio.h>
#include <hdf5.h>

#include "common/error.h"
#include "merge/extract_types.h"

/* Open the entries of job file f that match x's options (x->group set).
 * 0, or -1 with errp set. */
int sh5_extract_select(hid_t f, struct sh5_extract *o,
		       struct sh5_extract_sel **out, size_t *nout,
		       struct sh5_error *errp);
/* Free the selection; with close_dsets, close its datasets too.
 * Without, they stay open: for a process about to end (cmd_extract),
 * which leaves them and the file to its exit (closing 256 open
 * datasets, the file and HDF5's own teardown at exit cost a tenth of a
 * short extraction's CPU). */
void sh5_extract_free(struct sh5_extract_sel *v, size_t n, int close_dsets);
/* The CSV header after the key columns (malloc'd), or NULL. */
char *sh5_extract_header(const struct sh5_extract_sel *e, int totals);
/* The rows, the totals, or one field aligned by EpochTime (--field).  0
 * (a write error is left in ferror(out) or o->out_errno), or -1 with errp
 * set. */
int sh5_extract_timeseries(struct sh5_extract *o, struct sh5_extract_sel *v,
			   size_t n, FILE *out, struct sh5_error *errp);
int sh5_extract_totals(const struct sh5_extract *o, hid_t f,
		       struct sh5_extract_sel *v, size_t n, FILE *out,
		       struct sh5_error *errp);
int sh5_extract_aligned(const struct sh5_extract *o,
			struct sh5_extract_sel *v, size_t n, FILE *out,
			struct sh5_error *errp);

#endif /* SH5_EXTRACT_H */
