/*
 * evstack.h - the per-task region stack of the event exports: ENTER
 * pushes, EXIT pops its region (and any unclosed region above it).
 * Shared by the LBDatafile model (time inside MPI) and the region
 * statistics (durations of ENTER/EXIT pairs).
 */
#ifndef SH5_EXPORT_EVSTACK_H
#define SH5_EXPORT_EVSTACK_H

#include <stddef.h>
#include <stdint.h>

struct sh5_evstack_ent {
	uint32_t region, flags;
	int64_t t;		/* time of the ENTER, ns */
	size_t at;		/* its record index */
};

struct sh5_evstack {
	struct sh5_evstack_ent *e;
	size_t n, cap;
	size_t nmpi;		/* entries with SH5EV_F_MPI */
	uint64_t dropped;	/* unclosed entries popped, EXITs ignored */
};

/* Push; returns 0 or -1 (ENOMEM). */
int sh5_evstack_push(struct sh5_evstack *st, uint32_t region,
		     uint32_t flags, int64_t t, size_t at);

/*
 * Pop the innermost entry of region and every entry above it (regions
 * left without EXIT: counted in dropped).  Returns 1 with *out set, or
 * 0 when region is not on the stack (the EXIT is ignored, counted).
 */
int sh5_evstack_pop(struct sh5_evstack *st, uint32_t region,
		    struct sh5_evstack_ent *out);

/* Empty the stack (keeps the memory); free releases it. */
void sh5_evstack_reset(struct sh5_evstack *st);
void sh5_evstack_free(struct sh5_evstack *st);

#endif /* SH5_EXPORT_EVSTACK_H */
