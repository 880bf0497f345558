/*
 * kh_rdeny — the only HTTP kubehsm-relayd speaks.
 *
 * Everything else is relayed byte for byte; a peer the relay cannot serve
 * (no live session for its uid, or the API server unreachable before any
 * byte of an answer) gets one HTTP/1.1 response with a Kubernetes Status
 * body whose message says what happened and what to do.  kubectl prints
 * that message ("error: You must be logged in to the server (...)").
 */
#ifndef KH_RDENY_H
#define KH_RDENY_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include <event2/buffer.h>

/* Append "HTTP/1.1 <code> ..." with Connection: close and the Status JSON.
 * code is 401 (Unauthorized) or 503 (ServiceUnavailable). 0 or -1. */
int kh_rdeny_response(struct evbuffer *out, int code, const char *message);

/*
 * The 401 message for uid on cluster `cluster`: never had a session here,
 * or (ended_why != NULL) it ended at ended_at for that reason.
 */
void kh_rdeny_no_session(char *buf, size_t n, uid_t uid, const char *cluster,
			 const char *ended_why, time_t ended_at);

#endif
