/*
 * lbdata.h - vt LBDatafile (VOM) export.
 *
 * Two layers.  The rank-file writer (sh5_lbdata_file_*) streams one
 * `<stem>.<rank>.json` in the shape vt writes and LBAF reads: top-level
 * and metadata "type": "LBDatafile", metadata (rank, shared_node, phases,
 * attributes), then phases, each with its tasks and optionally its
 * communications.  It enforces the schema's typing on the way out: times
 * and bytes are JSON floats, ids integers, an entity has an id or a
 * seq_id, a migratable entity with a seq_id has a collection_id.  With
 * brotli, the whole file is one brotli stream (quality 8, window 20, as
 * vt), still named .json (LBAF and vt detect compressed content).  The
 * file is written under a temporary name `.<stem>.<rank>.json.part` in
 * the same directory; sh5_lbdata_commit() renames it into place.
 *
 * The exporter (sh5_lbdata_export) maps a job file onto rank files: a
 * rank is a Slurm task (global task id), one task entity per rank and
 * phase whose time is the CPU seconds the task used in that phase; every
 * rank file holds the same phases.  See doc/exports.md.
 */
#ifndef SH5_LBDATA_H
#define SH5_LBDATA_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "export/lbfile.h"	/* the rank-file writer */

/* ------------------------------------------------------------ exporter */

/* Phases per export at most (each rank file holds every phase). */
#define SH5_LBDATA_MAX_PHASES 1000000

struct sh5_lbdata_opts {
	const char *dir;	/* output directory (must exist) */
	const char *stem;	/* NULL: "data" */
	const char *step;	/* NULL: the first step (see doc) */
	double phase_length;	/* seconds; <= 0: one phase for the step */
	enum sh5_lbdata_compress compress;
	int migratable;		/* entity "migratable" */
	int summary;		/* fill per-phase figures in the summary */
};

struct sh5_lbdata_phase_summary {
	int64_t id;
	double start, end;	/* window, seconds since the epoch */
	double rank_max, rank_avg;
	int64_t rank_argmax;
	double node_max, node_avg;
	int64_t node_argmax;	/* node index */
	char node_name[64];	/* of the slowest node */
};

struct sh5_lbdata_summary {
	char step[64];
	int64_t nranks;		/* files written: max task id + 1 */
	int64_t ntasks;		/* Slurm tasks with data */
	size_t nnodes;
	int64_t nphases;
	double phase_length;
	uint64_t samples;	/* Task samples read */
	int events;		/* the step has application events */
	int marks;		/* phases from phase marks */
	uint64_t comm_edges;	/* communications written (aggregated) */
	uint64_t p2p_matched;	/* matched point-to-point messages */
	uint64_t unmatched;	/* sends and receives without a partner */
	uint64_t objects;	/* declared objects (per phase) */
	uint64_t json_bytes;	/* uncompressed JSON written */
	uint64_t file_bytes;	/* bytes on disk */
	struct sh5_lbdata_phase_summary *phases; /* nphases, with opts.summary */
};

/*
 * Export one step of the job file at path as rank files in opts->dir.
 * All files are written under temporary names and renamed only when all
 * succeeded; on failure none is left behind.  sum (may be NULL) receives
 * the figures; free it with sh5_lbdata_summary_free().  Returns 0 or -1
 * (errno EINVAL for more than SH5_LBDATA_MAX_PHASES phases, ENOENT for a
 * missing step or a step without Task series).
 */
int sh5_lbdata_export(const char *path, const struct sh5_lbdata_opts *opts,
		      struct sh5_lbdata_summary *sum, struct sh5_error *errp);

void sh5_lbdata_summary_free(struct sh5_lbdata_summary *sum);

#endif /* SH5_LBDATA_H */
