/*
 * sh5_events.c - the plugin's application events (src/events/evabsorb.h).
 */
#include "config.h" /* Slurm's */
#include "slurm_compat.h" /* release differences; before any other header */

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/common/slurm_xlator.h"
#if SH5_SLURM_INTERFACES
#include "src/interfaces/acct_gather_profile.h"
#else
#include "src/common/slurm_acct_gather_profile.h"
#endif
#include "src/common/env.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmd/slurmstepd/slurmstepd_job.h"

#include "common/error.h"
#include "events/evabsorb.h"
#include "events/evformat.h"
#include "events/evstore.h"
#include "profile/writer.h"
#include "sh5_events.h"
#include "sh5_options.h"
#include "sh5_plugin_int.h"

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
void events_start(stepd_step_rec_t *job, const char *fname)
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
void events_absorb(void)
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

void events_fini(void)
{
	xfree(ev.user);
}
