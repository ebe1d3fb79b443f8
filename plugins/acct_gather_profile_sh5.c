/*
 * acct_gather_profile_sh5.c - Slurm profile plugin writing sh5 node-step
 * files (HDF5), one per node and step.
 *
 * This file is only the glue between slurmstepd and the sh5 library
 * (src/): it translates Slurm's calls and types, keeps the per-step state,
 * runs the flush thread and logs.  It never calls fatal() after start-up
 * (only conf_set, at daemon start, may refuse a broken configuration) and
 * never does file I/O while Slurm holds its profile lock: add_sample_data
 * only copies a record into memory.
 *
 * Built against a configured Slurm source tree (configure
 * --with-slurm-source) of the release it will be loaded into: 22.05 to
 * 26.05; slurm_compat.h holds what differs between them
 * (doc/slurm-releases.md).
 */
#include "config.h" /* Slurm's */
#include "slurm_compat.h" /* release differences; before any other header */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/common/slurm_xlator.h"
#if SH5_SLURM_INTERFACES
#include "src/interfaces/acct_gather_profile.h"
#else
#include "src/common/slurm_acct_gather_profile.h"
#endif
#include "src/common/parse_config.h"
#include "src/common/read_config.h"
#include "src/common/slurm_time.h"
#include "src/common/xstring.h"
#include "src/slurmd/slurmstepd/slurmstepd_job.h"

#include "common/error.h"
#include "events/evabsorb.h"
#include "events/evformat.h"
#include "events/evstore.h"
#include "profile/layout.h"
#include "profile/ntp.h"
#include "profile/series.h"
#include "stream/stream.h"
#include "profile/writer.h"

const char plugin_name[] = "AcctGatherProfile sh5 plugin";
const char plugin_type[] = "acct_gather_profile/sh5";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#define MAX_GROUPS 64

/* Configuration (acct_gather.conf). */
static struct {
	char *dir;
	uint32_t def;
	uint32_t compression;
	uint32_t flush_interval; /* seconds */
	char *clock_server;      /* host[:port] of an NTP server, or NULL */
	uint32_t clock_interval; /* seconds between measurements */
	uint32_t clock_samples;  /* exchanges per measurement */
	uint32_t clock_timeout;  /* ms, hard bound of one measurement */
	/* Live streaming (ProfileSH5Stream*); off without a URL. */
	char *stream_url, *stream_user, *stream_pass, *stream_token;
	char *stream_spool, *stream_ca;
	int stream_format;
	uint32_t stream_timeout, stream_connect_timeout, stream_queue;
	uint32_t stream_batch, stream_flush, stream_deadline;
	uint64_t stream_spool_max;
	bool stream_insecure;
	/* Application events (ProfileSH5Events*). */
	bool events;
	uint32_t events_max;     /* MiB per task */
} cfg = { .def = ACCT_GATHER_PROFILE_NONE, .compression = 4,
	  .events = true, .events_max = 1024,
	  .flush_interval = 10, .clock_interval = 60, .clock_samples = 4,
	  .clock_timeout = 300, .stream_format = SH5_STREAM_INFLUX1 };

/* The clock server, resolved once when the configuration is read (DNS is
 * not bounded; the measurements themselves are). */
static struct sockaddr_storage clock_addr;
static socklen_t clock_addrlen;
static char *clock_resolved; /* the ProfileSH5ClockServer clock_addr is for */

/*
 * Step state.  The rwlock guards the writer pointer: sample paths take it
 * shared, node_step_end exclusive to detach the writer before closing it.
 */
static pthread_rwlock_t state_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct sh5_writer *writer;
static struct sh5_stream *stream;  /* also guarded by state_lock */
static uint32_t profile_running = ACCT_GATHER_PROFILE_NOT_SET;
static time_t step_start;
static char file_path[4096];
static bool in_child;      /* set in the forked task before exec */
static bool step_ended;

static char group_names[MAX_GROUPS][SH5_NAME_MAX];
static int ngroups;

/*
 * A periodic worker thread of the step: tick(0) when it starts, tick(1)
 * every interval seconds (CLOCK_MONOTONIC), tick(2) when stopped.  Used
 * for flushing the file and for clock-offset measurements.
 */
struct worker {
	pthread_t tid;
	bool running, stop;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t interval;
	void (*tick)(int phase);
};

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct timespec ts;
	bool stop;

	sh5_error_h5_silence();
	wk->tick(0);
	pthread_mutex_lock(&wk->mutex);
	for (;;) {
		if (!wk->stop) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += wk->interval;
			pthread_cond_timedwait(&wk->cond, &wk->mutex, &ts);
		}
		stop = wk->stop;
		pthread_mutex_unlock(&wk->mutex);
		wk->tick(stop ? 2 : 1);
		if (stop)
			return NULL;
		pthread_mutex_lock(&wk->mutex);
	}
}

/* Start wk; false (logged) when the thread cannot be created. */
static bool worker_start(struct worker *wk, const char *what)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&wk->mutex, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wk->cond, &ca);
	pthread_condattr_destroy(&ca);
	wk->stop = false;
	wk->running = pthread_create(&wk->tid, NULL, worker_main, wk) == 0;
	if (!wk->running) {
		error("%s: cannot start the %s thread: %m", plugin_type, what);
		pthread_cond_destroy(&wk->cond);
		pthread_mutex_destroy(&wk->mutex);
	}
	return wk->running;
}

/* Stop wk after its final tick; no-op when not running. */
static void worker_stop(struct worker *wk)
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

/* Sampling frequencies are known only once slurmstepd started polling,
 * after node_step_start: written by the first flush. */
static atomic_int freq_written;

static void stream_log_error(struct sh5_stream *st);

/* Log each kind of trouble once per step. */
static atomic_int logged_add, logged_flush, logged_ended;

static uint32_t profile_from_job(stepd_step_rec_t *job)
{
	if (job->profile >= ACCT_GATHER_PROFILE_NONE)
		return job->profile;
	return cfg.def;
}

static double sample_hz(int type)
{
	int freq = acct_gather_profile_timer[type].freq;

	return freq > 0 ? 1.0 / freq : 1.0;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Detach and close the writer; safe to call more than once. */
static void stop_profiling(const char *why)
{
	struct sh5_writer *w;
	struct sh5_error err = { "" };

	pthread_rwlock_wrlock(&state_lock);
	w = writer;
	writer = NULL;
	pthread_rwlock_unlock(&state_lock);
	if (!w)
		return;
	if (why)
		error("%s: profiling of this step stops: %s", plugin_type, why);
	if (sh5_writer_close(w, &err) < 0)
		error("%s: %s", plugin_type, err.text);
}

static void write_frequencies(struct sh5_writer *w)
{
	char buf[96];

	if (atomic_exchange(&freq_written, 1))
		return;
	snprintf(buf, sizeof(buf), "task=%d,energy=%d,filesystem=%d,network=%d",
		 acct_gather_profile_timer[PROFILE_TASK].freq,
		 acct_gather_profile_timer[PROFILE_ENERGY].freq,
		 acct_gather_profile_timer[PROFILE_FILESYSTEM].freq,
		 acct_gather_profile_timer[PROFILE_NETWORK].freq);
	sh5_writer_attr_str(w, "Sampling Frequencies", buf, NULL);
}

/* Flush worker: write what the gather threads buffered. */
static void flush_tick(int phase)
{
	struct sh5_error err;
	int rc = 0;

	if (phase != 1)
		return; /* the file is fresh at 0; node_step_end flushes */
	pthread_rwlock_rdlock(&state_lock);
	if (writer) {
		write_frequencies(writer);
		rc = sh5_writer_flush(writer, &err);
	}
	pthread_rwlock_unlock(&state_lock);
	if (rc < 0 && !atomic_exchange(&logged_flush, 1))
		stop_profiling(err.text);
	stream_log_error(stream);
}

static struct worker flush_worker = { .tick = flush_tick };

/*
 * Clock-offset thread: one measurement at step start, one every
 * ProfileSH5ClockInterval, one at step end (only if the server answered
 * the one before: a dead server costs the step nothing).  Each is bounded
 * by ProfileSH5ClockTimeout; failures are logged once per step.
 */
static atomic_int logged_clock;

static bool clock_measure(uint32_t phase)
{
	struct sh5_ntp_result r;
	struct sh5_error err = { "" };
	struct sh5_clock_sample c;

	if (sh5_ntp_measure_addr((struct sockaddr *)&clock_addr, clock_addrlen,
				 (int)cfg.clock_samples, (int)cfg.clock_timeout,
				 &r, &err) < 0) {
		if (!atomic_exchange(&logged_clock, 1))
			error("%s: clock offset to %s not measured: %s",
			      plugin_type, cfg.clock_server, err.text);
		return false;
	}
	c.local_ns = r.local_ns;
	c.offset_ns = r.offset_ns;
	c.rtt_ns = r.rtt_ns;
	c.stratum = (uint32_t)r.stratum;
	c.phase = phase;
	pthread_rwlock_rdlock(&state_lock);
	if (writer)
		sh5_writer_add_clock(writer, &c);
	pthread_rwlock_unlock(&state_lock);
	log_flag(PROFILE, "%s: clock offset %" PRId64 " ns (rtt %" PRId64
		 " ns, stratum %d)", plugin_type, r.offset_ns, r.rtt_ns,
		 r.stratum);
	return true;
}

/* Clock worker: at start, periodically, and at the end if the server
 * answered the last time. */
static bool clock_ok;

static void clock_tick(int phase)
{
	if (phase < 2 || clock_ok)
		clock_ok = clock_measure((uint32_t)phase);
}

static struct worker clock_worker = { .tick = clock_tick };

/* ------------------------------------------------------------------ */
/* Streaming. */

/* Log the stream's latest error, once per distinct error. */
static void stream_log_error(struct sh5_stream *st)
{
	char buf[256];

	if (st && sh5_stream_last_error(st, buf, sizeof(buf)))
		error("%s: stream: %s", plugin_type, buf);
}

static void stream_start(stepd_step_rec_t *job)
{
	struct sh5_stream_conf sc;
	struct sh5_stream_tags tags;
	struct sh5_error err = { "" };
	char jobs[16], step[16];

	if (!cfg.stream_url)
		return;
	sh5_stream_conf_init(&sc);
	sc.url = cfg.stream_url;
	sc.format = cfg.stream_format;
	sc.user = cfg.stream_user;
	sc.pass = cfg.stream_pass;
	sc.token = cfg.stream_token;
	sc.timeout_ms = cfg.stream_timeout;
	sc.connect_timeout_ms = cfg.stream_connect_timeout;
	sc.spool_dir = cfg.stream_spool;
	sc.spool_max_bytes = cfg.stream_spool_max;
	sc.queue_max = cfg.stream_queue;
	sc.batch_max = cfg.stream_batch;
	sc.flush_interval_ms = cfg.stream_flush;
	sc.ca_file = cfg.stream_ca;
	sc.insecure_tls = cfg.stream_insecure;
	snprintf(jobs, sizeof(jobs), "%u", job->step_id.job_id);
	tags.job = jobs;
	tags.step = sh5_layout_step_name(job->step_id.step_id, step,
					 sizeof(step));
	tags.node = job->node_name;
	{
		struct sh5_stream *st = sh5_stream_create(&sc, &tags, &err);

		pthread_rwlock_wrlock(&state_lock);
		stream = st;
		pthread_rwlock_unlock(&state_lock);
	}
	if (!stream)
		error("%s: %ps: streaming off for this step: %s", plugin_type,
		      &job->step_id, err.text);
}

/* Queue a record for streaming; state_lock held (shared). */
static void stream_push(const struct sh5_series *s, const union sh5_value *rec)
{
	const char *names[SH5_STREAM_MAX_FIELDS];
	enum sh5_stream_type types[SH5_STREAM_MAX_FIELDS];
	const char *series;
	size_t i, n = s->nfields;
	int task = -1;

	if (!stream || !n)
		return;
	if (n > SH5_STREAM_MAX_FIELDS)
		n = SH5_STREAM_MAX_FIELDS;
	for (i = 0; i < n; i++) {
		names[i] = s->fields[i].name;
		types[i] = s->fields[i].type == SH5_FT_DOUBLE ?
				   SH5_STREAM_DOUBLE : SH5_STREAM_U64;
	}
	/* The measurement is the series type (the dataset name for
	 * generic series), as the "Series" attribute of the file. */
	if (!strcmp(s->ops->name, "Task")) {
		char *end;
		long v = strtol(s->name, &end, 10);

		if (!*end && v >= 0 && v <= INT32_MAX)
			task = (int)v;
	}
	series = strcmp(s->ops->name, "Generic") ? s->ops->name : s->name;
	/* union sh5_value and union sh5_stream_value share the layout of
	 * the u and d members. */
	sh5_stream_push(stream, series, task, names, types,
			(const union sh5_stream_value *)&rec[SH5_TIME_SLOTS], n,
			rec[2].i);
}

/* Close the stream within its deadline; counters go to the file. */
static void stream_stop(void)
{
	struct sh5_stream *st;
	struct sh5_stream_stats ss;
	char buf[256];

	pthread_rwlock_wrlock(&state_lock);
	st = stream;
	stream = NULL;
	pthread_rwlock_unlock(&state_lock);
	if (!st)
		return;
	memset(&ss, 0, sizeof(ss));
	stream_log_error(st);
	sh5_stream_close(st, cfg.stream_deadline, &ss);
	if (ss.last_error[0])
		error("%s: stream: %s", plugin_type, ss.last_error);
	if (!ss.closed_in_time)
		error("%s: stream: sender did not stop within %u ms; "
		      "abandoned", plugin_type, cfg.stream_deadline);
	pthread_rwlock_rdlock(&state_lock);
	if (writer) {
		sh5_writer_attr_i64(writer, "Stream Sent", (int64_t)ss.sent,
				    NULL);
		sh5_writer_attr_i64(writer, "Stream Recovered",
				    (int64_t)ss.recovered, NULL);
		sh5_writer_attr_i64(writer, "Stream Spooled",
				    (int64_t)ss.spooled, NULL);
		sh5_writer_attr_i64(writer, "Stream Dropped",
				    (int64_t)(ss.dropped_queue +
					      ss.dropped_spool + ss.unsent),
				    NULL);
		sh5_writer_attr_i64(writer, "Stream Rejected",
				    (int64_t)ss.rejected, NULL);
		sh5_writer_attr_i64(writer, "Stream Failed Posts",
				    (int64_t)ss.failed_posts, NULL);
	}
	pthread_rwlock_unlock(&state_lock);
	snprintf(buf, sizeof(buf), "pushed %" PRIu64 ", sent %" PRIu64
		 ", recovered %" PRIu64 ", spooled %" PRIu64 ", dropped %"
		 PRIu64 ", rejected %" PRIu64 ", failed posts %" PRIu64,
		 ss.pushed, ss.sent, ss.recovered, ss.spooled,
		 ss.dropped_queue + ss.dropped_spool + ss.unsent, ss.rejected,
		 ss.failed_posts);
	if (ss.dropped_queue + ss.dropped_spool + ss.unsent + ss.rejected)
		error("%s: stream: samples lost: %s", plugin_type, buf);
	else
		log_flag(PROFILE, "%s: stream: %s", plugin_type, buf);
}

/* ------------------------------------------------------------------ */
/* Application events: the tasks' spill files (src/events/evabsorb.h). */

static struct {
	bool on;                 /* the tasks were told where to write */
	char prefix[SH5_NAME_MAX];
	char *user;
	uid_t uid;
	gid_t gid;
	stepd_step_rec_t *job;   /* lives until slurmstepd exits */
} ev;

/*
 * Tell the tasks where to spill their events: SH5_EVENTS_DIR (the user's
 * profile directory, made by sh5_layout_open_node_file()), _PREFIX (the
 * node-step file's name without .h5) and _MAX.  job->env is copied into
 * each task of a launched step after node_step_start; a batch step's
 * environment is built later from the batch request (and would drop
 * ours), so batch scripts get none: their sruns do.
 */
static void events_start(stepd_step_rec_t *job, const char *fname)
{
	char dir[4096], max[32];
	size_t len = strlen(fname);

	ev.on = false;
	xfree(ev.user);
	if (!cfg.events || job->batch)
		return;
	if (len < 4 || len - 3 >= sizeof(ev.prefix) ||
	    len - 3 >= sizeof(((struct sh5ev_file_header *)0)->prefix)) {
		error("%s: %ps: file name %s too long for the events' "
		      "prefix: events off for this step", plugin_type,
		      &job->step_id, fname);
		return;
	}
	snprintf(ev.prefix, sizeof(ev.prefix), "%.*s", (int)(len - 3), fname);
	snprintf(dir, sizeof(dir), "%s/%s", cfg.dir, job->user_name);
	snprintf(max, sizeof(max), "%" PRIu64,
		 (uint64_t)cfg.events_max << 20);
	if (!env_array_overwrite(&job->env, SH5EV_ENV_DIR, dir) ||
	    !env_array_overwrite(&job->env, SH5EV_ENV_PREFIX, ev.prefix) ||
	    !env_array_overwrite(&job->env, SH5EV_ENV_MAX, max)) {
		error("%s: %ps: cannot set the tasks' environment: events "
		      "off for this step", plugin_type, &job->step_id);
		return;
	}
	ev.user = xstrdup(job->user_name);
	ev.uid = job->uid;
	ev.gid = job->gid;
	ev.job = job;
	ev.on = true;
}

struct absorb_call {
	struct sh5_evabsorb_params p;
	struct sh5_evabsorb_file *files;
	size_t nfiles, ignored;
};

/* Under the writer's lock (sh5_writer_call()). */
static int absorb_fn(hid_t node, void *arg, struct sh5_error *errp)
{
	struct absorb_call *c = arg;
	struct sh5_evstore *es = sh5_evstore_open(node, (int)cfg.compression,
						  errp);
	int rc;

	if (!es)
		return -1;
	rc = sh5_evabsorb(&c->p, es, &c->files, &c->nfiles, &c->ignored,
			  errp);
	sh5_evstore_close(es);
	return rc;
}

/* The SLURM_PROCID of each task of this node (xmalloc'd), or NULL. */
static uint32_t *events_tasks(stepd_step_rec_t *job, size_t *n)
{
	uint32_t *v, off;
	size_t i;

	*n = 0;
	if (!job || !job->task || !job->node_tasks)
		return NULL;
	off = job->het_job_task_offset == NO_VAL ? 0 :
						   job->het_job_task_offset;
	v = xcalloc(job->node_tasks, sizeof(*v));
	for (i = 0; i < job->node_tasks; i++)
		if (job->task[i])
			v[(*n)++] = job->task[i]->gtid + off;
	return v;
}

/*
 * Absorb the tasks' spill files into the node-step file: after the
 * workers stopped, before the writer closes.  Logs one line per file;
 * never fails the step.
 */
static void events_absorb(void)
{
	struct absorb_call c;
	struct sh5_error err = { "" };
	uint32_t *tasks;
	size_t i, absorbed = 0;
	char line[1024];
	int rc = -1;

	if (!ev.on)
		return;
	ev.on = false;
	memset(&c, 0, sizeof(c));
	c.p.dirfd = sh5_evabsorb_open_dir(cfg.dir, ev.user, ev.uid, &err);
	if (c.p.dirfd < 0) {
		error("%s: events not absorbed: %s", plugin_type, err.text);
		return;
	}
	/* Most steps have no events: one directory scan, then nothing. */
	c.p.prefix = ev.prefix;
	if ((rc = sh5_evabsorb_pending(&c.p, &err)) <= 0) {
		if (rc < 0)
			error("%s: events not absorbed: %s", plugin_type,
			      err.text);
		close(c.p.dirfd);
		return;
	}
	rc = -1;
	tasks = events_tasks(ev.job, &c.p.ntasks);
	c.p.tasks = tasks;
	c.p.uid = ev.uid;
	c.p.gid = ev.gid;
	c.p.max_bytes = (uint64_t)cfg.events_max << 20;
	pthread_rwlock_rdlock(&state_lock);
	if (writer)
		rc = sh5_writer_call(writer, absorb_fn, &c, &err);
	pthread_rwlock_unlock(&state_lock);
	close(c.p.dirfd);
	xfree(tasks);
	if (rc < 0)
		error("%s: %s: events not absorbed, spill files %s.* kept: %s",
		      plugin_type, file_path, ev.prefix,
		      err.text[0] ? err.text : "profiling of the step stopped");
	for (i = 0; i < c.nfiles; i++) {
		struct sh5_evabsorb_file *f = &c.files[i];

		sh5_evabsorb_describe(f, line, sizeof(line));
		if (f->status == SH5_EVABSORB_REFUSED ||
		    f->status == SH5_EVABSORB_FAILED)
			error("%s: events: %s", plugin_type, line);
		else if (sh5_evabsorb_notable(f))
			info("%s: events: %s", plugin_type, line);
		else
			log_flag(PROFILE, "%s: events: %s", plugin_type, line);
		if (f->status <= SH5_EVABSORB_KEPT)
			absorbed++;
	}
	if (c.ignored)
		error("%s: events: %zu more files named like spill files of "
		      "%s ignored", plugin_type, c.ignored, ev.prefix);
	if (c.nfiles)
		log_flag(PROFILE, "%s: events: %zu of %zu spill files absorbed "
			 "into %s", plugin_type, absorbed, c.nfiles,
			 file_path);
	free(c.files);
}

extern int init(void)
{
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	if (!in_child) {
		worker_stop(&clock_worker);
		worker_stop(&flush_worker);
		stream_stop();
		stop_profiling(NULL);
	}
	xfree(cfg.dir);
	xfree(clock_resolved);
	xfree(cfg.stream_url);
	xfree(cfg.stream_user);
	xfree(cfg.stream_pass);
	xfree(cfg.stream_token);
	xfree(cfg.stream_spool);
	xfree(cfg.stream_ca);
	xfree(cfg.clock_server);
	xfree(ev.user);
	return SLURM_SUCCESS;
}

extern void acct_gather_profile_p_conf_options(s_p_options_t **full_options,
					       int *full_options_cnt)
{
	s_p_options_t options[] = {
		{ .key = "ProfileSH5Dir", .type = S_P_STRING },
		{ .key = "ProfileSH5Default", .type = S_P_STRING },
		{ .key = "ProfileSH5Compression", .type = S_P_UINT32 },
		{ .key = "ProfileSH5FlushInterval", .type = S_P_UINT32 },
		{ .key = "ProfileSH5ClockServer", .type = S_P_STRING },
		{ .key = "ProfileSH5ClockInterval", .type = S_P_UINT32 },
		{ .key = "ProfileSH5ClockSamples", .type = S_P_UINT32 },
		{ .key = "ProfileSH5ClockTimeout", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamURL", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamFormat", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamUser", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamPass", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamToken", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamTimeout", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamConnectTimeout", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamSpoolDir", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamSpoolMax", .type = S_P_UINT64 },
		{ .key = "ProfileSH5StreamQueue", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamBatch", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamFlush", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamDeadline", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamCAFile", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamInsecure", .type = S_P_BOOLEAN },
		{ .key = "ProfileSH5Events", .type = S_P_BOOLEAN },
		{ .key = "ProfileSH5EventsMax", .type = S_P_UINT32 },
		{ .key = NULL }
	};

	transfer_s_p_options(full_options, options, full_options_cnt);
}

extern void acct_gather_profile_p_conf_set(s_p_hashtbl_t *tbl)
{
	char *tmp = NULL;

	xfree(cfg.dir);
	cfg.def = ACCT_GATHER_PROFILE_NONE;
	cfg.compression = 4;
	cfg.flush_interval = 10;
	xfree(cfg.clock_server);
	cfg.clock_interval = 60;
	cfg.clock_samples = 4;
	cfg.clock_timeout = 300;
	xfree(cfg.stream_url);
	xfree(cfg.stream_user);
	xfree(cfg.stream_pass);
	xfree(cfg.stream_token);
	xfree(cfg.stream_spool);
	xfree(cfg.stream_ca);
	cfg.stream_format = SH5_STREAM_INFLUX1;
	cfg.stream_timeout = cfg.stream_connect_timeout = 0;
	cfg.stream_queue = cfg.stream_batch = cfg.stream_flush = 0;
	cfg.stream_deadline = 2000;
	cfg.stream_spool_max = 0;
	cfg.stream_insecure = false;
	cfg.events = true;
	cfg.events_max = 1024;
	if (tbl) {
		s_p_get_string(&cfg.dir, "ProfileSH5Dir", tbl);
		if (s_p_get_string(&tmp, "ProfileSH5Default", tbl)) {
			cfg.def = acct_gather_profile_from_string(tmp);
			if (cfg.def == ACCT_GATHER_PROFILE_NOT_SET)
				fatal("%s: ProfileSH5Default=%s is not one of "
				      "none, energy, task, lustre, network, "
				      "all", plugin_type, tmp);
			xfree(tmp);
		}
		if (s_p_get_uint32(&cfg.compression, "ProfileSH5Compression",
				   tbl) && cfg.compression > 9)
			fatal("%s: ProfileSH5Compression=%u is not a deflate "
			      "level 0-9", plugin_type, cfg.compression);
		if (s_p_get_uint32(&cfg.flush_interval,
				   "ProfileSH5FlushInterval", tbl) &&
		    (cfg.flush_interval < 1 || cfg.flush_interval > 3600))
			fatal("%s: ProfileSH5FlushInterval=%u is not 1-3600 "
			      "seconds", plugin_type, cfg.flush_interval);
		s_p_get_string(&cfg.clock_server, "ProfileSH5ClockServer", tbl);
		if (s_p_get_uint32(&cfg.clock_interval,
				   "ProfileSH5ClockInterval", tbl) &&
		    (cfg.clock_interval < 1 || cfg.clock_interval > 86400))
			fatal("%s: ProfileSH5ClockInterval=%u is not 1-86400 "
			      "seconds", plugin_type, cfg.clock_interval);
		if (s_p_get_uint32(&cfg.clock_samples, "ProfileSH5ClockSamples",
				   tbl) &&
		    (cfg.clock_samples < 1 ||
		     cfg.clock_samples > SH5_NTP_MAX_SAMPLES))
			fatal("%s: ProfileSH5ClockSamples=%u is not 1-%d",
			      plugin_type, cfg.clock_samples,
			      SH5_NTP_MAX_SAMPLES);
		if (s_p_get_uint32(&cfg.clock_timeout, "ProfileSH5ClockTimeout",
				   tbl) &&
		    (cfg.clock_timeout < 10 || cfg.clock_timeout > 10000))
			fatal("%s: ProfileSH5ClockTimeout=%u is not 10-10000 "
			      "ms", plugin_type, cfg.clock_timeout);
		s_p_get_string(&cfg.stream_url, "ProfileSH5StreamURL", tbl);
		if (s_p_get_string(&tmp, "ProfileSH5StreamFormat", tbl)) {
			cfg.stream_format = sh5_stream_format_from_string(tmp);
			if (cfg.stream_format < 0)
				fatal("%s: ProfileSH5StreamFormat=%s is not one "
				      "of influx1, influx2, json", plugin_type,
				      tmp);
			xfree(tmp);
		}
		s_p_get_string(&cfg.stream_user, "ProfileSH5StreamUser", tbl);
		s_p_get_string(&cfg.stream_pass, "ProfileSH5StreamPass", tbl);
		s_p_get_string(&cfg.stream_token, "ProfileSH5StreamToken", tbl);
		s_p_get_uint32(&cfg.stream_timeout, "ProfileSH5StreamTimeout",
			       tbl);
		s_p_get_uint32(&cfg.stream_connect_timeout,
			       "ProfileSH5StreamConnectTimeout", tbl);
		s_p_get_string(&cfg.stream_spool, "ProfileSH5StreamSpoolDir",
			       tbl);
		s_p_get_uint64(&cfg.stream_spool_max,
			       "ProfileSH5StreamSpoolMax", tbl);
		s_p_get_uint32(&cfg.stream_queue, "ProfileSH5StreamQueue", tbl);
		s_p_get_uint32(&cfg.stream_batch, "ProfileSH5StreamBatch", tbl);
		s_p_get_uint32(&cfg.stream_flush, "ProfileSH5StreamFlush", tbl);
		if (s_p_get_uint32(&cfg.stream_deadline,
				   "ProfileSH5StreamDeadline", tbl) &&
		    (cfg.stream_deadline < 100 || cfg.stream_deadline > 60000))
			fatal("%s: ProfileSH5StreamDeadline=%u is not "
			      "100-60000 ms", plugin_type, cfg.stream_deadline);
		s_p_get_string(&cfg.stream_ca, "ProfileSH5StreamCAFile", tbl);
		s_p_get_boolean(&cfg.stream_insecure,
				"ProfileSH5StreamInsecure", tbl);
		s_p_get_boolean(&cfg.events, "ProfileSH5Events", tbl);
		if (s_p_get_uint32(&cfg.events_max, "ProfileSH5EventsMax",
				   tbl) &&
		    (cfg.events_max < 1 || cfg.events_max > 1048576))
			fatal("%s: ProfileSH5EventsMax=%u is not 1-1048576 MiB",
			      plugin_type, cfg.events_max);
		if (cfg.stream_spool && cfg.stream_spool[0] != '/')
			fatal("%s: ProfileSH5StreamSpoolDir=%s is not an "
			      "absolute path", plugin_type, cfg.stream_spool);
	}
	/* slurmstepd (23.02 on) calls conf_set twice: from its own read of
	 * acct_gather.conf, then with slurmd's copy.  Resolve a server once. */
	if (xstrcmp(cfg.clock_server, clock_resolved)) {
		clock_addrlen = 0;
		xfree(clock_resolved);
		clock_resolved = xstrdup(cfg.clock_server);
	} else if (cfg.clock_server) {
		log_flag(PROFILE, "%s: ProfileSH5ClockServer=%s already "
			 "resolved", plugin_type, cfg.clock_server);
	}
	if (cfg.clock_server && !clock_addrlen) {
		char host[256];
		int port;
		struct sh5_error err = { "" };

		/* A bad address disables the measurements, not the daemon. */
		if (sh5_ntp_parse_server(cfg.clock_server, host, sizeof(host),
					 &port, &err) < 0 ||
		    sh5_ntp_resolve(host, port, &clock_addr, &clock_addrlen,
				    &err) < 0) {
			clock_addrlen = 0;
			error("%s: ProfileSH5ClockServer=%s: %s: clock offsets "
			      "are not measured", plugin_type,
			      cfg.clock_server, err.text);
		}
	}
	if (!cfg.dir && running_in_slurmstepd()) {
		/* The first of the two calls, without a local file: slurmd's
		 * copy follows; node_step_start checks again. */
		debug("%s: no ProfileSH5Dir yet", plugin_type);
		return;
	}
	if (!cfg.dir)
		fatal("%s: no ProfileSH5Dir in acct_gather.conf: it is "
		      "required to use this plugin", plugin_type);
	if (cfg.dir[0] != '/')
		fatal("%s: ProfileSH5Dir=%s is not an absolute path",
		      plugin_type, cfg.dir);
	debug("%s loaded", plugin_name);
}

extern void acct_gather_profile_p_get(enum acct_gather_profile_info info_type,
				      void *data)
{
	switch (info_type) {
	case ACCT_GATHER_PROFILE_DIR:
		*(char **)data = xstrdup(cfg.dir);
		break;
	case ACCT_GATHER_PROFILE_DEFAULT:
		*(uint32_t *)data = cfg.def;
		break;
	case ACCT_GATHER_PROFILE_RUNNING:
		*(uint32_t *)data = profile_running;
		break;
	default:
		debug2("%s: get: info type %d unknown", plugin_type, info_type);
	}
}

/* Write the node group's attributes: the stock five, then ours. */
static int write_attrs(struct sh5_writer *w, stepd_step_rec_t *job,
		       struct sh5_error *err)
{
	char step[16], buf[64];
	struct tm tm;
	int64_t start_ns = (int64_t)step_start * 1000000000;
	const char *cluster = slurm_conf.cluster_name;
	int rc = 0;

	gmtime_r(&step_start, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	rc |= sh5_writer_attr_int(w, "Node Index", job->nodeid, err);
	rc |= sh5_writer_attr_str(w, "Node Name", job->node_name, err);
	rc |= sh5_writer_attr_int(w, "Number of Tasks", job->node_tasks, err);
	rc |= sh5_writer_attr_int(w, "CPUs per Task", job->cpus_per_task, err);
	rc |= sh5_writer_attr_str(w, "Start Time", slurm_ctime2(&step_start),
				  err);
	rc |= sh5_writer_attr_u32(w, "Job ID", job->step_id.job_id, err);
	rc |= sh5_writer_attr_str(w, "Step ID",
				  sh5_layout_step_name(job->step_id.step_id,
						       step, sizeof(step)),
				  err);
	rc |= sh5_writer_attr_u32(w, "Step Number", job->step_id.step_id, err);
	rc |= sh5_writer_attr_u32(w, "UID", job->uid, err);
	rc |= sh5_writer_attr_str(w, "User", job->user_name, err);
	rc |= sh5_writer_attr_str(w, "Cluster", cluster ? cluster : "", err);
	rc |= sh5_writer_attr_u32(w, "Number of Nodes", job->nnodes, err);
	rc |= sh5_writer_attr_u32(w, "Step Tasks", job->ntasks, err);
	rc |= sh5_writer_attr_str(w, "Start Time UTC", buf, err);
	rc |= sh5_writer_attr_i64(w, "Start Time ns", start_ns, err);
	rc |= sh5_writer_attr_i64(w, "Start Clock ns", now_ns(), err);
	rc |= sh5_writer_attr_str(w, "Profile",
				  acct_gather_profile_to_string(profile_running),
				  err);
	rc |= sh5_writer_attr_int(w, "Flush Interval", cfg.flush_interval,
				  err);
	rc |= sh5_writer_attr_str(w, "Slurm Version", SLURM_VERSION_STRING, err);
	rc |= sh5_writer_attr_str(w, "Plugin Version", PLUGIN_PACKAGE_VERSION,
				  err);
	rc |= sh5_writer_attr_int(w, "sh5 Format Version", SH5_FORMAT_VERSION,
				  err);
	return rc ? -1 : 0;
}

extern int acct_gather_profile_p_node_step_start(stepd_step_rec_t *job)
{
	struct sh5_writer_opts opts;
	struct sh5_error err = { "" };
	struct sh5_writer *w;
	char fname[256];
	int fd;

	if (in_child)
		return SLURM_SUCCESS;
	profile_running = profile_from_job(job);
	log_flag(PROFILE, "%s: node_step_start %ps profile=%s", plugin_type,
		 &job->step_id, acct_gather_profile_to_string(profile_running));
	if (profile_running <= ACCT_GATHER_PROFILE_NONE)
		return SLURM_SUCCESS;
	if (!cfg.dir) {
		error("%s: %ps: no ProfileSH5Dir in acct_gather.conf: "
		      "profiling off for this step", plugin_type,
		      &job->step_id);
		return SLURM_SUCCESS;
	}

	sh5_error_h5_silence();
	step_start = time(NULL);
	step_ended = false;
	ngroups = 0;
	atomic_store(&logged_add, 0);
	atomic_store(&logged_flush, 0);
	atomic_store(&logged_ended, 0);
	atomic_store(&freq_written, 0);
	if (sh5_layout_file_name(job->step_id.job_id, job->step_id.step_id,
				 job->node_name, fname, sizeof(fname)) < 0) {
		error("%s: %ps: node name %s unusable in a file name: "
		      "profiling off for this step", plugin_type,
		      &job->step_id, job->node_name);
		return SLURM_SUCCESS;
	}
	snprintf(file_path, sizeof(file_path), "%s/%s/%s", cfg.dir,
		 job->user_name, fname);
	fd = sh5_layout_open_node_file(cfg.dir, job->user_name, job->uid,
				       job->gid, fname, &err);
	if (fd < 0) {
		error("%s: %ps: %s: profiling off for this step", plugin_type,
		      &job->step_id, err.text);
		return SLURM_SUCCESS;
	}
	sh5_writer_opts_init(&opts);
	opts.compression = (int)cfg.compression;
	w = sh5_writer_create(file_path, fd, job->node_name, &opts, &err);
	close(fd);
	if (!w) {
		error("%s: %ps: %s: profiling off for this step", plugin_type,
		      &job->step_id, err.text);
		return SLURM_SUCCESS;
	}
	if (write_attrs(w, job, &err) < 0 || sh5_writer_flush(w, &err) < 0) {
		error("%s: %ps: %s: profiling off for this step", plugin_type,
		      &job->step_id, err.text);
		sh5_writer_close(w, NULL);
		return SLURM_SUCCESS;
	}
	pthread_rwlock_wrlock(&state_lock);
	writer = w;
	pthread_rwlock_unlock(&state_lock);

	if (cfg.clock_server)
		sh5_writer_attr_str(w, "Clock Server", cfg.clock_server, NULL);
	if (cfg.clock_server && clock_addrlen) {
		atomic_store(&logged_clock, 0);
		clock_worker.interval = cfg.clock_interval;
		worker_start(&clock_worker, "clock");
	}
	stream_start(job);
	events_start(job, fname);
	flush_worker.interval = cfg.flush_interval;
	if (!worker_start(&flush_worker, "flush"))
		error("%s: samples are written at step end only", plugin_type);
	log_flag(PROFILE, "%s: writing %s", plugin_type, file_path);
	return SLURM_SUCCESS;
}

extern int acct_gather_profile_p_child_forked(void)
{
	/* In the task between fork and exec: touch nothing (the HDF5 file
	 * and our threads belong to the parent). */
	in_child = true;
	return SLURM_SUCCESS;
}

extern int acct_gather_profile_p_node_step_end(void)
{
	struct sh5_writer_stats st = { 0 };

	if (in_child)
		return SLURM_SUCCESS;
	step_ended = true;
	worker_stop(&clock_worker);
	worker_stop(&flush_worker);
	stream_stop();
	events_absorb();
	pthread_rwlock_rdlock(&state_lock);
	if (writer) {
		write_frequencies(writer);
		sh5_writer_stats(writer, &st);
	}
	pthread_rwlock_unlock(&state_lock);
	stop_profiling(NULL);
	if (profile_running > ACCT_GATHER_PROFILE_NONE)
		log_flag(PROFILE, "%s: node_step_end: %s: %" PRIu64
			 " samples buffered, %" PRIu64 " dropped",
			 plugin_type, file_path, st.written, st.dropped);
	return SLURM_SUCCESS;
}

extern int acct_gather_profile_p_task_start(uint32_t taskid)
{
	log_flag(PROFILE, "%s: task_start %u", plugin_type, taskid);
	return SLURM_SUCCESS;
}

extern int acct_gather_profile_p_task_end(pid_t taskpid)
{
	log_flag(PROFILE, "%s: task_end %d", plugin_type, (int)taskpid);
	return SLURM_SUCCESS;
}

extern int64_t acct_gather_profile_p_create_group(const char *name)
{
	int i;

	if (in_child || !name || !name[0] || strlen(name) >= SH5_NAME_MAX)
		return SLURM_ERROR;
	/* Called under Slurm's profile lock: the table needs no other. */
	for (i = 0; i < ngroups; i++)
		if (!strcmp(group_names[i], name))
			return i;
	if (ngroups == MAX_GROUPS) {
		error("%s: too many groups, %s refused", plugin_type, name);
		return SLURM_ERROR;
	}
	snprintf(group_names[ngroups], SH5_NAME_MAX, "%s", name);
	return ngroups++;
}

extern int acct_gather_profile_p_create_dataset(
	const char *name, int64_t parent,
	acct_gather_profile_dataset_t *dataset)
{
	const char *names[128];
	enum sh5_ftype types[128];
	const char *pname = NULL;
	struct sh5_series *s;
	struct sh5_error err = { "" };
	size_t n = 0;
	int id = SLURM_ERROR, type;

	if (in_child || profile_running <= ACCT_GATHER_PROFILE_NONE)
		return SLURM_ERROR;
	if (parent >= 0 && parent < ngroups)
		pname = group_names[parent];
	else if (parent != NO_PARENT) {
		error("%s: dataset %s: unknown parent group %" PRId64,
		      plugin_type, name, parent);
		return SLURM_ERROR;
	}
	while (dataset && dataset[n].type != PROFILE_FIELD_NOT_SET &&
	       n < sizeof(names) / sizeof(names[0])) {
		names[n] = dataset[n].name;
		types[n] = dataset[n].type == PROFILE_FIELD_DOUBLE ?
				   SH5_FT_DOUBLE : SH5_FT_U64;
		n++;
	}
	if (!(s = sh5_series_create(pname, name, names, types, n, &err))) {
		error("%s: dataset %s: %s", plugin_type, name, err.text);
		return SLURM_ERROR;
	}
	type = pname && !strcmp(pname, "Tasks") ? PROFILE_TASK :
	       !strcmp(name, "Energy") ? PROFILE_ENERGY :
	       !strcmp(name, "Filesystem") ? PROFILE_FILESYSTEM :
	       !strcmp(name, "Network") ? PROFILE_NETWORK : PROFILE_TASK;
	pthread_rwlock_rdlock(&state_lock);
	if (writer)
		id = sh5_writer_add_series(writer, pname, s, sample_hz(type),
					   &err);
	else
		sh5_series_destroy(s);
	pthread_rwlock_unlock(&state_lock);
	if (id < 0 && err.text[0])
		error("%s: dataset %s: %s", plugin_type, name, err.text);
	log_flag(PROFILE, "%s: dataset %s%s%s has id %d", plugin_type,
		 pname ? pname : "", pname ? "/" : "", name, id);
	return id < 0 ? SLURM_ERROR : id;
}

extern int acct_gather_profile_p_add_sample_data(int dataset_id, void *data,
						 time_t sample_time)
{
	union sh5_value rec[SH5_TIME_SLOTS + 129];
	const struct sh5_series *s;
	int rc = SLURM_SUCCESS;

	if (in_child)
		return SLURM_SUCCESS;
	pthread_rwlock_rdlock(&state_lock);
	if (!writer) {
		pthread_rwlock_unlock(&state_lock);
		if (step_ended && !atomic_exchange(&logged_ended, 1))
			debug("%s: sample after node_step_end ignored",
			      plugin_type);
		return SLURM_SUCCESS;
	}
	s = sh5_writer_series(writer, dataset_id);
	if (!s) {
		pthread_rwlock_unlock(&state_lock);
		if (!atomic_exchange(&logged_add, 1))
			error("%s: sample for unknown dataset id %d ignored",
			      plugin_type, dataset_id);
		return SLURM_ERROR;
	}
	memset(rec, 0, sizeof(rec));
	rec[0].u = sample_time > step_start ?
			   (uint64_t)(sample_time - step_start) : 0;
	rec[1].u = (uint64_t)sample_time;
	rec[2].i = now_ns();
	/* Slurm hands the fields as an array of 8-byte unions, in the
	 * order of the dataset definition: the same as our slots. */
	memcpy(&rec[SH5_TIME_SLOTS], data, s->nfields * sizeof(rec[0]));
	stream_push(s, rec);
	if (sh5_writer_append(writer, dataset_id, rec) < 0) {
		if (errno == ENOBUFS && !atomic_exchange(&logged_add, 1))
			error("%s: %s: sample buffer full, samples dropped",
			      plugin_type, file_path);
		rc = SLURM_ERROR;
	}
	pthread_rwlock_unlock(&state_lock);
	return rc;
}

static void add_pair(list_t *data, const char *name, char *value)
{
	config_key_pair_t *kp = xmalloc(sizeof(*kp));

	kp->name = xstrdup(name);
	kp->value = value;
	list_append(data, kp);
}

/*
 * The stream URL for display: user info and the u=, p=, token= query
 * parameters replaced by "***".  xmalloc'd; NULL for NULL.
 */
static char *masked_url(const char *url)
{
	const char *p, *host, *at, *slash, *q;
	char *out = NULL;

	if (!url)
		return NULL;
	p = strstr(url, "://");
	host = p ? p + 3 : url;
	slash = strchr(host, '/');
	at = strchr(host, '@');
	if (at && (!slash || at < slash)) {
		xstrncat(out, url, host - url);
		xstrcat(out, "***");
		p = at;
	} else {
		p = url;
	}
	q = strchr(p, '?');
	if (!q) {
		xstrcat(out, p);
		return out;
	}
	xstrncat(out, p, q - p + 1);
	for (q++; *q;) {
		const char *end = strchr(q, '&');
		size_t len = end ? (size_t)(end - q) : strlen(q);

		if (!strncmp(q, "u=", 2) || !strncmp(q, "p=", 2) ||
		    !strncmp(q, "token=", 6)) {
			xstrncat(out, q, strchr(q, '=') - q + 1);
			xstrcat(out, "***");
		} else {
			xstrncat(out, q, len);
		}
		if (!end)
			break;
		xstrcat(out, "&");
		q = end + 1;
	}
	return out;
}

/* What `scontrol show config` prints.  Never credentials. */
extern void acct_gather_profile_p_conf_values(list_t **data)
{
	add_pair(*data, "ProfileSH5Dir", xstrdup(cfg.dir));
	add_pair(*data, "ProfileSH5Default",
		 xstrdup(acct_gather_profile_to_string(cfg.def)));
	add_pair(*data, "ProfileSH5Compression",
		 xstrdup_printf("%u", cfg.compression));
	add_pair(*data, "ProfileSH5FlushInterval",
		 xstrdup_printf("%u sec", cfg.flush_interval));
	add_pair(*data, "ProfileSH5ClockServer", xstrdup(cfg.clock_server));
	add_pair(*data, "ProfileSH5ClockInterval",
		 xstrdup_printf("%u sec", cfg.clock_interval));
	add_pair(*data, "ProfileSH5ClockSamples",
		 xstrdup_printf("%u", cfg.clock_samples));
	add_pair(*data, "ProfileSH5ClockTimeout",
		 xstrdup_printf("%u ms", cfg.clock_timeout));
	add_pair(*data, "ProfileSH5StreamURL", masked_url(cfg.stream_url));
	add_pair(*data, "ProfileSH5StreamFormat",
		 xstrdup(sh5_stream_format_name(cfg.stream_format)));
	add_pair(*data, "ProfileSH5StreamUser", xstrdup(cfg.stream_user));
	/* Never the secrets themselves. */
	add_pair(*data, "ProfileSH5StreamPass",
		 xstrdup(cfg.stream_pass ? "(set)" : NULL));
	add_pair(*data, "ProfileSH5StreamToken",
		 xstrdup(cfg.stream_token ? "(set)" : NULL));
	add_pair(*data, "ProfileSH5StreamSpoolDir", xstrdup(cfg.stream_spool));
	add_pair(*data, "ProfileSH5StreamDeadline",
		 xstrdup_printf("%u ms", cfg.stream_deadline));
	add_pair(*data, "ProfileSH5Events",
		 xstrdup(cfg.events ? "yes" : "no"));
	add_pair(*data, "ProfileSH5EventsMax",
		 xstrdup_printf("%u MiB", cfg.events_max));
}

extern bool acct_gather_profile_p_is_active(uint32_t type)
{
	bool have_file;

	if (profile_running <= ACCT_GATHER_PROFILE_NONE || in_child)
		return false;
	/* Once profiling of the step stopped (no file), gather plugins
	 * should not keep trying to create datasets. */
	pthread_rwlock_rdlock(&state_lock);
	have_file = writer != NULL;
	pthread_rwlock_unlock(&state_lock);
	if (!have_file)
		return false;
	return (type == ACCT_GATHER_PROFILE_NOT_SET) ||
	       (profile_running & type);
}
