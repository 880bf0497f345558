/*
 * kh_rsession — the uids the relay knows, their sessions, and the TLS
 * client contexts made from each session's certificate and key.
 *
 * A session arrives from the login over control.sock (or from the keyring
 * store after a restart), is checked (the key belongs to the leaf
 * certificate, the certificate and the session are still valid, a cluster
 * serves its issuer), stored in the keyring and indexed by uid.  Its TLS
 * contexts are made on first use, one per cluster, and keep the last TLS
 * session the API server handed out so the next connection resumes it.
 * When the session ends (forget, expiry) every connection of that uid to
 * that issuer's clusters is closed at once (rd->close_user), to the
 * millisecond of its expiry.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "lib/kh_mem.h"
#include "relay/kh_rlog.h"
#include "lib/kh_x509.h"
#include "relay/kh_rsession.h"
#include "relay/kh_rstore.h"

/* How long a uid's "your session ended" note is kept for its 401s. */
#define KH_RUSER_ENDED_KEEP (24 * 3600)
/* OpenSSL's read buffer with read-ahead: several records per read(2). */
#define KH_RSESSION_READ_AHEAD (64 * 1024)

static int kh_rtls_index = -1;
static uint64_t kh_rsession_serial;

/* ------------------------------------------------------------------ */
/* users                                                                */

static size_t
kh_ruser_bucket(const struct kh_relayd *rd, uid_t uid)
{
	return ((size_t)uid * 2654435761u) % rd->nbuckets;
}

struct kh_ruser *
kh_ruser_get(struct kh_relayd *rd, uid_t uid, bool create)
{
	size_t b = kh_ruser_bucket(rd, uid);
	struct kh_ruser *u;

	for (u = rd->users[b]; u != NULL; u = u->next) {
		if (u->uid == uid)
			return u;
	}
	if (!create)
		return NULL;
	u = calloc(1, sizeof(*u));
	if (u == NULL)
		return NULL;
	u->uid = uid;
	TAILQ_INIT(&u->conns);
	u->next = rd->users[b];
	rd->users[b] = u;
	return u;
}

void
kh_ruser_maybe_free(struct kh_relayd *rd, struct kh_ruser *u)
{
	struct kh_ruser **pp;

	if (u == NULL || u->nconns > 0 || u->nups > 0 || u->sessions != NULL)
		return;
	if (u->ended_why != NULL && time(NULL) - u->ended_at < KH_RUSER_ENDED_KEEP)
		return;
	for (pp = &rd->users[kh_ruser_bucket(rd, u->uid)]; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == u) {
			*pp = u->next;
			free(u->pools);
			free(u);
			return;
		}
	}
}

/* ------------------------------------------------------------------ */
/* TLS contexts                                                         */

/* A TLS session ticket from the API server: keep the newest to resume. */
static int
kh_rtls_new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct kh_rtls *t = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), kh_rtls_index);

	if (t == NULL)
		return 0;       /* the session it belonged to is gone */
	SSL_SESSION_free(t->resume);
	t->resume = sess;
	return 1;               /* we keep the reference */
}

static void
kh_rtls_clear(struct kh_rtls *t)
{
	if (t->ctx != NULL) {
		/* Live connections keep the context; their late tickets go nowhere. */
		(void)SSL_CTX_set_ex_data(t->ctx, kh_rtls_index, NULL);
		SSL_CTX_free(t->ctx);
	}
	SSL_SESSION_free(t->resume);
	t->ctx = NULL;
	t->resume = NULL;
}

static SSL_CTX *
kh_rtls_ctx(struct kh_rsession *s, const struct kh_rcluster *cl, kh_error *err)
{
	struct kh_rtls *t = &s->tls[cl->index];
	static const unsigned char alpn[] = "\x08http/1.1";
	SSL_CTX *ctx;
	int i;

	if (t->ctx != NULL)
		return t->ctx;
	if (kh_rtls_index < 0) {
		kh_rtls_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
		if (kh_rtls_index < 0)
			return kh_fail_ssl(err, KH_ERR_INTERNAL, "SSL_CTX_get_ex_new_index"), NULL;
	}
	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL)
		return kh_fail_ssl(err, KH_ERR_INTERNAL, "SSL_CTX_new"), NULL;
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_use_certificate(ctx, s->leaf) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, s->key) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1 ||
	    /* 0 is success here */
	    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0 ||
	    SSL_CTX_set_ex_data(ctx, kh_rtls_index, t) != 1)
		goto fail;
	for (i = 0; i < sk_X509_num(s->chain); i++) {
		if (SSL_CTX_add1_chain_cert(ctx, sk_X509_value(s->chain, i)) != 1)
			goto fail;
	}
	/* The cluster's CA store, shared (reference counted) by its contexts. */
	SSL_CTX_set1_cert_store(ctx, cl->store);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* Idle connections (watches) give their read and write buffers back;
	 * writes go out as far as they can, from a buffer that may move. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
			 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* One read(2) takes as many records as the socket holds (up to 64 KiB),
	 * not a 5-byte header and then a body: two syscalls per record less. */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, KH_RSESSION_READ_AHEAD);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, kh_rtls_new_session);
	t->ctx = ctx;
	return ctx;
fail:
	kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot make the TLS context for cluster %s",
		    cl->conf->name);
	SSL_CTX_free(ctx);
	return NULL;
}

SSL *
kh_rsession_new_ssl(struct kh_rsession *s, const struct kh_rcluster *cl, kh_error *err)
{
	const struct kh_relay_cluster *c = cl->conf;
	const char *name = c->server_name[0] != '\0' ? c->server_name : c->server_host;
	bool ip = c->server_name[0] == '\0' && cl->addrlen > 0;
	SSL_CTX *ctx = kh_rtls_ctx(s, cl, err);
	struct kh_rtls *t = &s->tls[cl->index];
	SSL *ssl;

	if (ctx == NULL)
		return NULL;
	ssl = SSL_new(ctx);
	if (ssl == NULL)
		return kh_fail_ssl(err, KH_ERR_INTERNAL, "SSL_new"), NULL;
	/* The server certificate must name what the policy says we talk to. */
	if (ip) {
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) != 1)
			goto fail;
	} else {
		SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		if (SSL_set1_host(ssl, name) != 1 || SSL_set_tlsext_host_name(ssl, name) != 1)
			goto fail;
	}
	if (t->resume != NULL && SSL_SESSION_is_resumable(t->resume) &&
	    SSL_set_session(ssl, t->resume) != 1)
		goto fail;
	return ssl;
fail:
	kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot set up TLS to %s", c->server);
	SSL_free(ssl);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* sessions                                                             */

static void
kh_rsession_free(struct kh_rsession *s)
{
	size_t i;

	if (s == NULL)
		return;
	if (s->expiry != NULL)
		event_free(s->expiry);
	for (i = 0; s->tls != NULL && i < s->rd->nclusters; i++)
		kh_rtls_clear(&s->tls[i]);
	free(s->tls);
	EVP_PKEY_free(s->key);     /* OpenSSL cleanses private key material */
	X509_free(s->leaf);
	sk_X509_pop_free(s->chain, X509_free);
	free(s->user_name);
	free(s->kube_uid);
	free(s->issuer);
	free(s->origin.service);
	free(s->origin.rhost);
	free(s->origin.tty);
	free(s);
}

struct kh_rsession *
kh_rsession_find(struct kh_relayd *rd, uid_t uid, const char *issuer)
{
	struct kh_ruser *u = kh_ruser_get(rd, uid, false);
	struct kh_rsession *s;

	for (s = u != NULL ? u->sessions : NULL; s != NULL; s = s->next) {
		if (strcmp(s->issuer, issuer) == 0)
			return s;
	}
	return NULL;
}

/* The certificates of chain_pem: the leaf and the rest. */
static int
kh_rsession_parse_chain(struct kh_rsession *s, const char *pem, kh_error *err)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	X509 *x;

	if (bio == NULL)
		return kh_fail_ssl(err, KH_ERR_INTERNAL, "BIO_new_mem_buf");
	s->chain = sk_X509_new_null();
	s->leaf = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	if (s->chain == NULL || s->leaf == NULL) {
		BIO_free(bio);
		return kh_fail_ssl(err, KH_ERR_INPUT, "the session certificate chain is not PEM");
	}
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		if (sk_X509_push(s->chain, x) <= 0) {
			X509_free(x);
			BIO_free(bio);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
	}
	ERR_clear_error();      /* the loop ends on "no start line" */
	BIO_free(bio);
	return 0;
}

static int
kh_rsession_parse_key(struct kh_rsession *s, const char *pem, kh_error *err)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);

	if (bio == NULL)
		return kh_fail_ssl(err, KH_ERR_INTERNAL, "BIO_new_mem_buf");
	/* No passphrase callback: an encrypted key is refused, never prompted for. */
	s->key = PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"");
	BIO_free(bio);
	if (s->key == NULL)
		return kh_fail_ssl(err, KH_ERR_INPUT, "the session key is not a PEM private key");
	if (X509_check_private_key(s->leaf, s->key) != 1)
		return kh_fail_ssl(err, KH_ERR_INPUT, "the session key does not belong to the "
				   "session certificate");
	return 0;
}

/* The session's end: its own expiry, and never after the certificate's. */
static int
kh_rsession_check_time(struct kh_rsession *s, int64_t expires, kh_error *err)
{
	const ASN1_TIME *na = X509_get0_notAfter(s->leaf);
	struct tm tm;
	time_t now = time(NULL), not_after;

	if (na == NULL || ASN1_TIME_to_tm(na, &tm) != 1)
		return kh_fail(err, KH_ERR_INPUT, "the session certificate has no valid notAfter");
	not_after = timegm(&tm);
	s->expires = expires < (int64_t)not_after ? expires : (int64_t)not_after;
	if (s->expires <= (int64_t)now)
		return kh_fail(err, KH_ERR_EXPIRED, "the session has expired");
	if (X509_cmp_current_time(X509_get0_notBefore(s->leaf)) > 0)
		return kh_fail(err, KH_ERR_INPUT, "the session certificate is not valid yet");
	return 0;
}

/* Now (CLOCK_REALTIME) in ns. */
static int64_t
kh_rsession_now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The time left until `expires` (unix seconds), to the microsecond: a
 * timer in whole seconds from now would fire up to a second late. */
static void
kh_rsession_until(int64_t expires, struct timeval *tv)
{
	int64_t left = expires * 1000000000 - kh_rsession_now_ns();

	if (left < 0)
		left = 0;
	tv->tv_sec = (time_t)(left / 1000000000);
	tv->tv_usec = (suseconds_t)(left % 1000000000 / 1000);
}

static bool
kh_rsession_issuer_served(const struct kh_relayd *rd, const char *issuer)
{
	size_t i;

	for (i = 0; i < rd->nclusters; i++) {
		if (strcmp(rd->clusters[i].issuer_id, issuer) == 0)
			return true;
	}
	return false;
}

static void
kh_rsession_expired(evutil_socket_t fd, short what, void *arg)
{
	struct kh_rsession *s = arg;
	unsigned n = 0, c = 0;
	uid_t uid = s->user->uid;
	char issuer[KH_RELAY_ISSUER_BUF];

	(void)fd;
	(void)what;
	(void)snprintf(issuer, sizeof(issuer), "%s", s->issuer);
	kh_rsession_forget(s->rd, uid, issuer, "expired", &n, &c);
	kh_rlog(LOG_INFO, "uid %u: session for issuer \"%s\" expired; %u connection(s) closed",
		(unsigned)uid, issuer, c);
}

/* Unlink s from its user (not freed). */
static void
kh_rsession_unlink(struct kh_rsession *s)
{
	struct kh_rsession **pp;

	for (pp = &s->user->sessions; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			s->rd->nsessions--;
			return;
		}
	}
}

int
kh_rsession_add(struct kh_relayd *rd, struct kh_relay_session *in, int slot, bool persist,
		kh_error *err)
{
	struct kh_rsession *s = calloc(1, sizeof(*s)), *old;
	struct kh_ruser *u = NULL;
	struct timeval tv = { 0 };
	char *blob = NULL;
	size_t blen = 0;
	int rc = -1;

	if (s == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	s->rd = rd;
	s->slot = -1;
	if (!kh_rsession_issuer_served(rd, in->issuer)) {
		kh_fail(err, KH_ERR_REFUSED, "no relay cluster accepts sessions of issuer \"%s\"",
			in->issuer);
		goto out;
	}
	/* The UID the API server will see comes from the certificate itself,
	 * not from anything the login says beside it. */
	if (kh_rsession_parse_chain(s, in->chain_pem, err) != 0 ||
	    kh_x509_kube_uid(s->leaf, &s->kube_uid, err) != 0 ||
	    kh_rsession_parse_key(s, in->key_pem, err) != 0 ||
	    kh_rsession_check_time(s, in->expires, err) != 0)
		goto out;
	old = kh_rsession_find(rd, in->uid, in->issuer);
	if (old == NULL && rd->nsessions >= (unsigned long)rd->policy->relay.max_sessions) {
		kh_fail(err, KH_ERR_QUOTA, "the relay already holds relay.max_sessions = %ld "
			"sessions", rd->policy->relay.max_sessions);
		goto out;
	}
	s->tls = calloc(rd->nclusters, sizeof(*s->tls));
	s->user_name = strdup(in->user);
	s->issuer = strdup(in->issuer);
	u = kh_ruser_get(rd, in->uid, true);
	s->expiry = evtimer_new(rd->base, kh_rsession_expired, s);
	if (s->tls == NULL || s->user_name == NULL || s->issuer == NULL || u == NULL ||
	    s->expiry == NULL) {
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		goto out;
	}
	s->delivered = in->delivered != 0 ? in->delivered : (int64_t)time(NULL);
	/* Only a delivery now knows its instant; a restored one is dated by its
	 * second, so a forget note of that same second still ends it. */
	s->delivered_ns = in->delivered != 0 ? 0 : kh_rsession_now_ns();
	s->serial = ++kh_rsession_serial;
	s->origin = in->origin;
	memset(&in->origin, 0, sizeof(in->origin));
	/* The last step that can fail: nothing is undone after it. */
	if (persist) {
		in->expires = s->expires;
		in->delivered = s->delivered;
		if (kh_relay_session_encode(in, &blob, &blen, err) != 0 ||
		    kh_rstore_put(rd->store, old != NULL ? old->slot : -1, blob, blen, s->expires,
				  &s->slot, err) != 0)
			goto out;
	} else {
		s->slot = slot;
	}
	/* A new login replaces the session; connections already open keep theirs. */
	if (old != NULL) {
		if (old->slot >= 0 && old->slot != s->slot)
			kh_rstore_clear(rd->store, old->slot);
		kh_rsession_unlink(old);
		kh_rsession_free(old);
	}
	s->user = u;
	s->next = u->sessions;
	u->sessions = s;
	u->ended_why = NULL;
	rd->nsessions++;
	/* libevent adds a timeout to its time of the loop's last wake-up: make
	 * that now, or the expiry fires as early as this delivery took. */
	(void)event_base_update_cache_time(rd->base);
	kh_rsession_until(s->expires, &tv);
	if (evtimer_add(s->expiry, &tv) != 0)
		kh_rlog(LOG_ERR, "uid %u: cannot arm the session's expiry timer", (unsigned)u->uid);
	kh_rlog(LOG_INFO, "uid %u (%s): %s session for issuer \"%s\" until %lld",
		(unsigned)u->uid, s->user_name, persist ? "took the" : "restored the",
		s->issuer, (long long)s->expires);
	s = NULL;
	rc = 0;
out:
	kh_rsession_free(s);
	if (rc != 0)
		kh_ruser_maybe_free(rd, u);
	kh_secure_free(blob, blen);
	kh_relay_session_clear(in);
	return rc;
}

void
kh_rsession_forget(struct kh_relayd *rd, uid_t uid, const char *issuer, const char *why,
		   unsigned *nsessions, unsigned *nconns)
{
	struct kh_ruser *u = kh_ruser_get(rd, uid, false);
	struct kh_rsession **pp, *s;

	*nsessions = 0;
	*nconns = 0;
	if (u == NULL)
		return;
	/* Connections first: none may outlive the key that made it.  The
	 * extra count keeps u alive while its last connection closes. */
	u->nconns++;
	*nconns = rd->close_user != NULL ? rd->close_user(rd, u, issuer) : 0;
	u->nconns--;
	for (pp = &u->sessions; (s = *pp) != NULL;) {
		if (issuer != NULL && strcmp(s->issuer, issuer) != 0) {
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		rd->nsessions--;
		if (s->slot >= 0)
			kh_rstore_clear(rd->store, s->slot);
		kh_rlog(LOG_INFO, "uid %u (%s): session for issuer \"%s\" forgotten (%s)",
			(unsigned)uid, s->user_name, s->issuer, why);
		kh_rsession_free(s);
		(*nsessions)++;
	}
	if (*nsessions > 0) {
		u->ended_at = time(NULL);
		u->ended_why = why;
	}
	kh_ruser_maybe_free(rd, u);
}

int
kh_rsession_list(struct kh_relayd *rd, bool all, uid_t uid, struct kh_relay_listing **out,
		 size_t *n)
{
	struct kh_relay_listing *l = calloc(rd->nsessions + 1, sizeof(*l));
	struct kh_rsession *s;
	struct kh_ruser *u;
	size_t b, k = 0;

	*out = l;
	*n = 0;
	if (l == NULL)
		return -1;
	for (b = 0; b < rd->nbuckets; b++) {
		for (u = rd->users[b]; u != NULL; u = u->next) {
			if (!all && u->uid != uid)
				continue;
			for (s = u->sessions; s != NULL && k < rd->nsessions; s = s->next) {
				l[k].uid = u->uid;
				l[k].user = strdup(s->user_name);
				l[k].issuer = strdup(s->issuer);
				l[k].expires = s->expires;
				l[k].connections = rd->count_user != NULL ?
						   rd->count_user(u, s->issuer) : 0;
				k++;
				if (l[k - 1].user == NULL || l[k - 1].issuer == NULL) {
					*n = k;
					return -1;
				}
			}
		}
	}
	*n = k;
	return 0;
}

void
kh_rsession_free_all(struct kh_relayd *rd)
{
	struct kh_ruser *u, *next;
	struct kh_rsession *s;
	size_t b;

	for (b = 0; rd->users != NULL && b < rd->nbuckets; b++) {
		for (u = rd->users[b]; u != NULL; u = next) {
			next = u->next;
			/* Hold the entry: closing its last connection would free it. */
			u->nconns++;
			if (rd->close_user != NULL)
				(void)rd->close_user(rd, u, NULL);
			while ((s = u->sessions) != NULL) {
				u->sessions = s->next;
				/* Kept in the keyring for the next start. */
				kh_rsession_free(s);
			}
			free(u->pools);
			free(u);
		}
		rd->users[b] = NULL;
	}
	rd->nsessions = 0;
}

static void
kh_rsession_restore_one(void *arg, int slot, const char *buf, size_t len)
{
	struct kh_relayd *rd = arg;
	struct kh_relay_session in;
	kh_error err = { 0 };

	if (kh_relay_session_decode(buf, len, &in, &err) != 0) {
		kh_rlog(LOG_WARNING, "relay key slot %d: %s; emptying it", slot, err.msg);
		kh_rstore_clear(rd->store, slot);
		return;
	}
	if (kh_rsession_add(rd, &in, slot, false, &err) != 0) {
		kh_rlog(err.code == KH_ERR_EXPIRED ? LOG_INFO : LOG_WARNING,
			"relay key slot %d: not restored: %s", slot, err.msg);
		kh_rstore_clear(rd->store, slot);
	}
}

void
kh_rsession_restore(struct kh_relayd *rd)
{
	kh_rstore_foreach(rd->store, kh_rsession_restore_one, rd);
	kh_rlog(LOG_INFO, "%u session(s) restored from the keyring", rd->nsessions);
}

unsigned
kh_rsession_forget_before(struct kh_relayd *rd, uid_t uid, int64_t when_ns, const char *why)
{
	struct kh_rsession *s;
	struct kh_ruser *u;
	char issuer[KH_RELAY_ISSUER_BUF];
	unsigned ns, nc, n = 0;

	for (;;) {
		/* Only what it had taken before the forget was asked. */
		u = kh_ruser_get(rd, uid, false);
		for (s = u != NULL ? u->sessions : NULL; s != NULL; s = s->next) {
			int64_t at = s->delivered_ns != 0 ? s->delivered_ns :
				     s->delivered * 1000000000;

			if (at <= when_ns)
				break;
		}
		if (s == NULL)
			return n;
		(void)snprintf(issuer, sizeof(issuer), "%s", s->issuer);
		kh_rsession_forget(rd, uid, issuer, why, &ns, &nc);
		n += ns;
	}
}
