/*
 * merge.h - merge a job's node-step files into one job file.
 *
 * The job file keeps sh5util's layout (/Steps/<step>/Nodes/<node>/...,
 * batch and extern steps under readable names) and adds totals computed
 * through each series' ops, job and step metadata and a record of what was
 * merged (/Merge).  doc/jobfile.md describes every object.
 *
 * The merge runs in two passes over the inputs: the first checksums every
 * file and reads all its metadata, in child processes (HDF5 may crash on
 * a damaged file: only that file is then marked), the second streams each
 * series through a fixed-size row buffer into the output.  Peak memory does not
 * depend on the number of samples: one row buffer (SH5_MERGE_BUFFER
 * bytes), HDF5's caches for one input and the output, and a few hundred
 * bytes per series of one step.
 *
 * The output is written to a temporary name beside it, closed, reopened
 * and checked (every dataset's row count), fsynced and then renamed; an
 * existing output is kept unless force is set.
 */
#ifndef SH5_MERGE_H
#define SH5_MERGE_H

#include <stdint.h>
#include <stddef.h>

#include "common/error.h"
#include "profile/series.h"

#define SH5_MERGE_BUFFER (1u << 20)

/* A node-step file found in the profile directory. */
struct sh5_input {
	char *path;               /* directory/file */
	char *file;               /* file name only (points into path) */
	uint32_t job;
	char step_id[32];         /* as in the file name: "0", "batch" */
	char step[32];            /* readable: "4294967292" -> "extern" */
	char node[SH5_NAME_MAX];
};

/*
 * List the node-step files of job `job` in dir: names
 * <job>_<step>_<node>.h5, for the steps in steps[] (readable or numeric
 * names; nsteps == 0: all steps).  Sorted by step (batch, extern, other
 * names, then numbers ascending) and node name.  Returns 0 with *out
 * (free with sh5_inputs_free) and *n set (possibly 0), or -1 with errp
 * set when dir cannot be read.
 */
int sh5_merge_discover(const char *dir, uint32_t job,
		       const char *const *steps, size_t nsteps,
		       struct sh5_input **out, size_t *n,
		       struct sh5_error *errp);
void sh5_inputs_free(struct sh5_input *v, size_t n);

/* Order of step names in a job file: batch, extern, interactive,
 * pending, numbers ascending, others by name.  strcmp-like. */
int sh5_step_cmp(const char *a, const char *b);

/* Natural order of names: digit runs compare as numbers (n2 < n10).
 * Returns <0, 0, >0 like strcmp. */
int sh5_natural_cmp(const char *a, const char *b);

/*
 * Hooks into the second pass (timestamp synchronization, see
 * mergesync.h).  Any member may be NULL; arg is passed to each.
 */
struct sh5_merge_hooks {
	/* For each node-step file before its series: in_node is the input's
	 * node group, out_node the job file's.  Returns 1 to give this
	 * node's series a SyncTimeNs member (filled by sync_rows), 0 not, -1
	 * to stop the merge (errp set). */
	int (*node_begin)(void *arg, const struct sh5_input *in,
			  hid_t in_node, hid_t out_node,
			  struct sh5_error *errp);
	/* Fill slot SH5_SLOT_SYNC(s) of n records just read from a series
	 * of the current node (before they are written and totalled). */
	void (*sync_rows)(void *arg, const struct sh5_series *s, void *recs,
			  size_t n);
	/* After the node's series and objects; -1 stops the merge. */
	int (*node_end)(void *arg, hid_t out_node, struct sh5_error *errp);
	/* After every step and /Merge, before the job file is closed,
	 * verified and renamed; -1 stops the merge. */
	int (*finish)(void *arg, hid_t fout, struct sh5_error *errp);
	void *arg;
	/* In the first pass (a checking child process), for each input
	 * that opens: in_node is its node group.  Returns > 0 when the file
	 * holds what the hooks look for (a mask: mergesync.c returns 1 for
	 * clock-offset measurements, 2 for events), else 0.  Lets the hooks
	 * decide without opening every file again. */
	int (*probe)(void *arg, hid_t in_node);
	/* After the first pass: any is the OR of what probe returned for
	 * the usable inputs.  Returns 1 when node_begin may return 1, 0 when it never
	 * will, -1 to stop the merge (errp set). */
	int (*checked)(void *arg, int any, struct sh5_error *errp);
	/* Without checked: set when node_begin never returns 1.  When no
	 * series is synchronized the reader child totals the series and
	 * sends records packed (only the totals of those copied raw). */
	int never_sync;
	/* Set when checked() returns exactly its any argument: series are
	 * synchronized only when probe found something.  Lets the second
	 * pass start before the first ends. */
	int sync_if_hit;
	/* The second pass starts over (what node_begin/node_end counted is
	 * to be forgotten).  May be NULL. */
	void (*restart)(void *arg);
};

struct sh5_merge_opts {
	const char *dir;          /* where the node-step files are */
	uint32_t job;
	const char *const *steps; /* selected steps, nsteps == 0: all */
	size_t nsteps;
	const char *output;       /* the job file */
	int force;                /* overwrite an existing output */
	int remove_inputs;        /* unlink merged inputs after the rename */
	int allow_partial;        /* write the job file despite problems */
	const char *options;      /* command line, recorded in /Merge */
	/* Called once per problem (file or directory, reason) and per
	 * warning; error 1 for problems that fail the merge without
	 * allow_partial, 2 for those that fail it even with it (an input
	 * changed while being read). */
	void (*report)(void *arg, int error, const char *file,
		       const char *msg);
	/* Called after each input of each pass (phase 1: check, 2: write). */
	void (*progress)(void *arg, int phase, size_t done, size_t total);
	/* Called with the temporary path when it is created, NULL when it
	 * is gone (renamed or removed); for signal handlers. */
	void (*temp_path)(void *arg, const char *path);
	void *arg;
	size_t buffer_bytes;      /* row buffer, 0: SH5_MERGE_BUFFER */
	const struct sh5_merge_hooks *hooks; /* NULL: none */
};

struct sh5_merge_stats {
	size_t inputs;            /* files found */
	size_t merged;            /* files written (intact or salvaged) */
	size_t skipped;           /* files left out */
	size_t steps, nodes;
	size_t whole;             /* node groups copied whole (intact
				   * files of our writer: no decoding) */
	uint64_t samples;         /* rows written */
	uint64_t lost;            /* rows lost to damage */
	size_t problems;          /* errors reported */
	size_t removed;           /* inputs removed */
};

/*
 * Merge.  Returns 0 when the job file was written with nothing missing;
 * 1 when problems were found: the job file was written and marks them if
 * allow_partial is set, else no job file was written; -1 on a failure
 * that stopped the merge (no inputs, output exists, write error, ...)
 * with errp set and no job file left behind.  Problems are passed to
 * opts->report as they are found.
 */
int sh5_merge_job(const struct sh5_merge_opts *opts,
		  struct sh5_merge_stats *stats, struct sh5_error *errp);

#endif /* SH5_MERGE_H */
