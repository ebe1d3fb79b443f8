/* writeback.c - early writeback and fsync of the output in a thread
 * (see merge_int.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "merge/merge_int.h"

/*
 * Early writeback of the output: a thread starts writing back what HDF5
 * wrote so far each time it is kicked (every eighth node), so that the
 * fsync before the rename has little left to wait for, and the work of
 * submitting it (ext4 allocates blocks then) is done beside the merge,
 * not in its way.  At the end it also runs that fsync while the merge
 * verifies the closed file (mg_wb_fsync(), then mg_wb_stop() for its result).
 * It works on its own descriptor of the output.
 */
static void *wb_main(void *arg)
{
	struct writeback *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->kicks && !w->stop && !w->want_fsync)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->kicks) {
			w->kicks = 0;
			pthread_mutex_unlock(&w->mu);
			sync_file_range(w->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
			pthread_mutex_lock(&w->mu);
			continue;
		}
		if (w->want_fsync) {
			int rc, e;

			pthread_mutex_unlock(&w->mu);
			rc = fsync(w->fd);
			e = errno;
			pthread_mutex_lock(&w->mu);
			w->fsync_rc = rc;
			w->fsync_errno = e;
			w->want_fsync = 0;
			w->fsynced = 1;
		}
		break;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

void mg_wb_start(struct mstate *m)
{
	struct writeback *w = &m->wb;

	memset(w, 0, sizeof(*w));
	w->fd = m->out_fd >= 0 ? fcntl(m->out_fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (w->fd < 0)
		return;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (!(w->running = pthread_create(&w->th, NULL, wb_main, w) == 0)) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		close(w->fd);
		w->fd = -1;
	}
}

void mg_wb_kick(struct mstate *m)
{
	struct writeback *w = &m->wb;

	if (!w->running) {
		if (m->out_fd >= 0)
			sync_file_range(m->out_fd, 0, 0,
					SYNC_FILE_RANGE_WRITE);
		return;
	}
	pthread_mutex_lock(&w->mu);
	w->kicks++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* Ask for the fsync of the output (after its writeback is started). */
void mg_wb_fsync(struct mstate *m)
{
	struct writeback *w = &m->wb;

	if (!w->running)
		return;
	pthread_mutex_lock(&w->mu);
	w->want_fsync = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* End the thread.  Returns the result of the fsync mg_wb_fsync() asked for
 * (errno set), -2 when none was done. */
int mg_wb_stop(struct mstate *m)
{
	struct writeback *w = &m->wb;
	int rc = -2;

	if (!w->running)
		return -2;
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	close(w->fd);
	w->fd = -1;
	w->running = 0;
	if (w->fsynced) {
		rc = w->fsync_rc;
		errno = w->fsync_errno;
	}
	return rc;
}
