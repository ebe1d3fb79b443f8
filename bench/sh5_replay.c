/*
 * sh5_replay - write the samples of a node-step file again through the
 * node-step writer (src/profile/writer.c), flushing as the plugin would.
 *
 *   sh5_replay [-c LEVEL] [-F SECONDS] [-r ROWS] IN.h5 OUT.h5
 *
 * Like the plugin, writes the node group's attributes of IN and flushes,
 * registers every series of IN (our file or a stock one), then appends the
 * records in time order, calling sh5_writer_flush() each time the sample
 * time (ElapsedTime) passes a multiple of the flush interval (-F,
 * default 10, the plugin's default), then closes.  OUT is thus what the
 * plugin would have written for those samples with the writer's current
 * storage settings: compare sizes to tune them without a cluster
 * (bench/filesize_real.sh measures the plugin itself).
 *
 * -P shifts the flushes by PHASE seconds (0 to SECONDS-1: the plugin's
 * flush thread is not aligned with the samples).
 * -R recompresses the partial last chunk whole at every flush (writer
 * option recompress, the previous method) instead of coding chunks
 * incrementally (src/profile/zinc.h).
 * -K exits after the last flush without closing the writer, like a killed
 * slurmstepd (the file holds what the flushes wrote; prints "0 SAMPLES").
 * -c sets the deflate level (default: the writer's); -r forces the chunk
 * length in records (default: from each series' sampling interval, read
 * from the ElapsedTime steps).  Prints "BYTES SAMPLES" on stdout.
 *
 * -S URL also streams every record as the plugin does (src/stream/
 * record.h, the same call), to URL in format -T (influx1, the default,
 * influx2 or json), with the stream's defaults otherwise.  The samples
 * are replayed one second of ElapsedTime at a time (a tick); every N
 * ticks (N: the stream's default flush interval in seconds; -W N sets
 * it, as ProfileSH5StreamFlush of N s would) the replay asks the sender
 * to send (sh5_stream_flush) and waits until everything pushed is
 * delivered, so each POST holds N ticks' samples, as the plugin's would.
 * The stream's own timer is set out of the way, so that the number of
 * POSTs does not depend on the machine's speed.  The stream is closed
 * before the writer, as in node_step_end; its counters go to stderr
 * ("stream: ...") and the replay fails when a sample was not delivered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "profile/series.h"
#include "profile/writer.h"
#include "stream/record.h"
#include "stream/stream.h"

#define MAXS 4096

struct in_series {
	int id;
	size_t n, next, rsize;
	unsigned char *recs;
};

static struct in_series ins[MAXS];
static size_t nins;
static struct sh5_writer *w;
static struct sh5_stream *stream;
static uint64_t pushed, send_every; /* 0: the stream's flush interval */

static void die(const char *what, const struct sh5_error *e)
{
	fprintf(stderr, "sh5_replay: %s%s%s\n", what, e ? ": " : "",
		e ? e->text : "");
	exit(1);
}

/* Copy one attribute of the input node group. */
static herr_t copy_attr(hid_t loc, const char *name, const H5A_info_t *ai,
			void *op)
{
	hid_t a = H5Aopen(loc, name, H5P_DEFAULT), t = H5Aget_type(a);
	struct sh5_error err = { 0 };
	int rc = 0;

	(void)ai;
	/* op != NULL: only that attribute; else all but that one */
	if (op ? strcmp(name, op) : !strcmp(name, "Sampling Frequencies")) {
		H5Tclose(t);
		H5Aclose(a);
		return 0;
	}
	if (H5Tget_class(t) == H5T_STRING && !H5Tis_variable_str(t)) {
		size_t len = H5Tget_size(t);
		char *buf = calloc(1, len + 1);
		hid_t mt = H5Tcopy(H5T_C_S1);

		H5Tset_size(mt, len + 1);
		if (buf && H5Aread(a, mt, buf) >= 0)
			rc = sh5_writer_attr_str(w, name, buf, &err);
		H5Tclose(mt);
		free(buf);
	} else if (H5Tget_class(t) == H5T_INTEGER && H5Tget_size(t) == 4) {
		if (H5Tget_sign(t) == H5T_SGN_NONE) {
			uint32_t v;

			H5Aread(a, H5T_NATIVE_UINT32, &v);
			rc = sh5_writer_attr_u32(w, name, v, &err);
		} else {
			int v;

			H5Aread(a, H5T_NATIVE_INT, &v);
			rc = sh5_writer_attr_int(w, name, v, &err);
		}
	} else if (H5Tget_class(t) == H5T_INTEGER) {
		int64_t v;

		H5Aread(a, H5T_NATIVE_INT64, &v);
		rc = sh5_writer_attr_i64(w, name, v, &err);
	} else if (H5Tget_class(t) == H5T_FLOAT) {
		double v;

		H5Aread(a, H5T_NATIVE_DOUBLE, &v);
		rc = sh5_writer_attr_f64(w, name, v, &err);
	}
	H5Tclose(t);
	H5Aclose(a);
	if (rc < 0)
		die("cannot copy an attribute", &err);
	return 0;
}

static void add(hid_t grp, const char *parent, const char *name)
{
	hid_t d = H5Dopen2(grp, name, H5P_DEFAULT), mt, sp;
	struct sh5_error err = { 0 };
	struct sh5_series *s;
	struct in_series *x;
	hsize_t n;
	double hz = 1.0;

	if (d < 0)
		die("cannot open a dataset", NULL);
	if (!(s = sh5_series_from_dataset(parent, name, d, &err))) {
		H5Dclose(d); /* not a series (e.g. ClockOffsets) */
		return;
	}
	if (nins == MAXS)
		die("too many series", NULL);
	x = &ins[nins];
	x->rsize = s->ops->record_size(s);
	sp = H5Dget_space(d);
	H5Sget_simple_extent_dims(sp, &n, NULL);
	H5Sclose(sp);
	x->n = n;
	if (!(x->recs = calloc(n + 1, x->rsize)))
		die("out of memory", NULL);
	mt = s->ops->mem_type(s);
	if (n && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, x->recs) < 0)
		die("cannot read a dataset", NULL);
	H5Tclose(mt);
	H5Dclose(d);
	if (n > 1) {
		uint64_t e0 = sh5_record_slot(s, x->recs, 0, 0)->u;
		uint64_t e1 = sh5_record_slot(s, x->recs, n - 1, 0)->u;

		if (e1 > e0)
			hz = (double)(n - 1) / (double)(e1 - e0);
	}
	x->id = sh5_writer_add_series(w, parent, s, hz, &err);
	if (x->id < 0)
		die("cannot add a series", &err);
	nins++;
}

static void walk(hid_t grp, const char *parent)
{
	H5G_info_t gi;
	hsize_t i;

	H5Gget_info(grp, &gi);
	for (i = 0; i < gi.nlinks; i++) {
		char name[SH5_NAME_MAX];
		H5O_info_t oi;

		if (H5Lget_name_by_idx(grp, ".", H5_INDEX_NAME, H5_ITER_INC, i,
				       name, sizeof(name), H5P_DEFAULT) < 0 ||
		    H5Oget_info_by_name(grp, name, &oi, H5P_DEFAULT) < 0)
			die("cannot list the node group", NULL);
		if (oi.type == H5O_TYPE_DATASET) {
			add(grp, parent, name);
		} else if (oi.type == H5O_TYPE_GROUP && !parent) {
			hid_t g = H5Gopen2(grp, name, H5P_DEFAULT);

			walk(g, name);
			H5Gclose(g);
		}
	}
}

/* Start the stream to url in format fmt for node (the plugin's tags). */
static void stream_open(const char *url, const char *fmt, const char *node)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "1", "0", node };
	struct sh5_error err = { 0 };

	sh5_stream_conf_init(&conf);
	if (!send_every)
		send_every = conf.flush_interval_ms >= 2000 ?
				     (uint64_t)conf.flush_interval_ms / 1000 : 1;
	conf.url = url;
	conf.format = sh5_stream_format_from_string(fmt);
	/* the ticks drive the sends (see the top) */
	conf.flush_interval_ms = 3600L * 1000L;
	if (conf.format < 0)
		die("unknown stream format (influx1, influx2, json)", NULL);
	if (!(stream = sh5_stream_create(&conf, &tags, &err)))
		die("cannot start the stream", &err);
}

/* End of a tick: every send_every ticks (and at the last, last != 0),
 * send what was pushed and wait until it is delivered. */
static void stream_tick(uint64_t tick, int last)
{
	struct sh5_stream_stats ss;
	struct timespec ms = { 0, 1000000 };
	long waited;

	if (!stream || (tick % send_every && !last))
		return;
	sh5_stream_flush(stream);
	for (waited = 0;; waited++) {
		sh5_stream_stats(stream, &ss);
		if (ss.sent + ss.rejected + ss.dropped_queue + ss.spooled +
			    ss.unsent >= pushed)
			return;
		if (ss.last_error[0] || waited > 120000)
			die("stream", NULL);
		nanosleep(&ms, NULL);
	}
}

static void stream_end(void)
{
	struct sh5_stream_stats ss;

	if (!stream)
		return;
	sh5_stream_close(stream, 10000, &ss);
	fprintf(stderr,
		"stream: pushed %llu, sent %llu, rejected %llu, POSTs %llu, "
		"failed POSTs %llu%s%s\n",
		(unsigned long long)ss.pushed, (unsigned long long)ss.sent,
		(unsigned long long)ss.rejected, (unsigned long long)ss.posts,
		(unsigned long long)ss.failed_posts,
		ss.last_error[0] ? ": " : "", ss.last_error);
	if (ss.sent != ss.pushed)
		die("stream: samples not delivered", NULL);
}

int main(int argc, char **argv)
{
	struct sh5_writer_opts o;
	struct sh5_error err = { 0 };
	char node[SH5_NAME_MAX];
	hid_t in, ng;
	uint64_t flush = 10, phase = 0, next_flush, tick, total = 0;
	const char *url = NULL, *fmt = "influx1";
	struct stat st;
	size_t i;
	int c, more, kill = 0;

	sh5_writer_opts_init(&o);
	while ((c = getopt(argc, argv, "c:F:KP:Rr:S:T:W:")) != -1) {
		switch (c) {
		case 'c':
			o.compression = (int)strtol(optarg, NULL, 10);
			break;
		case 'F':
			flush = strtoull(optarg, NULL, 10);
			break;
		case 'R':
			o.recompress = 1;
			break;
		case 'K':
			kill = 1;
			break;
		case 'P':
			phase = strtoull(optarg, NULL, 10);
			break;
		case 'r':
			o.chunk_rows = strtoul(optarg, NULL, 10);
			break;
		case 'S':
			url = optarg;
			break;
		case 'T':
			fmt = optarg;
			break;
		case 'W':
			send_every = strtoull(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: sh5_replay [-c LEVEL] "
					"[-F SECONDS] [-K] [-R] [-P PHASE] [-r ROWS] "
					"[-S URL [-T FORMAT] [-W TICKS]] IN.h5 OUT.h5\n");
			return 2;
		}
	}
	if (argc - optind != 2 || !flush) {
		fprintf(stderr, "usage: sh5_replay [-c LEVEL] [-F SECONDS] [-K] [-R] "
				"[-P PHASE] [-r ROWS] [-S URL [-T FORMAT] [-W TICKS]] "
				"IN.h5 OUT.h5\n");
		return 2;
	}
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	if ((in = H5Fopen(argv[optind], H5F_ACC_RDONLY, H5P_DEFAULT)) < 0)
		die("cannot open the input", NULL);
	if (H5Lget_name_by_idx(in, ".", H5_INDEX_NAME, H5_ITER_INC, 0, node,
			       sizeof(node), H5P_DEFAULT) < 0 ||
	    (ng = H5Gopen2(in, node, H5P_DEFAULT)) < 0)
		die("no node group", NULL);
	unlink(argv[optind + 1]);
	if (!(w = sh5_writer_create(argv[optind + 1], -1, node, &o, &err)))
		die("cannot create the output", &err);
	/* As the plugin: the attributes, a flush, the series as they come,
	 * and the sampling frequencies at the first periodic flush. */
	H5Aiterate2(ng, H5_INDEX_NAME, H5_ITER_INC, NULL, copy_attr, NULL);
	if (sh5_writer_flush(w, &err) < 0)
		die("flush failed", &err);
	walk(ng, NULL);
	if (url)
		stream_open(url, fmt, node);
	/* Append in time order, a tick (one second of samples) at a time,
	 * flushing every flush seconds of samples. */
	next_flush = flush + phase % flush;
	tick = 1;
	do {
		more = 0;
		for (i = 0; i < nins; i++) {
			struct in_series *x = &ins[i];
			const struct sh5_series *s =
				sh5_writer_series(w, x->id);

			while (x->next < x->n &&
			       sh5_record_slot(s, x->recs, x->next, 0)->u <
				       tick) {
				const union sh5_value *rec =
					(const union sh5_value *)(x->recs +
								  x->next * x->rsize);

				if (sh5_writer_append(w, x->id, rec) < 0)
					die("append failed", NULL);
				if (stream &&
				    sh5_stream_push_record(stream, s, rec) < 0)
					die("stream push failed", NULL);
				pushed += stream && s->nfields;
				x->next++;
				total++;
			}
			if (x->next < x->n)
				more = 1;
		}
		stream_tick(tick, !more);
		if (tick == next_flush || !more) {
			if (next_flush == flush + phase % flush)
				H5Aiterate2(ng, H5_INDEX_NAME, H5_ITER_INC,
					    NULL, copy_attr,
					    "Sampling Frequencies");
			if (sh5_writer_flush(w, &err) < 0)
				die("flush failed", &err);
			next_flush += flush;
		}
		tick++;
	} while (more);
	stream_end();
	if (kill) {
		printf("0 %llu\n", (unsigned long long)total);
		fflush(stdout);
		_exit(0);
	}
	H5Gclose(ng);
	H5Fclose(in);
	if (sh5_writer_close(w, &err) < 0)
		die("close failed", &err);
	for (i = 0; i < nins; i++)
		free(ins[i].recs);
	if (stat(argv[optind + 1], &st) < 0)
		die("no output", NULL);
	printf("%lld %llu\n", (long long)st.st_size,
	       (unsigned long long)total);
	return 0;
}
