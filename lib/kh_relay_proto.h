/*
 * kh_relay_proto — the kubehsm-relayd control protocol.
 *
 * Clients talk to the relay over Unix SOCK_SEQPACKET sockets in its rundir:
 * control.sock (root only: the login delivers and forgets sessions, the
 * admin lists and revokes) and user.sock (any user: status and forget of
 * the caller's own uid, which the relay takes from SO_PEERCRED).  One
 * request and one reply per connection, each one datagram holding one
 * compact JSON object, strictly decoded (unknown fields, duplicate keys,
 * wrong types refused):
 *
 *   {"v":1,"op":"deliver","session":{"uid":N,"user":"...","issuer":"...",
 *        "expires":T,"chain":"PEM","key":"PEM"[,"origin":{"service":"sshd",
 *        "rhost":"...","tty":"..."}]}}
 *   {"v":1,"op":"forget","uid":N[,"issuer":"..."][,"reason":"logout"|"revoked"]}
 *                                                     (control.sock)
 *   {"v":1,"op":"forget"[,"issuer":"..."]}            (user.sock: a logout)
 *   {"v":1,"op":"list"}                               (control: all; user: own)
 *
 *   {"v":1,"ok":true[,"sessions":K,"connections":M][,"list":[{"uid":N,
 *        "user":"...","issuer":"...","expires":T,"connections":M},...]]}
 *   {"v":1,"ok":false,"error":"one line for the person who must act"}
 *
 * "origin" (optional, each member optional) is the login the session came
 * from, for the relay's audit log: PAM_SERVICE, PAM_RHOST, PAM_TTY.  A relay
 * older than it refuses the unknown field; kh_relay_deliver then sends the
 * session again without it.
 *
 * A session object is also what the relay keeps in its keyring, so a
 * restart finds the sessions it had.  The key is PEM (PKCS#8); every buffer
 * that held it is wiped (kh_relay_session_clear, kh_secure_free).
 *
 * Return convention: int functions return 0 on success and -1 on failure
 * with err set; the name functions return "?" for a value they do not
 * know, never NULL.
 */
#ifndef KH_RELAY_PROTO_H
#define KH_RELAY_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/kh_error.h"

#define KH_RELAY_PROTO_VERSION 1
/* Largest datagram either side sends or accepts. */
#define KH_RELAY_MSG_MAX 32768
/* A session object must fit one user key payload (the relay's keyring). */
#define KH_RELAY_SESSION_MAX 30000
#define KH_RELAY_LIST_MAX 65536

#define KH_RELAY_CONTROL_SOCK "control.sock"
#define KH_RELAY_USER_SOCK    "user.sock"

enum kh_relay_op {
	KH_RELAY_OP_NONE = 0,
	KH_RELAY_OP_DELIVER,
	KH_RELAY_OP_FORGET,
	KH_RELAY_OP_LIST,
};

/* Why a session is forgotten (control.sock; user.sock is always a logout). */
enum kh_relay_reason {
	KH_RELAY_REVOKED = 0,   /* an administrator's revoke (the default) */
	KH_RELAY_LOGOUT,        /* the uid's last login closed, or kubehsm logout */
};

/* Longest origin member (a host name or address, a tty, a service). */
#define KH_RELAY_ORIGIN_MAX 256

/* The login a session came from (any member may be NULL). */
struct kh_relay_origin {
	char *service;          /* PAM_SERVICE: sshd, login, su, kubehsm... */
	char *rhost;            /* PAM_RHOST: where an ssh login came from */
	char *tty;              /* PAM_TTY */
};

/* One user's session for one issuer. */
struct kh_relay_session {
	uid_t uid;
	char *user;             /* the PAM user name, for messages and listings */
	char *issuer;           /* "" = the default issuer */
	int64_t expires;        /* unix seconds */
	int64_t delivered;      /* unix seconds the relay took it (its store only; 0 = unset) */
	char *chain_pem;        /* session certificate, then the issuer chain */
	char *key_pem;          /* SECRET: the session private key */
	struct kh_relay_origin origin;
};

struct kh_relay_request {
	enum kh_relay_op op;
	bool has_uid;           /* forget: a uid was named (control.sock) */
	uid_t uid;
	char *issuer;           /* forget: NULL = every issuer */
	enum kh_relay_reason reason;       /* forget: why, for the user's next 401 */
	struct kh_relay_session session;   /* deliver */
};

/* One row of a listing: never a key. */
struct kh_relay_listing {
	uid_t uid;
	char *user;
	char *issuer;
	int64_t expires;
	unsigned connections;
};

struct kh_relay_reply {
	bool ok;
	char *error;            /* !ok */
	bool has_counts;
	unsigned sessions;      /* forget: sessions forgotten */
	unsigned connections;   /* forget: connections closed */
	struct kh_relay_listing *list;  /* list */
	size_t nlist;
	bool has_list;
};

/*
 * Encode a session object / a request / a reply as compact JSON.  *out is
 * NUL-terminated and *len excludes the NUL; release with
 * kh_secure_free(*out, *len) (a session or deliver carries the key).
 */
int kh_relay_session_encode(const struct kh_relay_session *s, char **out, size_t *len,
			    kh_error *err);
int kh_relay_request_encode(const struct kh_relay_request *req, char **out, size_t *len,
			    kh_error *err);
int kh_relay_reply_encode(const struct kh_relay_reply *rep, char **out, size_t *len,
			  kh_error *err);

/* Decode; on failure nothing is left allocated and err says what is wrong.
 * Checks shape only (a uid, a plausible user and issuer, PEM text present);
 * the relay checks the key and certificate themselves. */
int kh_relay_session_decode(const char *buf, size_t len, struct kh_relay_session *s,
			    kh_error *err);
int kh_relay_request_decode(const char *buf, size_t len, struct kh_relay_request *req,
			    kh_error *err);
int kh_relay_reply_decode(const char *buf, size_t len, struct kh_relay_reply *rep,
			  kh_error *err);

/* Free the members (wiping the key); the structure itself is the caller's. */
void kh_relay_session_clear(struct kh_relay_session *s);
void kh_relay_request_clear(struct kh_relay_request *req);
void kh_relay_reply_clear(struct kh_relay_reply *rep);

const char *kh_relay_op_name(enum kh_relay_op op);
const char *kh_relay_reason_name(enum kh_relay_reason reason);

#endif
