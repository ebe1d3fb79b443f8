/*
 * mergeexport.h - the exports of `sh5merge merge ... --lbdata DIR
 * --counters FILE` (issue 6) in the same run as the merge.
 *
 * Both exporters read a job file (lbdata.h, counters.h); here they read
 * the job file the merge has just written, verified and renamed into
 * place.  The outputs are written under temporary names and appear only
 * complete: the counters JSON as `.<name>.tmp.<pid>` beside FILE, renamed
 * once both exports succeeded; the rank files as lbdata.h describes
 * (renamed when all of them are written).  On failure nothing of the
 * exports is left behind; the job file stays (it is complete and
 * verified).  See doc/sh5merge.md, "merge: exports in the same run".
 */
#ifndef SH5_MERGEEXPORT_H
#define SH5_MERGEEXPORT_H

#include "export/counters.h"
#include "common/error.h"
#include "export/lbdata.h"

struct sh5_mergeexport_opts {
	/* LBDatafile: lbdata.dir NULL for none; the directory is created
	 * (one level) when missing. */
	struct sh5_lbdata_opts lbdata;
	/* Counter statistics: counters_path NULL for none. */
	const char *counters_path;
	struct sh5_counters_opts counters;
	int pretty;		/* indent the counters JSON */
};

/* Defaults as the lbdata and counters subcommands: stem "data", phases of
 * 60 s, no compression, migratable; sigma 6, no top list. */
void sh5_mergeexport_opts_init(struct sh5_mergeexport_opts *o);

/*
 * Run the configured exports on the job file at job.  lsum and cres (may
 * be NULL) receive the exporters' figures (free them with
 * sh5_lbdata_summary_free() and sh5_counters_result_free(); they are
 * zeroed first).  Returns 0, or -1 with errno set and errp filled.
 */
int sh5_mergeexport_run(const char *job,
			const struct sh5_mergeexport_opts *o,
			struct sh5_lbdata_summary *lsum,
			struct sh5_counters_result *cres,
			struct sh5_error *errp);

#endif /* SH5_MERGEEXPORT_H */
