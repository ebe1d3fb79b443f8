/*
 * sh5_worker.h - the plugin's periodic step threads (flush, clock).
 */
#ifndef SH5_PLUGIN_WORKER_H
#define SH5_PLUGIN_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * A periodic worker thread of the step: tick(0) when it starts, tick(1)
 * every interval seconds (CLOCK_MONOTONIC) and when kicked, tick(2)
 * when stopped.  Used for flushing the file and for clock-offset
 * measurements.
 */
struct worker {
	pthread_t tid;
	bool running, stop;
	bool kick;          /* mutex: tick(1) now, the interval restarting */
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t interval;
	void (*tick)(int phase);
};

/* Start wk; false (logged) when the thread cannot be created. */
bool worker_start(struct worker *wk, const char *what);
/* Stop wk after its final tick; no-op when not running. */
void worker_stop(struct worker *wk);
/* Have wk tick(1) at once (also if it has not reached its wait yet);
 * false when it is not running.  Never waits for the tick. */
bool worker_kick(struct worker *wk);

#endif
