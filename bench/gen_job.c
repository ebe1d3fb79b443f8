/*
 * gen_job.c - write the node-step files of a synthetic job.
 *
 *   gen_job -d DIR -j JOB [-n NODES] [-t TASKS_PER_NODE] [-s SAMPLES]
 *           [-S STEPS] [-f stock|sh5|mixed] [-E] [-G] [-N NODE_PREFIX] [-r SEED]
 *
 * Files <JOB>_<step>_<node>.h5 in DIR, one per node and step; steps is a
 * comma list (default "0"; "batch" runs on the first node only).  Stock
 * files are written like Slurm 22.05's acct_gather_profile/hdf5: H5PT
 * packet tables of 10-record chunks, no EpochTimeNs, extern named by its
 * number.  sh5 files are written by our node-step writer (src/profile/writer.h)
 * with our node attributes.  -E adds an Energy series per node, -G generic
 * series (GPU at node level, Sensors/Fan1 and Fan2 in a group).  -K makes
 * the sh5 writers exit without closing, like a killed slurmstepd: their
 * files hold what the last flush wrote (the tasks, not Energy).  Values
 * are deterministic for a seed; tests read them back independently.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>
#include <hdf5_hl.h>

#include "profile/seal.h"
#include "profile/series.h"
#include "profile/writer.h"

static const char *const task_names[] = { "CPUFrequency", "CPUTime",
	"CPUUtilization", "RSS", "VMSize", "Pages", "ReadMB", "WriteMB" };
static const enum sh5_ftype task_types[] = { SH5_FT_U64, SH5_FT_DOUBLE,
	SH5_FT_DOUBLE, SH5_FT_U64, SH5_FT_U64, SH5_FT_U64, SH5_FT_DOUBLE,
	SH5_FT_DOUBLE };
#define NTF 8

struct cfg {
	const char *dir, *prefix;
	uint32_t job;
	int nodes, tasks, samples, energy;
	int generic; /* -G: GPU (node level) and Sensors/Fan1, Sensors/Fan2 */
	int kill;    /* -K: sh5 writers die (_exit) before closing */
	int format; /* 0 stock, 1 sh5, 2 mixed (odd nodes sh5) */
	uint64_t seed;
};

static uint64_t rng(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 17;
}

/* One task record: time slots then the 8 fields. */
static void task_record(uint64_t *st, uint64_t t0, int k, int node,
			union sh5_value *v)
{
	v[0].u = (uint64_t)k + 1;
	v[1].u = t0 + (uint64_t)k + 1;
	v[2].i = (int64_t)v[1].u * 1000000000 + node * 1000003 +
		 (int64_t)(rng(st) % 1000);
	v[3].u = 2400000 + rng(st) % 1000;
	v[4].d = (double)(rng(st) % 1000) / 1000.0;
	v[5].d = (double)(rng(st) % 100000) / 1000.0;
	v[6].u = 100000 + rng(st) % 50000;
	v[7].u = 500000 + rng(st) % 50000;
	v[8].u = rng(st) % 100;
	v[9].d = (double)(rng(st) % 4096) / 256.0;
	v[10].d = (double)(rng(st) % 4096) / 1024.0 + 1e-9 * (double)(rng(st) % 7);
}

static void energy_record(uint64_t *st, uint64_t t0, int k, int node,
			  union sh5_value *v)
{
	v[0].u = (uint64_t)k + 1;
	v[1].u = t0 + (uint64_t)k + 1;
	v[2].i = (int64_t)v[1].u * 1000000000 + node * 1000003 + 500000;
	v[3].u = 150 + rng(st) % 100;
}

/* Generic series: GPU {Util double, Mem u64}, Sensors/FanN {RPM u64}. */
static const char *const gpu_names[] = { "Util", "Mem" };
static const enum sh5_ftype gpu_types[] = { SH5_FT_DOUBLE, SH5_FT_U64 };
static const char *const fan_names[] = { "RPM" };
static const enum sh5_ftype fan_types[] = { SH5_FT_U64 };

static void generic_record(uint64_t *st, uint64_t t0, int k, int node,
			   int nf, union sh5_value *v)
{
	v[0].u = (uint64_t)k + 1;
	v[1].u = t0 + (uint64_t)k + 1;
	v[2].i = (int64_t)v[1].u * 1000000000 + node * 1000003 + 250000;
	if (nf == 2) {
		v[3].d = (double)(rng(st) % 10000) / 100.0;
		v[4].u = rng(st) % 80000;
	} else {
		v[3].u = 1000 + rng(st) % 3000;
	}
}

static const char *stock_step(const char *step)
{
	if (!strcmp(step, "extern"))
		return "4294967292";
	return step;
}

static void put_int(hid_t g, const char *n, int v)
{
	hsize_t d[1] = { 1 };
	hid_t sp = H5Screate_simple(1, d, NULL);
	hid_t a = H5Acreate2(g, n, H5T_NATIVE_INT, sp, H5P_DEFAULT, H5P_DEFAULT);

	H5Awrite(a, H5T_NATIVE_INT, &v);
	H5Aclose(a);
	H5Sclose(sp);
}

static void put_str(hid_t g, const char *n, const char *v)
{
	hsize_t d[1] = { 1 };
	hid_t sp = H5Screate_simple(1, d, NULL), t = H5Tcopy(H5T_C_S1), a;

	H5Tset_size(t, strlen(v));
	H5Tset_strpad(t, H5T_STR_NULLTERM);
	a = H5Acreate2(g, n, t, sp, H5P_DEFAULT, H5P_DEFAULT);
	H5Awrite(a, t, v);
	H5Aclose(a);
	H5Tclose(t);
	H5Sclose(sp);
}

/* The stock plugin's packed record type: times then fields. */
static hid_t stock_type(const char *const *names, const enum sh5_ftype *t,
			int n)
{
	hid_t ty = H5Tcreate(H5T_COMPOUND, 16 + 8 * (size_t)n);
	int i;

	H5Tinsert(ty, "ElapsedTime", 0, H5T_NATIVE_UINT64);
	H5Tinsert(ty, "EpochTime", 8, H5T_NATIVE_UINT64);
	for (i = 0; i < n; i++)
		H5Tinsert(ty, names[i], 16 + 8 * (size_t)i,
			  t[i] == SH5_FT_DOUBLE ? H5T_NATIVE_DOUBLE :
						  H5T_NATIVE_UINT64);
	return ty;
}

/* Pack slot records into the stock layout (drop EpochTimeNs). */
static void pack(const union sh5_value *v, size_t slots, int nf, int rows,
		 unsigned char *out)
{
	int r;

	for (r = 0; r < rows; r++, v += slots) {
		memcpy(out, &v[0], 16);
		memcpy(out + 16, &v[3], 8 * (size_t)nf);
		out += 16 + 8 * (size_t)nf;
	}
}

static int write_stock(const struct cfg *c, const char *path,
		       const char *node, int nodeidx, int ntasks,
		       int first_task, uint64_t t0)
{
	hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	hid_t g, tg, ty, ety;
	union sh5_value *v;
	unsigned char *packed;
	char name[32];
	int t, k;
	const char *pw = "Power";
	const enum sh5_ftype pt = SH5_FT_U64;

	if (f < 0)
		return -1;
	g = H5Gcreate2(f, node, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	put_int(g, "Node Index", nodeidx);
	put_str(g, "Node Name", node);
	put_int(g, "Number of Tasks", ntasks);
	put_int(g, "CPUs per Task", 1);
	put_str(g, "Start Time", "Thu Nov 14 22:13:20 2023");
	tg = H5Gcreate2(g, "Tasks", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	ty = stock_type(task_names, task_types, NTF);
	ety = stock_type(&pw, &pt, 1);
	v = calloc((size_t)c->samples + 1, 12 * sizeof(*v));
	packed = malloc(((size_t)c->samples + 1) * (16 + 8 * NTF));
	for (t = 0; t < ntasks; t++) {
		uint64_t st = c->seed * 7919 + (uint64_t)(first_task + t) * 31 +
			      t0;
		hid_t pt_id;

		snprintf(name, sizeof(name), "%d", first_task + t);
		pt_id = H5PTcreate_fl(tg, name, ty, 10, -1);
		for (k = 0; k < c->samples; k++)
			task_record(&st, t0, k, nodeidx, v + 12 * (size_t)k);
		pack(v, 12, NTF, c->samples, packed);
		if (c->samples)
			H5PTappend(pt_id, (size_t)c->samples, packed);
		H5PTclose(pt_id);
	}
	if (c->energy) {
		uint64_t st = c->seed * 104729 + (uint64_t)nodeidx + t0;
		hid_t pt_id = H5PTcreate_fl(g, "Energy", ety, 10, -1);

		for (k = 0; k < c->samples; k++)
			energy_record(&st, t0, k, nodeidx, v + 5 * (size_t)k);
		pack(v, 5, 1, c->samples, packed);
		if (c->samples)
			H5PTappend(pt_id, (size_t)c->samples, packed);
		H5PTclose(pt_id);
	}
	if (c->generic) {
		hid_t gty = stock_type(gpu_names, gpu_types, 2);
		hid_t fty = stock_type(fan_names, fan_types, 1);
		hid_t sg = H5Gcreate2(g, "Sensors", H5P_DEFAULT, H5P_DEFAULT,
				      H5P_DEFAULT);
		int fan;

		for (fan = 0; fan < 3; fan++) {
			uint64_t st = c->seed * 31337 + (uint64_t)nodeidx * 7 +
				      (uint64_t)fan + t0;
			int nf = fan == 0 ? 2 : 1;
			hid_t pt_id;

			snprintf(name, sizeof(name), "Fan%d", fan);
			pt_id = H5PTcreate_fl(fan ? sg : g, fan ? name : "GPU",
					      fan ? fty : gty, 10, -1);
			for (k = 0; k < c->samples; k++)
				generic_record(&st, t0, k, nodeidx, nf,
					       v + (3 + (size_t)nf) * (size_t)k);
			pack(v, 3 + (size_t)nf, nf, c->samples, packed);
			if (c->samples)
				H5PTappend(pt_id, (size_t)c->samples, packed);
			H5PTclose(pt_id);
		}
		H5Gclose(sg);
		H5Tclose(gty);
		H5Tclose(fty);
	}
	free(v);
	free(packed);
	H5Tclose(ty);
	H5Tclose(ety);
	H5Gclose(tg);
	H5Gclose(g);
	return H5Fclose(f) < 0 ? -1 : 0;
}

static int write_ours(const struct cfg *c, const char *path, const char *node,
		      int nodeidx, int ntasks, int first_task, uint64_t t0,
		      const char *step, int nnodes, int step_tasks)
{
	struct sh5_writer_opts wo;
	struct sh5_error err = { "" };
	struct sh5_writer *w;
	union sh5_value v[12];
	int t, k, eid = -1, *ids;
	const char *pw = "Power";
	const enum sh5_ftype pt = SH5_FT_U64;
	char name[32];

	sh5_writer_opts_init(&wo);
	if (!(w = sh5_writer_create(path, -1, node, &wo, &err))) {
		fprintf(stderr, "gen_job: %s\n", err.text);
		return -1;
	}
	sh5_writer_attr_int(w, "Node Index", nodeidx, NULL);
	sh5_writer_attr_str(w, "Node Name", node, NULL);
	sh5_writer_attr_int(w, "Number of Tasks", ntasks, NULL);
	sh5_writer_attr_int(w, "CPUs per Task", 1, NULL);
	sh5_writer_attr_str(w, "Start Time", "Thu Nov 14 22:13:20 2023", NULL);
	sh5_writer_attr_u32(w, "Job ID", c->job, NULL);
	sh5_writer_attr_str(w, "Step ID", step, NULL);
	sh5_writer_attr_u32(w, "Step Number",
			    !strcmp(step, "batch") ? 0xfffffffbu :
			    !strcmp(step, "extern") ? 0xfffffffcu :
			    (uint32_t)strtoul(step, NULL, 10), NULL);
	sh5_writer_attr_u32(w, "UID", 1000, NULL);
	sh5_writer_attr_str(w, "User", "genuser", NULL);
	sh5_writer_attr_str(w, "Cluster", "gencluster", NULL);
	sh5_writer_attr_u32(w, "Number of Nodes", (uint32_t)nnodes, NULL);
	sh5_writer_attr_u32(w, "Step Tasks", (uint32_t)step_tasks, NULL);
	sh5_writer_attr_str(w, "Start Time UTC", "2023-11-14T22:13:20Z", NULL);
	sh5_writer_attr_i64(w, "Start Time ns", (int64_t)t0 * 1000000000, NULL);
	sh5_writer_attr_str(w, "Slurm Version", "22.05.8", NULL);
	sh5_writer_attr_str(w, "Plugin Version", PACKAGE_VERSION, NULL);
	ids = calloc((size_t)ntasks + 1, sizeof(*ids));
	for (t = 0; t < ntasks; t++) {
		struct sh5_series *s;

		snprintf(name, sizeof(name), "%d", first_task + t);
		s = sh5_series_create("Tasks", name, task_names, task_types,
				      NTF, &err);
		if (!s || (ids[t] = sh5_writer_add_series(w, "Tasks", s, 1.0,
							  &err)) < 0) {
			fprintf(stderr, "gen_job: %s\n", err.text);
			return -1;
		}
	}
	if (c->energy) {
		struct sh5_series *s = sh5_series_create(NULL, "Energy", &pw,
							 &pt, 1, &err);

		if (!s || (eid = sh5_writer_add_series(w, NULL, s, 1.0,
						       &err)) < 0) {
			fprintf(stderr, "gen_job: %s\n", err.text);
			return -1;
		}
	}
	for (t = 0; t < ntasks; t++) {
		uint64_t st = c->seed * 7919 + (uint64_t)(first_task + t) * 31 +
			      t0;

		for (k = 0; k < c->samples; k++) {
			memset(v, 0, sizeof(v));
			task_record(&st, t0, k, nodeidx, v);
			sh5_writer_append(w, ids[t], v);
		}
		if (sh5_writer_flush(w, &err) < 0) {
			fprintf(stderr, "gen_job: %s\n", err.text);
			return -1;
		}
	}
	if (c->energy) {
		uint64_t st = c->seed * 104729 + (uint64_t)nodeidx + t0;

		for (k = 0; k < c->samples; k++) {
			memset(v, 0, sizeof(v));
			energy_record(&st, t0, k, nodeidx, v);
			sh5_writer_append(w, eid, v);
		}
	}
	if (c->generic) {
		int fan;

		for (fan = 0; fan < 3; fan++) {
			uint64_t st = c->seed * 31337 + (uint64_t)nodeidx * 7 +
				      (uint64_t)fan + t0;
			int nf = fan == 0 ? 2 : 1, id;
			struct sh5_series *s;

			snprintf(name, sizeof(name), "Fan%d", fan);
			s = fan ? sh5_series_create("Sensors", name, fan_names,
						    fan_types, 1, &err) :
				  sh5_series_create(NULL, "GPU", gpu_names,
						    gpu_types, 2, &err);
			if (!s || (id = sh5_writer_add_series(w, fan ? "Sensors" :
							      NULL, s, 1.0,
							      &err)) < 0) {
				fprintf(stderr, "gen_job: %s\n", err.text);
				return -1;
			}
			for (k = 0; k < c->samples; k++) {
				memset(v, 0, sizeof(v));
				generic_record(&st, t0, k, nodeidx, nf, v);
				sh5_writer_append(w, id, v);
			}
		}
	}
	free(ids);
	if (c->kill) /* like a killed slurmstepd: no final flush */
		_exit(0);
	if (sh5_writer_close(w, &err) < 0) {
		fprintf(stderr, "gen_job: %s\n", err.text);
		return -1;
	}
	return 0;
}

/* Seal the file at path (job, step, node) with key, as the plugin does
 * at step end.  0 or -1. */
static int seal_file(const struct sh5_seal_key *key, const char *path,
		     uint32_t job, const char *step, const char *node)
{
	struct sh5_error err = { "" };
	const char *base = strrchr(path, '/');
	struct sh5_seal_id id = { job, step, node, base ? base + 1 : path };
	int fd = open(path, O_RDWR | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	if ((rc = sh5_seal_fd(fd, key, &id, &err)) < 0)
		fprintf(stderr, "gen_job: %s: %s\n", path, err.text);
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	struct cfg c = { .prefix = "node", .nodes = 4, .tasks = 4,
			 .samples = 60, .seed = 1 };
	char *steps = "0", *tok, *save = NULL, path[4096], node[64];
	int o, si = 0;
	struct sh5_seal_key key;
	const char *keyfile = NULL;

	while ((o = getopt(argc, argv, "d:j:n:t:s:S:f:EGKN:r:k:")) != -1) {
		switch (o) {
		case 'd': c.dir = optarg; break;
		case 'j': c.job = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'n': c.nodes = (int)strtol(optarg, NULL, 10); break;
		case 't': c.tasks = (int)strtol(optarg, NULL, 10); break;
		case 's': c.samples = (int)strtol(optarg, NULL, 10); break;
		case 'S': steps = optarg; break;
		case 'f':
			c.format = !strcmp(optarg, "stock") ? 0 :
				   !strcmp(optarg, "sh5") ? 1 : 2;
			break;
		case 'E': c.energy = 1; break;
		case 'G': c.generic = 1; break;
		case 'K': c.kill = 1; break;
		case 'N': c.prefix = optarg; break;
		case 'r': c.seed = strtoull(optarg, NULL, 10); break;
		case 'k': keyfile = optarg; break;
		default:
			fprintf(stderr, "usage: gen_job -d DIR -j JOB [-n NODES] "
				"[-t TASKS] [-s SAMPLES] [-S STEPS] "
				"[-f stock|sh5|mixed] [-E] [-G] [-N PREFIX] "
				"[-r SEED] [-k SEALKEY]\n");
			return 2;
		}
	}
	if (!c.dir || !c.job || c.nodes < 1 || c.tasks < 0 || c.samples < 0) {
		fprintf(stderr, "gen_job: -d DIR and -j JOB are required\n");
		return 2;
	}
	if (keyfile) {
		struct sh5_error err = { "" };

		/* A bench key: owned by whoever runs this. */
		if (sh5_seal_key_load(keyfile, getuid(), &key, &err) < 0) {
			fprintf(stderr, "gen_job: %s\n", err.text);
			return 2;
		}
	}
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	steps = strdup(steps);
	for (tok = strtok_r(steps, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save), si++) {
		int batch = !strcmp(tok, "batch");
		int nn = batch ? 1 : c.nodes, n;
		int tpn = batch ? 1 : c.tasks;
		uint64_t t0 = 1700000000ULL + (uint64_t)si * 100000;

		for (n = 0; n < nn; n++) {
			int ours = c.format == 1 || (c.format == 2 && (n & 1));

			snprintf(node, sizeof(node), "%s%d", c.prefix, n + 1);
			snprintf(path, sizeof(path), "%s/%u_%s_%s.h5", c.dir,
				 c.job, ours ? tok : stock_step(tok), node);
			if (ours && c.kill) {
				pid_t pid = fork();
				int st = 1;

				if (pid == 0)
					_exit(write_ours(&c, path, node, n, tpn,
							 n * tpn, t0, tok, nn,
							 nn * tpn) ? 1 : 0);
				if (pid < 0 || waitpid(pid, &st, 0) < 0 || st) {
					fprintf(stderr, "gen_job: %s: killed "
						"writer failed\n", path);
					return 1;
				}
				continue;
			}
			if (ours ? write_ours(&c, path, node, n, tpn, n * tpn,
					      t0, tok, nn, nn * tpn) :
				   write_stock(&c, path, node, n, tpn, n * tpn,
					       t0)) {
				fprintf(stderr, "gen_job: %s: write failed\n",
					path);
				return 1;
			}
			if (ours && keyfile &&
			    seal_file(&key, path, c.job, tok, node) < 0)
				return 1;
		}
	}
	free(steps);
	return 0;
}
