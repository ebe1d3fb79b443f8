/*
 * jobfile.h - walk the series of a job file (/Steps/<step>/Nodes/<node>/).
 *
 * Works on our job files and on sh5util's (no Totals, no /Merge).
 */
#ifndef SH5_JOBFILE_H
#define SH5_JOBFILE_H

#include <hdf5.h>

#include "common/error.h"
#include "profile/series.h"

struct sh5_jf_entry {
	char step[64];
	char node[SH5_NAME_MAX];
	char parent[SH5_NAME_MAX];      /* "Tasks" or "" */
	char name[SH5_NAME_MAX];        /* "3", "Energy" */
	char path[2 * SH5_NAME_MAX + 2];   /* relative to the node group */
};

/*
 * List the datasets under /Steps/<step>/Nodes/<node>/ (directly, or one
 * group deep, leaving out the Totals group) in step order
 * (sh5_step_cmp), node natural order, then series path (task ids
 * numerically).  Objects that are not series are listed too; callers
 * skip those sh5_series_from_dataset rejects.  Returns 0 with *out
 * (free()) and *n set, or -1 with errp set (no /Steps: not a job file).
 */
int sh5_jobfile_list(hid_t file, const char *fname,
		     struct sh5_jf_entry **out, size_t *n,
		     struct sh5_error *errp);

/* Path of an entry's node group: /Steps/<step>/Nodes/<node>. */
void sh5_jobfile_node_path(const struct sh5_jf_entry *e, char *buf,
			   size_t len);

#endif
