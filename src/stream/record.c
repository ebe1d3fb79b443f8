/* record.c - a profile record queued on a stream (see record.h). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream/record.h"

int sh5_stream_push_record(struct sh5_stream *st, const struct sh5_series *s,
			   const union sh5_value *rec)
{
	const char *names[SH5_STREAM_MAX_FIELDS];
	enum sh5_stream_type types[SH5_STREAM_MAX_FIELDS];
	const char *series;
	size_t i, n = s->nfields;
	int task = -1;

	if (!st || !n)
		return 0;
	if (n > SH5_STREAM_MAX_FIELDS)
		n = SH5_STREAM_MAX_FIELDS;
	for (i = 0; i < n; i++) {
		names[i] = s->fields[i].name;
		types[i] = s->fields[i].type == SH5_FT_DOUBLE ?
				   SH5_STREAM_DOUBLE : SH5_STREAM_U64;
	}
	/* The measurement is the series type (the dataset name for
	 * generic series), as the "Series" attribute of the file. */
	if (!strcmp(s->ops->name, "Task")) {
		char *end;
		long v = strtol(s->name, &end, 10);

		if (!*end && v >= 0 && v <= INT32_MAX)
			task = (int)v;
	}
	series = strcmp(s->ops->name, "Generic") ? s->ops->name : s->name;
	/* union sh5_value and union sh5_stream_value share the layout of
	 * the u and d members. */
	return sh5_stream_push(st, series, task, names, types,
			       (const union sh5_stream_value *)&rec[SH5_TIME_SLOTS],
			       n, rec[2].i);
}
