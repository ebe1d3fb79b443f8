/*
 * cli_util.h - helpers shared by the sh5merge subcommands.
 */
#ifndef SH5MERGE_CLI_UTIL_H
#define SH5MERGE_CLI_UTIL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdio.h>

#include "common/error.h"

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

struct sh5_evstep;

/*
 * The events of one step of the job file in, for the commands that
 * export them (events, otf2): the file is checked as a regular file and
 * opened, the step chosen (step NULL: the only step with events) and
 * read; without raw its events must carry corrected times.  Returns the
 * step (free with sh5_evstep_free()) with *file the open job file (close
 * with H5Fclose()), or NULL after printing the reason.
 */
struct sh5_evstep *cli_read_events(const char *in, const char *step,
				   int raw, hid_t *file);

/* Writes the whole output to f (named name in messages); returns 0 or -1
 * with errp set. */
typedef int (*cli_writer_fn)(void *arg, FILE *f, const char *name,
			     struct sh5_error *errp);

/*
 * Write out through fn (common/outfile.h: a temporary file beside it
 * renamed when complete; "-" or a device written in place; the input in
 * refused as output).  Returns 0, or -1 after printing the reason.
 */
int cli_write_out(const char *in, const char *out, cli_writer_fn fn,
		  void *arg);

/*
 * Grow the heap once by reserve bytes and ask the kernel for huge pages
 * there (transparent huge pages, when set to "madvise"): a process that
 * touches tens of MiB of small HDF5 blocks takes a few page faults
 * instead of thousands.  Blocks up to reserve come from that heap.
 * Nothing when SH5MERGE_NO_HUGEPAGES is set or off Linux/glibc.
 */
void cli_heap_hugepages(size_t reserve);

#endif
