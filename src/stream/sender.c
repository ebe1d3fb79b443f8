/* sender.c - the sender thread of a stream (forms batches, POSTs
 * them, spools what fails, delivers the spool), and sh5_stream_create()
 * and sh5_stream_close() (see stream.h, stream_int.h). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "stream/stream_int.h"

static void stream_free(struct sh5_stream *s);

/* Is it time to form a batch from the queue?  (lock held) */
static int batch_due(const struct sh5_stream *s, int64_t now)
{
	if (s->count == 0)
		return 0;
	return s->count >= s->batch_max || s->flush_req || s->closing ||
	       now - s->last_form >= s->flush_ms * 1000000LL;
}

/* While a POST is in flight: spill the queue to the spool when it is
 * half full, so a slow server does not make push() drop samples.  A
 * spill the spool refuses is held in memory (one at most) and spooled
 * or delivered later. */
static void spill_if_filling(struct sh5_stream *s)
{
	size_t full;

	if (!s->spool_dir)
		return;
	for (;;) {
		pthread_mutex_lock(&s->lock);
		full = s->count >= s->qcap / 2 && s->count > 0;
		pthread_mutex_unlock(&s->lock);
		if (!full)
			return;
		if (s->spill.held) {
			if (s->posting == &s->spill.b ||
			    mono_ns() < s->spool_retry_at ||
			    spool_write(s, &s->spill) < 0)
				return;
			continue;
		}
		if (form_batch(s, &s->spill.b, &s->spill.n, &s->spill.ts) == 0)
			return;
		if (s->spill.n == 0)
			continue;
		s->spill.held = 1;
		if (spool_write(s, &s->spill) < 0)
			return;
	}
}

/* One-line summary of the server's answer (no newlines, no trailing
 * blanks). */
static void squash(char *t)
{
	char *end = t;

	for (; *t; t++) {
		if (*t == '\n' || *t == '\r' || *t == '\t')
			*t = ' ';
		if (*t != ' ')
			end = t + 1;
	}
	*end = '\0';
}

/* POST body b.  Never longer than the close deadline. */
static enum post_result post_body(struct sh5_stream *s, const struct buf *b)
{
	CURLMsg *msg;
	CURLcode cc = CURLE_OK;
	long code = 0;
	int running = 1, left, aborted = 0;

	s->resp_len = 0;
	s->resp[0] = '\0';
	s->curl_err[0] = '\0';
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, b->p);
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)b->len);
	if (curl_multi_add_handle(s->multi, s->easy) != CURLM_OK) {
		set_error(s, EK_MULTI, "POST %s: curl_multi_add_handle failed",
			  s->safe_url);
		return POST_RETRY;
	}
	pthread_mutex_lock(&s->lock);
	s->in_post = 1;
	pthread_mutex_unlock(&s->lock);
	s->posting = b;
	while (running) {
		if (curl_multi_perform(s->multi, &running) != CURLM_OK)
			break;
		if (!running)
			break;
		pthread_mutex_lock(&s->lock);
		aborted = s->closing && mono_ns() >= s->abort_at;
		pthread_mutex_unlock(&s->lock);
		if (aborted)
			break;
		spill_if_filling(s);
		curl_multi_poll(s->multi, NULL, 0, POLL_MS, NULL);
	}
	s->posting = NULL;
	pthread_mutex_lock(&s->lock);
	s->in_post = 0;
	pthread_mutex_unlock(&s->lock);
	while ((msg = curl_multi_info_read(s->multi, &left)))
		if (msg->msg == CURLMSG_DONE)
			cc = msg->data.result;
	if (!aborted && !running)
		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code);
	curl_multi_remove_handle(s->multi, s->easy);
	if (aborted || running) {
		set_error(s, EK_ABORT, "POST %s: close deadline reached, batch kept",
			  s->safe_url);
		return POST_ABORT;
	}
	if (cc != CURLE_OK) {
		set_error(s, EK_CURL + (int)cc, "POST %s: %s", s->safe_url,
			  s->curl_err[0] ? s->curl_err :
					   curl_easy_strerror(cc));
		return POST_RETRY;
	}
	if (code >= 200 && code < 300) {
		pthread_mutex_lock(&s->lock);
		s->err_since_ok = 1;
		s->st.posts++;
		pthread_mutex_unlock(&s->lock);
		return POST_OK;
	}
	squash(s->resp);
	if (code == 400 || code == 413 || code == 422) {
		set_error(s, EK_HTTP + (int)code,
			  "POST %s: HTTP %ld (batch rejected, not retried): %s",
			  s->safe_url, code, s->resp);
		return POST_REJECT;
	}
	set_error(s, EK_HTTP + (int)code, "POST %s: HTTP %ld: %s", s->safe_url,
		  code, s->resp);
	return POST_RETRY;
}

static void count_post(struct sh5_stream *s, enum post_result r, uint64_t n,
		       int from_spool)
{
	pthread_mutex_lock(&s->lock);
	if (r == POST_OK) {
		if (from_spool)
			s->st.recovered += n;
		else
			s->st.sent += n;
	} else if (r == POST_REJECT) {
		s->st.rejected += n;
	} else if (r == POST_RETRY) {
		s->st.failed_posts++;
	}
	pthread_mutex_unlock(&s->lock);
	if (r == POST_OK || r == POST_REJECT) {
		s->backoff_ms = 0;
		s->backoff_until = 0;
	} else if (r == POST_RETRY) {
		s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 :
						BACKOFF_MIN_MS;
		if (s->backoff_ms > BACKOFF_MAX_MS)
			s->backoff_ms = BACKOFF_MAX_MS;
		s->backoff_until = mono_ns() + s->backoff_ms * 1000000LL;
	}
}

/* Deliver the oldest own spool file.  A file that cannot be read now is
 * left for later; one delivered is removed, or remembered as delivered
 * until it can be (never sent twice by this stream). */
static void send_spooled(struct sh5_stream *s)
{
	char path[PATH_MAX], name[256];
	struct spool_name sn = { 0 };
	enum post_result r;

	snprintf(name, sizeof(name), "%s", s->oldest);
	if (spool_name_parse(name, &sn) < 0 || undeleted(s, name) ||
	    path_in(s, path, sizeof(path), name) < 0) {
		/* delivered already: the scan that would forget it failed */
		spool_scan(s, 0);
		return;
	}
	if (spool_read(s, name) < 0) {
		if (errno == ENOENT) {
			/* evicted by another stream (which counted it) */
		} else if (errno == EFBIG) {
			if (sp_unlink(path) < 0) {
				spool_failed(s, errno);
				return;
			}
			pthread_mutex_lock(&s->lock);
			s->st.dropped_spool += sn.n;
			pthread_mutex_unlock(&s->lock);
		} else {
			/* refused for now (privileges switched...) */
			spool_failed(s, errno);
			return;
		}
		spool_scan(s, 0);
		return;
	}
	r = post_body(s, &s->rd);
	count_post(s, r, sn.n, 1);
	if (r == POST_OK || r == POST_REJECT) {
		if (sp_unlink(path) == 0 || errno == ENOENT) {
			if (s->spool_bytes >= s->rd.len)
				s->spool_bytes -= s->rd.len;
		} else {
			spool_failed(s, errno);
			snprintf(s->undel[s->nundel++], sizeof(s->undel[0]),
				 "%s", name);
		}
		spool_scan(s, 0);
	}
	s->rd.len = 0;
}

/* The held batch to deliver or spool first (oldest), NULL if none. */
static struct batch *held_oldest(struct sh5_stream *s)
{
	if (s->cur.held && (!s->spill.held || s->cur.ts <= s->spill.ts))
		return &s->cur;
	return s->spill.held ? &s->spill : NULL;
}

/* Is the oldest own spool file older than batch b (or b NULL)? */
static int spool_first(const struct sh5_stream *s, const struct batch *b)
{
	struct spool_name sn;

	if (s->own_files == 0 || !s->oldest[0])
		return 0;
	if (!b)
		return 1;
	return spool_name_parse(s->oldest, &sn) == 0 && sn.ts < b->ts;
}

/* POST a held batch; when it fails, try to spool it. */
static void send_held(struct sh5_stream *s, struct batch *b)
{
	enum post_result r = post_body(s, &b->b);

	count_post(s, r, b->n, 0);
	if (r == POST_OK || r == POST_REJECT) {
		b->held = 0;
		b->b.len = 0;
	} else if (r == POST_RETRY && s->spool_dir &&
		   mono_ns() >= s->spool_retry_at) {
		spool_write(s, b);
	}
}

/* A new batch in s->cur: POST it, or spool it (behind spooled data,
 * while backing off, or after a failed POST); held if neither worked. */
static void send_new(struct sh5_stream *s, int backoff)
{
	enum post_result r;

	s->cur.held = 1;
	if (backoff || s->own_files > 0) {
		if (s->spool_dir && mono_ns() >= s->spool_retry_at)
			spool_write(s, &s->cur);
		return;
	}
	r = post_body(s, &s->cur.b);
	count_post(s, r, s->cur.n, 0);
	if (r == POST_OK || r == POST_REJECT) {
		s->cur.held = 0;
		s->cur.b.len = 0;
	} else if (s->spool_dir && mono_ns() >= s->spool_retry_at) {
		spool_write(s, &s->cur);
	}
}

/* At the end: spool what is held and what is queued, until the hard
 * deadline; count what could not be kept as unsent. */
static void spool_rest(struct sh5_stream *s)
{
	struct batch *b;
	uint64_t lost = 0;

	while ((b = held_oldest(s))) {
		if (spool_write_final(s, b) < 0) {
			lost += b->n;
			b->held = 0;
			b->b.len = 0;
		}
	}
	while (form_batch(s, &s->cur.b, &s->cur.n, &s->cur.ts)) {
		if (s->cur.n == 0)
			continue;
		s->cur.held = 1;
		if (spool_write_final(s, &s->cur) < 0) {
			lost += s->cur.n;
			s->cur.held = 0;
			s->cur.b.len = 0;
		}
	}
	if (lost) {
		pthread_mutex_lock(&s->lock);
		s->st.unsent += lost;
		pthread_mutex_unlock(&s->lock);
	}
}

/* The sender's work that needs no lock: retry postponed removals, spool
 * held batches while the server is away, deliver the oldest of the own
 * spool files and held batch h.  1 when something was done (look
 * again), 0 when nothing was. */
static int sender_deliver(struct sh5_stream *s, struct batch *h, int64_t now,
			  int backoff, int spool_now)
{
	if (spool_now && s->nundel > 0) {
		undel_retry(s);
		if (s->nundel > 0)
			s->spool_retry_at = now + SPOOL_RETRY_NS;
	}
	if (h && backoff && spool_now) {
		/* the server is away: held batches go to the spool
		 * (frees memory; names keep the order) */
		spool_write(s, h);
		return 1;
	}
	if (!backoff && spool_first(s, h)) {
		if (spool_now && s->nundel < UNDEL_MAX) {
			send_spooled(s);
			return 1;
		}
		/* older spool files come first: wait for the spool */
	} else if (!backoff && h) {
		send_held(s, h);
		return 1;
	}
	return 0;
}

/* When the sender must look again at the latest (lock held). */
static int64_t sender_wake(const struct sh5_stream *s, const struct batch *h,
			   int64_t now, int backoff, int spool_now)
{
	int64_t wake = now + 3600 * 1000000000LL;

	if (s->spool_dir && !s->closing) {
		int64_t scan_at = s->next_scan;

		/* no scan before the spool may be used again */
		if (!spool_now && scan_at < s->spool_retry_at)
			scan_at = s->spool_retry_at;
		if (scan_at < wake)
			wake = scan_at;
	}
	if (s->spool_dir && !spool_now && s->spool_retry_at < wake)
		wake = s->spool_retry_at;
	if (s->count > 0 && !h &&
	    s->last_form + s->flush_ms * 1000000LL < wake)
		wake = s->last_form + s->flush_ms * 1000000LL;
	if (backoff && s->backoff_until < wake)
		wake = s->backoff_until;
	if (s->closing && s->abort_at < wake)
		wake = s->abort_at;
	if (wake <= now)
		wake = now + 1000000;
	return wake;
}

/* The sender's end: spool what is left, tell close() it is done, and
 * free the stream when close() gave up waiting. */
static void sender_end(struct sh5_stream *s)
{
	int abandoned;

	spool_rest(s);
	spool_close(s);

	pthread_mutex_lock(&s->lock);
	s->done = 1;
	abandoned = s->abandoned;
	pthread_cond_broadcast(&s->done_cond);
	pthread_mutex_unlock(&s->lock);
	if (abandoned) {
		/* close() gave up waiting: nobody else will free it */
		pthread_detach(pthread_self());
		stream_free(s);
	}
}

static void *sender_main(void *arg)
{
	struct sh5_stream *s = arg;
	struct timespec until;
	struct batch *h;
	int64_t now, wake;
	int backoff, spool_now, did;

	if (s->spool_dir)
		spool_scan(s, 0);
	s->last_form = mono_ns();
	pthread_mutex_lock(&s->lock);
	for (;;) {
		now = mono_ns();
		if (s->closing && now >= s->abort_at)
			break;
		backoff = now < s->backoff_until;
		spool_now = s->spool_dir && now >= s->spool_retry_at;
		h = held_oldest(s);
		pthread_mutex_unlock(&s->lock);
		did = sender_deliver(s, h, now, backoff, spool_now);
		pthread_mutex_lock(&s->lock);
		if (did)
			continue;
		if (!h && batch_due(s, now)) {
			pthread_mutex_unlock(&s->lock);
			if (form_batch(s, &s->cur.b, &s->cur.n, &s->cur.ts) &&
			    s->cur.n)
				send_new(s, backoff);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		if (s->closing && s->count == 0 && (!h || backoff) &&
		    (s->own_files == 0 || backoff)) {
			/* all of ours is out: one last look for files of
			 * streams ended since the last scan, delivered while
			 * the deadline allows */
			if (!s->spool_dir || backoff || s->final_scan)
				break;
			if (spool_now) {
				s->final_scan = 1;
				pthread_mutex_unlock(&s->lock);
				spool_scan(s, 0);
				pthread_mutex_lock(&s->lock);
				continue;
			}
			/* else wait for the spool (at most until abort_at) */
		}
		if (s->spool_dir && !s->closing && now >= s->next_scan &&
		    spool_now) {
			pthread_mutex_unlock(&s->lock);
			spool_scan(s, 0);
			pthread_mutex_lock(&s->lock);
			continue;
		}
		/* sleep until something is due (push() wakes us when the
		 * queue stops being empty or fills a batch) */
		wake = sender_wake(s, h, now, backoff, spool_now);
		until.tv_sec = wake / 1000000000LL;
		until.tv_nsec = wake % 1000000000LL;
		pthread_cond_timedwait(&s->cond, &s->lock, &until);
	}
	pthread_mutex_unlock(&s->lock);

	/* deadline reached or nothing left: spool what is left */
	sender_end(s);
	return NULL;
}

/* --------------------------------------------------------- lifecycle */

static void stream_free(struct sh5_stream *s)
{
	size_t i;

	if (!s)
		return;
	if (s->easy)
		curl_easy_cleanup(s->easy);
	if (s->multi)
		curl_multi_cleanup(s->multi);
	curl_slist_free_all(s->hdrs);
	for (i = 0; i < s->nschemas; i++)
		schema_free(s->schemas[i]);
	if (s->ring)
		munmap(s->ring, s->qcap * sizeof(*s->ring));
	free(s->batch);
	buf_free(&s->cur.b);
	buf_free(&s->spill.b);
	buf_free(&s->rd);
	if (s->pass)
		explicit_bzero(s->pass, strlen(s->pass));
	if (s->enc_pass)
		explicit_bzero(s->enc_pass, strlen(s->enc_pass));
	if (s->token)
		explicit_bzero(s->token, strlen(s->token));
	free(s->url);
	free(s->safe_url);
	free(s->user);
	free(s->pass);
	free(s->enc_pass);
	free(s->token);
	free(s->spool_dir);
	free(s->ca_file);
	free(s->job);
	free(s->step);
	free(s->node);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	pthread_cond_destroy(&s->done_cond);
	free(s);
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void init_curl(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int check_tag(const char *name, const char *v, struct sh5_error *errp)
{
	if (v && v[0] && !name_ok(v)) {
		errno = EINVAL;
		return sh5_errprintf(errp,
				     "stream: tag %s is longer than %d bytes or "
				     "has control characters",
				     name, SH5_STREAM_MAX_NAME);
	}
	return 0;
}

/* The checks of create() before anything is allocated; curl's global
 * initialisation.  0, or -1 (errno, errp set). */
static int create_check(const struct sh5_stream_conf *conf,
			const struct sh5_stream_tags *tags,
			struct sh5_error *errp)
{
	if (!conf || !conf->url || !conf->url[0]) {
		errno = EINVAL;
		return sh5_errprintf(errp, "stream: no URL configured");
	}
	if (conf->format < SH5_STREAM_INFLUX1 ||
	    conf->format > SH5_STREAM_JSON) {
		errno = EINVAL;
		return sh5_errprintf(errp, "stream: unknown format %d",
				     conf->format);
	}
	if (tags && (check_tag("job", tags->job, errp) < 0 ||
		     check_tag("step", tags->step, errp) < 0 ||
		     check_tag("node", tags->node, errp) < 0))
		return -1;
	pthread_once(&curl_once, init_curl);
	if (curl_init_rc != CURLE_OK) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "stream: curl_global_init: %s",
				     curl_easy_strerror(curl_init_rc));
	}
	return 0;
}

/* Copy the configuration and tags into s (defaults for what is unset). */
static void create_conf(struct sh5_stream *s,
			const struct sh5_stream_conf *conf,
			const struct sh5_stream_tags *tags)
{
	s->format = conf->format;
	s->ext = s->format == SH5_STREAM_JSON ? "json" : "lp";
	s->timeout_ms = conf->timeout_ms > 0 ? conf->timeout_ms : DEF_TIMEOUT_MS;
	s->connect_ms = conf->connect_timeout_ms > 0 ? conf->connect_timeout_ms :
						       DEF_CONNECT_MS;
	s->flush_ms = conf->flush_interval_ms > 0 ? conf->flush_interval_ms :
						    DEF_FLUSH_MS;
	s->spool_max = conf->spool_max_bytes ? conf->spool_max_bytes :
					       DEF_SPOOL_MAX;
	s->qcap = conf->queue_max ? conf->queue_max : DEF_QUEUE;
	s->batch_max = conf->batch_max ? conf->batch_max : DEF_BATCH;
	if (s->batch_max > s->qcap)
		s->batch_max = s->qcap;
	s->insecure = conf->insecure_tls != 0;
	s->user = dup_or_null(conf->user);
	s->pass = dup_or_null(conf->pass);
	s->token = dup_or_null(conf->token);
	s->spool_dir = dup_or_null(conf->spool_dir);
	s->ca_file = dup_or_null(conf->ca_file);
	if (tags) {
		s->job = dup_or_null(tags->job);
		s->step = dup_or_null(tags->step);
		s->node = dup_or_null(tags->node);
	}
	s->tags.job = s->job;
	s->tags.step = s->step;
	s->tags.node = s->node;
}

/* The queue and the sender's batch.  The queue is mapped, not
 * allocated: its pages are zero pages until a sample is first written
 * into them (a minor fault, no I/O), and the ring starts again at its
 * front whenever the sender empties it (take_batch()), so a stream whose
 * sender keeps up touches only the pages of its largest backlog instead
 * of all of them (1.1 MiB with the defaults). */
static void create_queue(struct sh5_stream *s)
{
	void *p = mmap(NULL, s->qcap * sizeof(*s->ring),
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	s->ring = p == MAP_FAILED ? NULL : p;
	/* written before it is read: no need to zero it */
	s->batch = malloc(s->batch_max * sizeof(*s->batch));
}

/* Name the stream's spool owner and take its lock. */
static void create_owner(struct sh5_stream *s)
{
	static unsigned counter;
	unsigned c = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);

	snprintf(s->owner, sizeof(s->owner), "o%ldx%lldx%u",
		 (long)getpid(), (long long)(real_ns() / 1000000000LL), c);
	/* now, while the caller (node_step_start) still runs with its own
	 * privileges; when it fails, the sender tries again and the error
	 * is reported by last_error() */
	if (lock_create(s) < 0)
		spool_failed(s, errno);
}

/* Start the sender thread with every signal blocked (it must not take
 * the caller's signals).  0, or -1 (errno, errp set). */
static int start_sender(struct sh5_stream *s, struct sh5_error *errp)
{
	sigset_t all, old;
	int e;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&s->thread, NULL, sender_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		errno = e;
		return sh5_errprintf(errp,
				     "stream: cannot start sender thread: %s",
				     strerror(e));
	}
	return 0;
}

struct sh5_stream *sh5_stream_create(const struct sh5_stream_conf *conf,
				     const struct sh5_stream_tags *tags,
				     struct sh5_error *errp)
{
	struct sh5_stream *s = NULL;
	pthread_condattr_t ca;
	int e;

	if (create_check(conf, tags, errp) < 0)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		sh5_errprintf(errp, "stream: out of memory");
		return NULL;
	}
	s->lock_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_cond_init(&s->done_cond, &ca);
	pthread_condattr_destroy(&ca);
	create_conf(s, conf, tags);
	create_queue(s);
	if (!s->ring || !s->batch || (conf->user && !s->user) ||
	    (conf->pass && conf->pass[0] && !s->pass) ||
	    (conf->token && conf->token[0] && !s->token) ||
	    (conf->spool_dir && conf->spool_dir[0] && !s->spool_dir)) {
		errno = ENOMEM;
		sh5_errprintf(errp, "stream: out of memory");
		goto error;
	}
	if (s->pass) {
		char *enc = curl_easy_escape(NULL, s->pass, 0);

		s->enc_pass = enc ? strdup(enc) : NULL;
		curl_free(enc);
	}
	if (make_urls(s, conf->url, errp) < 0 || http_setup(s, errp) < 0)
		goto error;
	if (s->spool_dir)
		create_owner(s);
	if (start_sender(s, errp) < 0)
		goto error;
	return s;
error:
	e = errno;
	spool_close(s);
	stream_free(s);
	errno = e;
	return NULL;
}

int sh5_stream_close(struct sh5_stream *s, long deadline_ms,
		     struct sh5_stream_stats *st)
{
	struct sh5_stream_stats copy;
	struct timespec until;
	int64_t start = mono_ns(), end, reserve;
	int done, rc;

	if (!s) {
		if (st)
			memset(st, 0, sizeof(*st));
		return 0;
	}
	if (deadline_ms <= 0)
		deadline_ms = DEF_DEADLINE_MS;
	end = start + deadline_ms * 1000000LL;
	/* keep a quarter (at most 250 ms) for spooling what is left */
	reserve = deadline_ms * 1000000LL / 4;
	if (reserve > 250000000LL)
		reserve = 250000000LL;
	pthread_mutex_lock(&s->lock);
	s->closing = 1;
	s->abort_at = end - reserve;
	/* the sender's last spooling ends a little before close() gives up
	 * waiting, so that the counters it returns are final */
	s->hard_end = end - (reserve / 5 < 50000000LL ? reserve / 5 :
							50000000LL);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	curl_multi_wakeup(s->multi);

	until.tv_sec = end / 1000000000LL;
	until.tv_nsec = end % 1000000000LL;
	pthread_mutex_lock(&s->lock);
	while (!s->done)
		if (pthread_cond_timedwait(&s->done_cond, &s->lock, &until) ==
		    ETIMEDOUT)
			break;
	done = s->done;
	if (!done)
		s->abandoned = 1;
	copy = s->st;
	if (s->err_new)
		memcpy(copy.last_error, s->err, sizeof(copy.last_error));
	s->err_new = 0;
	pthread_mutex_unlock(&s->lock);
	copy.closed_in_time = done;
	rc = (copy.dropped_queue || copy.rejected || copy.unsent) ? -1 : 0;
	if (st)
		*st = copy;
	if (done) {
		pthread_join(s->thread, NULL);
		stream_free(s);
	}
	/* else the sender frees the stream when it ends (see sender_main) */
	return rc;
}
