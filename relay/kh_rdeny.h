/*
 * kh_rdeny — the answers kubehsm-relayd makes itself.
 *
 * A request the relay cannot serve (400: a head it will not pass on; 401:
 * no live session for the uid; 503: the API server cannot be reached, or
 * failed before any byte of an answer) gets one HTTP/1.1 response with a
 * Kubernetes Status body whose message says what happened and what to do,
 * and the same message in a `Warning: 299 - "..."` header: kubectl's
 * discovery drops a 401's body ("You must be logged in to the server"),
 * but every kubectl prints warnings, so every command shows the reason.
 */
#ifndef KH_RDENY_H
#define KH_RDENY_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

/* Worst case of kh_rdeny_format for a message of KH_RDENY_MSG_MAX. */
#define KH_RDENY_MSG_MAX 1024
#define KH_RDENY_MAX (4 * KH_RDENY_MSG_MAX + 512)

/*
 * "HTTP/1.1 <code> ..." with Connection: close, the Warning header and the
 * Status JSON, into buf (cap bytes, KH_RDENY_MAX is enough).  code is 400,
 * 401 or 503.  The length, or -1.
 */
int kh_rdeny_format(int code, const char *message, char *buf, size_t cap);

/*
 * The 401 message for uid on cluster `cluster`: never had a session here,
 * or (ended_why != NULL) it ended at ended_at for that reason.
 */
void kh_rdeny_no_session(char *buf, size_t n, uid_t uid, const char *cluster,
			 const char *ended_why, time_t ended_at);

#endif
