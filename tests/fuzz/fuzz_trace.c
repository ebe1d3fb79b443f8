/* fuzz_trace.c - libFuzzer target: the event-trace CSV parser
 * (sh5_trace_read_mem) and, on a trace it accepts, the synchronization
 * (offsets + controlled logical clock) and the rewrite of its times. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "sync/syncrun.h"
#include "sync/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sh5_error err;
	struct sh5_trace *t;
	struct sh5_syncrun_opts so;
	struct sh5_syncrun_result res;
	char *out = NULL;
	size_t outlen;

	t = sh5_trace_read_mem((const char *)data, size, "fuzz", &err);
	if (!t)
		return 0;
	sh5_syncrun_opts_init(&so);
	so.allow_partial = 1;
	if (sh5_syncrun(t, &so, &res, &err) == 0) {
		if (sh5_trace_write_mem(t, (const char *)data, size, res.times,
					&out, &outlen, &err) == 0)
			free(out);
		free(res.times);
	}
	sh5_trace_destroy(t);
	return 0;
}
