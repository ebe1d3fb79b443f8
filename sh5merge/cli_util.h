/*
 * cli_util.h - helpers shared by the merge, extract and list subcommands.
 */
#ifndef SH5MERGE_CLI_UTIL_H
#define SH5MERGE_CLI_UTIL_H

#include <stddef.h>

/* "sh5merge: FILE: reason" on stderr (FILE may be NULL). */
void cli_error(const char *file, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "sh5merge: warning: FILE: reason" on stderr, unless quiet. */
void cli_warn(const char *file, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The profile directory from acct_gather.conf (beside $SLURM_CONF, else
 * /etc/slurm/acct_gather.conf): ProfileSH5Dir, else ProfileHDF5Dir.
 * Returns 0 with buf set, -1 if neither is configured (conf_path then
 * names the file read).
 */
int cli_profile_dir(char *buf, size_t len, char *conf_path, size_t clen);

/*
 * Progress on stderr: only when stderr is a terminal, not quiet, and the
 * run has lasted more than a second.  done == total ends the line.
 */
void cli_progress(const char *what, size_t done, size_t total);

#endif
