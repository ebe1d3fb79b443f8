/*
 * extract_types.h - the options and selected series of an extraction
 * (merge/extract.h).
 */
#ifndef SH5_EXTRACT_TYPES_H
#define SH5_EXTRACT_TYPES_H

#include <stddef.h>
#include <hdf5.h>

#include "merge/jobfile.h"
#include "profile/series.h"

struct sh5_extract {
	const char *input, *step, *series, *node, *task, *field, *output;
	int totals;
	int group;  /* the series is a group of series: Tasks, or another */
	/* A series lost rows (msg names the input and the series). */
	void (*warn)(void *arg, const char *msg);
	/* done of total series written. */
	void (*progress)(void *arg, size_t done, size_t total);
	void *arg;
	int out_errno; /* errno of the first failed write to the output */
	/* The output is a file of the caller's own (a temporary file no
	 * other process shares): the rows may go to it with O_DIRECT set
	 * on its descriptor for a while (common/dwrite). */
	int out_private;
};

struct sh5_extract_sel {
	struct sh5_jf_entry e;
	struct sh5_series *s;
	hid_t dset;
	/* Its file type among the selection's (entries of equal tkind
	 * have equal types and fields), or -1: none like it. */
	int tkind;
};

#endif /* SH5_EXTRACT_TYPES_H */
