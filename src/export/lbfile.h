/*
 * lbfile.h - the vt LBDatafile rank-file writer (sh5_lbdata_file_*).
 *
 * It streams one `<stem>.<rank>.json` in the shape vt writes and LBAF
 * reads: top-level and metadata "type": "LBDatafile", metadata (rank,
 * shared_node, phases, attributes), then phases, each with its tasks and
 * optionally its communications.  It enforces the schema's typing on the
 * way out: times and bytes are JSON floats, ids integers, an entity has
 * an id or a seq_id, a migratable entity with a seq_id has a
 * collection_id.  With brotli, the whole file is one brotli stream
 * (quality 8, window 20, as vt), still named .json (LBAF and vt detect
 * compressed content).  The file is written under a temporary name
 * `.<stem>.<rank>.json.part` in the same directory; sh5_lbdata_commit()
 * renames it into place.  See lbdata.h for the exporter.
 */
#ifndef SH5_EXPORT_LBFILE_H
#define SH5_EXPORT_LBFILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct sh5_lbdata_file;

enum sh5_lbdata_compress {
	SH5_LBDATA_PLAIN = 0,
	SH5_LBDATA_BROTLI = 1,
};

/* An entity (task owner or communication endpoint).  Fields set to -1 are
 * left out of the JSON; type NULL means "object". */
struct sh5_lbdata_entity {
	const char *type;	/* "object" or "node" */
	int64_t id;		/* vt's bit-packed id, -1: none */
	int64_t seq_id;		/* sequential id unique in the job, -1: none */
	int64_t collection_id;	/* -1: none */
	int64_t home;		/* home node, -1: none (required for tasks) */
	int migratable;		/* 0/1, -1: leave out (required for tasks) */
};

/* A value in a user_defined dictionary. */
struct sh5_lbdata_kv {
	const char *key;
	enum { SH5_LBDATA_KV_DOUBLE, SH5_LBDATA_KV_INT, SH5_LBDATA_KV_STRING }
		kind;
	double d;
	int64_t i;
	const char *s;
};

struct sh5_lbdata_task {
	struct sh5_lbdata_entity entity;
	int64_t node;
	const char *resource;	/* NULL: "cpu" */
	double time;		/* seconds; written as a float */
	size_t nsubphases;	/* subphases[i] = time of subphase i */
	const double *subphases;
	size_t nuser;
	const struct sh5_lbdata_kv *user;
};

struct sh5_lbdata_comm {
	const char *type;	/* "SendRecv", "Broadcast", ... */
	struct sh5_lbdata_entity from, to;
	int64_t messages;
	double bytes;		/* written as a float */
};

struct sh5_lbdata_meta {
	int64_t rank;
	int has_shared_node;	/* write shared_node (all four keys) */
	int64_t node_id, node_size, node_rank, num_nodes;
	int64_t phase_count;	/* -1: leave "count" out */
	size_t nattrs;		/* metadata attributes, written flat */
	const struct sh5_lbdata_kv *attrs;
};

/*
 * Create `<dir>/.<stem>.<rank>.json.part` and write the head of the file
 * (type and metadata, opening the phases array).  Returns a writer or
 * NULL with errno set and errp filled.
 */
struct sh5_lbdata_file *sh5_lbdata_file_open(const char *dir, const char *stem,
					     const struct sh5_lbdata_meta *meta,
					     enum sh5_lbdata_compress compress,
					     struct sh5_error *errp);

/* Begin phase id (closing the previous one), with an optional
 * user_defined dictionary for the phase (nuser 0: none). */
int sh5_lbdata_file_phase(struct sh5_lbdata_file *f, int64_t id,
			  size_t nuser, const struct sh5_lbdata_kv *user,
			  struct sh5_error *errp);

/* Add a task to the current phase.  Fails (EINVAL) on an entity that
 * breaks the schema's id rules, a non-finite time, or after a
 * communication of the same phase. */
int sh5_lbdata_file_task(struct sh5_lbdata_file *f,
			 const struct sh5_lbdata_task *t,
			 struct sh5_error *errp);

/* Add a communication edge to the current phase (after its tasks). */
int sh5_lbdata_file_comm(struct sh5_lbdata_file *f,
			 const struct sh5_lbdata_comm *c,
			 struct sh5_error *errp);

/*
 * Close the last phase and the document, finish the brotli stream, and
 * close the temporary file (not yet renamed: see sh5_lbdata_commit()).
 * json_bytes and file_bytes (either may be NULL) receive the size of the
 * JSON text and of the file.  Frees f in every case.  Returns 0, or -1
 * (the temporary is removed).
 */
int sh5_lbdata_file_close(struct sh5_lbdata_file *f, uint64_t *json_bytes,
			  uint64_t *file_bytes, struct sh5_error *errp);

/* Abandon f: free it and remove its temporary file (NULL-safe). */
void sh5_lbdata_file_abort(struct sh5_lbdata_file *f);

/* Rename `.<stem>.<rank>.json.part` to `<stem>.<rank>.json` (commit=1) or
 * remove it (commit=0).  Returns 0 or -1. */
int sh5_lbdata_commit(const char *dir, const char *stem, int64_t rank,
		      int commit, struct sh5_error *errp);

/* Remove `<stem>.<rank>.json` (what a failed export had committed). */
void sh5_lbdata_unlink_final(const char *dir, const char *stem,
			     int64_t rank);

#endif /* SH5_EXPORT_LBFILE_H */
