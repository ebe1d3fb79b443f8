/* http.c - the stream's curl handle: its URL (and the credential-free
 * form shown in messages), options and headers (see stream_int.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "stream/stream_int.h"

/* -------------------------------------------------------------- HTTP */

static size_t on_response(char *data, size_t size, size_t nmemb, void *arg)
{
	struct sh5_stream *s = arg;
	size_t n = size * nmemb, room = sizeof(s->resp) - 1 - s->resp_len;

	if (room > n)
		room = n;
	memcpy(s->resp + s->resp_len, data, room);
	s->resp_len += room;
	s->resp[s->resp_len] = '\0';
	return n;
}

int http_setup(struct sh5_stream *s, struct sh5_error *errp)
{
	char hdr[1100];
	CURLcode rc = CURLE_OK;

	s->multi = curl_multi_init();
	s->easy = curl_easy_init();
	if (!s->multi || !s->easy) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "stream: cannot create curl handles");
	}
	s->hdrs = curl_slist_append(NULL, s->format == SH5_STREAM_JSON ?
						  "Content-Type: application/json" :
						  "Content-Type: text/plain; charset=utf-8");
	if (s->hdrs)
		s->hdrs = curl_slist_append(s->hdrs, "Expect:");
	if (s->hdrs && s->token) {
		snprintf(hdr, sizeof(hdr), "Authorization: %s %s",
			 s->format == SH5_STREAM_JSON ? "Bearer" : "Token",
			 s->token);
		s->hdrs = curl_slist_append(s->hdrs, hdr);
		explicit_bzero(hdr, sizeof(hdr));
	}
	if (!s->hdrs) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "stream: out of memory");
	}
#define SET(opt, val) \
	if (rc == CURLE_OK) \
	rc = curl_easy_setopt(s->easy, opt, val)
	SET(CURLOPT_URL, s->url);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_CONNECTTIMEOUT_MS, s->connect_ms);
	SET(CURLOPT_TIMEOUT_MS, s->timeout_ms);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
#if LIBCURL_VERSION_NUM >= 0x075700
	/* never wait for a hanging name resolution when a POST is aborted */
	SET(CURLOPT_QUICK_EXIT, 1L);
#endif
	SET(CURLOPT_HTTPHEADER, s->hdrs);
	SET(CURLOPT_USERAGENT, "sh5-stream/" PACKAGE_VERSION);
	SET(CURLOPT_WRITEFUNCTION, on_response);
	SET(CURLOPT_WRITEDATA, s);
	SET(CURLOPT_ERRORBUFFER, s->curl_err);
	SET(CURLOPT_POST, 1L);
	SET(CURLOPT_SSL_VERIFYPEER, s->insecure ? 0L : 1L);
	SET(CURLOPT_SSL_VERIFYHOST, s->insecure ? 0L : 2L);
	if (s->ca_file)
		SET(CURLOPT_CAINFO, s->ca_file);
	if (s->user) {
		SET(CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		SET(CURLOPT_USERNAME, s->user);
		SET(CURLOPT_PASSWORD, s->pass ? s->pass : "");
	}
#undef SET
	if (rc != CURLE_OK) {
		errno = EINVAL;
		return sh5_errprintf(errp, "stream: curl setup: %s",
				     curl_easy_strerror(rc));
	}
	return 0;
}

/* Keep only harmless query parameters in the URL shown in messages. */
static int keep_param(const char *p)
{
	static const char *const keep[] = { "db=",  "rp=",	"bucket=",
					    "org=", "precision=", NULL };
	size_t i;

	for (i = 0; keep[i]; i++)
		if (!strncmp(p, keep[i], strlen(keep[i])))
			return 1;
	return 0;
}

/* Influx formats: require precision=ns in the query, or append it; then
 * fetch the query again into *query.  0, or -1 (errno, errp set). */
static int url_precision(CURLU *h, char **query, struct sh5_error *errp)
{
	char *prec = *query ? strstr(*query, "precision=") : NULL;

	if (prec && (prec == *query || prec[-1] == '&')) {
		if (strncmp(prec + 10, "ns", 2) ||
		    (prec[12] && prec[12] != '&')) {
			errno = EINVAL;
			return sh5_errprintf(errp,
					     "stream: URL must use precision=ns (or none)");
		}
	} else if (curl_url_set(h, CURLUPART_QUERY, "precision=ns",
				CURLU_APPENDQUERY) != CURLUE_OK) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "stream: out of memory");
	}
	curl_free(*query);
	*query = NULL;
	curl_url_get(h, CURLUPART_QUERY, query, 0);
	return 0;
}

/* The URL shown in messages: scheme, host, port, path and the harmless
 * query parameters only (query is consumed by strtok_r). */
static void url_safe(char *safe, size_t size, const char *scheme,
		     const char *host, const char *port, const char *path,
		     char *query)
{
	char *tok, *save = NULL;
	size_t len;

	snprintf(safe, size, "%s://%s%s%s%s", scheme, host,
		 port ? ":" : "", port ? port : "", path ? path : "/");
	if (query) {
		char sep = '?';

		for (tok = strtok_r(query, "&", &save); tok;
		     tok = strtok_r(NULL, "&", &save)) {
			if (!keep_param(tok))
				continue;
			len = strlen(safe);
			snprintf(safe + len, size - len, "%c%s", sep,
				 tok);
			sep = '&';
		}
	}
}

/* Final URL (precision=ns for influx) and its credential-free form. */
int make_urls(struct sh5_stream *s, const char *url,
	      struct sh5_error *errp)
{
	CURLU *h = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL,
	     *query = NULL, *full = NULL;
	char safe[1024];
	int rc = -1;

	if (!h) {
		errno = ENOMEM;
		return sh5_errprintf(errp, "stream: out of memory");
	}
	if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		errno = EINVAL;
		sh5_errprintf(errp, "stream: URL is not valid");
		goto out;
	}
	if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https")) {
		errno = EINVAL;
		sh5_errprintf(errp, "stream: URL scheme %s is not http or https",
			      scheme);
		goto out;
	}
	curl_url_get(h, CURLUPART_PORT, &port, 0);
	curl_url_get(h, CURLUPART_PATH, &path, 0);
	curl_url_get(h, CURLUPART_QUERY, &query, 0);
	if (s->format != SH5_STREAM_JSON &&
	    url_precision(h, &query, errp) < 0)
		goto out;
	if (curl_url_get(h, CURLUPART_URL, &full, 0) != CURLUE_OK) {
		errno = EINVAL;
		sh5_errprintf(errp, "stream: URL is not valid");
		goto out;
	}
	url_safe(safe, sizeof(safe), scheme, host, port, path, query);
	s->url = strdup(full);
	s->safe_url = strdup(safe);
	if (!s->url || !s->safe_url) {
		errno = ENOMEM;
		sh5_errprintf(errp, "stream: out of memory");
		goto out;
	}
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(query);
	curl_free(full);
	curl_url_cleanup(h);
	return rc;
}
