/* test_stream.c - the stream against a real InfluxDB 1.x (Debian's
 * influxd, private instance on loopback started by tests/lib/influxd.sh)
 * and a local HTTP receiver (tests/tools/sh5_http_receiver.py). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <curl/curl.h>
#include <yajl/yajl_tree.h>

#include "stream/stream.h"

#define ADMIN "sh5admin"
#define SECRET "sh5secret"

static char topdir[1024];
static char tmpdir[512];
static char ifxdir[600];
static int ifx_port;
static pid_t recv_pid = -1, hang_pid = -1;
static int recv_port, hang_port;
static char recvdir[600], hangdir[600];
static int have_servers;

/* ------------------------------------------------------------ helpers */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int read_int_file(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Run "influxd.sh ARGS" and return its exit status. */
static int influxd_sh(const char *args)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "/bin/bash '%s/tests/lib/influxd.sh' %s >/dev/null",
		 topdir, args);
	return WEXITSTATUS(system(cmd));
}

/* Start an influxd in dir on port (0: free); returns its port or -1. */
static int influxd_start(const char *dir, int port, int auth)
{
	char args[1024];

	snprintf(args, sizeof(args), "start '%s' %d %s", dir, port,
		 auth ? "auth" : "");
	if (influxd_sh(args) != 0)
		return -1;
	snprintf(args, sizeof(args), "%s/port", dir);
	return read_int_file(args);
}

/* A TCP port on 127.0.0.1 that nobody listens on right now. */
static int free_port(void)
{
	char cmd[1200];
	FILE *p;
	int port = -1;

	snprintf(cmd, sizeof(cmd), "/bin/bash '%s/tests/lib/influxd.sh' free-port",
		 topdir);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (fscanf(p, "%d", &port) != 1)
		port = -1;
	pclose(p);
	return port;
}

static void influxd_stop(const char *dir)
{
	char args[1024];

	snprintf(args, sizeof(args), "stop '%s'", dir);
	influxd_sh(args);
}

/* Start the python receiver (hang != 0: the never-answering listener;
 * cert: serve HTTPS with cert.pem and key.pem of that directory). */
static pid_t receiver_start_tls(const char *dir, int hang, int *port,
				const char *cert)
{
	char script[1200], portfile[1200];
	pid_t pid;
	int i;

	mkdir(dir, 0700);
	snprintf(script, sizeof(script), "%s/tests/tools/sh5_http_receiver.py",
		 topdir);
	snprintf(portfile, sizeof(portfile), "%s/port", dir);
	unlink(portfile);
	pid = fork();
	if (pid == 0) {
		char c[1200], k[1200];

		/* never outlive the test process that started it */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		snprintf(c, sizeof(c), "%s/cert.pem", cert ? cert : "");
		snprintf(k, sizeof(k), "%s/key.pem", cert ? cert : "");
		if (cert)
			execl("/usr/bin/python3", "python3", script, "--tls", c,
			      k, dir, (char *)NULL);
		else if (hang)
			execl("/usr/bin/python3", "python3", script, "--hang",
			      dir, (char *)NULL);
		else
			execl("/usr/bin/python3", "python3", script, dir,
			      (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 100; i++) {
		*port = read_int_file(portfile);
		if (*port > 0)
			return pid;
		sleep_ms(50);
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	return -1;
}

static pid_t receiver_start(const char *dir, int hang, int *port)
{
	return receiver_start_tls(dir, hang, port, NULL);
}

static void stop_pid(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGTERM);
		waitpid(*pid, NULL, 0);
	}
	*pid = -1;
}

static void setup_servers(void)
{
	const char *top = getenv("top_srcdir");
	char tmpl[] = "/tmp/sh5-test-stream-XXXXXX";

	snprintf(topdir, sizeof(topdir), "%s", top ? top : SH5_SRCDIR);
	if (!mkdtemp(tmpl))
		return;
	snprintf(tmpdir, sizeof(tmpdir), "%s", tmpl);
	snprintf(ifxdir, sizeof(ifxdir), "%s/influxd", tmpdir);
	snprintf(recvdir, sizeof(recvdir), "%s/recv", tmpdir);
	snprintf(hangdir, sizeof(hangdir), "%s/hang", tmpdir);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	ifx_port = influxd_start(ifxdir, 0, 1);
	recv_pid = receiver_start(recvdir, 0, &recv_port);
	hang_pid = receiver_start(hangdir, 1, &hang_port);
	have_servers = ifx_port > 0 && recv_pid > 0 && hang_pid > 0;
}

static void teardown_servers(void)
{
	char cmd[1024];

	influxd_stop(ifxdir);
	stop_pid(&recv_pid);
	stop_pid(&hang_pid);
	if (tmpdir[0] && !getenv("SH5_KEEP_TMP")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
}

struct membuf {
	char *p;
	size_t len;
};

static size_t collect(char *d, size_t sz, size_t n, void *arg)
{
	struct membuf *m = arg;
	char *p = realloc(m->p, m->len + sz * n + 1);

	if (!p)
		return 0;
	memcpy(p + m->len, d, sz * n);
	m->p = p;
	m->len += sz * n;
	m->p[m->len] = '\0';
	return sz * n;
}

/* Run an InfluxQL statement against the test influxd; parsed answer. */
static yajl_val influx_query(int port, const char *db, const char *q)
{
	char url[2048], err[256];
	struct membuf m = { NULL, 0 };
	CURL *c = curl_easy_init();
	char *eq = curl_easy_escape(c, q, 0);
	yajl_val v = NULL;

	snprintf(url, sizeof(url),
		 "http://127.0.0.1:%d/query?u=" ADMIN "&p=" SECRET
		 "&epoch=ns&db=%s&q=%s",
		 port, db ? db : "", eq);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &m);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	if (curl_easy_perform(c) == CURLE_OK && m.p)
		v = yajl_tree_parse(m.p, err, sizeof(err));
	curl_free(eq);
	curl_easy_cleanup(c);
	free(m.p);
	return v;
}

static void create_db(int port, const char *db)
{
	char q[256];
	yajl_val v;

	snprintf(q, sizeof(q), "CREATE DATABASE \"%s\"", db);
	v = influx_query(port, NULL, q);
	ck_assert_msg(v != NULL, "CREATE DATABASE %s failed", db);
	yajl_tree_free(v);
}

/* The first series of the first result: {"columns": [...], "values":
 * [[...]...]} or NULL when there are no rows. */
static yajl_val first_series(yajl_val root)
{
	const char *p_results[] = { "results", NULL };
	const char *p_series[] = { "series", NULL };
	yajl_val r = yajl_tree_get(root, p_results, yajl_t_array), s;

	if (!r || r->u.array.len == 0)
		return NULL;
	s = yajl_tree_get(r->u.array.values[0], p_series, yajl_t_array);
	if (!s || s->u.array.len == 0)
		return NULL;
	return s->u.array.values[0];
}

static yajl_val obj_get(yajl_val o, const char *key, yajl_type t)
{
	const char *path[] = { key, NULL };

	return yajl_tree_get(o, path, t);
}

/* The string of v, "" when v is not a string (keeps asserts readable). */
static const char *str_of(yajl_val v)
{
	return YAJL_IS_STRING(v) ? v->u.string : "";
}

static int column(yajl_val series, const char *name)
{
	yajl_val cols = obj_get(series, "columns", yajl_t_array);
	size_t i;

	for (i = 0; cols && i < cols->u.array.len; i++)
		if (YAJL_IS_STRING(cols->u.array.values[i]) &&
		    !strcmp(cols->u.array.values[i]->u.string, name))
			return (int)i;
	return -1;
}

/* COUNT of rows in a measurement of db (0 when none). */
static long count_rows(int port, const char *db, const char *meas,
		       const char *field)
{
	char q[256];
	yajl_val root, s, vals;
	long n = 0;

	snprintf(q, sizeof(q), "SELECT COUNT(\"%s\") FROM \"%s\"", field, meas);
	root = influx_query(port, db, q);
	ck_assert_ptr_nonnull(root);
	s = first_series(root);
	if (s) {
		vals = obj_get(s, "values", yajl_t_array);
		if (vals && vals->u.array.len)
			n = (long)YAJL_GET_INTEGER(
				vals->u.array.values[0]->u.array.values[1]);
	}
	yajl_tree_free(root);
	return n;
}

/* Test data: series Task (per task, 3 fields) and Energy (node level). */
static const char *task_names[] = { "CPUTime", "CPUUtilization", "RSS" };
static const enum sh5_stream_type task_types[] = {
	SH5_STREAM_U64, SH5_STREAM_DOUBLE, SH5_STREAM_U64
};
static const char *energy_names[] = { "Power" };
static const enum sh5_stream_type energy_types[] = { SH5_STREAM_DOUBLE };

#define T0 1700000000000000000LL

static int64_t sample_time(long i)
{
	return T0 + i * 1000003LL;
}

static void task_values(long i, int task, union sh5_stream_value *v)
{
	v[0].u = (uint64_t)i * 1000 + (uint64_t)task;
	v[1].d = (double)i / 7.0 + task;
	v[2].u = ((uint64_t)1 << 40) + (uint64_t)i;
}

/* Push n rounds: Task for tasks 0 and 1, Energy every round. */
static void push_rounds(struct sh5_stream *s, long first, long n)
{
	union sh5_stream_value v[3];
	long i;
	int task;

	for (i = first; i < first + n; i++) {
		for (task = 0; task < 2; task++) {
			task_values(i, task, v);
			ck_assert_int_eq(sh5_stream_push(s, "Task", task,
							 task_names, task_types,
							 v, 3, sample_time(i)),
					 0);
		}
		v[0].d = 100.0 + (double)i * 0.5;
		ck_assert_int_eq(sh5_stream_push(s, "Energy", -1, energy_names,
						 energy_types, v, 1,
						 sample_time(i)),
				 0);
	}
}

/* Every pushed Task sample of rounds [first, first+n) is in db with the
 * same values, tags and ns timestamps. */
static void check_task_rows(int port, const char *db, const char *job,
			    long first, long n)
{
	char q[256];
	yajl_val root, s, vals, row;
	union sh5_stream_value v[3];
	int ct, cc, cu, cr, ctask, cjob;
	size_t k;
	long i, task;

	snprintf(q, sizeof(q),
		 "SELECT \"CPUTime\",\"CPUUtilization\",\"RSS\",\"task\",\"job\" "
		 "FROM \"Task\" WHERE job='%s'",
		 job);
	root = influx_query(port, db, q);
	ck_assert_ptr_nonnull(root);
	s = first_series(root);
	ck_assert_ptr_nonnull(s);
	ct = column(s, "time");
	cc = column(s, "CPUTime");
	cu = column(s, "CPUUtilization");
	cr = column(s, "RSS");
	ctask = column(s, "task");
	cjob = column(s, "job");
	ck_assert(ct >= 0 && cc >= 0 && cu >= 0 && cr >= 0 && ctask >= 0 &&
		  cjob >= 0);
	vals = obj_get(s, "values", yajl_t_array);
	ck_assert_ptr_nonnull(vals);
	ck_assert_uint_eq(vals->u.array.len, (size_t)(2 * n));
	for (k = 0; k < vals->u.array.len; k++) {
		int64_t t;

		row = vals->u.array.values[k];
		t = YAJL_GET_INTEGER(row->u.array.values[ct]);
		ck_assert_int_eq((t - T0) % 1000003LL, 0);
		i = (long)((t - T0) / 1000003LL);
		ck_assert(i >= first && i < first + n);
		task = strtol(str_of(row->u.array.values[ctask]),
			      NULL, 10);
		task_values(i, (int)task, v);
		ck_assert_int_eq(YAJL_GET_INTEGER(row->u.array.values[cc]),
				 (long long)v[0].u);
		ck_assert(YAJL_GET_DOUBLE(row->u.array.values[cu]) == v[1].d);
		ck_assert_int_eq(YAJL_GET_INTEGER(row->u.array.values[cr]),
				 (long long)v[2].u);
		ck_assert_str_eq(str_of(row->u.array.values[cjob]),
				 job);
	}
	yajl_tree_free(root);
}

static void base_conf(struct sh5_stream_conf *conf, char *url, size_t size,
		      int port, const char *db)
{
	sh5_stream_conf_init(conf);
	snprintf(url, size, "http://127.0.0.1:%d/write?db=%s", port, db);
	conf->url = url;
	conf->format = SH5_STREAM_INFLUX1;
	conf->user = ADMIN;
	conf->pass = SECRET;
	conf->flush_interval_ms = 100;
	conf->batch_max = 100;
	conf->timeout_ms = 3000;
	conf->connect_timeout_ms = 1000;
}

static void make_dir(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", tmpdir, name);
	ck_assert_int_eq(mkdir(out, 0700), 0);
}

/* Samples in the spool files of dir (from the names), and file count. */
static uint64_t spooled_samples(const char *dir, int *files)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t n = 0;
	const char *dash;

	*files = 0;
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (de->d_name[0] == '.' || l < 4 ||
		    (strcmp(de->d_name + l - 3, ".lp") &&
		     strcmp(de->d_name + l - 5, ".json")))
			continue;
		dash = strrchr(de->d_name, '-');
		ck_assert_ptr_nonnull(dash);
		n += strtoull(dash + 1, NULL, 10);
		(*files)++;
	}
	closedir(d);
	return n;
}

/* Wait (at most 10 s, polling) for the stream's next error text. */
static int wait_error(struct sh5_stream *s, char *text, size_t size)
{
	int i;

	for (i = 0; i < 500; i++) {
		if (sh5_stream_last_error(s, text, size))
			return 1;
		sleep_ms(20);
	}
	return 0;
}

/* Wait (at most 10 s) until the stream has delivered at least n samples
 * (straight from memory or from the spool). */
static void wait_sent(struct sh5_stream *s, uint64_t n)
{
	struct sh5_stream_stats st;
	int i;

	for (i = 0; i < 500; i++) {
		sh5_stream_stats(s, &st);
		if (st.sent + st.recovered >= n)
			return;
		sleep_ms(20);
	}
	ck_abort_msg("stream did not send %" PRIu64 " samples", n);
}

/* Wait (at most 10 s) until the stream has spooled something. */
static void wait_spooled(struct sh5_stream *s)
{
	struct sh5_stream_stats st;
	int i;

	for (i = 0; i < 500; i++) {
		sh5_stream_stats(s, &st);
		if (st.spooled > 0)
			return;
		sleep_ms(20);
	}
	ck_abort_msg("stream did not spool");
}

#define REQUIRE_SERVERS() \
	ck_assert_msg(have_servers, "test servers did not start (see %s)", \
		      tmpdir)

/* -------------------------------------------------------------- tests */

static const long sizes[] = { 1, 250, 2000 };

START_TEST(test_stream_influx1_delivers_every_sample)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "101", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], db[32], job[32];
	long n = sizes[_i];

	REQUIRE_SERVERS();
	snprintf(db, sizeof(db), "all%d", _i);
	snprintf(job, sizeof(job), "10%d", _i);
	tags.job = job;
	create_db(ifx_port, db);
	base_conf(&conf, url, sizeof(url), ifx_port, db);
	conf.queue_max = 8192;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, n);
	ck_assert_int_eq(sh5_stream_close(s, 5000, &st), 0);
	ck_assert_int_eq(st.closed_in_time, 1);
	ck_assert_str_eq(st.last_error, "");
	ck_assert_uint_eq(st.pushed, (uint64_t)(3 * n));
	ck_assert_uint_eq(st.sent, (uint64_t)(3 * n));
	ck_assert_uint_eq(st.spooled, 0);
	ck_assert_uint_eq(st.failed_posts, 0);
	ck_assert_uint_eq(st.dropped_queue + st.dropped_spool + st.rejected +
				  st.unsent,
			  0);
	ck_assert_int_eq(count_rows(ifx_port, db, "Task", "CPUTime"), 2 * n);
	ck_assert_int_eq(count_rows(ifx_port, db, "Energy", "Power"), n);
	check_task_rows(ifx_port, db, job, 0, n);
}
END_TEST

/* A lone sample goes out after the flush interval, without close() or
 * flush() (the sender's timer starts with the first queued sample). */
START_TEST(test_stream_lone_sample_sent_by_flush_interval)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "150", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256];
	int i;

	char spool[700], db[16];

	REQUIRE_SERVERS();
	snprintf(db, sizeof(db), "lone%d", _i);
	create_db(ifx_port, db);
	base_conf(&conf, url, sizeof(url), ifx_port, db);
	if (_i) {
		make_dir(spool, sizeof(spool), "spool-lone");
		conf.spool_dir = spool;
	}
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	sleep_ms(200); /* the sender is idle now */
	push_rounds(s, 0, 1);
	/* well before the 10 s spool scan period could wake it */
	for (i = 0; i < 150; i++) {
		sh5_stream_stats(s, &st);
		if (st.sent == 3)
			break;
		sleep_ms(20);
	}
	ck_assert_uint_eq(st.sent, 3);
	ck_assert_int_eq(count_rows(ifx_port, db, "Task", "CPUTime"), 2);
	ck_assert_int_eq(sh5_stream_close(s, 1000, &st), 0);
}
END_TEST

START_TEST(test_stream_energy_values_and_tags)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "202", "batch", "node-7" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	yajl_val root, ser, vals, row;
	char url[256];
	int ct, cp, cn, cs, ctask;
	size_t k;

	REQUIRE_SERVERS();
	create_db(ifx_port, "energy");
	base_conf(&conf, url, sizeof(url), ifx_port, "energy");
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 20);
	ck_assert_int_eq(sh5_stream_close(s, 5000, &st), 0);
	ck_assert_uint_eq(st.sent, 60);
	root = influx_query(ifx_port, "energy",
			    "SELECT * FROM \"Energy\"");
	ser = first_series(root);
	ck_assert_ptr_nonnull(ser);
	ct = column(ser, "time");
	cp = column(ser, "Power");
	cn = column(ser, "node");
	cs = column(ser, "step");
	ctask = column(ser, "task");
	ck_assert(ct >= 0 && cp >= 0 && cn >= 0 && cs >= 0);
	ck_assert_int_eq(ctask, -1); /* node-level series: no task tag */
	vals = obj_get(ser, "values", yajl_t_array);
	ck_assert_uint_eq(vals->u.array.len, 20);
	for (k = 0; k < 20; k++) {
		row = vals->u.array.values[k];
		ck_assert_int_eq(YAJL_GET_INTEGER(row->u.array.values[ct]),
				 sample_time((long)k));
		ck_assert(YAJL_GET_DOUBLE(row->u.array.values[cp]) ==
			  100.0 + (double)k * 0.5);
		ck_assert_str_eq(str_of(row->u.array.values[cn]),
				 "node-7");
		ck_assert_str_eq(str_of(row->u.array.values[cs]),
				 "batch");
	}
	yajl_tree_free(root);
}
END_TEST

/* Server down for the whole first stream: everything goes to the spool;
 * a later stream with the same spool dir delivers it first. */
START_TEST(test_stream_spool_delivered_by_next_stream)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags t1 = { "301", "0", "n1" }, t2 = { "301", "1", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], spool[700], dir2[700];
	int port, files;

	REQUIRE_SERVERS();
	make_dir(spool, sizeof(spool), "spool-next");
	snprintf(dir2, sizeof(dir2), "%s/influxd-next", tmpdir);
	port = free_port(); /* influxd takes it later */
	ck_assert_int_gt(port, 0);
	base_conf(&conf, url, sizeof(url), port, "later");
	conf.user = conf.pass = NULL;
	conf.spool_dir = spool;
	conf.batch_max = 40;
	s = sh5_stream_create(&conf, &t1, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 100);
	ck_assert_int_eq(sh5_stream_close(s, 2000, &st), 0);
	ck_assert_int_eq(st.closed_in_time, 1);
	ck_assert_uint_eq(st.sent, 0);
	ck_assert_uint_eq(st.spooled, 300);
	ck_assert_uint_eq(spooled_samples(spool, &files), 300);
	ck_assert_int_gt(files, 0);

	ck_assert_int_eq(influxd_start(dir2, port, 0), port);
	create_db(port, "later");
	s = sh5_stream_create(&conf, &t2, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 100, 10);
	ck_assert_int_eq(sh5_stream_close(s, 5000, &st), 0);
	/* the first stream's 300, and its own 30 either sent straight or
	 * spooled behind them and then delivered from the spool */
	ck_assert_uint_eq(st.recovered, 300 + st.spooled);
	ck_assert_uint_eq(st.sent + st.spooled, 30);
	ck_assert_uint_eq(spooled_samples(spool, &files), 0);
	ck_assert_int_eq(files, 0);
	ck_assert_int_eq(count_rows(port, "later", "Task", "CPUTime"), 220);
	ck_assert_int_eq(count_rows(port, "later", "Energy", "Power"), 110);
	check_task_rows(port, "later", "301", 0, 110);
	influxd_stop(dir2);
}
END_TEST

/* Server comes back while the stream is running: the stream delivers the
 * spooled part by itself, before its newer samples. */
START_TEST(test_stream_server_returns_during_stream)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "302", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], spool[700], dir2[700], text[256];
	int port, files;

	REQUIRE_SERVERS();
	make_dir(spool, sizeof(spool), "spool-midway");
	snprintf(dir2, sizeof(dir2), "%s/influxd-midway", tmpdir);
	port = free_port();
	ck_assert_int_gt(port, 0);
	base_conf(&conf, url, sizeof(url), port, "midway");
	conf.user = conf.pass = NULL;
	conf.spool_dir = spool;
	conf.batch_max = 20;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 50);
	sleep_ms(400);
	push_rounds(s, 50, 50);
	ck_assert_int_eq(wait_error(s, text, sizeof(text)), 1);
	ck_assert_msg(strstr(text, "onnect") != NULL, "%s", text);
	ck_assert_int_eq(influxd_start(dir2, port, 0), port);
	create_db(port, "midway");
	push_rounds(s, 100, 50);
	wait_sent(s, 450); /* the backlog, once the backoff allows */
	push_rounds(s, 150, 50);
	ck_assert_int_eq(sh5_stream_close(s, 5000, &st), 0);
	ck_assert_uint_eq(st.pushed, 600);
	ck_assert_uint_gt(st.spooled, 0);
	/* each sample counted once: straight or through the spool */
	ck_assert_uint_eq(st.sent + st.spooled, 600);
	ck_assert_uint_eq(st.recovered, st.spooled);
	ck_assert_uint_gt(st.failed_posts, 0);
	ck_assert_uint_eq(spooled_samples(spool, &files), 0);
	check_task_rows(port, "midway", "302", 0, 200);
	ck_assert_int_eq(count_rows(port, "midway", "Energy", "Power"), 200);
	influxd_stop(dir2);
}
END_TEST

/* A listener that accepts and never answers: close() keeps its deadline
 * and spools the samples. */
START_TEST(test_stream_close_keeps_deadline_on_hanging_server)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "401", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], spool[700];
	int64_t t0, dt;
	int files;

	REQUIRE_SERVERS();
	make_dir(spool, sizeof(spool), "spool-hang");
	base_conf(&conf, url, sizeof(url), hang_port, "x");
	conf.timeout_ms = 60000;
	conf.spool_dir = spool;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 30);
	sh5_stream_flush(s);
	sleep_ms(300); /* the POST is now in flight */
	push_rounds(s, 30, 30);
	t0 = now_ms();
	ck_assert_int_eq(sh5_stream_close(s, 1000, &st), 0);
	dt = now_ms() - t0;
	ck_assert_msg(dt < 1000 + 300, "close took %" PRId64 " ms", dt);
	ck_assert_int_eq(st.closed_in_time, 1);
	ck_assert_msg(strstr(st.last_error, "close deadline reached"), "%s",
		      st.last_error);
	ck_assert_uint_eq(st.sent, 0);
	ck_assert_uint_eq(st.spooled, 180);
	ck_assert_uint_eq(spooled_samples(spool, &files), 180);
}
END_TEST

/* Same without a spool: close() still keeps the deadline, and reports
 * the samples it could not keep. */
START_TEST(test_stream_close_without_spool_reports_unsent)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "402", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256];
	int64_t t0, dt;

	REQUIRE_SERVERS();
	base_conf(&conf, url, sizeof(url), hang_port, "x");
	conf.timeout_ms = 60000;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 10);
	t0 = now_ms();
	ck_assert_int_eq(sh5_stream_close(s, 500, &st), -1);
	dt = now_ms() - t0;
	ck_assert_msg(dt < 500 + 300, "close took %" PRId64 " ms", dt);
	ck_assert_uint_eq(st.sent, 0);
	ck_assert_uint_eq(st.unsent, 30);
}
END_TEST

/* Wrong credentials: a clear error without the password, no hang, data
 * kept in the spool. */
START_TEST(test_stream_wrong_credentials)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "501", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], spool[700], text[256];
	int64_t t0;
	int files;

	REQUIRE_SERVERS();
	make_dir(spool, sizeof(spool), "spool-cred");
	create_db(ifx_port, "cred");
	base_conf(&conf, url, sizeof(url), ifx_port, "cred");
	conf.pass = "Wr0ngPassw0rd";
	conf.spool_dir = spool;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 5);
	ck_assert_int_eq(wait_error(s, text, sizeof(text)), 1);
	ck_assert_msg(strstr(text, "HTTP 401") && strstr(text, "authorization failed"),
		      "%s", text);
	ck_assert_ptr_nonnull(strstr(text, "127.0.0.1"));
	ck_assert_ptr_null(strstr(text, "Wr0ngPassw0rd"));
	/* reported once */
	ck_assert_int_eq(sh5_stream_last_error(s, text, sizeof(text)), 0);
	t0 = now_ms();
	ck_assert_int_eq(sh5_stream_close(s, 2000, &st), 0);
	ck_assert_int_lt(now_ms() - t0, 2300);
	ck_assert_uint_gt(st.failed_posts, 0);
	ck_assert_uint_eq(st.spooled, 15);
	ck_assert_uint_eq(spooled_samples(spool, &files), 15);
	ck_assert_int_eq(count_rows(ifx_port, "cred", "Task", "CPUTime"), 0);
}
END_TEST

/* Credentials in the URL itself never reach an error text either. */
START_TEST(test_stream_url_credentials_not_in_errors)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "502", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], text[256];

	REQUIRE_SERVERS();
	sh5_stream_conf_init(&conf);
	snprintf(url, sizeof(url),
		 "http://sh5admin:UrlS3cret@127.0.0.1:%d/write?db=nodb&u=sh5admin&p=QueryS3cret",
		 ifx_port);
	conf.url = url;
	conf.format = SH5_STREAM_INFLUX1;
	conf.token = "T0kenS3cret";
	conf.flush_interval_ms = 50;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 2);
	ck_assert_int_eq(wait_error(s, text, sizeof(text)), 1);
	ck_assert_ptr_nonnull(strstr(text, "HTTP 4"));
	ck_assert_ptr_null(strstr(text, "S3cret"));
	ck_assert_ptr_nonnull(strstr(text, "db=nodb"));
	sh5_stream_close(s, 500, &st);
	ck_assert_uint_eq(st.sent, 0);
}
END_TEST

START_TEST(test_stream_unknown_database)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "503", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], text[256];

	REQUIRE_SERVERS();
	base_conf(&conf, url, sizeof(url), ifx_port, "nosuchdb");
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 3);
	ck_assert_int_eq(wait_error(s, text, sizeof(text)), 1);
	ck_assert_msg(strstr(text, "HTTP 404") &&
			      strstr(text, "database not found"),
		      "%s", text);
	ck_assert_int_eq(sh5_stream_close(s, 1000, &st), -1);
	ck_assert_uint_gt(st.failed_posts, 0);
	ck_assert_uint_eq(st.unsent, 9); /* no spool configured */
}
END_TEST

START_TEST(test_stream_unreachable_port)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "504", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], text[256];
	int64_t t0;

	REQUIRE_SERVERS();
	base_conf(&conf, url, sizeof(url), 1, "x");
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 3);
	ck_assert_int_eq(wait_error(s, text, sizeof(text)), 1);
	ck_assert_msg(strstr(text, "POST http://127.0.0.1:1/write?db=x") &&
			      strstr(text, "onnect"),
		      "%s", text);
	t0 = now_ms();
	sh5_stream_close(s, 1000, &st);
	ck_assert_int_lt(now_ms() - t0, 1300);
	ck_assert_uint_gt(st.failed_posts, 0);
}
END_TEST

/* HTTP 400 (here a field type conflict) is not retried: the batch is
 * counted as rejected and later batches still go through. */
START_TEST(test_stream_rejected_batch_not_retried)
{
	const char *names[] = { "v" };
	enum sh5_stream_type tu[] = { SH5_STREAM_U64 };
	enum sh5_stream_type td[] = { SH5_STREAM_DOUBLE };
	union sh5_stream_value v[1];
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "601", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], text[256];

	REQUIRE_SERVERS();
	create_db(ifx_port, "conflict");
	base_conf(&conf, url, sizeof(url), ifx_port, "conflict");
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	v[0].u = 1;
	ck_assert_int_eq(sh5_stream_push(s, "X", 0, names, tu, v, 1, T0), 0);
	sh5_stream_flush(s);
	wait_sent(s, 1);
	v[0].d = 1.5;
	ck_assert_int_eq(sh5_stream_push(s, "X", 0, names, td, v, 1, T0 + 1), 0);
	sh5_stream_flush(s);
	ck_assert_int_eq(wait_error(s, text, sizeof(text)), 1);
	ck_assert_msg(strstr(text, "HTTP 400") && strstr(text, "not retried"),
		      "%s", text);
	v[0].u = 3;
	ck_assert_int_eq(sh5_stream_push(s, "X", 0, names, tu, v, 1, T0 + 2), 0);
	ck_assert_int_eq(sh5_stream_close(s, 2000, &st), -1);
	ck_assert_uint_eq(st.rejected, 1);
	ck_assert_uint_eq(st.sent, 2);
	ck_assert_uint_eq(st.failed_posts, 0);
	ck_assert_int_eq(count_rows(ifx_port, "conflict", "X", "v"), 2);
}
END_TEST

static void *restore_root_later(void *arg)
{
	(void)arg;
	sleep_ms(100);
	/* like slurmstepd's reclaim: setuid calls act on every thread */
	if (seteuid(0) < 0)
		abort();
	return NULL;
}

/* slurmstepd drops privileges for moments (to fork tasks as the user),
 * for every thread: the sender's spool writes still succeed (it sets its
 * own filesystem uid back), nothing is lost. */
START_TEST(test_stream_spool_retried_after_privilege_drop)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "703", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], spool[700];
	pthread_t th;
	int files;

	REQUIRE_SERVERS();
	if (geteuid() != 0)
		return; /* needs root to drop and regain privileges */
	make_dir(spool, sizeof(spool), "spool-priv");
	base_conf(&conf, url, sizeof(url), 1, "x");
	conf.spool_dir = spool;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	ck_assert_int_eq(seteuid(65534), 0);
	push_rounds(s, 0, 10);
	ck_assert_int_eq(pthread_create(&th, NULL, restore_root_later, NULL), 0);
	sh5_stream_close(s, 2000, &st);
	pthread_join(th, NULL);
	ck_assert_int_eq(geteuid(), 0);
	ck_assert_uint_eq(st.unsent, 0);
	ck_assert_uint_eq(st.spooled, 30);
	ck_assert_uint_eq(spooled_samples(spool, &files), 30);
}
END_TEST

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[1400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static int file_exists(const char *dir, const char *name)
{
	char path[1400];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &sb) == 0;
}

/* Lock files in a spool directory. */
static int count_locks(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && strstr(de->d_name, ".lock"))
			n++;
	closedir(d);
	return n;
}

/* Test fault: opening a spool file hangs for a second and fails (a
 * hung filesystem). */
static int hang_open(const char *op, const char *path)
{
	if (strcmp(op, "open") || strstr(path, ".lock"))
		return 0;
	sleep_ms(1000);
	return EIO;
}

/* A sender that cannot finish in time (here: stuck in spool writes that
 * hang) does not hold close() beyond its deadline; it finishes on its
 * own later and frees the stream. */
START_TEST(test_stream_close_abandons_stuck_sender)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "705", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], spool[700];
	struct dirent *de;
	int64_t t0, dt;
	int i, locks = 1;
	DIR *d;

	REQUIRE_SERVERS();
	make_dir(spool, sizeof(spool), "spool-stuck");
	base_conf(&conf, url, sizeof(url), 1, "x");
	conf.spool_dir = spool;
	conf.batch_max = 5;
	conf.queue_max = 1000;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	sh5_stream_test_fault(hang_open);
	push_rounds(s, 0, 200);
	sleep_ms(200); /* the sender is now inside a hanging open() */
	t0 = now_ms();
	sh5_stream_close(s, 500, &st);
	dt = now_ms() - t0;
	ck_assert_msg(dt < 500 + 300, "close took %" PRId64 " ms", dt);
	ck_assert_int_eq(st.closed_in_time, 0);
	/* the sender ends by itself: its lock file goes away */
	for (i = 0; i < 500 && locks; i++) {
		sleep_ms(20);
		locks = 0;
		d = opendir(spool);
		ck_assert_ptr_nonnull(d);
		while ((de = readdir(d)))
			if (strstr(de->d_name, ".lock"))
				locks++;
		closedir(d);
	}
	sh5_stream_test_fault(NULL);
	ck_assert_int_eq(locks, 0);
}
END_TEST

/* Test fault: while fault_on, the spool operations named in fault_ops
 * fail with EACCES (as during slurmstepd's uid switches); counted. */
static volatile int fault_on;
static const char *fault_ops = "";
static int fault_hits;

static int eacces_window(const char *op, const char *path)
{
	(void)path;
	if (!__atomic_load_n(&fault_on, __ATOMIC_SEQ_CST) ||
	    !strstr(fault_ops, op))
		return 0;
	__atomic_add_fetch(&fault_hits, 1, __ATOMIC_SEQ_CST);
	return EACCES;
}

static void fault_window(const char *ops, int on)
{
	fault_ops = ops;
	__atomic_store_n(&fault_on, on, __ATOMIC_SEQ_CST);
}

static void *fault_off_later(void *arg)
{
	(void)arg;
	sleep_ms(300);
	fault_window("", 0);
	return NULL;
}

/* Transient spool failures (EACCES on every spool operation for a
 * while) never lose nor duplicate a sample: with the server down, every
 * batch ends up in the spool exactly once (held in memory meanwhile,
 * also at close); the next stream, whose reads and removals of spool
 * files fail for a while right when it delivers them, recovers exactly
 * what was spooled, and InfluxDB holds every sample. */
START_TEST(test_stream_spool_transient_faults_exact)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags t1 = { "706", "0", "n1" };
	struct sh5_stream_tags t2 = { "706", "1", "n1" };
	struct sh5_stream_stats st1, st2;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], spool[700], text[256];
	int files, hits;

	REQUIRE_SERVERS();
	make_dir(spool, sizeof(spool), "spool-transient");
	create_db(ifx_port, "transient");
	sh5_stream_test_fault(eacces_window);

	/* 1: server down (port 1), spool refused now and then */
	base_conf(&conf, url, sizeof(url), 1, "transient");
	conf.user = conf.pass = NULL;
	conf.spool_dir = spool;
	conf.batch_max = 10;
	s = sh5_stream_create(&conf, &t1, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 20);
	wait_spooled(s);
	fault_window("open rename unlink mkdir opendir stat", 1);
	push_rounds(s, 20, 20);
	sleep_ms(700); /* several batches formed, spooling refused */
	ck_assert_int_eq(wait_error(s, text, sizeof(text)), 1);
	fault_window("", 0);
	push_rounds(s, 40, 20);
	sleep_ms(300);
	/* refused again when close spools the rest, for less than its
	 * deadline */
	push_rounds(s, 60, 20);
	fault_window("open rename", 1);
	hits = fault_hits;
	{
		pthread_t th;

		ck_assert_int_eq(pthread_create(&th, NULL, fault_off_later,
						NULL), 0);
		ck_assert_int_eq(sh5_stream_close(s, 2000, &st1), 0);
		pthread_join(th, NULL);
	}
	ck_assert_int_gt(fault_hits, 0);
	ck_assert_int_ge(fault_hits, hits);
	ck_assert_int_eq(st1.closed_in_time, 1);
	ck_assert_uint_eq(st1.pushed, 240);
	ck_assert_uint_eq(st1.sent, 0);
	ck_assert_uint_eq(st1.unsent + st1.dropped_queue + st1.dropped_spool,
			  0);
	ck_assert_uint_eq(st1.spooled, 240);
	ck_assert_uint_eq(spooled_samples(spool, &files), 240);

	/* 2: server up; reads and removals refused while the first spool
	 * files are delivered */
	base_conf(&conf, url, sizeof(url), ifx_port, "transient");
	conf.spool_dir = spool;
	conf.batch_max = 10;
	fault_window("open unlink opendir", 1);
	s = sh5_stream_create(&conf, &t2, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	sleep_ms(300);
	fault_window("unlink", 1); /* delivered files stay for a while */
	sleep_ms(500);
	fault_window("", 0);
	push_rounds(s, 80, 10);
	ck_assert_int_eq(sh5_stream_close(s, 5000, &st2), 0);
	sh5_stream_test_fault(NULL);
	ck_assert_int_eq(st2.closed_in_time, 1);
	ck_assert_uint_eq(st2.recovered, st1.spooled + st2.spooled);
	ck_assert_uint_eq(st2.sent + st2.spooled, 30);
	ck_assert_uint_eq(spooled_samples(spool, &files), 0);
	ck_assert_int_eq(files, 0);
	ck_assert_int_eq(count_rows(ifx_port, "transient", "Task", "CPUTime"),
			 180);
	ck_assert_int_eq(count_rows(ifx_port, "transient", "Energy", "Power"),
			 90);
	check_task_rows(ifx_port, "transient", "706", 0, 90);
}
END_TEST

/* The spool directory vanishes while a stream spools, or cannot be
 * created when the stream starts: it is created again later (with the
 * stream's owner lock) and nothing is lost. */
START_TEST(test_stream_spool_dir_vanished_recreated)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "707", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], parent[700], spool[800], cmd[1000], text[256];
	uint64_t removed;
	int files;

	REQUIRE_SERVERS();
	/* the parent does not exist yet: the stream starts without spool */
	snprintf(parent, sizeof(parent), "%s/late", tmpdir);
	snprintf(spool, sizeof(spool), "%s/spool", parent);
	base_conf(&conf, url, sizeof(url), 1, "x");
	conf.spool_dir = spool;
	conf.batch_max = 10;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 20);
	ck_assert_int_eq(wait_error(s, text, sizeof(text)), 1);
	ck_assert_int_eq(mkdir(parent, 0700), 0);
	wait_spooled(s);
	push_rounds(s, 20, 20);
	sleep_ms(400);
	/* removed under the stream's feet (its files and lock with it);
	 * the server being down, nothing else moves meanwhile */
	removed = spooled_samples(spool, &files);
	ck_assert_uint_eq(removed, 120);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", spool);
	ck_assert_int_eq(system(cmd), 0);
	push_rounds(s, 40, 20);
	sleep_ms(400);
	/* created again, with the stream's lock */
	ck_assert_int_eq(count_locks(spool), 1);
	ck_assert_int_eq(sh5_stream_close(s, 2000, &st), 0);
	ck_assert_uint_eq(st.unsent + st.dropped_queue, 0);
	ck_assert_uint_eq(st.pushed, 180);
	ck_assert_uint_eq(st.spooled, 180);
	ck_assert_uint_eq(spooled_samples(spool, &files), 180 - removed);
	ck_assert_int_eq(count_locks(spool), 0);
}
END_TEST

/* Files of a stream that died without closing (its lock file is left but
 * nobody holds it) are adopted and delivered; files of the other format
 * are left alone. */
START_TEST(test_stream_adopts_files_of_crashed_owner)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "704", "1", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], spool[700];
	int files;

	REQUIRE_SERVERS();
	make_dir(spool, sizeof(spool), "spool-crash");
	create_db(ifx_port, "crash");
	write_file(spool, "oDEADx1x1.lock", "");
	write_file(spool, "01700000000000000000-oDEADx1x1-0000000001-2.lp",
		   "Task,job=704,node=n1,series=Task,step=0,task=0 CPUTime=1i 1700000000000000000\n"
		   "Task,job=704,node=n1,series=Task,step=0,task=0 CPUTime=2i 1700000000000000001\n");
	write_file(spool, "01700000000000000005-oGONEx2x1-0000000001-1.lp",
		   "Task,job=704,node=n1,series=Task,step=0,task=1 CPUTime=3i 1700000000000000005\n");
	write_file(spool, "01700000000000000009-oDEADx1x1-0000000002-1.json",
		   "{}");
	base_conf(&conf, url, sizeof(url), ifx_port, "crash");
	conf.spool_dir = spool;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	ck_assert_int_eq(sh5_stream_close(s, 3000, &st), 0);
	ck_assert_uint_eq(st.recovered, 3);
	ck_assert_int_eq(count_rows(ifx_port, "crash", "Task", "CPUTime"), 3);
	ck_assert(!file_exists(spool, "oDEADx1x1.lock"));
	ck_assert(file_exists(spool,
			      "01700000000000000009-oDEADx1x1-0000000002-1.json"));
	ck_assert_uint_eq(spooled_samples(spool, &files), 1);
	ck_assert_int_eq(files, 1);
}
END_TEST

/* The spool bound deletes the oldest files, counted; what is left is the
 * newest data. */
START_TEST(test_stream_spool_bound_drops_oldest)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "701", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], spool[700];
	struct dirent *de;
	uint64_t left, bytes = 0;
	int files;
	DIR *d;

	REQUIRE_SERVERS();
	make_dir(spool, sizeof(spool), "spool-bound");
	base_conf(&conf, url, sizeof(url), 1, "x");
	conf.spool_dir = spool;
	conf.spool_max_bytes = 8192;
	conf.batch_max = 10;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 200);
	sh5_stream_close(s, 2000, &st);
	left = spooled_samples(spool, &files);
	ck_assert_uint_eq(st.pushed, 600);
	ck_assert_uint_gt(st.dropped_spool, 0);
	ck_assert_uint_eq(left + st.dropped_spool, 600);
	d = opendir(spool);
	while ((de = readdir(d))) {
		struct stat sb;
		char path[8400];

		snprintf(path, sizeof(path), "%s/%s", spool, de->d_name);
		if (de->d_name[0] != '.' && stat(path, &sb) == 0 &&
		    S_ISREG(sb.st_mode) && strstr(de->d_name, ".lp"))
			bytes += (uint64_t)sb.st_size;
	}
	closedir(d);
	ck_assert_uint_le(bytes, 8192);
	ck_assert_uint_gt(bytes, 0);
}
END_TEST

/* Without a spool and with the server down, a full queue drops the
 * oldest samples and counts them; nothing is lost silently. */
START_TEST(test_stream_full_queue_drops_oldest_counted)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "702", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256];

	REQUIRE_SERVERS();
	base_conf(&conf, url, sizeof(url), 1, "x");
	conf.queue_max = 16;
	conf.batch_max = 8;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 100);
	ck_assert_int_eq(sh5_stream_close(s, 500, &st), -1);
	ck_assert_uint_eq(st.pushed, 300);
	ck_assert_uint_gt(st.dropped_queue, 0);
	ck_assert_uint_eq(st.dropped_queue + st.unsent, 300);
}
END_TEST

/* A live stream's spool files are not taken by another stream; once it
 * is closed, the next stream adopts and delivers them. */
START_TEST(test_stream_live_owner_files_not_adopted)
{
	struct sh5_stream_conf down, up;
	struct sh5_stream_tags ta = { "801", "0", "n1" }, tb = { "801", "1", "n1" },
			       tc = { "801", "2", "n1" };
	struct sh5_stream_stats sa, sb, sc;
	struct sh5_error err = { "" };
	struct sh5_stream *a, *b, *c;
	char url1[256], url2[256], spool[700];
	int files;

	REQUIRE_SERVERS();
	make_dir(spool, sizeof(spool), "spool-owner");
	create_db(ifx_port, "owner");
	base_conf(&down, url1, sizeof(url1), 1, "owner");
	down.spool_dir = spool;
	base_conf(&up, url2, sizeof(url2), ifx_port, "owner");
	up.spool_dir = spool;
	a = sh5_stream_create(&down, &ta, &err);
	ck_assert_msg(a != NULL, "%s", err.text);
	push_rounds(a, 0, 10);
	wait_spooled(a); /* a's first POST failed: its batch is spooled */
	ck_assert_uint_gt(spooled_samples(spool, &files), 0);
	b = sh5_stream_create(&up, &tb, &err);
	ck_assert_msg(b != NULL, "%s", err.text);
	push_rounds(b, 10, 10);
	sh5_stream_close(b, 2000, &sb);
	ck_assert_uint_eq(sb.recovered, 0);
	ck_assert_uint_eq(sb.sent, 30);
	sh5_stream_close(a, 1000, &sa);
	ck_assert_uint_eq(sa.spooled, 30);
	c = sh5_stream_create(&up, &tc, &err);
	ck_assert_msg(c != NULL, "%s", err.text);
	ck_assert_int_eq(sh5_stream_close(c, 3000, &sc), 0);
	ck_assert_uint_eq(sc.recovered, 30);
	ck_assert_uint_eq(spooled_samples(spool, &files), 0);
	ck_assert_int_eq(count_rows(ifx_port, "owner", "Task", "CPUTime"), 40);

	/* a stream that ends while another runs: the other one delivers its
	 * spool when it closes (a last scan), not only at its next start */
	a = sh5_stream_create(&down, &ta, &err);
	ck_assert_msg(a != NULL, "%s", err.text);
	b = sh5_stream_create(&up, &tc, &err);
	ck_assert_msg(b != NULL, "%s", err.text);
	push_rounds(a, 30, 10);
	sh5_stream_close(a, 1000, &sa);
	ck_assert_uint_eq(sa.spooled, 30);
	ck_assert_int_eq(sh5_stream_close(b, 3000, &sb), 0);
	ck_assert_uint_eq(sb.recovered, 30);
	ck_assert_uint_eq(spooled_samples(spool, &files), 0);
	ck_assert_int_eq(count_rows(ifx_port, "owner", "Task", "CPUTime"), 60);
}
END_TEST

/* ------------------------------------------------- receiver-based tests */

/* Parsed requests recorded by the receiver since offset *off. */
static yajl_val *read_requests(size_t *n, long *off)
{
	char path[700], line[1 << 20], ebuf[256];
	yajl_val *v = NULL;
	FILE *f;

	*n = 0;
	snprintf(path, sizeof(path), "%s/requests.jsonl", recvdir);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	fseek(f, *off, SEEK_SET);
	while (fgets(line, sizeof(line), f)) {
		v = realloc(v, (*n + 1) * sizeof(*v));
		v[*n] = yajl_tree_parse(line, ebuf, sizeof(ebuf));
		ck_assert_msg(v[*n] != NULL, "bad request record: %s", ebuf);
		(*n)++;
	}
	*off = ftell(f);
	fclose(f);
	return v;
}

static long recv_offset(void)
{
	char path[700];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/requests.jsonl", recvdir);
	return stat(path, &sb) == 0 ? (long)sb.st_size : 0;
}

static void free_requests(yajl_val *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		yajl_tree_free(v[i]);
	free(v);
}

static double stat_num(yajl_val stats, const char *key)
{
	yajl_val v = obj_get(stats, key, yajl_t_number);

	ck_assert_msg(v != NULL, "stats has no %s", key);
	/* RunStats members are JSON doubles */
	ck_assert_msg(YAJL_IS_DOUBLE(v), "%s is not a double", key);
	return YAJL_GET_DOUBLE(v);
}

START_TEST(test_stream_json_packets)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "901", "3", "n2" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256];
	yajl_val *req, last_stats = NULL, body;
	size_t n, i, k, m, nsamples = 0, ntask = 0;
	long off = recv_offset();
	double sum_util = 0, min_util = INFINITY, max_util = -INFINITY;
	int seen_counter = 0;

	REQUIRE_SERVERS();
	sh5_stream_conf_init(&conf);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/collect", recv_port);
	conf.url = url;
	conf.format = SH5_STREAM_JSON;
	conf.token = "jsontoken";
	conf.flush_interval_ms = 100;
	conf.batch_max = 50;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 40);
	sleep_ms(250);
	push_rounds(s, 40, 40);
	ck_assert_int_eq(sh5_stream_close(s, 3000, &st), 0);
	ck_assert_uint_eq(st.sent, 240);

	req = read_requests(&n, &off);
	ck_assert_uint_ge(n, 2);
	for (i = 0; i < n; i++) {
		const char *p_ct[] = { "headers", "content-type", NULL };
		const char *p_auth[] = { "headers", "authorization", NULL };
		char ebuf[256];
		yajl_val cs, samples;

		ck_assert_str_eq(str_of(yajl_tree_get(
					 req[i], p_ct, yajl_t_string)),
				 "application/json");
		ck_assert_str_eq(str_of(yajl_tree_get(
					 req[i], p_auth, yajl_t_string)),
				 "Bearer jsontoken");
		ck_assert_str_eq(str_of(obj_get(req[i], "path",
							 yajl_t_string)),
				 "/collect");
		body = yajl_tree_parse(str_of(obj_get(req[i], "body",
							       yajl_t_string)),
				       ebuf, sizeof(ebuf));
		ck_assert_msg(body != NULL, "packet is not JSON: %s", ebuf);
		ck_assert_int_eq(YAJL_GET_INTEGER(obj_get(body, "version",
							  yajl_t_number)),
				 2);
		ck_assert_int_gt(YAJL_GET_INTEGER(obj_get(body, "created_at",
							  yajl_t_number)),
				 1600000000000LL);
		ck_assert_str_eq(str_of(obj_get(body, "job",
							 yajl_t_string)),
				 "901");
		ck_assert_str_eq(str_of(obj_get(body, "node",
							 yajl_t_string)),
				 "n2");
		cs = obj_get(body, "counter_stats", yajl_t_array);
		ck_assert_ptr_nonnull(cs);
		samples = obj_get(body, "samples", yajl_t_array);
		ck_assert_ptr_nonnull(samples);
		for (k = 0; k < samples->u.array.len; k++) {
			yajl_val sm = samples->u.array.values[k], f, t;
			const char *series = str_of(
				obj_get(sm, "series", yajl_t_string));
			int64_t tn = YAJL_GET_INTEGER(
				obj_get(sm, "time_ns", yajl_t_number));
			long idx = (long)((tn - T0) / 1000003LL);
			union sh5_stream_value v[3];

			ck_assert_int_eq((tn - T0) % 1000003LL, 0);
			f = obj_get(sm, "fields", yajl_t_object);
			ck_assert_ptr_nonnull(f);
			t = obj_get(sm, "task", yajl_t_number);
			if (!strcmp(series, "Task")) {
				ck_assert_ptr_nonnull(t);
				task_values(idx, (int)YAJL_GET_INTEGER(t), v);
				ck_assert_int_eq(YAJL_GET_INTEGER(obj_get(
							 f, "CPUTime",
							 yajl_t_number)),
						 (long long)v[0].u);
				ck_assert(YAJL_GET_DOUBLE(obj_get(
						  f, "CPUUtilization",
						  yajl_t_number)) == v[1].d);
				ck_assert_int_eq(YAJL_GET_INTEGER(obj_get(
							 f, "RSS",
							 yajl_t_number)),
						 (long long)v[2].u);
				sum_util += v[1].d;
				min_util = fmin(min_util, v[1].d);
				max_util = fmax(max_util, v[1].d);
				ntask++;
			} else {
				ck_assert_str_eq(series, "Energy");
				ck_assert_ptr_null(t);
				ck_assert(YAJL_GET_DOUBLE(obj_get(
						  f, "Power", yajl_t_number)) ==
					  100.0 + (double)idx * 0.5);
			}
			nsamples++;
		}
		if (i + 1 == n) {
			for (m = 0; m < cs->u.array.len; m++) {
				yajl_val e = cs->u.array.values[m];

				ck_assert_str_eq(str_of(obj_get(
							 e, "app",
							 yajl_t_string)),
						 "901.3");
				if (strcmp(str_of(obj_get(
						   e, "counter", yajl_t_string)),
					   "Task.CPUUtilization"))
					continue;
				seen_counter = 1;
				last_stats = obj_get(e, "stats", yajl_t_object);
				ck_assert_ptr_nonnull(last_stats);
				ck_assert(stat_num(last_stats, "count") == 160.0);
				ck_assert(fabs(stat_num(last_stats, "accumulate") -
					       sum_util) < 1e-9 * sum_util);
				ck_assert(stat_num(last_stats, "minimum") ==
					  min_util);
				ck_assert(stat_num(last_stats, "maximum") ==
					  max_util);
				ck_assert(fabs(stat_num(last_stats, "mean") -
					       sum_util / 160.0) < 1e-9);
				stat_num(last_stats, "stddev");
				stat_num(last_stats, "skewness");
				stat_num(last_stats, "kurtosis");
			}
			ck_assert_uint_eq(cs->u.array.len, 4);
		}
		yajl_tree_free(body);
	}
	ck_assert_int_eq(seen_counter, 1);
	/* one connection, kept alive for every packet */
	for (i = 1; i < n; i++)
		ck_assert_int_eq(YAJL_GET_INTEGER(obj_get(req[i], "peer",
							  yajl_t_number)),
				 YAJL_GET_INTEGER(obj_get(req[0], "peer",
							  yajl_t_number)));
	ck_assert_uint_eq(nsamples, 240);
	ck_assert_uint_eq(ntask, 160);
	free_requests(req, n);
}
END_TEST

/* A task's wild values (finite but near 1e300, and an infinity) do not
 * stop JSON streaming: every sample is still delivered, the statistics
 * that overflow are written as null. */
/* The "samples" of a packet, byte for byte as yajl writes them: names
 * with a quote and a backslash escaped, an integer above INT64_MAX, a
 * NaN as null, a node-level sample without "task". */
START_TEST(test_stream_json_sample_text)
{
	const char *names[] = { "a\\b", "c", "d" };
	enum sh5_stream_type types[] = { SH5_STREAM_U64, SH5_STREAM_DOUBLE,
					 SH5_STREAM_DOUBLE };
	union sh5_stream_value v[3];
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "7", "0", "n" };
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256];
	yajl_val *req;
	size_t n;
	long off = recv_offset();
	const char *body, *p;

	REQUIRE_SERVERS();
	sh5_stream_conf_init(&conf);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/text", recv_port);
	conf.url = url;
	conf.format = SH5_STREAM_JSON;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	v[0].u = UINT64_MAX;
	v[1].d = NAN;
	v[2].d = 0.5;
	ck_assert_int_eq(sh5_stream_push(s, "G\"x", 2, names, types, v, 3, 5), 0);
	v[0].u = 42;
	v[1].d = -2.0;
	v[2].d = 1e300;
	ck_assert_int_eq(sh5_stream_push(s, "G\"x", -1, names, types, v, 3, 6), 0);
	ck_assert_int_eq(sh5_stream_close(s, 3000, NULL), 0);
	req = read_requests(&n, &off);
	ck_assert_uint_eq(n, 1);
	body = str_of(obj_get(req[0], "body", yajl_t_string));
	p = strstr(body, "\"samples\":");
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p, "\"samples\":["
			    "{\"series\":\"G\\\"x\",\"task\":2,\"time_ns\":5,"
			    "\"fields\":{\"a\\\\b\":18446744073709551615,"
			    "\"c\":null,\"d\":0.5}},"
			    "{\"series\":\"G\\\"x\",\"time_ns\":6,"
			    "\"fields\":{\"a\\\\b\":42,\"c\":-2.0,\"d\":1e+300}}]}");
	free_requests(req, n);
}
END_TEST

START_TEST(test_stream_json_huge_values)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "902", "0", "n1" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	union sh5_stream_value v[1];
	char url[256], ebuf[256];
	yajl_val *req, body, cs, e;
	size_t n, i, nulls = 0;
	long off = recv_offset();

	REQUIRE_SERVERS();
	sh5_stream_conf_init(&conf);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/collect", recv_port);
	conf.url = url;
	conf.format = SH5_STREAM_JSON;
	conf.flush_interval_ms = 100;
	conf.batch_max = 2;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	for (i = 0; i < 6; i++) {
		v[0].d = i == 3 ? INFINITY : (i % 2 ? -1e300 : 1e300);
		ck_assert_int_eq(sh5_stream_push(s, "Energy", -1, energy_names,
						 energy_types, v, 1,
						 sample_time((long)i)),
				 0);
	}
	ck_assert_int_eq(sh5_stream_close(s, 3000, &st), 0);
	ck_assert_uint_eq(st.sent, 6);
	req = read_requests(&n, &off);
	ck_assert_uint_ge(n, 3);
	for (i = 0; i < n; i++) {
		body = yajl_tree_parse(str_of(obj_get(req[i], "body",
						       yajl_t_string)),
				       ebuf, sizeof(ebuf));
		ck_assert_msg(body != NULL, "packet is not JSON: %s", ebuf);
		cs = obj_get(body, "counter_stats", yajl_t_array);
		ck_assert_ptr_nonnull(cs);
		ck_assert_uint_eq(cs->u.array.len, 1);
		e = cs->u.array.values[0];
		if (YAJL_IS_NULL(obj_get(e, "stats", yajl_t_any)))
			nulls++;
		yajl_tree_free(body);
	}
	ck_assert_uint_ge(nulls, 1);
	free_requests(req, n);
}
END_TEST

/* influx2: token header, /api/v2/write path with precision=ns, one line
 * per sample, delivered in order per series across server failures. */
START_TEST(test_stream_influx2_token_and_order_across_failures)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "902", "0", "n3" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], spool[700], status[700], text[256];
	yajl_val *req;
	size_t n, i;
	long off = recv_offset(), lines = 0, ok_reqs = 0;
	int64_t last[3] = { -1, -1, -1 };
	FILE *f;

	REQUIRE_SERVERS();
	make_dir(spool, sizeof(spool), "spool-order");
	snprintf(status, sizeof(status), "%s/status", recvdir);
	f = fopen(status, "w");
	ck_assert_ptr_nonnull(f);
	fputs("503\n", f);
	fclose(f);
	sh5_stream_conf_init(&conf);
	snprintf(url, sizeof(url),
		 "http://127.0.0.1:%d/api/v2/write?org=o&bucket=b", recv_port);
	conf.url = url;
	conf.format = SH5_STREAM_INFLUX2;
	conf.token = "tok-en";
	conf.spool_dir = spool;
	conf.flush_interval_ms = 50;
	conf.batch_max = 7;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 30);
	ck_assert_int_eq(wait_error(s, text, sizeof(text)), 1);
	ck_assert_msg(strstr(text, "HTTP 503"), "%s", text);
	push_rounds(s, 30, 30);
	unlink(status);
	wait_sent(s, 180);
	push_rounds(s, 60, 30);
	ck_assert_int_eq(sh5_stream_close(s, 5000, &st), 0);
	ck_assert_uint_eq(st.sent + st.spooled, 270);
	ck_assert_uint_eq(st.recovered, st.spooled);
	ck_assert_uint_gt(st.failed_posts, 0);

	req = read_requests(&n, &off);
	for (i = 0; i < n; i++) {
		const char *p_auth[] = { "headers", "authorization", NULL };
		const char *body, *p, *nl, *sp;

		ck_assert_str_eq(str_of(yajl_tree_get(
					 req[i], p_auth, yajl_t_string)),
				 "Token tok-en");
		ck_assert_str_eq(str_of(obj_get(req[i], "path",
							 yajl_t_string)),
				 "/api/v2/write?org=o&bucket=b&precision=ns");
		if (YAJL_GET_INTEGER(obj_get(req[i], "status",
					     yajl_t_number)) != 204)
			continue;
		ok_reqs++;
		body = str_of(obj_get(req[i], "body", yajl_t_string));
		for (p = body; *p; p = nl + 1) {
			int64_t t;
			int k;

			nl = strchr(p, '\n');
			ck_assert_ptr_nonnull(nl);
			sp = memrchr(p, ' ', (size_t)(nl - p));
			ck_assert_ptr_nonnull(sp);
			t = strtoll(sp + 1, NULL, 10);
			/* "series" key: 0,1 = Task task 0/1, 2 = Energy */
			if (!strncmp(p, "Energy,", 7))
				k = 2;
			else
				k = strstr(p, ",task=1 ") && strstr(p, ",task=1 ") < nl;
			ck_assert_msg(t > last[k], "out of order: %.*s",
				      (int)(nl - p), p);
			/* no gap: consecutive samples of the series */
			ck_assert_int_eq(last[k] < 0 ? t - T0 : t - last[k],
					 last[k] < 0 ? 0 : 1000003LL);
			last[k] = t;
			lines++;
		}
	}
	ck_assert_int_gt(ok_reqs, 1);
	ck_assert_int_eq(lines, 270);
	free_requests(req, n);
}
END_TEST

/* https: the peer is verified by default (a self-signed certificate is
 * refused, data kept), accepted with its CA file, or when told insecure. */
START_TEST(test_stream_tls_verification)
{
	struct sh5_stream_conf conf;
	struct sh5_stream_tags tags = { "903", "0", "n4" };
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], dir[700], cmd[2000], text[256], ca[800];
	pid_t pid;
	int port;

	REQUIRE_SERVERS();
	make_dir(dir, sizeof(dir), "tls");
	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey rsa:2048 -nodes -days 1 "
		 "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
		 "-keyout '%s/key.pem' -out '%s/cert.pem' >/dev/null 2>&1",
		 dir, dir);
	ck_assert_int_eq(system(cmd), 0);
	pid = receiver_start_tls(dir, 0, &port, dir);
	ck_assert_int_gt(pid, 0);
	sh5_stream_conf_init(&conf);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/write?db=t", port);
	conf.url = url;
	conf.format = SH5_STREAM_INFLUX1;
	conf.flush_interval_ms = 50;

	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 2);
	ck_assert_int_eq(wait_error(s, text, sizeof(text)), 1);
	ck_assert_msg(strstr(text, "certificate"), "%s", text);
	sh5_stream_close(s, 500, &st);
	ck_assert_uint_eq(st.sent, 0);

	snprintf(ca, sizeof(ca), "%s/cert.pem", dir);
	conf.ca_file = ca;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 2);
	ck_assert_int_eq(sh5_stream_close(s, 3000, &st), 0);
	ck_assert_uint_eq(st.sent, 6);

	conf.ca_file = NULL;
	conf.insecure_tls = 1;
	s = sh5_stream_create(&conf, &tags, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	push_rounds(s, 0, 2);
	ck_assert_int_eq(sh5_stream_close(s, 3000, &st), 0);
	ck_assert_uint_eq(st.sent, 6);
	stop_pid(&pid);
}
END_TEST

START_TEST(test_stream_push_argument_errors)
{
	const char *names[] = { "a" };
	const char *longname[] = {
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	};
	enum sh5_stream_type types[] = { SH5_STREAM_U64 };
	union sh5_stream_value v[SH5_STREAM_MAX_FIELDS + 1];
	struct sh5_stream_conf conf;
	struct sh5_stream_stats st;
	struct sh5_error err = { "" };
	struct sh5_stream *s;
	char url[256], series[32];
	int i;

	base_conf(&conf, url, sizeof(url), 1, "x");
	s = sh5_stream_create(&conf, NULL, &err);
	ck_assert_msg(s != NULL, "%s", err.text);
	memset(v, 0, sizeof(v));
	errno = 0;
	ck_assert_int_eq(sh5_stream_push(s, "S", 0, names, types, v, 0, 1), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(sh5_stream_push(s, "S", 0, names, types, v,
					 SH5_STREAM_MAX_FIELDS + 1, 1),
			 -1);
	ck_assert_int_eq(sh5_stream_push(NULL, "S", 0, names, types, v, 1, 1),
			 -1);
	ck_assert_int_eq(sh5_stream_push(s, "S", 0, longname, types, v, 1, 1),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(sh5_stream_push(s, "S\n", 0, names, types, v, 1, 1),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	for (i = 0; i < SH5_STREAM_MAX_SERIES; i++) {
		snprintf(series, sizeof(series), "S%d", i);
		ck_assert_int_eq(sh5_stream_push(s, series, 0, names, types, v,
						 1, 1),
				 0);
	}
	errno = 0;
	ck_assert_int_eq(sh5_stream_push(s, "one-more", 0, names, types, v, 1,
					 1),
			 -1);
	ck_assert_int_eq(errno, ENOSPC);
	sh5_stream_close(s, 300, &st);
	ck_assert_uint_eq(st.pushed, SH5_STREAM_MAX_SERIES);
	/* NULL-safe */
	ck_assert_int_eq(sh5_stream_close(NULL, 0, &st), 0);
	ck_assert_uint_eq(st.pushed, 0);
	sh5_stream_flush(NULL);
	ck_assert_int_eq(sh5_stream_last_error(NULL, url, sizeof(url)), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stream");
	TCase *tc = tcase_create("influxd");
	SRunner *sr;
	int failed;

	tcase_add_unchecked_fixture(tc, setup_servers, teardown_servers);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_stream_influx1_delivers_every_sample, 0,
			    (int)(sizeof(sizes) / sizeof(sizes[0])));
	tcase_add_loop_test(tc, test_stream_lone_sample_sent_by_flush_interval,
			    0, 2);
	tcase_add_test(tc, test_stream_energy_values_and_tags);
	tcase_add_test(tc, test_stream_spool_delivered_by_next_stream);
	tcase_add_test(tc, test_stream_server_returns_during_stream);
	tcase_add_test(tc, test_stream_close_keeps_deadline_on_hanging_server);
	tcase_add_test(tc, test_stream_close_without_spool_reports_unsent);
	tcase_add_test(tc, test_stream_wrong_credentials);
	tcase_add_test(tc, test_stream_url_credentials_not_in_errors);
	tcase_add_test(tc, test_stream_unknown_database);
	tcase_add_test(tc, test_stream_unreachable_port);
	tcase_add_test(tc, test_stream_rejected_batch_not_retried);
	tcase_add_test(tc, test_stream_spool_bound_drops_oldest);
	tcase_add_test(tc, test_stream_full_queue_drops_oldest_counted);
	tcase_add_test(tc, test_stream_adopts_files_of_crashed_owner);
	tcase_add_test(tc, test_stream_close_abandons_stuck_sender);
	tcase_add_test(tc, test_stream_spool_retried_after_privilege_drop);
	tcase_add_test(tc, test_stream_spool_transient_faults_exact);
	tcase_add_test(tc, test_stream_spool_dir_vanished_recreated);
	tcase_add_test(tc, test_stream_live_owner_files_not_adopted);
	tcase_add_test(tc, test_stream_json_packets);
	tcase_add_test(tc, test_stream_json_huge_values);
	tcase_add_test(tc, test_stream_json_sample_text);
	tcase_add_test(tc, test_stream_influx2_token_and_order_across_failures);
	tcase_add_test(tc, test_stream_tls_verification);
	tcase_add_test(tc, test_stream_push_argument_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
