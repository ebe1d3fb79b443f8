/*
 * sh5_stream.c - the plugin's live streaming of samples (ProfileSH5Stream*).
 */
#include "config.h" /* Slurm's */
#include "slurm_compat.h" /* release differences; before any other header */

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/common/slurm_xlator.h"
#if SH5_SLURM_INTERFACES
#include "src/interfaces/acct_gather_profile.h"
#else
#include "src/common/slurm_acct_gather_profile.h"
#endif
#include "src/slurmd/slurmstepd/slurmstepd_job.h"

#include "common/error.h"
#include "profile/layout.h"
#include "profile/series.h"
#include "profile/writer.h"
#include "stream/record.h"
#include "stream/stream.h"
#include "sh5_options.h"
#include "sh5_plugin_int.h"
#include "sh5_stream.h"

/* Log the stream's latest error, once per distinct error. */
void stream_log_error(struct sh5_stream *st)
{
	char buf[256];

	if (st && sh5_stream_last_error(st, buf, sizeof(buf)))
		error("%s: stream: %s", plugin_type, buf);
}

void stream_start(stepd_step_rec_t *job)
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
void stream_push(const struct sh5_series *s, const union sh5_value *rec)
{
	sh5_stream_push_record(stream, s, rec);
}

/* Close the stream within its deadline; counters go to the file. */
void stream_stop(void)
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
