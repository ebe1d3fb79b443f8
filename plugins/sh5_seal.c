/*
 * sh5_seal.c - the plugin's seals of node-step files (see sh5_seal.h and
 * doc/security.md "Sealed node-step files").
 */
#include "config.h" /* Slurm's */
#include "slurm_compat.h" /* release differences; before any other header */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "src/common/slurm_xlator.h"
#include "src/common/log.h"
#include "src/slurmd/slurmstepd/slurmstepd_job.h"

#include "common/error.h"
#include "profile/layout.h"
#include "profile/series.h"
#include "profile/seal.h"
#include "sh5_options.h"
#include "sh5_plugin_int.h"
#include "sh5_seal.h"

static struct {
	int fd;                  /* the node-step file, or -1 */
	struct sh5_seal_key key;
	uint32_t job;
	char step[32], node[SH5_NAME_MAX], file[SH5_NAME_MAX + 64];
} seal = { .fd = -1 };

/* The key to use: ProfileSH5SealKey, else the default when it exists;
 * 0 loaded, -1 none (a refusal logged). */
static int seal_key(void)
{
	const char *path = cfg.seal_key ? cfg.seal_key : SH5_SEAL_KEY_DEFAULT;
	struct sh5_error err = { "" };

	if (!strcmp(path, "none"))
		return -1;
	if (sh5_seal_key_load(path, 0, &seal.key, &err) == 0)
		return 0;
	/* No key at the default path: sealing is simply off. */
	if (errno != ENOENT || cfg.seal_key)
		error("%s: ProfileSH5SealKey: %s: node-step files are not "
		      "sealed", plugin_type, err.text);
	return -1;
}

void seal_step_start(int fd, stepd_step_rec_t *job, const char *fname)
{
	seal_step_closed(0); /* a previous step's, never sealed */
	if (fd < 0 || seal_key() < 0)
		return;
	seal.job = job->step_id.job_id;
	sh5_layout_step_name(job->step_id.step_id, seal.step,
			     sizeof(seal.step));
	snprintf(seal.node, sizeof(seal.node), "%s", job->node_name);
	snprintf(seal.file, sizeof(seal.file), "%s", fname);
	if ((seal.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0)
		error("%s: %s: cannot keep it to seal: %m", plugin_type,
		      file_path);
}

void seal_step_closed(int ok)
{
	struct sh5_error err = { "" };
	struct sh5_seal_id id = { seal.job, seal.step, seal.node, seal.file };

	if (seal.fd < 0)
		return;
	if (!ok)
		log_flag(PROFILE, "%s: %s not sealed: its close failed",
			 plugin_type, file_path);
	else if (sh5_seal_fd(seal.fd, &seal.key, &id, &err) < 0)
		error("%s: %s: %s (merged with the full checks)",
		      plugin_type, file_path, err.text);
	else
		log_flag(PROFILE, "%s: %s sealed", plugin_type, file_path);
	close(seal.fd);
	seal.fd = -1;
	explicit_bzero(&seal.key, sizeof(seal.key));
}
