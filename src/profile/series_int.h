/*
 * series_int.h - construction helpers series.c shares with series_h5.c.
 */
#ifndef SH5_PROFILE_SERIES_INT_H
#define SH5_PROFILE_SERIES_INT_H

#include <stddef.h>

#include "common/error.h"
#include "profile/series.h"

/* Whether n is one of the time members every series has. */
int sh5_series_reserved_name(const char *n);
/* Kinds and units of the fields of s from its type's known fields. */
void sh5_series_apply_known(struct sh5_series *s);
/* A series of n (unnamed) fields; NULL (errno EINVAL) for a bad name. */
struct sh5_series *sh5_series_alloc(const char *parent, const char *name,
				    size_t n, struct sh5_error *errp);

#endif
