/*
 * fakes — the layers under pam/ replaced for its unit tests: the user's
 * token (lib/kh_pkcs11, certificate validation), the keyring cache, the
 * root-only runtime directory and the policy loader's trust in root.
 *
 * The test programs are linked with --wrap for each replaced function
 * ($(pam_unit_wraps) in local.mk), so the module's code calls these and
 * is otherwise the code that ships.  What stays real: templates, the
 * certificate mapping, proof of possession (a software key), policy
 * parsing, the record and hand-off codecs.
 */
#ifndef KH_TEST_PAM_FAKES_H
#define KH_TEST_PAM_FAKES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "cache/kh_cache.h"
#include "pam/kh_pam.h"

/* ---- the user's token ---------------------------------------------------- */

#define FAKE_TRIES_MAX 8

struct fake_token {
	const char *label;        /* NULL: the module shows no token */
	const char *serial;
	unsigned pin_flags;       /* KH_P11_PIN_*, as read before the first try */
	unsigned flags_after_wrong;  /* as read again after a wrong PIN */
	const char *pin;          /* the right PIN */
	bool cert_rejected;       /* validation refuses the certificate */
	X509 *cert;               /* subject CN=<user>; set by fakes_setup */
	EVP_PKEY *key;            /* the certificate's key */
	/* What happened: */
	char *tried[FAKE_TRIES_MAX];  /* every PIN C_Login was given, in order */
	size_t ntried;
	int opens, closes;
	int lists;                /* slot listings (kh_p11_list_tokens) */
	bool used;                /* selected for login (kh_p11_use_token) */
};

extern struct fake_token fake_token;

/* Other tokens the module shows, after the user's: never to be logged in
 * to (selecting one for login fails the test). */
#define FAKE_OTHERS_MAX 4
struct fake_others {
	struct {
		const char *label;
		const char *serial;
		X509 *cert;       /* owned: freed by fakes_teardown */
	} t[FAKE_OTHERS_MAX];
	size_t n;
};

extern struct fake_others fake_others;

/* A self-signed certificate whose subject is the attribute/value pairs
 * given ("CN", "alice", "O", "team-a", ..., NULL); its key in *key unless
 * key is NULL. */
X509 *fake_cert_new(EVP_PKEY **key, ...) __attribute__((sentinel));

/* ---- the keyring cache --------------------------------------------------- */

#define FAKE_ENTRIES_MAX 8

/* One row kh_cache_list answers for the uid. */
struct fake_entry {
	const char *user;
	const char *token_cert_pem;
	enum kh_cache_miss state;
	bool no_record;           /* listed, but undecodable (rec NULL) */
};

struct fake_cache {
	struct fake_entry entries[FAKE_ENTRIES_MAX];
	size_t n;
	bool list_fails;          /* kh_cache_list fails (a keyring error) */
	int logout_result;        /* what kh_cache_logout answers: 1 the uid's
				   * session ended, 0 kept, -1 failed */
	bool logout_ends;         /* it calls its ending hook also when it then
				   * fails (a keyring step that failed) */
	/* What happened: */
	int lists, counts, logouts;
	uid_t counted_uid, logout_uid;
	char counted_user[64], logout_user[64];
};

extern struct fake_cache fake_cache;

/* ---- policy and runtime directory ---------------------------------------- */

/*
 * A "config=<path>" module option naming a policy file with `text` (NULL:
 * a valid base policy for a user token with label "%u", one issuer, polkit
 * off), written into the test's private directory.  The policy loader is
 * real; it trusts the test's uid instead of root's, and does not look
 * for the files the policy names.
 */
const char *fake_policy_option(const char *text);

/* The valid base policy's text. */
extern const char fake_base_policy[];

/* The test's private directory, which stands in for KH_RUNDIR. */
const char *fake_rundir(void);

/* ---- small helpers ------------------------------------------------------- */

/* What alice's authentication leaves for the session step (uid FAKE_UID,
 * her token, groups k8s-dev and team-a), with token certificate `pem`.
 * Free with kh_pam_login_free, or hand it to the handle. */
struct kh_pam_login *fake_login(const char *pem);

/* asprintf that fails the test rather than return nothing; free it. */
char *fake_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- fixtures ------------------------------------------------------------ */

/* Per test: fresh fakepam, token (user "alice", label "alice", PIN
 * "4711-pin", a certificate for CN=alice), cache and directory; alice is
 * uid 1001, gid 1001 in the fake account database.  The PIN is registered
 * with fakepam as a secret. */
int fakes_setup(void **state);
int fakes_teardown(void **state);

#define FAKE_USER "alice"
#define FAKE_UID 1001
#define FAKE_PIN "4711-pin"

#endif
