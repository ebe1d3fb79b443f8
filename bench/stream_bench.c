/* stream_bench.c - cost of sh5_stream_push() and sender throughput.
 *
 *   stream_bench URL [SAMPLES [BATCH]]
 *
 * URL is an InfluxDB 1.x write endpoint (bench/stream_bench.sh starts a
 * private influxd and passes it).  Pushes SAMPLES Task-like samples (8
 * fields, 4 tasks) into a queue big enough to hold them all, as fast as
 * possible, then closes with a long deadline.  Prints the enqueue cost per
 * sample, the sender's throughput (samples delivered per second, from the
 * first push to the end of close) and the memory bound of the queue.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stream/stream.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	static const char *names[] = { "CPUFrequency", "CPUTime",
				       "CPUUtilization", "RSS", "VMSize",
				       "Pages", "ReadMB", "WriteMB" };
	static const enum sh5_stream_type types[] = {
		SH5_STREAM_U64,	   SH5_STREAM_U64, SH5_STREAM_DOUBLE,
		SH5_STREAM_U64,	   SH5_STREAM_U64, SH5_STREAM_U64,
		SH5_STREAM_DOUBLE, SH5_STREAM_DOUBLE
	};
	struct sh5_stream_tags tags = { "999", "0", "benchnode" };
	struct sh5_stream_conf conf;
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	union sh5_stream_value v[8];
	struct sh5_stream *s;
	int64_t t0, t1, t2, base = 1700000000000000000LL;
	long n, i, batch;

	if (argc < 2 || !strcmp(argv[1], "--help")) {
		fprintf(stderr, "usage: stream_bench URL [SAMPLES [BATCH]]\n");
		return argc < 2 ? 2 : 0;
	}
	n = argc > 2 ? strtol(argv[2], NULL, 10) : 200000;
	batch = argc > 3 ? strtol(argv[3], NULL, 10) : 5000;
	if (n <= 0 || batch <= 0) {
		fprintf(stderr, "stream_bench: SAMPLES and BATCH must be > 0\n");
		return 2;
	}
	sh5_stream_conf_init(&conf);
	conf.url = argv[1];
	conf.format = SH5_STREAM_INFLUX1;
	conf.queue_max = (size_t)n;
	conf.batch_max = (size_t)batch;
	conf.timeout_ms = 30000;
	s = sh5_stream_create(&conf, &tags, &err);
	if (!s) {
		fprintf(stderr, "stream_bench: %s\n", err.text);
		return 1;
	}
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		v[0].u = 2400000;
		v[1].u = (uint64_t)i;
		v[2].d = (double)(i % 100) + 0.5;
		v[3].u = 1000000 + (uint64_t)i;
		v[4].u = 2000000 + (uint64_t)i;
		v[5].u = (uint64_t)i % 7;
		v[6].d = (double)i * 0.25;
		v[7].d = (double)i * 0.125;
		if (sh5_stream_push(s, "Task", (int)(i % 4), names, types, v, 8,
				    base + (i / 4) * 1000) < 0) {
			fprintf(stderr, "stream_bench: push: %s\n",
				strerror(errno));
			return 1;
		}
	}
	t1 = now_ns();
	sh5_stream_close(s, 600000, &st);
	t2 = now_ns();
	printf("samples            %ld (8 fields, batch %ld)\n", n, batch);
	printf("enqueue            %.1f ns/sample (push loop, sender running)\n",
	       (double)(t1 - t0) / (double)n);
	printf("sender throughput  %.0f samples/s (%" PRIu64 " delivered in %.2f s, %" PRIu64 " POSTs)\n",
	       (double)st.sent / ((double)(t2 - t0) / 1e9), st.sent,
	       (double)(t2 - t0) / 1e9, st.posts);
	printf("lost               %" PRIu64 "\n",
	       st.dropped_queue + st.rejected + st.unsent);
	sh5_stream_conf_init(&conf);
	printf("queue slot         %zu bytes\n", SH5_STREAM_SLOT_BYTES);
	printf("memory bound       %.1f MiB with the defaults (queue %zu, batch %zu)\n",
	       (double)sh5_stream_memory_bound(&conf) / (1 << 20),
	       conf.queue_max, conf.batch_max);
	if (st.sent)
		printf("ratio              sending costs %.0f x enqueueing, per sample\n",
		       ((double)(t2 - t0) / (double)st.sent) /
			       ((double)(t1 - t0) / (double)n));
	return st.sent == (uint64_t)n ? 0 : 1;
}
