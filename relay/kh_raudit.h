/*
 * kh_raudit — one JSON line per request through the relay.
 *
 * The API server's audit log sees only the session certificate's name;
 * this one says which local account, from which login (PAM service,
 * remote host, tty, as the login handed them over with the session), sent
 * which request and what came of it:
 *
 *   {"time":"2026-11-24T21:30:00.123Z","uid":1001,"user":"alice",
 *    "cluster":"prod","method":"GET","path":"/api/v1/namespaces/default/pods?limit=500",
 *    "status":200,"bytesIn":0,"bytesOut":1834,"durationMs":2.31,"watch":false,
 *    "upgrade":false,"origin":{"service":"sshd","rhost":"203.0.113.7","tty":"ssh"}}
 *
 * "time" is when the request head was read; bytesIn counts the request's
 * bytes from the client (head and body), bytesOut the response's to it;
 * "relay" says why the relay answered itself (400, 401, 503).  Never a
 * body, never a header value.  Strings are JSON-escaped by jansson, so a
 * path cannot end the line or forge another.  The file is opened with
 * O_APPEND and each line is one write(2): lines never interleave.
 */
#ifndef KH_RAUDIT_H
#define KH_RAUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "lib/kh_error.h"
#include "lib/kh_relay_proto.h"
#include "relay/kh_rprog.h"

/* Longest line written (a longer path is cut to fit; "pathCut" says so). */
#define KH_RAUDIT_LINE_MAX 8192

struct kh_raudit_rec {
	struct timespec start;          /* CLOCK_REALTIME: the head was read */
	int64_t duration_ns;
	uid_t uid;
	const char *user;               /* NULL: no session */
	const char *kube_uid;           /* the session certificate's UID, NULL: none */
	const struct kh_rprog *prog;    /* the client program, NULL: not looked up */
	const char *cluster;
	const char *method;
	const char *path;               /* the request target, as sent */
	bool path_cut;
	unsigned status;                /* 0: no answer (the connection ended) */
	uint64_t bytes_in, bytes_out;
	bool watch, upgrade;
	const char *relay_note;         /* the relay answered itself: why */
	const struct kh_relay_origin *origin;   /* NULL: unknown */
};

/* The line (with its '\n', then a NUL) into buf: its length, or -1. */
int kh_raudit_format(const struct kh_raudit_rec *r, char *buf, size_t cap);

/* The line as a JSON object (NULL: out of memory), for a caller that
 * completes it later: the program is found after the request may end. */
json_t *kh_raudit_line(const struct kh_raudit_rec *r);
/* Set (or replace) the line's pid, exe and cmdline: null when p is NULL
 * or found nothing.  0, or -1. */
int kh_raudit_set_prog(json_t *o, const struct kh_rprog *p);

struct kh_raudit;

/*
 * As root, before the drop: open `file` ("" or NULL: none) for appending,
 * creating it (mode 0600) and its directory (0750, root's, group gid) as
 * needed; the file belongs to uid (the relay's user), which must keep
 * writing it (and reopen it after a rotation) once it is no longer root.
 * A directory anyone but root may write is refused.  Each line first
 * checks that the name still leads to the open file, and reopens it when
 * a rotation put a new one there (made by logrotate's "create": the relay
 * can make none itself).  to_syslog: also send
 * each line to syslog (LOG_AUTHPRIV | LOG_INFO).
 */
struct kh_raudit *kh_raudit_open(const char *file, bool to_syslog, uid_t uid, gid_t gid,
				 kh_error *err);
/* SIGHUP: reopen the file by its name (logrotate moved it); the old one
 * stays in use if the new cannot be opened (it is not created). */
int kh_raudit_reopen(struct kh_raudit *a, kh_error *err);
void kh_raudit_write(struct kh_raudit *a, const struct kh_raudit_rec *r);
/* Write a line made by kh_raudit_line (not consumed). */
void kh_raudit_write_line(struct kh_raudit *a, json_t *o);
/* Whether lines go anywhere (a file or syslog). */
bool kh_raudit_enabled(const struct kh_raudit *a);
void kh_raudit_free(struct kh_raudit *a);

#endif
