/*
 * evformat.h - the event record and the spill-file format (format 1).
 *
 * Shared by the task-side event library (evlog.c, loaded into the user's
 * MPI processes), the reader of spill files (evspill.c, run as root in
 * slurmstepd: everything read is untrusted), the node-step writer and
 * sh5merge.  No dependencies beyond <stdint.h>; all integers are in the
 * byte order of the machine that wrote them (spill files never leave the
 * node; the reader refuses a header whose byte-order mark does not
 * match).  doc/events.md describes the whole design.
 *
 * A spill file is
 *
 *     struct sh5ev_file_header            (SH5EV_HEADER_SIZE bytes)
 *     block 0, block 1, ...               (block_size bytes each)
 *
 * and each block is
 *
 *     struct sh5ev_block_header           (SH5EV_BLOCK_HEADER_SIZE bytes)
 *     nrec records of struct sh5ev_rec    (SH5EV_REC_SIZE bytes each)
 *     zero padding up to block_size
 *
 * A block is either written whole, with one write(), when it is full
 * (and the last, partly filled one when the process ends normally), or
 * (version 2, the default) filled in place in a shared mapping of the
 * file, which the writer extends ahead (fallocate) by up to 16 MiB of
 * zeros, and finished by writing its header, magic last.  A process
 * killed at any moment leaves a file of whole blocks plus either at most
 * one torn block at its end or (version 2) unwritten space that begins
 * with a block whose magic is 0 -- its unfinished current block -- and
 * runs to the end of the file; the reader drops both and stops at the
 * first block of magic 0.  A file closed normally is cut back to its
 * whole blocks.  Version 1 files (no extension) read the same.
 */
#ifndef SH5_EVFORMAT_H
#define SH5_EVFORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SH5EV_FORMAT_VERSION 2u
#define SH5EV_FORMAT_VERSION_MIN 1u /* oldest the reader reads */
#define SH5EV_MAGIC "SH5EVTS" /* 7 characters + NUL = 8 bytes */
#define SH5EV_BYTE_ORDER 0x01020304u
#define SH5EV_HEADER_SIZE 256u
#define SH5EV_BLOCK_HEADER_SIZE 32u
#define SH5EV_REC_SIZE 40u
#define SH5EV_BLOCK_MAGIC 0x4b4c4245u /* "EBLK" little-endian */

/* Block sizes the reader accepts (the library's SH5_EVENTS_BUFFER is
 * rounded to a power of two in this range); default 64 KiB. */
#define SH5EV_BLOCK_MIN 4096u
#define SH5EV_BLOCK_MAX (16u << 20)
#define SH5EV_BLOCK_DEFAULT (64u << 10)

/* Longest region name, bytes, without a terminating NUL. */
#define SH5EV_NAME_MAX 127u

/* Spill-file name suffix; the whole name is
 * "<prefix>.<task>.<pid>" SH5EV_SUFFIX, prefix "<job>_<step>_<node>". */
#define SH5EV_SUFFIX ".sh5ev"

/* Environment read by the task-side library (set for every task of a
 * profiled step by the plugin; see doc/events.md). */
#define SH5EV_ENV_DIR "SH5_EVENTS_DIR"       /* directory to write in */
#define SH5EV_ENV_PREFIX "SH5_EVENTS_PREFIX" /* "<job>_<step>_<node>" */
#define SH5EV_ENV_BUFFER "SH5_EVENTS_BUFFER" /* block size, bytes */
#define SH5EV_ENV_MAX "SH5_EVENTS_MAX"       /* file size cap, bytes */
#define SH5EV_ENV_TASK "SLURM_PROCID"        /* global task id */
#define SH5EV_ENV_WRITER "SH5_EVENTS_WRITER" /* "map" (default), "sync",
						* "thread" */

/* File header flags. */
#define SH5EV_HF_AHEAD 0x1u	/* may be extended ahead: a block of magic
				 * 0 and what follows were never written */

struct sh5ev_file_header {
	char magic[8];		/* SH5EV_MAGIC, NUL-terminated */
	uint32_t byte_order;	/* SH5EV_BYTE_ORDER as written */
	uint32_t version;	/* SH5EV_FORMAT_VERSION */
	uint32_t header_size;	/* SH5EV_HEADER_SIZE */
	uint32_t block_size;	/* power of two, BLOCK_MIN..BLOCK_MAX */
	uint32_t rec_size;	/* SH5EV_REC_SIZE */
	uint32_t task;		/* SLURM_PROCID (global task id) */
	uint32_t pid;
	uint32_t flags;		/* SH5EV_HF_* (version 2; 0 in version 1) */
	int64_t created_ns;	/* CLOCK_REALTIME when the file was made */
	char prefix[128];	/* SH5_EVENTS_PREFIX, NUL-terminated */
	char lib_version[32];	/* sh5 version of the library, NUL-term. */
	uint8_t reserved[40];	/* zero */
	uint64_t checksum;	/* sh5ev_checksum() of the bytes before */
};				/* SH5EV_HEADER_SIZE bytes in all */

struct sh5ev_block_header {
	uint32_t magic;		/* SH5EV_BLOCK_MAGIC */
	uint32_t seq;		/* 0, 1, 2, ... in file order */
	uint32_t nrec;		/* records used, <= sh5ev_block_capacity() */
	uint32_t cont;		/* leading records that continue the
				 * payload of a definition begun in an
				 * earlier block (0 when none), so a reader
				 * that dropped that block can skip them */
	uint64_t checksum;	/* sh5ev_checksum() of the nrec records */
	int64_t last_ns;	/* TimeNs of the last event record, or 0 */
};

/*
 * One record (40 bytes, no padding).  What the fields mean depends on
 * kind; unused fields are 0 (peer -1 where it names a rank).
 *
 * kind         id               peer           tag        bytes       value
 * ENTER/EXIT   region           -              -          -           -
 * PHASE        phase (1, 2, ..) -              level(*)   -           -
 * SEND         comm (local)     dest (world)   tag        bytes       -
 * RECV         comm (local)     source (world) tag        bytes       -
 * CBEGIN/CEND  comm (local)     root (world)   -          bytes       -
 *              op = enum sh5ev_op; peer -1 for unrooted operations
 * OBJECT       phase            -              -          object id   load, s
 * RANK         world size       world rank     -          -           -
 * LOST         -                -              -          events lost -
 * DEFREGION    region           -              -          name length -
 *              followed by ceil(len / 40) records of raw name bytes
 *              (zero padded); flags SH5EV_F_MPI for an MPI function
 * DEFCOMM      comm (local)     size           my rank    global id   -
 *              with SH5EV_F_MEMBERS: followed by ceil(size / 10)
 *              records of int32 world ranks, in comm rank order
 *              (zero padded)
 *
 * (*) MPI_Pcontrol's level, or -1 for sh5_ev_phase().
 *
 * Definitions (DEFREGION, DEFCOMM) come before the first record that
 * uses their id.  Local comm ids: 0 = MPI_COMM_WORLD (global id 0),
 * 1 = MPI_COMM_SELF (global id (world rank + 1) << 32), 2, 3, ... in
 * creation order; a communicator's global id is
 * ((world rank of its rank 0) + 1) << 32 | n, n = 1, 2, ... counting the
 * communicators that process was rank 0 of, agreed by all members when
 * the communicator is made.  Region ids are per process.
 */
struct sh5ev_rec {
	int64_t time_ns;	/* CLOCK_REALTIME, ns since 1970 */
	uint8_t kind;		/* enum sh5ev_kind */
	uint8_t op;		/* enum sh5ev_op for CBEGIN/CEND */
	uint16_t flags;		/* SH5EV_F_* */
	uint32_t id;
	int32_t peer;
	int32_t tag;
	uint64_t bytes;
	double value;
};

enum sh5ev_kind {
	SH5EV_K_NONE = 0,	/* never valid */
	SH5EV_K_ENTER = 1,
	SH5EV_K_EXIT = 2,
	SH5EV_K_PHASE = 3,
	SH5EV_K_SEND = 4,
	SH5EV_K_RECV = 5,
	SH5EV_K_CBEGIN = 6,
	SH5EV_K_CEND = 7,
	SH5EV_K_OBJECT = 8,
	SH5EV_K_RANK = 9,
	SH5EV_K_LOST = 10,
	SH5EV_K_DEFREGION = 11,
	SH5EV_K_DEFCOMM = 12,
	SH5EV_K_COUNT
};

/* Collective operations: the same numbers as enum sh5_coll_op of the
 * event-trace CSV (src/sync/trace.h). */
enum sh5ev_op {
	SH5EV_OP_NONE = 0,
	SH5EV_OP_BARRIER,
	SH5EV_OP_BCAST,
	SH5EV_OP_SCATTER,
	SH5EV_OP_GATHER,
	SH5EV_OP_REDUCE,
	SH5EV_OP_ALLREDUCE,
	SH5EV_OP_ALLGATHER,
	SH5EV_OP_ALLTOALL,
	SH5EV_OP_REDUCE_SCATTER,
	SH5EV_OP_SCAN,
	SH5EV_OP_EXSCAN,
	SH5EV_OP_COUNT
};

#define SH5EV_F_MPI 0x0001	   /* DEFREGION: an MPI function */
#define SH5EV_F_MEMBERS 0x0002	   /* DEFCOMM: member records follow */
#define SH5EV_F_NONBLOCKING 0x0004 /* SEND of Isend, RECV of Irecv */
#define SH5EV_F_ANY_SOURCE 0x0008  /* RECV posted with MPI_ANY_SOURCE */
#define SH5EV_F_ANY_TAG 0x0010	   /* RECV posted with MPI_ANY_TAG */
#define SH5EV_F_PCONTROL 0x0020	   /* PHASE from MPI_Pcontrol */
#define SH5EV_F_ALL 0x003f

_Static_assert(sizeof(struct sh5ev_file_header) == SH5EV_HEADER_SIZE,
	       "file header size");
_Static_assert(sizeof(struct sh5ev_block_header) == SH5EV_BLOCK_HEADER_SIZE,
	       "block header size");
_Static_assert(sizeof(struct sh5ev_rec) == SH5EV_REC_SIZE, "record size");

/* Records per block of block_size bytes. */
static inline uint32_t sh5ev_block_capacity(uint32_t block_size)
{
	return (block_size - SH5EV_BLOCK_HEADER_SIZE) / SH5EV_REC_SIZE;
}

/*
 * The checksum of headers and blocks: a Fletcher-style pair of 64-bit
 * sums over the little-endian 32-bit words of data (len a multiple of
 * 4), a = sum of words, b = sum of the running a, both mod 2^64;
 * result a ^ (b << 1).  Cheap (no table, vectorizes); it detects torn
 * and damaged blocks, not forgeries: the reader validates every field
 * anyway.
 */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
static inline uint64_t sh5ev_checksum(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t a = 0, b = 0;
	size_t i = 0;

	/*
	 * The same sums, 8 words at a time in 8 independent lanes (the
	 * serial b += a chain is what limits the plain loop).  Lane j sums
	 * its words w_{8m+j} (m = 0..N-1) into s_j and the running s_j into
	 * r_j = sum_m (N - m) w_{8m+j}.  Over all n = 8N words, with word
	 * index k = 8m + j, n - k = 8 (N - m) - j, so a = sum_j s_j and
	 * b = sum_k (n - k) w_k = sum_j (8 r_j - j s_j), mod 2^64 as
	 * before; the remaining words continue the plain loop.
	 */
	if (len >= 64) {
		uint64_t s[8] = { 0 }, r[8] = { 0 };
		unsigned j;

		for (; i + 32 <= len; i += 32) {
			for (j = 0; j < 8; j++) {
				const unsigned char *q = p + i + 4 * j;
				uint32_t w;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
				memcpy(&w, q, 4);
#else
				w = (uint32_t)q[0] | (uint32_t)q[1] << 8 |
				    (uint32_t)q[2] << 16 |
				    (uint32_t)q[3] << 24;
#endif

				s[j] += w;
				r[j] += s[j];
			}
		}
		for (j = 0; j < 8; j++) {
			a += s[j];
			b += 8 * r[j] - (uint64_t)j * s[j];
		}
	}
	for (; i + 4 <= len; i += 4) {
		uint32_t w = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 |
			     (uint32_t)p[i + 2] << 16 |
			     (uint32_t)p[i + 3] << 24;

		a += w;
		b += a;
	}
	return a ^ (b << 1);
}

/* Records needed for the payload of a DEFREGION (name length) or a
 * DEFCOMM with members (size). */
static inline uint32_t sh5ev_name_recs(uint32_t len)
{
	return (len + SH5EV_REC_SIZE - 1) / SH5EV_REC_SIZE;
}
static inline uint32_t sh5ev_member_recs(uint32_t size)
{
	return (size + 9) / 10;
}

#endif /* SH5_EVFORMAT_H */
