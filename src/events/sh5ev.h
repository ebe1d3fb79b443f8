/*
 * sh5ev.h - application events for sh5 (installed header; link with
 * -lsh5ev, or get it with the MPI preload library libsh5mpi.so).
 *
 * Mark regions, phases and units of work (objects) of an application
 * running under `srun --profile=...` with acct_gather_profile/sh5: the
 * events land in the step's node-step file and reach sh5merge's
 * synchronized traces, LBDatafiles and counter statistics
 * (doc/events.md).  Outside a profiled step every call does nothing.
 * No call ever fails the application; all are cheap (well under 100 ns).
 *
 *     static int solve;
 *     if (!solve) solve = sh5_ev_region("solve");
 *     sh5_ev_phase();                      // a new phase (iteration)
 *     sh5_ev_enter(solve); ... sh5_ev_exit(solve);
 *     sh5_ev_object(cell_id, seconds);     // load of one unit of work
 */
#ifndef SH5EV_H
#define SH5EV_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Id of the region called name (1..127 bytes), defined at its first use;
 * -1 when events are not recorded (then enter/exit with -1 do nothing). */
int sh5_ev_region(const char *name);

/* Enter / leave region id (from sh5_ev_region()).  Nesting is the
 * caller's business; exits are matched to enters by the readers. */
void sh5_ev_enter(int region);
void sh5_ev_exit(int region);

/* Start a new phase (phases are numbered 1, 2, ...; what comes before
 * the first mark is phase 0).  MPI_Pcontrol(level) does the same under
 * the preload library. */
void sh5_ev_phase(void);

/* Declare one unit of work done in the current phase: object id (unique
 * across the job's ranks) and its load in seconds. */
void sh5_ev_object(uint64_t id, double load_seconds);

#ifdef __cplusplus
}
#endif

#endif /* SH5EV_H */
