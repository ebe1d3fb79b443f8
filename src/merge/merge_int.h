/*
 * merge_int.h - internals of the merge (the files of src/merge/ but jobfile,
 * jobread and ready).
 *
 * mergejob.c drives a merge (sh5_merge_job): discover.c lists the inputs;
 * the first pass checks each in child processes (probe.c runs them,
 * check.c is what one child does for one input); the second pass writes
 * the job file step by step (node_write.c) and series by series
 * (series_write.c), the records read by a child process (feed.c; with
 * the one-pass feeder, onefeed.c, that child checks each input too), the
 * output written back early by a thread (writeback.c); record.c writes
 * /Merge and verifies the closed file.  state.c and h5copy.c are the
 * helpers they share.  Calls go from the driver down that list, never
 * back up.
 */
#ifndef SH5_MERGE_INT_H
#define SH5_MERGE_INT_H

#include <hdf5.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "common/error.h"
#include "merge/merge.h"
#include "profile/reader.h"
#include "profile/totals.h"

#define CHUNK_ROWS_MAX 4096
/* The one-pass feeder reads inputs up to this size whole into memory
 * (one at a time). */
#define MERGE_INMEM_MAX ((uint64_t)8 << 20)

/* A series of an input copied whole: enough to check and total it. */
struct whole_ent {
	char path[2 * SH5_NAME_MAX + 2]; /* relative to the node group */
	uint64_t rows;
	int32_t task;                    /* a task (totalled in AllTasks) */
	uint64_t sig;                    /* series_sig() of its series */
	uint64_t tofs, tlen;             /* its total in the blob (the
					  * first task: AllTasks), or 0 */
};

struct finfo {
	struct sh5_input *in;
	int usable;
	enum sh5_nodestep_kind kind;
	uint64_t size;
	uint32_t crc;
	int node_index, ntasks, nnodes, step_tasks;
	int has_start;      /* start_ns: its "Start Time ns" */
	int64_t start_ns;
	long max_task;
	uint64_t samples;   /* rows the file claims */
	uint64_t written;   /* rows merged */
	uint64_t lost;      /* rows lost */
	unsigned lost_objects;
	int probe_hit;      /* hooks->probe returned 1 */
	int probed;         /* the first pass is done with it */
	int whole;          /* intact, checksummed, totals stored: its node
			     * group is copied as it is (see whole_ok()) */
	char node_name[SH5_NAME_MAX]; /* its node group */
	struct whole_ent *ents; /* whole: its series (sent after the
				 * first pass's message) */
	size_t nents;
	unsigned char *blob;    /* whole: the totals to fold (sent after
				 * ents) */
	size_t blob_len;
	const char *status; /* merged, salvaged, skipped */
	char reason[256];
};

struct check {              /* a dataset to verify after writing */
	char *path;
	uint64_t rows;
};

struct prober {
	pid_t pid;
	int fd;
	size_t next;   /* the input it is on */
	int live;
	double since;  /* when it started on it */
};

/* The checking children of the first pass (see mg_probe_start()). */
struct probers {
	struct prober pr[4];
	size_t par;    /* children */
	size_t done;   /* inputs checked */
};

struct mstate {
	const struct sh5_merge_opts *o;
	struct sh5_merge_stats *st;
	struct sh5_error *errp;
	struct sh5_input *in;
	size_t nin;
	struct finfo *fi;
	char **missing;         /* step-level findings */
	size_t nmissing;
	struct check *checks;
	size_t nchecks;
	void *buf;
	size_t buf_bytes;
	char user[64], cluster[64];
	size_t nsteps_written;
	int write_failed;       /* an HDF5 write failed: stop */
	int out_fd;             /* the temporary output, for early writeback */
	int out_wfd;            /* the same, writable: space reservations */
	off_t reserved_end;     /* blocks reserved up to here (fallocate) */
	hid_t dxpl;             /* small conversion buffers */
	/* Second pass: a child process reads and decodes the records of
	 * the inputs in order and streams them here (see mg_feed_read()). */
	pid_t feed_pid;
	int feed_fd;            /* -1: read in this process */
	int feed_have;          /* feed_head holds an unconsumed header */
	/* The records themselves pass through memory shared with the
	 * child (FEED_SLOTS slots of buf_bytes, used in turn; NULL: all
	 * through the pipe): the child fills a slot once it has a credit
	 * (a byte on feed_credit, written here when a slot's rows are
	 * taken) and its header says so (ring); the pipe carries the
	 * headers and totals only.  feed_slot: the slot the next header
	 * with ring set refers to. */
	unsigned char *feed_ring;
	int feed_credit;        /* write end here, read end in the child */
	uint64_t feed_slot;
	/* The child totals the series whose chunks the parent copies raw
	 * and sends only their totals (no synchronization asked). */
	int feed_totals;
	/* The child sent only the totals of series (feed_local_file,
	 * feed_local_series) but its records are needed here: they are
	 * read in this process. */
	int feed_local;
	size_t feed_local_file, feed_local_series;
	struct feed_head {
		uint64_t file, series, rows;
		/* 0 data (ops' layout), 1 end of series, -1 failed; when
		 * the child totals (feed_totals): 3 data in the job file's
		 * layout, 4 rows totalled but not sent (copied raw), 2 end
		 * of series; 0, 3 and 4 are followed by the rows and the
		 * running total, 2 by the total; the one-pass feeder
		 * (onefeed) also sends FEED_CHECKED and FEED_DONE */
		int64_t status;
		uint64_t bytes;     /* what follows this header (rows and
				     * totals, or a check's message) */
		uint64_t good_rows;
		int64_t damaged;
		int64_t ring;       /* the rows are in the next ring slot
				     * (not in bytes) */
		char reason[200];
	} feed_head;
	size_t feed_dead_file;  /* the child died reading this file */
	int feed_died;
	/* The one-pass feeder (onefeed.c): the reader child also checks
	 * each input, just before it reads it, and sends what the check
	 * found first (FEED_CHECKED); the merge writes an input once its
	 * check is in, and holds back its own reports (defer) until the
	 * whole first pass is known, so that they come in the order of the
	 * two passes.  feed_at: the input the child is on (FEED_DONE moves
	 * it on). */
	int onefeed;
	size_t feed_at;
	int defer;
	int onefeed_ended;      /* mg_onefeed_end() ran the first pass's end */
	struct dreport {
		int error;
		char *file, *msg;
	} *dr;
	size_t ndr;
	struct probers probe;   /* the first pass */
	/* The second pass started before the first ended: only inputs the
	 * first pass found whole are written, else mg_early_gate() makes it
	 * start over (see sh5_merge_job()). */
	int early;
	int pass1_state;        /* mg_pass1_done(): 0 not yet, else 1 +
				 * result */
	int in_child;           /* this is a checking child */
	/* This is the one-pass child (onepass.c): it checks each input
	 * itself just before writing it (mg_early_gate()), sends its
	 * reports to the merge through op_fd, says where it is in op_at
	 * (a shared page: no message, no wake-up per input), and copies
	 * an input found whole from the handle its check left open (held,
	 * of input held_idx). */
	int onepass;
	int op_fd;
	uint64_t *op_at;        /* the input the child is on, nin past the
				 * inputs, UINT64_MAX none yet */
	int sealed;             /* the one-pass child verified and fsynced
				 * the output */
	struct sh5_nodestep *held;
	size_t held_idx;
	/* The image HDF5 reads the held input from (read whole or mapped,
	 * check.c), or NULL; released with it (held_map_len bytes). */
	void *held_map;
	size_t held_map_len;
	void *spare_image;      /* a read image not in use, for the next */
	struct mg_stamp {       /* each input as listed (inputs_prepare) */
		dev_t dev;
		ino_t ino;
		off_t size;
		struct timespec mtime, ctime; /* ctime: a rewrite that
					       * put mtime back */
		int ok;             /* stat() succeeded */
	} *stamp;
	long dir_uid;            /* owner of the inputs' directory, -1: unknown */
	struct tcache {         /* totals' memory types, by signature, */
		uint64_t sig;
		hid_t mt;
		hid_t dxpl;     /* with a conversion buffer their size */
	} *tc;
	size_t ntc;
	struct scache {         /* series of stored totals, by signature */
		char key[2 * SH5_NAME_MAX + 2];
		uint64_t sig;
		struct sh5_series *s;
	} *sc;
	size_t nsc;
	struct writeback {      /* see mg_wb_start() */
		pthread_t th;
		pthread_mutex_t mu;
		pthread_cond_t cv;
		int fd;             /* its own descriptor of the output */
		unsigned kicks;
		int stop, running, want_fsync, fsynced, fsync_rc, fsync_errno;
	} wb;
};


/* Statuses of the one-pass feeder's headers beside those of the
 * reader (feed_head): the check of input `file` (a struct probe_msg
 * follows, then its series and totals), and the input's end. */
#define FEED_CHECKED 5
#define FEED_DONE    6

/* What a checking child found about input idx (then, for a whole input,
 * f.nents struct whole_ent and f.blob_len bytes of totals). */
struct probe_msg {
	size_t idx;
	struct finfo f;
	char user[64], cluster[64];
};

/* Flags of mg_feed_read(). */
#define FEED_PACKED  1  /* the rows are in the job file's layout */
#define FEED_TOTALED 2  /* the child totals them: do not total_add them */
#define FEED_NODATA  4  /* the rows were only totalled (nothing in buf):
			 * the parent copies the chunks raw */


/* state.c */
/* Children leave signals to the parent and die with it. */
void mg_child_signals(void);
/* Seconds a child may read one input without a sign of progress. */
int mg_read_timeout(void);
double mg_now_s(void);
void mg_report(struct mstate *m, int error, const char *file,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int mg_add_missing(struct mstate *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int mg_add_check(struct mstate *m, const char *path, uint64_t rows);
int mg_write_total(struct mstate *m, hid_t loc, const char *path,
		   const struct sh5_series *s, const void *total,
		   size_t count);
void mg_mstate_free(struct mstate *m);
/* Note what each input is now (m->stamp), before any is read. */
int mg_stamp_inputs(struct mstate *m);
/* Input i is not what it was when stamped: 1 with why (for example
 * "changed while being read (cut short: N bytes when the merge began, M
 * now)"), else 0. */
int mg_changed(const struct mstate *m, size_t i, char *why, size_t len);
/* The same for the input named file (0 when it is none). */
int mg_changed_path(const struct mstate *m, const char *file);
/* Whether any input changed. */
int mg_any_changed(const struct mstate *m);
/* Test hook: SH5MERGE_TEST_HOLD=NAME:DIR makes the reader of input NAME
 * (or, with NAME "--remove-inputs", the merge before it removes its
 * inputs) wait for DIR/go, after making DIR/held. */
void mg_test_hold(const char *path);
/* One-pass child: tell the merge that input idx is next. */
void mg_op_start(struct mstate *m, size_t idx);

/* h5copy.c */
int mg_h5err(struct sh5_error *errp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void mg_copy_attrs(hid_t src, hid_t dst);
hid_t mg_lcpl_intermediate(void);
hid_t mg_make_group(hid_t loc, const char *name);
int mg_copy_dataset(hid_t src, const char *path, hid_t dst,
		    struct sh5_error *err);

/* The one-pass child's held input closed. */
void mg_held_close(struct mstate *m);

/* writeback.c */
void mg_wb_start(struct mstate *m);
void mg_wb_kick(struct mstate *m);
void mg_wb_fsync(struct mstate *m);
int mg_wb_stop(struct mstate *m);

/* check.c */
void mg_check_file(struct mstate *m, struct finfo *f, char *user,
		   char *cluster);

/* probe.c */
void mg_probe_start(struct mstate *m, size_t par);
void mg_probe_until(struct mstate *m, size_t idx);
void mg_probe_widen(struct mstate *m, size_t par);
void mg_probe_stop(struct mstate *m);
int mg_pass1_done(struct mstate *m);
int mg_early_gate(struct mstate *m, size_t i);
/* Check input idx here (a child) into *msg. */
void mg_probe_check(struct mstate *m, size_t idx, struct probe_msg *msg);
/* Bytes of *msg with what follows it; send it to fd (0 or -1); after
 * its fixed part was read from fd, read the rest (a short read drops
 * it: taken as not whole). */
size_t mg_probe_msg_len(const struct probe_msg *msg);
int mg_probe_msg_send(int fd, const struct probe_msg *msg);
void mg_probe_msg_tail(int fd, struct probe_msg *msg);
/* Keep what a child found (the input is checked; progress told). */
void mg_probe_keep(struct mstate *m, const struct probe_msg *msg);
/* A child crashed (st from waitpid) or hung on input idx: marked
 * unusable, checked. */
void mg_probe_mark(struct mstate *m, size_t idx, int hung, int st);

/* onefeed.c: the one-pass feeder.  mg_onefeed_gate(): before input i
 * is written, its check is taken from the child (a crash or hang of the
 * child on it marks it); 0 to write it, 1 when the merge must start
 * over the normal way (an input the normal way must handle: a problem
 * without --allow-partial, records to synchronize; or no child).
 * mg_onefeed_end(): after the last input, the first pass's end
 * (mg_pass1_done()) and the reports held back; 0 to finish the job
 * file, 1 to start over (the normal way then stops as it would), -1
 * (errp set).  mg_onefeed_drop(): the reports held back forgotten. */
int mg_onefeed_gate(struct mstate *m, size_t i);
int mg_onefeed_end(struct mstate *m);
/* The writing failed (errp set): the first pass finished by ncpu
 * checking children and its reports shown, then those held back, as the
 * two passes would have shown them before the failure: -1 (errp kept);
 * or 1 when the two passes would have stopped before writing (problems
 * without --allow-partial, nothing usable: the normal way stops so). */
int mg_onefeed_failed(struct mstate *m, size_t ncpu);
void mg_onefeed_drop(struct mstate *m);

/* feed.c */
size_t mg_rows_per_buffer(const struct mstate *m,
			  const struct sh5_series *s);
int mg_raw_copyable(hid_t din, hid_t ft);
void mg_feeder_start(struct mstate *m, size_t from);
void mg_feeder_stop(struct mstate *m);
/* The ring's slots (see struct mstate's feed_ring). */
#define FEED_SLOTS 2
void mg_feed_ring_free(struct mstate *m);
/* Read past what follows m->feed_head (its bytes; FEED_DONE moves
 * feed_at on).  0, or -1 when the child is gone. */
int mg_feed_discard(struct mstate *m);
size_t mg_feed_read(struct mstate *m, size_t fi, size_t si,
		    struct sh5_cursor *c, void *buf, size_t max,
		    void *total, int local, int *how);

/* series_write.c */
int mg_write_series(struct mstate *m, struct sh5_nodestep *ns,
		    struct sh5_ns_series *e, hid_t gout, const char *gpath,
		    struct finfo *f, void *total, int sync);

/* node_write.c */
int mg_write_step(struct mstate *m, hid_t fout, size_t lo, size_t hi,
		  size_t *done);

/* onepass.c: the one-pass child's messages to the merge.  A header,
 * then len bytes: OP_REPORT (error; "file\0msg\0"), OP_END (struct
 * op_end, then struct op_input per input).  Where it is goes through
 * m->op_at (mg_op_start()). */
enum { OP_REPORT = 2, OP_END };
struct op_msg {
	uint32_t type, error;
	uint64_t idx, len;
};
struct op_end {
	int rc, partial;        /* as pass2(); 0: verified and fsynced */
	int any;                /* what hooks->probe found (checked()) */
	struct sh5_merge_stats st;
	char err[256];          /* errp text when rc < 0 */
};
struct op_input {
	int usable, merged;     /* merged: status "merged" */
	uint64_t size;
};
/* The child: its result, then _exit. */
void mg_op_end(struct mstate *m, int rc, int partial);
/* The merge: wait for the child pid (messages on fd) and take its
 * result.  0: the job file is written, verified, fsynced (*partial
 * set); -1: it failed (errp set); 1: the merge starts over the normal
 * way (a crash or hang is marked on the input it happened on). */
int mg_op_wait(struct mstate *m, int fd, pid_t pid, int *partial);

/* record.c */
int mg_write_merge_record(struct mstate *m, hid_t fout, int partial);
int mg_verify(struct mstate *m, const char *tmp);

#endif
