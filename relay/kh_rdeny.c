/*
 * kh_rdeny — HTTP/1.1 error responses with a Kubernetes Status body.
 *
 * The caller answers once the request head is read (so the answer does
 * not race the request), then half-closes and drains.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "relay/kh_rdeny.h"

static void
kh_rdeny_reason(int code, const char **reason, const char **text)
{
	switch (code) {
	case 400: *reason = "BadRequest"; *text = "Bad Request"; break;
	case 401: *reason = "Unauthorized"; *text = "Unauthorized"; break;
	default: *reason = "ServiceUnavailable"; *text = "Service Unavailable"; break;
	}
}

/*
 * The message as a warn-text (RFC 9110 quoted-string): printable ASCII,
 * with '"' and '\\' escaped; anything else becomes '?' (kubectl prints the
 * text as it is, so nothing may end the header early).
 */
static void
kh_rdeny_warn_text(const char *msg, char *out, size_t cap)
{
	size_t o = 0;

	for (; *msg != '\0' && o + 3 < cap; msg++) {
		unsigned char c = (unsigned char)*msg;

		if (c == '"' || c == '\\')
			out[o++] = '\\';
		out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[o] = '\0';
}

int
kh_rdeny_format(int code, const char *message, char *buf, size_t cap)
{
	const char *reason, *text;
	char body[2 * KH_RDENY_MSG_MAX + 256], warn[2 * KH_RDENY_MSG_MAX + 1];
	json_t *status;
	size_t blen;
	int n;

	kh_rdeny_reason(code, &reason, &text);
	status = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}",
			   "kind", "Status", "apiVersion", "v1", "metadata",
			   "status", "Failure", "message", message, "reason", reason,
			   "code", code);
	if (status == NULL)
		return -1;
	blen = json_dumpb(status, body, sizeof(body), JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(status);
	if (blen == 0 || blen >= sizeof(body))
		return -1;
	kh_rdeny_warn_text(message, warn, sizeof(warn));
	n = snprintf(buf, cap, "HTTP/1.1 %d %s\r\n"
		     "Content-Type: application/json\r\n"
		     "Content-Length: %zu\r\n"
		     "Warning: 299 - \"%s\"\r\n"
		     "Cache-Control: no-store\r\n"
		     "Connection: close\r\n\r\n%.*s\n", code, text, blen + 1, warn,
		     (int)blen, body);
	return n < 0 || (size_t)n >= cap ? -1 : n;
}

void
kh_rdeny_no_session(char *buf, size_t n, uid_t uid, const char *cluster,
		    const char *ended_why, time_t ended_at)
{
	char when[32];
	struct tm tm;

	if (uid == 0) {
		(void)snprintf(buf, n, "kubehsm-relayd: root (uid 0) has no kube session for "
			       "cluster %s; run kube clients as your own user", cluster);
		return;
	}
	if (ended_why != NULL && gmtime_r(&ended_at, &tm) != NULL &&
	    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) > 0) {
		(void)snprintf(buf, n, "kubehsm-relayd: the kube session of uid %u for cluster "
			       "%s ended at %s (%s); log in to this host again to start a new "
			       "one", (unsigned)uid, cluster, when, ended_why);
		return;
	}
	(void)snprintf(buf, n, "kubehsm-relayd: uid %u has no kube session for cluster %s; "
		       "log in to this host with your token (your PIN at login starts one), "
		       "or run 'kubehsm status' to see why", (unsigned)uid, cluster);
}
