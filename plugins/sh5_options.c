/*
 * sh5_options.c - the plugin's ProfileSH5* options: keys, defaults,
 * validation, display.  Only conf_set (at daemon start) may fatal().
 */
#include "config.h" /* Slurm's */
#include "slurm_compat.h" /* release differences; before any other header */

#include <stdio.h>
#include <string.h>

#include "src/common/slurm_xlator.h"
#if SH5_SLURM_INTERFACES
#include "src/interfaces/acct_gather_profile.h"
#else
#include "src/common/slurm_acct_gather_profile.h"
#endif
#include "src/common/list.h"
#include "src/common/parse_config.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "common/error.h"
#include "profile/ntp.h"
#include "profile/seal.h"
#include "stream/stream.h"
#include "sh5_options.h"
#include "sh5_plugin_int.h"

struct sh5_plugin_conf cfg = {
	.def = ACCT_GATHER_PROFILE_NONE, .compression = 4,
	.events = true, .events_max = 1024,
	.flush_interval = 10, .clock_interval = 60, .clock_samples = 4,
	.clock_timeout = 300, .stream_format = SH5_STREAM_INFLUX1 };

/* The clock server, resolved once when the configuration is read (DNS is
 * not bounded; the measurements themselves are). */
struct sockaddr_storage clock_addr;
socklen_t clock_addrlen;
static char *clock_resolved; /* the ProfileSH5ClockServer clock_addr is for */

void sh5_options_declare(s_p_options_t **full_options,
			 int *full_options_cnt)
{
	s_p_options_t options[] = {
		{ .key = "ProfileSH5Dir", .type = S_P_STRING },
		{ .key = "ProfileSH5Default", .type = S_P_STRING },
		{ .key = "ProfileSH5Compression", .type = S_P_UINT32 },
		{ .key = "ProfileSH5ChunkCoding", .type = S_P_STRING },
		{ .key = "ProfileSH5FlushInterval", .type = S_P_UINT32 },
		{ .key = "ProfileSH5ClockServer", .type = S_P_STRING },
		{ .key = "ProfileSH5ClockInterval", .type = S_P_UINT32 },
		{ .key = "ProfileSH5ClockSamples", .type = S_P_UINT32 },
		{ .key = "ProfileSH5ClockTimeout", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamURL", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamFormat", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamUser", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamPass", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamToken", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamTimeout", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamConnectTimeout", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamSpoolDir", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamSpoolMax", .type = S_P_UINT64 },
		{ .key = "ProfileSH5StreamQueue", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamBatch", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamFlush", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamDeadline", .type = S_P_UINT32 },
		{ .key = "ProfileSH5StreamCAFile", .type = S_P_STRING },
		{ .key = "ProfileSH5StreamInsecure", .type = S_P_BOOLEAN },
		{ .key = "ProfileSH5Events", .type = S_P_BOOLEAN },
		{ .key = "ProfileSH5EventsMax", .type = S_P_UINT32 },
		{ .key = "ProfileSH5SealKey", .type = S_P_STRING },
		{ .key = NULL }
	};

	transfer_s_p_options(full_options, options, full_options_cnt);
}

/* The defaults of every option (conf_set may be called again). */
static void options_defaults(void)
{
	xfree(cfg.dir);
	cfg.def = ACCT_GATHER_PROFILE_NONE;
	cfg.compression = 4;
	cfg.recompress = false;
	cfg.flush_interval = 10;
	xfree(cfg.clock_server);
	cfg.clock_interval = 60;
	cfg.clock_samples = 4;
	cfg.clock_timeout = 300;
	xfree(cfg.stream_url);
	xfree(cfg.stream_user);
	xfree(cfg.stream_pass);
	xfree(cfg.stream_token);
	xfree(cfg.stream_spool);
	xfree(cfg.stream_ca);
	cfg.stream_format = SH5_STREAM_INFLUX1;
	cfg.stream_timeout = cfg.stream_connect_timeout = 0;
	cfg.stream_queue = cfg.stream_batch = cfg.stream_flush = 0;
	cfg.stream_deadline = 2000;
	cfg.stream_spool_max = 0;
	cfg.stream_insecure = false;
	cfg.events = true;
	cfg.events_max = 1024;
	xfree(cfg.seal_key);
}

/* ProfileSH5ChunkCoding: incremental (default) or recompress. */
static void options_read_coding(s_p_hashtbl_t *tbl)
{
	char *tmp = NULL;

	if (!s_p_get_string(&tmp, "ProfileSH5ChunkCoding", tbl))
		return;
	if (!xstrcasecmp(tmp, "incremental"))
		cfg.recompress = false;
	else if (!xstrcasecmp(tmp, "recompress"))
		cfg.recompress = true;
	else
		fatal("%s: ProfileSH5ChunkCoding=%s is not one of "
		      "incremental, recompress", plugin_type, tmp);
	xfree(tmp);
}

/* ProfileSH5Dir, Default, Compression, ChunkCoding, FlushInterval. */
static void options_read_general(s_p_hashtbl_t *tbl)
{
	char *tmp = NULL;

	s_p_get_string(&cfg.dir, "ProfileSH5Dir", tbl);
	if (s_p_get_string(&tmp, "ProfileSH5Default", tbl)) {
		cfg.def = acct_gather_profile_from_string(tmp);
		if (cfg.def == ACCT_GATHER_PROFILE_NOT_SET)
			fatal("%s: ProfileSH5Default=%s is not one of "
			      "none, energy, task, lustre, network, "
			      "all", plugin_type, tmp);
		xfree(tmp);
	}
	if (s_p_get_uint32(&cfg.compression, "ProfileSH5Compression",
			   tbl) && cfg.compression > 9)
		fatal("%s: ProfileSH5Compression=%u is not a deflate "
		      "level 0-9", plugin_type, cfg.compression);
	options_read_coding(tbl);
	if (s_p_get_uint32(&cfg.flush_interval,
			   "ProfileSH5FlushInterval", tbl) &&
	    (cfg.flush_interval < 1 || cfg.flush_interval > 3600))
		fatal("%s: ProfileSH5FlushInterval=%u is not 1-3600 "
		      "seconds", plugin_type, cfg.flush_interval);
}

/* ProfileSH5Clock*. */
static void options_read_clock(s_p_hashtbl_t *tbl)
{
	s_p_get_string(&cfg.clock_server, "ProfileSH5ClockServer", tbl);
	if (s_p_get_uint32(&cfg.clock_interval,
			   "ProfileSH5ClockInterval", tbl) &&
	    (cfg.clock_interval < 1 || cfg.clock_interval > 86400))
		fatal("%s: ProfileSH5ClockInterval=%u is not 1-86400 "
		      "seconds", plugin_type, cfg.clock_interval);
	if (s_p_get_uint32(&cfg.clock_samples, "ProfileSH5ClockSamples",
			   tbl) &&
	    (cfg.clock_samples < 1 ||
	     cfg.clock_samples > SH5_NTP_MAX_SAMPLES))
		fatal("%s: ProfileSH5ClockSamples=%u is not 1-%d",
		      plugin_type, cfg.clock_samples,
		      SH5_NTP_MAX_SAMPLES);
	if (s_p_get_uint32(&cfg.clock_timeout, "ProfileSH5ClockTimeout",
			   tbl) &&
	    (cfg.clock_timeout < 10 || cfg.clock_timeout > 10000))
		fatal("%s: ProfileSH5ClockTimeout=%u is not 10-10000 "
		      "ms", plugin_type, cfg.clock_timeout);
}

/* ProfileSH5Stream*. */
static void options_read_stream(s_p_hashtbl_t *tbl)
{
	char *tmp = NULL;

	s_p_get_string(&cfg.stream_url, "ProfileSH5StreamURL", tbl);
	if (s_p_get_string(&tmp, "ProfileSH5StreamFormat", tbl)) {
		cfg.stream_format = sh5_stream_format_from_string(tmp);
		if (cfg.stream_format < 0)
			fatal("%s: ProfileSH5StreamFormat=%s is not one "
			      "of influx1, influx2, json", plugin_type,
			      tmp);
		xfree(tmp);
	}
	s_p_get_string(&cfg.stream_user, "ProfileSH5StreamUser", tbl);
	s_p_get_string(&cfg.stream_pass, "ProfileSH5StreamPass", tbl);
	s_p_get_string(&cfg.stream_token, "ProfileSH5StreamToken", tbl);
	s_p_get_uint32(&cfg.stream_timeout, "ProfileSH5StreamTimeout",
		       tbl);
	s_p_get_uint32(&cfg.stream_connect_timeout,
		       "ProfileSH5StreamConnectTimeout", tbl);
	s_p_get_string(&cfg.stream_spool, "ProfileSH5StreamSpoolDir",
		       tbl);
	s_p_get_uint64(&cfg.stream_spool_max,
		       "ProfileSH5StreamSpoolMax", tbl);
	s_p_get_uint32(&cfg.stream_queue, "ProfileSH5StreamQueue", tbl);
	s_p_get_uint32(&cfg.stream_batch, "ProfileSH5StreamBatch", tbl);
	s_p_get_uint32(&cfg.stream_flush, "ProfileSH5StreamFlush", tbl);
	if (s_p_get_uint32(&cfg.stream_deadline,
			   "ProfileSH5StreamDeadline", tbl) &&
	    (cfg.stream_deadline < 100 || cfg.stream_deadline > 60000))
		fatal("%s: ProfileSH5StreamDeadline=%u is not "
		      "100-60000 ms", plugin_type, cfg.stream_deadline);
	s_p_get_string(&cfg.stream_ca, "ProfileSH5StreamCAFile", tbl);
	s_p_get_boolean(&cfg.stream_insecure,
			"ProfileSH5StreamInsecure", tbl);
}

/* ProfileSH5Events*. */
static void options_read_events(s_p_hashtbl_t *tbl)
{
	s_p_get_boolean(&cfg.events, "ProfileSH5Events", tbl);
	if (s_p_get_uint32(&cfg.events_max, "ProfileSH5EventsMax",
			   tbl) &&
	    (cfg.events_max < 1 || cfg.events_max > 1048576))
		fatal("%s: ProfileSH5EventsMax=%u is not 1-1048576 MiB",
		      plugin_type, cfg.events_max);
}

/* Resolve ProfileSH5ClockServer into clock_addr (once per value). */
static void options_resolve_clock(void)
{
	/* slurmstepd (23.02 on) calls conf_set twice: from its own read of
	 * acct_gather.conf, then with slurmd's copy.  Resolve a server once. */
	if (xstrcmp(cfg.clock_server, clock_resolved)) {
		clock_addrlen = 0;
		xfree(clock_resolved);
		clock_resolved = xstrdup(cfg.clock_server);
	} else if (cfg.clock_server) {
		log_flag(PROFILE, "%s: ProfileSH5ClockServer=%s already "
			 "resolved", plugin_type, cfg.clock_server);
	}
	if (cfg.clock_server && !clock_addrlen) {
		char host[256];
		int port;
		struct sh5_error err = { "" };

		/* A bad address disables the measurements, not the daemon. */
		if (sh5_ntp_parse_server(cfg.clock_server, host, sizeof(host),
					 &port, &err) < 0 ||
		    sh5_ntp_resolve(host, port, &clock_addr, &clock_addrlen,
				    &err) < 0) {
			clock_addrlen = 0;
			error("%s: ProfileSH5ClockServer=%s: %s: clock offsets "
			      "are not measured", plugin_type,
			      cfg.clock_server, err.text);
		}
	}
}

void sh5_options_set(s_p_hashtbl_t *tbl)
{
	options_defaults();
	if (tbl) {
		options_read_general(tbl);
		options_read_clock(tbl);
		options_read_stream(tbl);
		options_read_events(tbl);
		s_p_get_string(&cfg.seal_key, "ProfileSH5SealKey", tbl);
		if (cfg.seal_key && xstrcmp(cfg.seal_key, "none") &&
		    cfg.seal_key[0] != '/')
			fatal("%s: ProfileSH5SealKey=%s is not an absolute "
			      "path or none", plugin_type, cfg.seal_key);
		if (cfg.stream_spool && cfg.stream_spool[0] != '/')
			fatal("%s: ProfileSH5StreamSpoolDir=%s is not an "
			      "absolute path", plugin_type, cfg.stream_spool);
	}
	options_resolve_clock();
	if (!cfg.dir && running_in_slurmstepd()) {
		/* The first of the two calls, without a local file: slurmd's
		 * copy follows; node_step_start checks again. */
		debug("%s: no ProfileSH5Dir yet", plugin_type);
		return;
	}
	if (!cfg.dir)
		fatal("%s: no ProfileSH5Dir in acct_gather.conf: it is "
		      "required to use this plugin", plugin_type);
	if (cfg.dir[0] != '/')
		fatal("%s: ProfileSH5Dir=%s is not an absolute path",
		      plugin_type, cfg.dir);
	debug("%s loaded", plugin_name);
}

static void add_pair(list_t *data, const char *name, char *value)
{
	config_key_pair_t *kp = xmalloc(sizeof(*kp));

	kp->name = xstrdup(name);
	kp->value = value;
	list_append(data, kp);
}

/*
 * The stream URL for display: user info and the u=, p=, token= query
 * parameters replaced by "***".  xmalloc'd; NULL for NULL.
 */
static char *masked_url(const char *url)
{
	const char *p, *host, *at, *slash, *q;
	char *out = NULL;

	if (!url)
		return NULL;
	p = strstr(url, "://");
	host = p ? p + 3 : url;
	slash = strchr(host, '/');
	at = strchr(host, '@');
	if (at && (!slash || at < slash)) {
		xstrncat(out, url, host - url);
		xstrcat(out, "***");
		p = at;
	} else {
		p = url;
	}
	q = strchr(p, '?');
	if (!q) {
		xstrcat(out, p);
		return out;
	}
	xstrncat(out, p, q - p + 1);
	for (q++; *q;) {
		const char *end = strchr(q, '&');
		size_t len = end ? (size_t)(end - q) : strlen(q);

		if (!strncmp(q, "u=", 2) || !strncmp(q, "p=", 2) ||
		    !strncmp(q, "token=", 6)) {
			xstrncat(out, q, strchr(q, '=') - q + 1);
			xstrcat(out, "***");
		} else {
			xstrncat(out, q, len);
		}
		if (!end)
			break;
		xstrcat(out, "&");
		q = end + 1;
	}
	return out;
}

/* What `scontrol show config` prints.  Never credentials. */
void sh5_options_values(list_t **data)
{
	add_pair(*data, "ProfileSH5Dir", xstrdup(cfg.dir));
	add_pair(*data, "ProfileSH5Default",
		 xstrdup(acct_gather_profile_to_string(cfg.def)));
	add_pair(*data, "ProfileSH5Compression",
		 xstrdup_printf("%u", cfg.compression));
	add_pair(*data, "ProfileSH5ChunkCoding",
		 xstrdup(cfg.recompress ? "recompress" : "incremental"));
	add_pair(*data, "ProfileSH5FlushInterval",
		 xstrdup_printf("%u sec", cfg.flush_interval));
	add_pair(*data, "ProfileSH5ClockServer", xstrdup(cfg.clock_server));
	add_pair(*data, "ProfileSH5ClockInterval",
		 xstrdup_printf("%u sec", cfg.clock_interval));
	add_pair(*data, "ProfileSH5ClockSamples",
		 xstrdup_printf("%u", cfg.clock_samples));
	add_pair(*data, "ProfileSH5ClockTimeout",
		 xstrdup_printf("%u ms", cfg.clock_timeout));
	add_pair(*data, "ProfileSH5StreamURL", masked_url(cfg.stream_url));
	add_pair(*data, "ProfileSH5StreamFormat",
		 xstrdup(sh5_stream_format_name(cfg.stream_format)));
	add_pair(*data, "ProfileSH5StreamUser", xstrdup(cfg.stream_user));
	/* Never the secrets themselves. */
	add_pair(*data, "ProfileSH5StreamPass",
		 xstrdup(cfg.stream_pass ? "(set)" : NULL));
	add_pair(*data, "ProfileSH5StreamToken",
		 xstrdup(cfg.stream_token ? "(set)" : NULL));
	add_pair(*data, "ProfileSH5StreamSpoolDir", xstrdup(cfg.stream_spool));
	add_pair(*data, "ProfileSH5StreamDeadline",
		 xstrdup_printf("%u ms", cfg.stream_deadline));
	add_pair(*data, "ProfileSH5Events",
		 xstrdup(cfg.events ? "yes" : "no"));
	add_pair(*data, "ProfileSH5EventsMax",
		 xstrdup_printf("%u MiB", cfg.events_max));
	/* The key file's name, never its bytes. */
	add_pair(*data, "ProfileSH5SealKey",
		 cfg.seal_key ? xstrdup(cfg.seal_key) :
			       xstrdup(SH5_SEAL_KEY_DEFAULT " (if present)"));
}

void sh5_options_fini(void)
{
	xfree(cfg.dir);
	xfree(clock_resolved);
	xfree(cfg.stream_url);
	xfree(cfg.stream_user);
	xfree(cfg.stream_pass);
	xfree(cfg.stream_token);
	xfree(cfg.stream_spool);
	xfree(cfg.stream_ca);
	xfree(cfg.clock_server);
	xfree(cfg.seal_key);
}
