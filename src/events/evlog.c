/*
 * evlog.c - the task-side event log (see evlog.h, doc/events.md).
 *
 * Runs inside the user's MPI processes: libc only, no allocation or
 * system call on the hot path, nothing that can abort.  One process-wide
 * log.  By default (SH5_EVENTS_WRITER=map) the blocks after the first
 * are filled in place in a shared mapping of the file, extended and
 * faulted in ahead a window at a time, and finished by writing their
 * header (see map_window()).  Otherwise, and for block 0, the block
 * being filled lives in memory and is written whole, with one pwrite()
 * at its own offset, when full, by the recording thread
 * (SH5_EVENTS_WRITER=sync) or, with SH5_EVENTS_WRITER=thread,
 * by a writer thread that takes full blocks from a ring of RING blocks
 * (started at the first full block, joined at close); the recording
 * thread never waits for it: when the ring is full, or the thread could
 * not be started, it writes the block itself.
 *
 * Threads: the thread that opens the log owns it (tl_owner); only its
 * calls append records (tl_on, cleared when recording stops or the
 * file reached its cap).  Other threads only bump an atomic counter of
 * lost records.
 *
 * Files: evlog_open.c (environment, open, fork, close) on top of
 * evlog.c (clock read, records, definitions, phases), on top of
 * evlog_write.c (file, blocks, writer thread), evlog_map.c (mapped
 * window), evlog_clock.c (TSC clock) and evlog_state.c (the state);
 * evlog_int.h is what they share.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events/evlog.h"
#include "events/evlog_int.h"

int64_t sh5_evlog_now(void)
{
#ifdef HAVE_TSC
	if (likely(tl_owner) && likely(C.usable)) {
		uint64_t d = rdtsc() - C.t0;

		if (likely(d < C.win))
			return C.ns0 + (int64_t)((d * C.mult) >> 32);
		return tsc_anchor(C.t0 + d);
	}
#endif
	return gettime_ns();
}

/* ---------------------------------------------------------------- put */

/* Not on the owner's fast path: count what is not recorded. */
static void __attribute__((noinline)) put_lost(void)
{
	if (!__atomic_load_n(&g_recording, __ATOMIC_RELAXED))
		return;
	if (tl_owner)
		L.lost_cap++;
	else
		__atomic_fetch_add(&g_lost_other, 1, __ATOMIC_RELAXED);
}

static inline __attribute__((always_inline)) void
put_inline(const struct sh5ev_rec *r)
{
	if (likely(tl_on)) {
		L.recs[L.n] = *r;
		L.last_ns = r->time_ns;
		L.recorded++;
		if (unlikely(++L.n == L.limit))
			block_full();
	} else {
		put_lost();
	}
}

void sh5_evlog_put(const struct sh5ev_rec *r)
{
	put_inline(r);
}

void sh5_evlog_event(uint8_t kind, uint8_t op, uint16_t flags, uint32_t id,
		     int32_t peer, int32_t tag, uint64_t bytes,
		     int64_t time_ns)
{
	struct sh5ev_rec r;

	if (unlikely(!tl_on)) {
		put_lost();
		return;
	}
	r.time_ns = time_ns ? time_ns : sh5_evlog_now();
	r.kind = kind;
	r.op = op;
	r.flags = flags;
	r.id = id;
	r.peer = peer;
	r.tag = tag;
	r.bytes = bytes;
	r.value = 0;
	put_inline(&r);
}

/* ---------------------------------------------------------------- defs */

/* Append a definition record and its payload (len bytes, zero padded to
 * whole records), only if all of it fits under the cap. */
static void put_def(const struct sh5ev_rec *head, const void *payload,
		    size_t len)
{
	const unsigned char *p = payload;
	uint64_t k = 1 + (len + SH5EV_REC_SIZE - 1) / SH5EV_REC_SIZE;
	uint64_t room;
	unsigned char rec[SH5EV_REC_SIZE];
	size_t chunk;

	if (!tl_on) {
		put_lost();
		return;
	}
	room = (L.max_blocks - L.seq) * L.cap - 1 - L.n;
	if (k > room) {
		L.capped = 1;
		tl_on = 0;
		L.lost_cap++;
		return;
	}
	memcpy(&L.recs[L.n], head, SH5EV_REC_SIZE);
	if (++L.n == L.limit)
		block_full();
	while (len > 0 && tl_on) {
		chunk = len < SH5EV_REC_SIZE ? len : SH5EV_REC_SIZE;
		memset(rec, 0, sizeof(rec));
		memcpy(rec, p, chunk);
		if (L.n == L.cont)
			L.cont++;	/* continues into this block */
		memcpy(&L.recs[L.n], rec, SH5EV_REC_SIZE);
		if (++L.n == L.limit)
			block_full();
		p += chunk;
		len -= chunk;
	}
}

static uint32_t hash_name(const char *s, uint16_t flags)
{
	uint32_t h = 2166136261u ^ flags;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static int regions_grow(void)
{
	uint32_t slots = L.region_slots ? L.region_slots * 2 : 64;
	struct region *t = calloc(slots, sizeof(*t));
	uint32_t i, j;

	if (!t)
		return -1;
	for (i = 0; i < L.region_slots; i++) {
		if (!L.regions[i].name)
			continue;
		for (j = L.regions[i].hash & (slots - 1); t[j].name;
		     j = (j + 1) & (slots - 1))
			;
		t[j] = L.regions[i];
	}
	free(L.regions);
	L.regions = t;
	L.region_slots = slots;
	return 0;
}

int32_t sh5_evlog_region(const char *name, uint16_t flags)
{
	struct sh5ev_rec r;
	struct region *e;
	uint32_t h, j;
	size_t len;

	if (!tl_owner || !__atomic_load_n(&g_recording, __ATOMIC_RELAXED) ||
	    !name)
		return -1;
	len = strnlen(name, SH5EV_NAME_MAX + 1);
	if (len == 0 || len > SH5EV_NAME_MAX) {
		report(L.path, len ? "region name longer than 127 bytes"
				   : "empty region name");
		return -1;
	}
	h = hash_name(name, flags);
	if (L.region_slots) {
		for (j = h & (L.region_slots - 1); L.regions[j].name;
		     j = (j + 1) & (L.region_slots - 1)) {
			e = &L.regions[j];
			if (e->hash == h && e->flags == flags &&
			    strcmp(e->name, name) == 0)
				return (int32_t)e->id;
		}
	}
	if (L.nregions >= REGIONS_MAX) {
		report(L.path, "too many regions");
		return -1;
	}
	if ((L.nregions + 1) * 2 > L.region_slots && regions_grow() < 0) {
		report(L.path, strerror(errno));
		return -1;
	}
	for (j = h & (L.region_slots - 1); L.regions[j].name;
	     j = (j + 1) & (L.region_slots - 1))
		;
	e = &L.regions[j];
	e->name = strdup(name);
	if (!e->name) {
		report(L.path, strerror(errno));
		return -1;
	}
	e->hash = h;
	e->flags = flags;
	e->id = L.nregions++;

	memset(&r, 0, sizeof(r));
	r.time_ns = sh5_evlog_now();
	r.kind = SH5EV_K_DEFREGION;
	r.flags = flags;
	r.id = e->id;
	r.bytes = len;
	put_def(&r, name, len);
	return (int32_t)e->id;
}

void sh5_evlog_comm(uint32_t local, uint64_t global, int32_t size,
		    int32_t myrank, const int32_t *members)
{
	struct sh5ev_rec r;

	if (local < 2 || size < 1 || myrank < 0 || myrank >= size) {
		put_lost();
		return;
	}
	memset(&r, 0, sizeof(r));
	r.time_ns = sh5_evlog_now();
	r.kind = SH5EV_K_DEFCOMM;
	r.flags = members ? SH5EV_F_MEMBERS : 0;
	r.id = local;
	r.peer = size;
	r.tag = myrank;
	r.bytes = global;
	put_def(&r, members, members ? (size_t)size * sizeof(int32_t) : 0);
}

/* ---------------------------------------------------------------- phase */

uint32_t sh5_evlog_phase(int32_t level, uint16_t flags)
{
	if (!tl_owner || !__atomic_load_n(&g_recording, __ATOMIC_RELAXED)) {
		put_lost();
		return 0;
	}
	L.phase++;
	sh5_evlog_event(SH5EV_K_PHASE, 0, flags, L.phase, 0, level, 0, 0);
	return L.phase;
}

uint32_t sh5_evlog_current_phase(void)
{
	return L.phase;
}
