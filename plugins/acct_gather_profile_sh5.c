/*
 * acct_gather_profile_sh5.c - Slurm profile plugin writing sh5 node-step
 * files (HDF5), one per node and step.
 *
 * The plugin is only the glue between slurmstepd and the sh5 library
 * (src/): it translates Slurm's calls and types, keeps the per-step state,
 * runs the flush thread and logs.  It never calls fatal() after start-up
 * (only conf_set, at daemon start, may refuse a broken configuration) and
 * never does file I/O while Slurm holds its profile lock: add_sample_data
 * only copies a record into memory.
 *
 * This file holds the Slurm entry points and the step state; the rest is
 * in files of their own:
 *   sh5_options.c  the ProfileSH5* keys: defaults, validation, display
 *   sh5_worker.c   the periodic step threads (flush, clock)
 *   sh5_clock.c    clock-offset measurements (ProfileSH5Clock*)
 *   sh5_stream.c   live streaming (ProfileSH5Stream*)
 *   sh5_events.c   application events: the tasks' spill files absorbed
 *   sh5_plugin_int.h  the state they share
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
#include "profile/layout.h"
#include "profile/series.h"
#include "stream/stream.h"
#include "profile/writer.h"
#include "sh5_clock.h"
#include "sh5_events.h"
#include "sh5_options.h"
#include "sh5_plugin_int.h"
#include "sh5_stream.h"
#include "sh5_worker.h"

const char plugin_name[] = "AcctGatherProfile sh5 plugin";
const char plugin_type[] = "acct_gather_profile/sh5";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

#define MAX_GROUPS 64

/*
 * Step state.  The rwlock guards the writer pointer: sample paths take it
 * shared, node_step_end exclusive to detach the writer before closing it.
 */
pthread_rwlock_t state_lock = PTHREAD_RWLOCK_INITIALIZER;
struct sh5_writer *writer;
struct sh5_stream *stream;  /* also guarded by state_lock */
static uint32_t profile_running = ACCT_GATHER_PROFILE_NOT_SET;
static time_t step_start;
char file_path[4096];
static bool in_child;      /* set in the forked task before exec */
static bool step_ended;

/*
 * The HDF5 file is created (with the node attributes and a first flush)
 * by the flush thread once every task of the node is forked, not at
 * node_step_start: slurmstepd's peak of memory comes between the two
 * (hwloc's topology, loaded and freed before the tasks are forked), and
 * HDF5's file structures (about 1.1 MiB resident) then no longer add to
 * it.  Slurm calls task_start just before each fork: a thread holding a
 * libc lock (the time zone's, in localtime) at a fork leaves it locked
 * in the child, so the flush thread is woken only by the first task
 * sample after the last task_start (start_kick: slurmstepd gathers the
 * samples of the tasks it added to its accounting, and it adds them
 * after the last fork), and the time strings are made at
 * node_step_start.  The writer takes series and
 * samples before that as always; whichever of that flush, the flush
 * interval, node_step_end or fini comes first writes the start
 * (file_start).  The file itself, and with it every error of its
 * directory, is made at node_step_start.
 */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static bool start_pending;          /* start_lock */
static stepd_step_rec_t *start_job; /* lives as long as the step */
static int64_t start_clock_ns;      /* the clock at node_step_start */
static atomic_int start_kicked;     /* the flush thread woken for it */
static atomic_uint tasks_started;   /* task_start calls of this step */
static char start_ctime[64];        /* "Start Time", made at step start */
static char start_utc[32];          /* "Start Time UTC", likewise */
static bool file_start(const char *why);

static char group_names[MAX_GROUPS][SH5_NAME_MAX];
static int ngroups;

/* Sampling frequencies are known only once slurmstepd started polling,
 * after node_step_start: written by the first flush. */
static atomic_int freq_written;

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
	if (file_start(atomic_load(&start_kicked) ? NULL :
		       "at the flush interval"))
		return; /* it flushed */
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

extern int init(void)
{
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	if (!in_child) {
		file_start("at fini");
		worker_stop(&clock_worker);
		worker_stop(&flush_worker);
		stream_stop();
		stop_profiling(NULL);
	}
	sh5_options_fini();
	events_fini();
	return SLURM_SUCCESS;
}

extern void acct_gather_profile_p_conf_options(s_p_options_t **full_options,
					       int *full_options_cnt)
{
	sh5_options_declare(full_options, full_options_cnt);
}

extern void acct_gather_profile_p_conf_set(s_p_hashtbl_t *tbl)
{
	sh5_options_set(tbl);
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
	char step[16];
	int64_t start_ns = (int64_t)step_start * 1000000000;
	const char *cluster = slurm_conf.cluster_name;
	int rc = 0;

	rc |= sh5_writer_attr_int(w, "Node Index", job->nodeid, err);
	rc |= sh5_writer_attr_str(w, "Node Name", job->node_name, err);
	rc |= sh5_writer_attr_int(w, "Number of Tasks", job->node_tasks, err);
	rc |= sh5_writer_attr_int(w, "CPUs per Task", job->cpus_per_task, err);
	rc |= sh5_writer_attr_str(w, "Start Time", start_ctime, err);
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
	rc |= sh5_writer_attr_str(w, "Start Time UTC", start_utc, err);
	rc |= sh5_writer_attr_i64(w, "Start Time ns", start_ns, err);
	rc |= sh5_writer_attr_i64(w, "Start Clock ns", start_clock_ns, err);
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

/* Write the file's start (see start_pending) unless done: true if this
 * call did (a failure stops the step's profiling, logged).  why: the
 * log's words for when (NULL: woken by start_kick). */
static bool file_start(const char *why)
{
	struct sh5_error err = { "" };
	bool did = false;
	int rc = 0;

	pthread_mutex_lock(&start_lock);
	if (start_pending) {
		start_pending = false;
		did = true;
		pthread_rwlock_rdlock(&state_lock);
		if (writer) {
			rc = write_attrs(writer, start_job, &err);
			if (!rc && cfg.clock_server)
				rc = sh5_writer_attr_str(writer, "Clock Server",
							 cfg.clock_server,
							 &err);
			if (!rc) {
				write_frequencies(writer);
				rc = sh5_writer_flush(writer, &err);
			}
		}
		pthread_rwlock_unlock(&state_lock);
	}
	pthread_mutex_unlock(&start_lock);
	if (rc < 0)
		stop_profiling(err.text);
	else if (did && why)
		log_flag(PROFILE, "%s: file start written %s", plugin_type,
			 why);
	else if (did)
		log_flag(PROFILE, "%s: file start written once the tasks "
			 "were forked, %u of %u tasks started", plugin_type,
			 atomic_load(&tasks_started),
			 start_job ? start_job->node_tasks : 0);
	return did;
}

/* Wake the flush thread for the file's start when every task of the node
 * is forked: called for each sample; only a task's sample (series of the
 * Tasks group) after the last task_start kicks (see start_pending). */
static void start_kick(const struct sh5_series *s)
{
	if (atomic_load(&start_kicked) || !start_job || !s->ops->group ||
	    strcmp(s->ops->group, "Tasks") ||
	    atomic_load(&tasks_started) < start_job->node_tasks ||
	    atomic_exchange(&start_kicked, 1))
		return;
	worker_kick(&flush_worker);
}

/* The node attributes' time strings, made at node_step_start: the flush
 * thread that writes them may run beside a fork (see start_pending). */
static void step_times(time_t t)
{
	struct tm tm;

	snprintf(start_ctime, sizeof(start_ctime), "%s", slurm_ctime2(&t));
	gmtime_r(&t, &tm);
	strftime(start_utc, sizeof(start_utc), "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The writer's options from acct_gather.conf. */
static void conf_writer_opts(struct sh5_writer_opts *o)
{
	sh5_writer_opts_init(o);
	o->compression = (int)cfg.compression;
	o->recompress = cfg.recompress;
	o->defer_file = 1; /* file_start() */
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
	start_clock_ns = now_ns();
	step_times(step_start);
	atomic_store(&tasks_started, 0);
	step_ended = false;
	ngroups = 0;
	atomic_store(&logged_add, 0);
	atomic_store(&logged_flush, 0);
	atomic_store(&logged_ended, 0);
	atomic_store(&freq_written, 0);
	atomic_store(&start_kicked, 0);
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
	conf_writer_opts(&opts);
	w = sh5_writer_create(file_path, fd, job->node_name, &opts, &err);
	close(fd);
	if (!w) {
		error("%s: %ps: %s: profiling off for this step", plugin_type,
		      &job->step_id, err.text);
		return SLURM_SUCCESS;
	}
	pthread_mutex_lock(&start_lock);
	start_job = job;
	start_pending = true;
	pthread_mutex_unlock(&start_lock);
	pthread_rwlock_wrlock(&state_lock);
	writer = w;
	pthread_rwlock_unlock(&state_lock);

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
	file_start("at node_step_end");
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
	/* Just before a fork, under Slurm's profile lock: only counted (the
	 * file's start waits for the last fork, see start_kick). */
	if (!in_child)
		atomic_fetch_add(&tasks_started, 1);
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
	start_kick(s);
	pthread_rwlock_unlock(&state_lock);
	return rc;
}

/* What `scontrol show config` prints.  Never credentials. */
extern void acct_gather_profile_p_conf_values(list_t **data)
{
	sh5_options_values(data);
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
