/*
 * trace_int.h - internals of the event-trace reader and writer (trace.h),
 * shared by its files:
 *   trace.c          operation names, problems, line numbers, destroy
 *   trace_src.c      the hash map and the line source (blocks of lines)
 *   trace_parse.c    the general parser (directives, data lines: any
 *                    line but the common event lines) and the location
 *                    and communicator tables
 *   trace_read.c     the read loop: the fast parser of the common event
 *                    lines and add_event() (point-to-point messages are
 *                    matched here, per channel in file order), in one
 *                    file so that they inline into the loop;
 *                    sh5_trace_read*()
 *   trace_assemble.c after the last line: the unmatched messages,
 *                    assembly of collectives, per-location arrays
 *   trace_write.c    sh5_trace_write*()
 */
#ifndef SH5_TRACE_INT_H
#define SH5_TRACE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "sync/trace.h"

/* ------------------------------------------------------------ hash map */

/* Open addressing map from a key of three 64-bit words to a uint32; key
 * and value in one slot (one cache line per probe). */
struct hslot {
	uint64_t a, b, c;
	uint32_t val;	/* SH5_TRACE_NONE: empty slot */
};

struct hmap {
	struct hslot *slot;
	size_t cap;	/* power of two */
	size_t n;
};

/* Find key; if absent and val_new != NONE, insert it with val_new.
 * Returns the value, NONE when absent (and not inserted), or HMAP_NOMEM
 * on memory error. */
#define HMAP_NOMEM (UINT32_MAX - 1)
uint32_t trace_hmap_get(struct hmap *m, uint64_t a, uint64_t b,
			uint64_t c, uint32_t val_new);
void trace_hmap_free(struct hmap *m);

/* ---------------------------------------------------------- line source */

/*
 * Whole lines in blocks, from a file descriptor (a large read buffer) or
 * from memory: every block ends in '\n', so a caller can walk a block's
 * lines without bounds checks other than "stop at '\n'".  A final line
 * without a '\n' is handed out as a block of its own with a '\n' added
 * (*virt = 1).  The fd buffer keeps SLACK readable bytes after the data,
 * so a caller may read a few bytes past the end of a block (never use
 * them).
 */
#define CSRC_CHUNK (256u << 10)	/* the reader's blocks */
#define CSRC_WCHUNK (1024u << 10)	/* the writer's: fewer, longer
					 * writes cost less in the kernel */
#define CSRC_SLACK 64

struct csrc {
	int fd;			/* -1: memory */
	const char *mem;
	size_t memlen, mempos;
	char *buf;		/* fd: cap + CSRC_SLACK bytes; memory: the
				 * final line plus '\n' */
	size_t cap, beg, end;
	int eof;
};


/* Returns 1 with a block, 0 at the end, -1 with errno set. */
int trace_csrc_next(struct csrc *s, const char **b, size_t *n,
		    int *virt);
/* A source reading the file at path (opened here) in blocks of up to
 * chunk bytes (longer lines grow the buffer). */
int trace_csrc_open(struct csrc *s, const char *path, size_t chunk);
void trace_csrc_mem(struct csrc *s, const char *buf, size_t len);
/* Closes the file (when any); keeps errno. */
void trace_csrc_close(struct csrc *s);

/* ------------------------------------------------------------- helpers */

extern const char *const trace_op_names[SH5_OP_COUNT];

/* Rooted: 1-to-N or N-to-1 (a table: called once per collective line). */
static inline int op_rooted(unsigned op)
{
	static const uint8_t rooted[SH5_OP_COUNT] = {
		[SH5_OP_BCAST] = 1, [SH5_OP_SCATTER] = 1,
		[SH5_OP_GATHER] = 1, [SH5_OP_REDUCE] = 1,
	};

	return op < SH5_OP_COUNT && rooted[op];
}

/* Eight ASCII digits at s to their value (SWAR); -1 if any is not a
 * digit. */
static inline int digits8(const char *s, uint64_t *out)
{
	uint64_t v, d;

	memcpy(&v, s, 8);
	d = v - 0x3030303030303030ULL;
	if ((v & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL ||
	    ((d + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL))
		return -1;
	/* little-endian: the first digit is the lowest byte */
	d = d * 10 + (d >> 8);
	d = (((d & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
	     (((d >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32))))
	    >> 32;
	*out = d;
	return 0;
}

#ifdef __SSE2__
/* The 16 ASCII digits at s to their value; -1 if any is not a digit.
 * SSE2: digits to 16-bit lanes, then pairs, fours and eights by
 * multiply-add; else two digits8(). */
static inline int digits16(const char *s, uint64_t *out)
{
	__m128i v = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)s),
				 _mm_set1_epi8('0'));
	__m128i z = _mm_setzero_si128(), ten = _mm_set1_epi32(0x0001000a);
	__m128i lo, hi;
	uint32_t a, b;

	/* every byte 0..9 (as unsigned: a byte below '0' wrapped above) */
	if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(v,
				_mm_set1_epi8(9)), _mm_set1_epi8(9))) != 0xFFFF)
		return -1;
	/* 16-bit words: (10, 1) pairs */
	lo = _mm_madd_epi16(_mm_unpacklo_epi8(v, z), ten);
	hi = _mm_madd_epi16(_mm_unpackhi_epi8(v, z), ten);
	/* eight pairs 0..99 */
	v = _mm_madd_epi16(_mm_packs_epi32(lo, hi), _mm_set1_epi32(0x00010064));
	/* four groups of four digits 0..9999 */
	v = _mm_madd_epi16(_mm_packs_epi32(v, v), _mm_set1_epi32(0x00012710));
	/* two groups of eight digits in the low two 32-bit lanes */
	a = (uint32_t)_mm_cvtsi128_si32(v);
	b = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(v, 4));
	*out = (uint64_t)a * 100000000u + b;
	return 0;
}
#else
static inline int digits16(const char *s, uint64_t *out)
{
	uint64_t a, b;

	if (digits8(s, &a) < 0 || digits8(s + 8, &b) < 0)
		return -1;
	*out = a * 100000000u + b;
	return 0;
}
#endif

static inline void *grow(void *p, size_t *cap, size_t need, size_t elsz)
{
	size_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return p;
	while (ncap < need)
		ncap *= 2;
	np = realloc(p, ncap * elsz);
	if (!np)
		return NULL;
	*cap = ncap;
	return np;
}

/* --------------------------------------------------------------- parse */

struct offrec {
	int64_t local, offset;
	uint32_t loc, line;
};

/* A channel (source, destination, tag, communicator). */
struct chan {
	int64_t tag, comm;
	uint32_t src, dst;
};

/* A channel's queue of events not matched yet, in file order, linked
 * through their `link` fields: SENDs or RECVs (never both: a RECV
 * matches the oldest pending SEND and the other way round, MPI's
 * non-overtaking rule).  Apart from struct chan: 8 bytes a channel,
 * touched by every message. */
struct chq {
	uint32_t head, tail;	/* pending events, or NONE */
};

/* The channel cache: the channel of the last message of a location pair
 * and tag when all three are small (source and destination below 128,
 * tag 0..7: the slot's index is exact) and the communicator fits 32
 * bits. */
struct chslot {
	uint32_t chan;		/* channel + 1, 0: empty */
	int32_t comm;
};

struct locstate {
	int64_t last;
	uint32_t count;		/* events */
	uint32_t open;		/* open CBEGIN event, or NONE */
	uint8_t has_time;
	uint8_t has_line;	/* an event or OFFSET line */
};

#define LOC_DIRECT 65536
#define CHAN_CACHE (1u << 17)

struct parser {
	uint32_t *locdirect;	/* [LOC_DIRECT] */
	struct sh5_trace *t;
	const char *name;
	size_t evcap, loccap, offcap, chancap, commcap, cmemcap;
	size_t prefaulted;	/* event slots below this faulted in */
	struct locstate *ls;
	struct offrec *offs;
	struct chan *chans;
	struct chq *chq;	/* [nchan], capacity chancap too */
	size_t nchan;
	uint32_t *cbl;		/* CBEGIN events, file order */
	size_t ncb, cbcap;
	size_t ncmem;
	struct hmap locmap, commmap, chanmap, nodemap, rankmap;
	struct chslot *chanlast;	/* [CHAN_CACHE], in front of
					 * chanmap */
	int seen_data;
	int64_t lastcomm;	/* one-entry cache of commmap */
	uint32_t lastcomm_idx;
	int comm0;		/* comm index of communicator 0, or -1 */
	int comm0_declared;
	size_t nnode_named;
	uint32_t *loc_node_named;	/* per location, NONE if no #node */
	size_t lncap;
	size_t othercap;		/* of t->other */
};

/* loc_index() of a location not in the direct table. */
uint32_t trace_loc_index_slow(struct parser *p, int64_t id);

/* Location index of number id (created when new); NONE on memory error. */
static inline uint32_t loc_index(struct parser *p, int64_t id)
{
	/* Small location numbers: a direct table in front of the map. */
	if (id >= 0 && id < LOC_DIRECT && p->locdirect[id] != SH5_TRACE_NONE)
		return p->locdirect[id];
	return trace_loc_index_slow(p, id);
}

int trace_comm_add(struct parser *p, int64_t id, uint32_t *idx);

/* The fields of one valid data line. */
struct rec {
	int64_t lid, tm, peer, tag, comm, root;
	unsigned kind, op;
	int is_offset;
};

/* Any line but the common event lines (s without its '\n').  Returns 0,
 * 1 with a valid data line's fields in *r (the caller adds the event), -1
 * on memory error, -2 on a fatal error (errno set, errp filled). */
int trace_read_line(struct parser *p, const char *s, size_t len,
		    uint32_t line, struct sh5_error *errp, struct rec *r);

/* After the last line: collectives left open, p2p matching,
 * collective assembly, the per-location arrays.  0, or -1 on memory
 * error. */
int trace_finish(struct parser *p);

#endif /* SH5_TRACE_INT_H */
