/*
 * ready.h - are the node-step files of a job complete?
 *
 * A node-step file of our writer is complete when its writer closed it:
 * the close writes /<node>/Totals (doc/format.md).  A step is complete
 * when it has as many files as its files say it runs on ("Number of
 * Nodes").  Files of Slurm's stock plugin carry no such mark: they count
 * as complete once they open.  Used by `sh5merge merge --wait` and so by
 * the job-end merge (scripts/sh5-epilog, doc/epilog.md).
 */
#ifndef SH5_MERGE_READY_H
#define SH5_MERGE_READY_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct sh5_ready {
	size_t files;      /* node-step files of the job found */
	size_t complete;   /* of those, closed by their writer */
	char why[256];     /* when not ready: the first reason, naming a
			    * file or step; "" when ready */
};

/*
 * Check the node-step files of job `job` in dir (steps as in
 * sh5_merge_discover: nsteps == 0 for all).  The files are opened in a
 * child process (a file being written may be inconsistent and HDF5 may
 * crash on it: that file then counts as not complete).  Returns 1 when
 * at least one file was found and all are complete, 0 when not (r->why
 * says why; no files at all is "not ready"), -1 with errp set when dir
 * cannot be read or no child process can be made.  r is filled in all
 * cases but -1.
 */
int sh5_merge_ready(const char *dir, uint32_t job,
		    const char *const *steps, size_t nsteps,
		    struct sh5_ready *r, struct sh5_error *errp);

#endif /* SH5_MERGE_READY_H */
