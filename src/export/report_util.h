/*
 * report_util.h - helpers the report's driver (report.c) and its parts
 * (report_series.c, report_clock.c, report_events.c) share.
 */
#ifndef SH5_EXPORT_REPORT_UTIL_H
#define SH5_EXPORT_REPORT_UTIL_H

#include <stddef.h>

#include "common/json.h"

struct rp;

/* Note something missing (shown in the report and listed in res). */
void rp_missing(struct rp *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A number rounded to 4 significant digits, null when not finite. */
int rp_num(struct sh5_json *j, double v);

/* Base64 of n bytes as a JSON string. */
int rp_base64(struct sh5_json *j, const unsigned char *p, size_t n);

#endif /* SH5_EXPORT_REPORT_UTIL_H */
