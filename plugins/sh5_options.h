/*
 * sh5_options.h - the plugin's ProfileSH5* options of acct_gather.conf:
 * keys, defaults, validation, display.  Include after Slurm's headers.
 */
#ifndef SH5_PLUGIN_OPTIONS_H
#define SH5_PLUGIN_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Configuration (acct_gather.conf). */
struct sh5_plugin_conf {
	char *dir;
	uint32_t def;
	uint32_t compression;
	bool recompress;         /* ProfileSH5ChunkCoding=recompress */
	uint32_t flush_interval; /* seconds */
	char *clock_server;      /* host[:port] of an NTP server, or NULL */
	uint32_t clock_interval; /* seconds between measurements */
	uint32_t clock_samples;  /* exchanges per measurement */
	uint32_t clock_timeout;  /* ms, hard bound of one measurement */
	/* Live streaming (ProfileSH5Stream*); off without a URL. */
	char *stream_url, *stream_user, *stream_pass, *stream_token;
	char *stream_spool, *stream_ca;
	int stream_format;
	uint32_t stream_timeout, stream_connect_timeout, stream_queue;
	uint32_t stream_batch, stream_flush, stream_deadline;
	uint64_t stream_spool_max;
	bool stream_insecure;
	/* Application events (ProfileSH5Events*). */
	bool events;
	uint32_t events_max;     /* MiB per task */
	/* ProfileSH5SealKey: the key file, "none", or NULL (the default
	 * key file when it exists, src/profile/seal.h). */
	char *seal_key;
};
extern struct sh5_plugin_conf cfg;

/* The clock server, resolved once when the configuration is read (DNS is
 * not bounded; the measurements themselves are); clock_addrlen 0 if not. */
extern struct sockaddr_storage clock_addr;
extern socklen_t clock_addrlen;

/* The ProfileSH5* keys, for acct_gather_profile_p_conf_options(). */
void sh5_options_declare(s_p_options_t **full_options,
			 int *full_options_cnt);
/* Read the keys of tbl (NULL: defaults) into cfg; fatal() if one is bad. */
void sh5_options_set(s_p_hashtbl_t *tbl);
/* What `scontrol show config` prints.  Never credentials. */
void sh5_options_values(list_t **data);
/* Free the strings of cfg. */
void sh5_options_fini(void);

#endif
