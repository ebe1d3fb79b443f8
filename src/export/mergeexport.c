/* mergeexport.c - see mergeexport.h */
#include "config.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json.h"
#include "export/mergeexport.h"
#include "common/outfile.h"

void sh5_mergeexport_opts_init(struct sh5_mergeexport_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->lbdata.stem = "data";
	o->lbdata.phase_length = 60.0;
	o->lbdata.compress = SH5_LBDATA_PLAIN;
	o->lbdata.migratable = 1;
	o->counters.sigma = 6.0;
}

/* Write the counters packet into of (not committed).  0 or -1. */
static int write_counters(const char *job, struct sh5_outfile *of,
			  const struct sh5_mergeexport_opts *o,
			  struct sh5_counters_result *res,
			  struct sh5_error *errp)
{
	FILE *fp = sh5_outfile_fp(of);
	struct sh5_json *j = NULL;
	int rc = -1;

	if (!fp)
		return sh5_errprintf(errp, "%s: %s", o->counters_path,
				     strerror(errno));
	if (!(j = sh5_json_create_file(fp, o->pretty ? SH5_JSON_PRETTY : 0,
				       errp)))
		goto out;
	sh5_json_set_name(j, o->counters_path);
	if (sh5_counters_export(job, j, &o->counters, res, errp) < 0)
		goto out;
	if (sh5_json_finish(j, errp) < 0)
		goto out;
	if (fputc('\n', fp) == EOF) {
		sh5_errprintf(errp, "%s: write failed: %s", o->counters_path,
			      strerror(errno));
		goto out;
	}
	rc = 0;
out:
	sh5_json_destroy(j);
	return rc;
}

int sh5_mergeexport_run(const char *job,
			const struct sh5_mergeexport_opts *o,
			struct sh5_lbdata_summary *lsum,
			struct sh5_counters_result *cres,
			struct sh5_error *errp)
{
	struct sh5_counters_result cdummy;
	struct sh5_lbdata_summary ldummy;
	struct sh5_outfile of = { .fd = -1 };
	int rc = -1, e, counters = 0;

	if (!cres)
		cres = &cdummy;
	if (!lsum)
		lsum = &ldummy;
	memset(cres, 0, sizeof(*cres));
	memset(lsum, 0, sizeof(*lsum));
	if (o->counters_path) {
		if (sh5_outfile_open(&of, o->counters_path, &job, 1,
				     errp) < 0)
			goto out;
		counters = 1;
		if (write_counters(job, &of, o, cres, errp) < 0)
			goto out;
	}
	if (o->lbdata.dir) {
		if (mkdir(o->lbdata.dir, 0777) < 0 && errno != EEXIST) {
			sh5_errprintf(errp, "%s: %s", o->lbdata.dir,
				      strerror(errno));
			goto out;
		}
		if (sh5_lbdata_export(job, &o->lbdata, lsum, errp) < 0)
			goto out;
	}
	if (counters && sh5_outfile_commit(&of, errp) < 0)
		goto out;
	rc = 0;
out:
	e = errno;
	sh5_outfile_abort(&of);
	if (cres == &cdummy)
		sh5_counters_result_free(cres);
	if (lsum == &ldummy)
		sh5_lbdata_summary_free(lsum);
	errno = e;
	return rc;
}
