/*
 * jobread_int.h - internals of the job-file reader: jobread.c opens the
 * file and lists its steps, jobwalk.c walks the series of a step.
 */
#ifndef SH5_JOBREAD_INT_H
#define SH5_JOBREAD_INT_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

struct namelist {
	char **v;
	size_t n, cap;
};

struct sh5_jobread {
	hid_t file;
	char *path;
	char job_id[64];
	struct namelist steps;
	int steps_listed;
};

void jr_namelist_free(struct namelist *l);
int jr_namelist_add(struct namelist *l, const char *s);
/* A whole string as a non-negative decimal integer; 0 or -1. */
int jr_parse_int(const char *s, int64_t *out);
/* qsort order: numeric names first (numerically), then by strcmp. */
int jr_cmp_names(const void *a, const void *b);
/* The members of group g of type want (UNKNOWN: any), sorted. */
int jr_list_members(hid_t g, H5O_type_t want, struct namelist *l);
/* Attribute name of obj as text (string or integer; of an array the
 * first element).  0 if found and readable. */
int jr_attr_text(hid_t obj, const char *name, char *buf, size_t size);

#endif
