/*
 * kubehsm status [--json] [--issuer ID] — what the caller's kube session is.
 * kubehsm logout [--issuer ID]           — end it now.
 *
 * Both act only on the caller's own record, with the caller's own rights.
 * status never prints the session key.
 */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "cache/kh_cache.h"
#include "helper/kh_cli.h"
#include "conf/kh_policy.h"
#include "lib/kh_exec_proto.h"
#include "lib/kh_relay_client.h"
#include "lib/kh_x509.h"

static void
kh_status_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm status [--json] [--issuer ID]\n\n"
		"Show your kube session: identity, groups, scope, expiry and time left,\n"
		"the token it was started with and the issuer.  The key is never shown.\n\n"
		"  --json          one JSON object instead of text\n"
		"  --issuer ID     the issuer's session (default: the default issuer)\n"
		"  -h, --help      show this help\n\n"
		"Exit status: 0 a valid session, 1 none (the reason is printed), 2 usage.\n");
}

static void
kh_logout_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm logout [--issuer ID]\n\n"
		"End your kube session now: kubectl stops getting credentials until you\n"
		"log in again.  Running clients keep their current certificate until it\n"
		"expires (its expiry is the session's).\n\n"
		"  --issuer ID     the issuer's session (default: the default issuer)\n"
		"  -h, --help      show this help\n\n"
		"Exit status: 0 ended (or there was none), 1 error, 2 usage.\n");
}

/* Parse [--json] [--issuer ID] [-h]; returns -1 to exit with *rc. */
static int
kh_parse_common(int argc, char **argv, bool allow_json, bool *json,
		const char **issuer, void (*usage)(FILE *), int *rc)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			*rc = KH_EXIT_OK;
			return -1;
		} else if (allow_json && strcmp(a, "--json") == 0) {
			*json = true;
		} else if (strcmp(a, "--issuer") == 0 && i + 1 < argc) {
			*issuer = argv[++i];
		} else if (strncmp(a, "--issuer=", 9) == 0) {
			*issuer = a + 9;
		} else {
			kh_cli_error("%s: unexpected argument '%s'; run 'kubehsm %s --help'",
				     argv[0], a, argv[0]);
			*rc = KH_EXIT_USAGE;
			return -1;
		}
	}
	return 0;
}

/* One-line RFC 2253 name of a certificate's subject or issuer; "" on failure. */
static void
kh_pem_name(const char *pem, bool issuer, char *buf, size_t size)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO *m = BIO_new(BIO_s_mem());
	int n;

	buf[0] = '\0';
	if (x != NULL && m != NULL &&
	    X509_NAME_print_ex(m, issuer ? X509_get_issuer_name(x) : X509_get_subject_name(x),
			       0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) >= 0) {
		n = BIO_read(m, buf, (int)size - 1);
		buf[n > 0 ? n : 0] = '\0';
	}
	X509_free(x);
	BIO_free(b);
	BIO_free(m);
}

/* The session certificate's UID attribute (identity.uid): a new string,
 * or NULL when it has none (or it cannot be read: status still shows the
 * rest). */
static char *
kh_pem_uid(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	kh_error err = { 0 };
	char *uid = NULL;

	if (x != NULL && kh_x509_kube_uid(x, &uid, &err) != 0)
		uid = NULL;
	X509_free(x);
	BIO_free(b);
	return uid;
}

static const char *
kh_miss_name(enum kh_cache_miss m)
{
	switch (m) {
	case KH_MISS_NONE: return "active";
	case KH_MISS_ABSENT: return "none";
	case KH_MISS_EXPIRED: return "expired";
	case KH_MISS_REVOKED: return "revoked";
	case KH_MISS_REFUSED: return "refused";
	}
	return "unknown";
}

static void
kh_fmt_left(long long s, char *buf, size_t size)
{
	if (s < 0)
		s = 0;
	if (s >= 3600)
		snprintf(buf, size, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
	else if (s >= 60)
		snprintf(buf, size, "%lldm%02llds", s / 60, s % 60);
	else
		snprintf(buf, size, "%llds", s);
}

static int
kh_status_json(const struct kh_record *rec, enum kh_cache_miss miss, const char *msg,
	       const char *issuer, const char *iss_name, const char *tok_name,
	       const char *kube_uid, char *exp, long long left)
{
	json_t *o = json_object(), *g;
	size_t i;
	int rc;

	if (o == NULL)
		return -1;
	json_object_set_new(o, "state", json_string(kh_miss_name(miss)));
	json_object_set_new(o, "issuerId", json_string(issuer));
	if (rec == NULL) {
		json_object_set_new(o, "message", json_string(msg));
	} else {
		json_object_set_new(o, "user", json_string(rec->user));
		json_object_set_new(o, "uid", json_integer((json_int_t)rec->uid));
		json_object_set_new(o, "username", json_string(rec->kube_user));
		json_object_set_new(o, "kubeUid", kube_uid != NULL ? json_string(kube_uid) :
				    json_null());
		g = json_array();
		for (i = 0; i < rec->ngroups; i++)
			json_array_append_new(g, json_string(rec->groups[i]));
		json_object_set_new(o, "groups", g);
		json_object_set_new(o, "scope", json_string(rec->scope == KH_SCOPE_SESSION
							    ? "session" : "user"));
		json_object_set_new(o, "expirationTimestamp", json_string(exp));
		json_object_set_new(o, "secondsLeft", json_integer(left));
		json_object_set_new(o, "logins", json_integer(rec->logins));
		json_object_set_new(o, "tokenUri", json_string(rec->token_uri ? rec->token_uri : ""));
		json_object_set_new(o, "tokenSubject", json_string(tok_name));
		json_object_set_new(o, "issuer", json_string(iss_name));
		json_object_set_new(o, "keyHolder", json_string(rec->key_pem != NULL ?
								"exec" : "relay"));
	}
	rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
	putchar('\n');
	json_decref(o);
	return rc;
}

int
kh_cmd_status(int argc, char **argv)
{
	const char *issuer = "";
	bool json = false;
	struct kh_record *rec = NULL;
	enum kh_cache_miss miss = KH_MISS_NONE;
	char exp[32] = "", iss_name[512] = "", tok_name[512] = "", left_s[32];
	long long left = 0;
	char *kube_uid = NULL;
	kh_error err;
	size_t i;
	int rc = KH_EXIT_OK;

	if (kh_parse_common(argc, argv, true, &json, &issuer, kh_status_usage, &rc) != 0)
		return rc;
	if (kh_cache_find(issuer, &rec, &miss, &err) != 0) {
		if (err.code != KH_ERR_NOTFOUND && err.code != KH_ERR_EXPIRED &&
		    err.code != KH_ERR_REVOKED && err.code != KH_ERR_REFUSED) {
			/* a real error (keyring unavailable...), not a miss */
			kh_cli_error("%s", err.msg);
			return KH_EXIT_FAIL;
		}
		if (json)
			kh_status_json(NULL, miss, err.msg, issuer, "", "", NULL, exp, 0);
		else
			printf("No kube session (%s): %s\n", kh_miss_name(miss), err.msg);
		return KH_EXIT_FAIL;
	}
	if (kh_format_rfc3339((time_t)rec->expires, exp, sizeof(exp), &err) != 0)
		exp[0] = '\0';
	left = (long long)rec->expires - (long long)time(NULL);
	kh_pem_name(rec->cert_chain_pem, true, iss_name, sizeof(iss_name));
	if (rec->token_cert_pem != NULL)
		kh_pem_name(rec->token_cert_pem, false, tok_name, sizeof(tok_name));
	kube_uid = kh_pem_uid(rec->cert_chain_pem);
	if (json) {
		if (kh_status_json(rec, KH_MISS_NONE, NULL, issuer, iss_name, tok_name, kube_uid,
				   exp, left) != 0)
			rc = KH_EXIT_FAIL;
	} else {
		kh_fmt_left(left, left_s, sizeof(left_s));
		printf("Kube session:  active\n");
		printf("User:          %s (uid %lu)\n", rec->user, (unsigned long)rec->uid);
		printf("Identity:      %s\n", rec->kube_user);
		printf("UID:           %s\n", kube_uid != NULL ? kube_uid :
		       "(none: identity.uid is not set)");
		printf("Groups:        ");
		for (i = 0; i < rec->ngroups; i++)
			printf("%s%s", i ? ", " : "", rec->groups[i]);
		printf("%s\n", rec->ngroups ? "" : "(none)");
		printf("Scope:         %s\n", rec->scope == KH_SCOPE_SESSION ? "session" : "user");
		printf("Expires:       %s (%s left)\n", exp, left_s);
		printf("Key:           %s\n", rec->key_pem != NULL ?
		       "in your session (kubehsm exec hands it to kube clients)" :
		       "held by kubehsm-relayd only (use the relay's kubeconfig)");
		printf("Logins:        %u\n", rec->logins);
		printf("Token:         %s%s%s%s\n", rec->token_uri ? rec->token_uri : "",
		       tok_name[0] ? " (" : "", tok_name, tok_name[0] ? ")" : "");
		printf("Issuer:        %s%s%s%s\n", issuer[0] ? issuer : "default",
		       iss_name[0] ? " (" : "", iss_name, iss_name[0] ? ")" : "");
	}
	if (fflush(stdout) != 0)
		rc = KH_EXIT_FAIL;
	free(kube_uid);
	kh_record_free(rec);
	return rc;
}

/*
 * When the policy has a relay, end the caller's relay session through
 * user.sock (the relay takes the uid from the kernel).  0, or -1 after
 * saying why on stderr; a relay that is not running has nothing to end.
 */
static int
kh_logout_relay(const char *issuer, bool *ended)
{
	struct kh_policy_load_opts lo = { .skip_secret_file_checks = true };
	struct kh_policy *policy;
	const char *rundir = KH_RELAY_DEFAULT_RUNDIR;
	unsigned sessions = 0, conns = 0;
	kh_error err;
	int rc = 0;

	*ended = false;
	/* A policy this user cannot read: try the relay where it usually is. */
	policy = kh_policy_load(kh_cli_config_path(NULL), &lo, &err);
	if (policy != NULL && !policy->relay.configured) {
		kh_policy_free(policy);
		return 0;
	}
	if (policy != NULL)
		rundir = policy->relay.rundir;
	if (kh_relay_forget_self(rundir, issuer, &sessions, &conns, &err) != 0) {
		if (err.code != KH_ERR_NOTFOUND) {
			kh_cli_error("logout: %s", err.msg);
			rc = -1;
		}
	} else if (sessions > 0) {
		*ended = true;
		if (conns > 0)
			printf("kubehsm-relayd closed %u open connection%s.\n", conns,
			       conns == 1 ? "" : "s");
	}
	kh_policy_free(policy);
	return rc;
}

int
kh_cmd_logout(int argc, char **argv)
{
	const char *issuer = "";
	bool json = false, relay_ended;
	kh_error err;
	int rc = KH_EXIT_OK, r, rr;

	if (kh_parse_common(argc, argv, false, &json, &issuer, kh_logout_usage, &rc) != 0)
		return rc;
	r = kh_cache_revoke(getuid(), issuer, &err);
	if (r < 0) {
		kh_cli_error("logout: %s", err.msg);
		return KH_EXIT_FAIL;
	}
	/* The relay's copy goes too, with the connections it serves. */
	rr = kh_logout_relay(issuer, &relay_ended);
	printf(r > 0 || relay_ended ? "Kube session ended.\n" : "No kube session to end.\n");
	return rr == 0 ? KH_EXIT_OK : KH_EXIT_FAIL;
}
