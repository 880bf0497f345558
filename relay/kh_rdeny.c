/*
 * kh_rdeny — HTTP/1.1 error responses with a Kubernetes Status body.
 *
 * The request itself is never parsed: the caller only waits for the end
 * of its head (an empty line) so the response does not race the request,
 * then writes this, half-closes and drains.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "relay/kh_rdeny.h"

int
kh_rdeny_response(struct evbuffer *out, int code, const char *message)
{
	const char *reason = code == 401 ? "Unauthorized" : "ServiceUnavailable";
	const char *text = code == 401 ? "Unauthorized" : "Service Unavailable";
	json_t *status;
	char *body;
	int rc;

	status = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}",
			   "kind", "Status", "apiVersion", "v1", "metadata",
			   "status", "Failure", "message", message, "reason", reason,
			   "code", code);
	if (status == NULL)
		return -1;
	body = json_dumps(status, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(status);
	if (body == NULL)
		return -1;
	rc = evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n"
				 "Content-Type: application/json\r\n"
				 "Content-Length: %zu\r\n"
				 "Cache-Control: no-store\r\n"
				 "Connection: close\r\n\r\n%s\n", code, text, strlen(body) + 1,
				 body) < 0 ? -1 : 0;
	free(body);
	return rc;
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
