/*
 * sh5_worker.c - the plugin's periodic step threads (flush, clock).
 */
#include "config.h" /* Slurm's */
#include "slurm_compat.h" /* release differences; before any other header */

#include <pthread.h>
#include <time.h>

#include "src/common/slurm_xlator.h"
#if SH5_SLURM_INTERFACES
#include "src/interfaces/acct_gather_profile.h"
#else
#include "src/common/slurm_acct_gather_profile.h"
#endif

#include "common/error.h"
#include "sh5_plugin_int.h"
#include "sh5_worker.h"

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct timespec ts;
	bool stop;

	sh5_error_h5_silence();
	wk->tick(0);
	pthread_mutex_lock(&wk->mutex);
	for (;;) {
		if (!wk->stop && !wk->kick) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += wk->interval;
			pthread_cond_timedwait(&wk->cond, &wk->mutex, &ts);
		}
		wk->kick = false;
		stop = wk->stop;
		pthread_mutex_unlock(&wk->mutex);
		wk->tick(stop ? 2 : 1);
		if (stop)
			return NULL;
		pthread_mutex_lock(&wk->mutex);
	}
}

/* Start wk; false (logged) when the thread cannot be created. */
bool worker_start(struct worker *wk, const char *what)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&wk->mutex, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wk->cond, &ca);
	pthread_condattr_destroy(&ca);
	wk->stop = false;
	wk->kick = false;
	wk->running = pthread_create(&wk->tid, NULL, worker_main, wk) == 0;
	if (!wk->running) {
		error("%s: cannot start the %s thread: %m", plugin_type, what);
		pthread_cond_destroy(&wk->cond);
		pthread_mutex_destroy(&wk->mutex);
	}
	return wk->running;
}

/* Stop wk after its final tick; no-op when not running. */
void worker_stop(struct worker *wk)
{
	if (!wk->running)
		return;
	pthread_mutex_lock(&wk->mutex);
	wk->stop = true;
	pthread_cond_signal(&wk->cond);
	pthread_mutex_unlock(&wk->mutex);
	pthread_join(wk->tid, NULL);
	pthread_cond_destroy(&wk->cond);
	pthread_mutex_destroy(&wk->mutex);
	wk->running = false;
}

bool worker_kick(struct worker *wk)
{
	if (!wk->running)
		return false;
	pthread_mutex_lock(&wk->mutex);
	wk->kick = true;
	pthread_cond_signal(&wk->cond);
	pthread_mutex_unlock(&wk->mutex);
	return true;
}
