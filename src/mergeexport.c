/* mergeexport.c - see mergeexport.h */
#include "config.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "mergeexport.h"

void sh5_mergeexport_opts_init(struct sh5_mergeexport_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->lbdata.stem = "data";
	o->lbdata.phase_length = 60.0;
	o->lbdata.compress = SH5_LBDATA_PLAIN;
	o->lbdata.migratable = 1;
	o->counters.sigma = 6.0;
}

/* ".<base>.tmp.<pid>" beside path; NULL on out of memory. */
static char *temp_beside(const char *path)
{
	char *a = strdup(path), *b = strdup(path), *t = NULL;
	size_t len;

	if (a && b) {
		const char *dir = dirname(a), *base = basename(b);

		len = strlen(dir) + strlen(base) + 40;
		if ((t = malloc(len)))
			snprintf(t, len, "%s/.%s.tmp.%ld", dir, base,
				 (long)getpid());
	}
	free(a);
	free(b);
	return t;
}

/* Write the counters packet to tmp.  0 or -1 (tmp removed). */
static int write_counters(const char *job, const char *tmp,
			  const struct sh5_mergeexport_opts *o,
			  struct sh5_counters_result *res,
			  struct sh5_error *errp)
{
	FILE *fp = fopen(tmp, "wx");
	struct sh5_json *j = NULL;
	int rc = -1;

	if (!fp)
		return sh5_errprintf(errp, "%s: %s", tmp, strerror(errno));
	if (!(j = sh5_json_create_file(fp, o->pretty ? SH5_JSON_PRETTY : 0,
				       errp)))
		goto out;
	if (sh5_counters_export(job, j, &o->counters, res, errp) < 0)
		goto out;
	if (sh5_json_finish(j, errp) < 0)
		goto out;
	if (fputc('\n', fp) == EOF || fflush(fp) != 0 || fsync(fileno(fp)) < 0) {
		sh5_errprintf(errp, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	sh5_json_destroy(j);
	if (fclose(fp) != 0 && rc == 0)
		rc = sh5_errprintf(errp, "%s: %s", tmp, strerror(errno));
	if (rc < 0)
		unlink(tmp);
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
	char *tmp = NULL;
	int rc = -1, e;

	if (!cres)
		cres = &cdummy;
	if (!lsum)
		lsum = &ldummy;
	memset(cres, 0, sizeof(*cres));
	memset(lsum, 0, sizeof(*lsum));
	if (o->counters_path) {
		if (!(tmp = temp_beside(o->counters_path))) {
			errno = ENOMEM;
			return sh5_errprintf(errp, "out of memory");
		}
		if (write_counters(job, tmp, o, cres, errp) < 0)
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
	if (tmp && rename(tmp, o->counters_path) < 0) {
		sh5_errprintf(errp, "%s: %s", o->counters_path,
			      strerror(errno));
		goto out;
	}
	free(tmp);
	tmp = NULL;
	rc = 0;
out:
	e = errno;
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	if (cres == &cdummy)
		sh5_counters_result_free(cres);
	if (lsum == &ldummy)
		sh5_lbdata_summary_free(lsum);
	errno = e;
	return rc;
}
