/*
 * pam_floor — the benchmark's floor for a login: pam_kubehsm's whole job,
 * done with raw PKCS#11, OpenSSL and the keyring syscalls, and nothing else.
 * No policy file, no polkit, no hand-off stash, no index under /run, no
 * login accounting.  The login row of the bench compares pam_kubehsm with it
 * (bench/login_row.sh).  Benchmark yardstick only, not product code — but it
 * does the job correctly: every return code is checked, the PINs are wiped,
 * and the keyring work runs as the user, never with the host's ids changed.
 *
 * auth           dlopen the PKCS#11 module, C_Initialize; find the token
 *                labelled with the user name and its certificate (by label);
 *                validate the certificate against the CA (chain, time,
 *                key usage, TLS client purpose) and map its CN to the PAM user;
 *                refuse a locked PIN; ask the PIN through the conversation;
 *                C_Login; sign a fresh random challenge with the key of the
 *                certificate's CKA_ID and verify it with the certificate's
 *                public key; log out of the user's token (the module stays
 *                loaded for the session step, in the PAM handle).
 * open_session   read the issuer PIN (root-only file), open a session on the
 *                issuer token, C_Login, find the issuer key; generate an EC
 *                P-256 session key with OpenSSL; build an X.509 session
 *                certificate (CN = user, O = the token certificate's O
 *                values, as pam_kubehsm's "cert:O") and sign it with C_Sign
 *                on the issuer key; one add_key with a timeout into a staging
 *                (thread) keyring, chown to the user, setperm user
 *                view/read/search/link and nothing for the possessor; a
 *                vfork child that becomes the user links it into the user's
 *                keyring (displacing the previous record of that name).
 * close_session  a vfork child, as the user, invalidates the record.
 * With keyring_helper=PATH both keyring calls run instead in that program
 * (bench/floor/keyring_floor.c), spawned and waited for with a deadline, and
 * with polkit=PATH open_session first asks polkit as pam_kubehsm's shipped
 * policy does (bench/floor/floor_polkit.c, loaded only when the system bus
 * is there): with both, the floor of pam_kubehsm's design, whose user-side
 * keyring work runs in a program of its own and which asks polkit whenever
 * polkitd runs (see keyctl_by_helper, polkit_allows).
 * pam_end        C_Finalize and dlclose (the PAM data's cleanup).
 *
 * Module options (one pam.d line for auth and session):
 *   module=PATH issuer_token=LABEL issuer_cert=PATH issuer_pin_file=PATH
 *   ca=PATH [key_label=kube] [issuer_key=issuer] [ttl=SECONDS]
 *   [timing=PATH|syslog] [keyring_helper=PATH] [polkit=PATH] [issuer_module=PATH]
 *   [debug]
 * issuer_module= puts the issuer's token behind a module of its own (loaded
 * at open_session, finalised at pam_end), as an issuer on a network HSM
 * is, beside the users' module (bench/issuer.sh); without it the issuer's
 * token is found through module=.
 * timing= appends one line of step durations per entry point, in the format
 * bench/TIMING.md specifies for pam_kubehsm (module=pam_floor, or
 * module=pam_floor_design with keyring_helper= or polkit=).
 *
 * Supported keys: EC P-256 and RSA, on the user token and for the issuer.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <keyutils.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <p11-kit/pkcs11.h>

#define PAM_SM_AUTH
#define PAM_SM_SESSION
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#define DATA_LOGIN "pam_floor:login"
#define RECORD_DESC "kubehsm-floor:session:v1"
/* user view, read, search, link; nothing for possessor, group, other */
#define RECORD_PERM (KEY_USR_VIEW | KEY_USR_READ | KEY_USR_SEARCH | KEY_USR_LINK)
#define BACKDATE 300            /* notBefore = now - 5 min, as pam_kubehsm */
#define SERIAL_BYTES 16

struct opts {
	const char *module, *ca, *key_label, *issuer_token, *issuer_key;
	const char *issuer_cert, *issuer_pin_file, *timing, *keyring_helper, *polkit;
	const char *issuer_module;
	long ttl;
	bool debug;
};

/* ---- step timing (bench/TIMING.md's format) ------------------------------------- */

struct timing {
	bool on;
	const char *phase;
	struct timespec start, mark;
	char line[1024];
	size_t len;
};

static long
us_between(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000000L + (b->tv_nsec - a->tv_nsec) / 1000;
}

static void
t_begin(struct timing *t, const struct opts *o, const char *phase)
{
	memset(t, 0, sizeof(*t));
	t->on = o->timing != NULL;
	if (!t->on)
		return;
	t->phase = phase;
	clock_gettime(CLOCK_MONOTONIC, &t->start);
	t->mark = t->start;
}

/* The time since the last mark was step NAME; steps of the same name add up
 * in the reader. */
static void
t_step(struct timing *t, const char *name)
{
	struct timespec now;
	int n;

	if (!t->on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	n = snprintf(t->line + t->len, sizeof(t->line) - t->len, " %s=%ld", name,
		     us_between(&t->mark, &now));
	if (n > 0 && (size_t)n < sizeof(t->line) - t->len)
		t->len += (size_t)n;
	t->mark = now;
}

static void
t_end(struct timing *t, pam_handle_t *pamh, const struct opts *o, int rc)
{
	struct timespec now;
	char out[1200];
	int n, fd;

	if (!t->on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	n = snprintf(out, sizeof(out), "kh-timing v1 module=%s pid=%ld phase=%s rc=%d "
		     "start=%ld total=%ld%.*s\n",
		     o->keyring_helper != NULL || o->polkit != NULL ? "pam_floor_design" : "pam_floor",
		     (long)getpid(), t->phase, rc,
		     t->start.tv_sec * 1000000L + t->start.tv_nsec / 1000,
		     us_between(&t->start, &now), (int)t->len, t->line);
	if (n <= 0 || (size_t)n >= sizeof(out))
		return;
	if (strcmp(o->timing, "syslog") == 0) {
		pam_syslog(pamh, LOG_DEBUG, "%.*s", n - 1, out);
		return;
	}
	fd = open(o->timing, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	(void)!write(fd, out, (size_t)n);
	close(fd);
}

/* ---- options, logging ------------------------------------------------------------- */

static void
flog(pam_handle_t *pamh, const struct opts *o, int prio, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pam_syslog(pamh, prio, "%s", msg);
	if (o->debug)
		fprintf(stderr, "pam_floor: %s\n", msg);
}

static int
parse_opts(pam_handle_t *pamh, int argc, const char **argv, struct opts *o)
{
	static const struct { const char *name; size_t off; } s[] = {
		{ "module=", offsetof(struct opts, module) },
		{ "ca=", offsetof(struct opts, ca) },
		{ "key_label=", offsetof(struct opts, key_label) },
		{ "issuer_token=", offsetof(struct opts, issuer_token) },
		{ "issuer_key=", offsetof(struct opts, issuer_key) },
		{ "issuer_cert=", offsetof(struct opts, issuer_cert) },
		{ "issuer_pin_file=", offsetof(struct opts, issuer_pin_file) },
		{ "timing=", offsetof(struct opts, timing) },
		{ "keyring_helper=", offsetof(struct opts, keyring_helper) },
		{ "polkit=", offsetof(struct opts, polkit) },
		{ "issuer_module=", offsetof(struct opts, issuer_module) },
	};
	int i;
	size_t k;

	memset(o, 0, sizeof(*o));
	o->key_label = "kube";
	o->issuer_key = "issuer";
	o->ttl = 3600;
	for (i = 0; i < argc; i++) {
		for (k = 0; k < sizeof(s) / sizeof(s[0]); k++)
			if (strncmp(argv[i], s[k].name, strlen(s[k].name)) == 0) {
				*(const char **)((char *)o + s[k].off) = argv[i] + strlen(s[k].name);
				break;
			}
		if (k < sizeof(s) / sizeof(s[0]))
			continue;
		if (strcmp(argv[i], "debug") == 0)
			o->debug = true;
		else if (strncmp(argv[i], "ttl=", 4) == 0 && (o->ttl = strtol(argv[i] + 4, NULL, 10)) > 0)
			;
		else {
			pam_syslog(pamh, LOG_ERR, "unknown option '%s'", argv[i]);
			return PAM_SERVICE_ERR;
		}
	}
	if (o->module == NULL || o->ca == NULL || o->issuer_token == NULL ||
	    o->issuer_cert == NULL || o->issuer_pin_file == NULL ||
	    (o->timing != NULL && o->timing[0] != '/' && strcmp(o->timing, "syslog") != 0) ||
	    (o->keyring_helper != NULL && o->keyring_helper[0] != '/') ||
	    (o->polkit != NULL && o->polkit[0] != '/') ||
	    (o->issuer_module != NULL && o->issuer_module[0] != '/')) {
		pam_syslog(pamh, LOG_ERR, "needs module=, ca=, issuer_token=, issuer_cert=, "
			   "issuer_pin_file= (timing= an absolute path or syslog, "
			   "keyring_helper=, polkit= and issuer_module= absolute paths)");
		return PAM_SERVICE_ERR;
	}
	return PAM_SUCCESS;
}

#include "pam_floor_p11.h"

/* ---- the PAM handle's state ----------------------------------------------------------- */

struct login {
	struct p11 p11;
	struct p11 issuer_p11;  /* with issuer_module=: the issuer's own module */
	X509 *cert;             /* the validated token certificate */
	char *user;
	uid_t uid;
	gid_t gid;
	key_serial_t record;    /* stored by open_session, for close_session */
};

static void
login_cleanup(pam_handle_t *pamh, void *data, int status)
{
	struct login *l = data;

	(void)pamh;
	(void)status;
	X509_free(l->cert);
	floor_p11_unload(&l->issuer_p11);
	floor_p11_unload(&l->p11);
	free(l->user);
	free(l);
}

/* ---- keyring work as the user --------------------------------------------------------- */

/*
 * KEYCTL_LINK key into the user's keyring, or KEYCTL_INVALIDATE key, in a
 * vfork child that fully becomes uid/gid.  The child runs on the parent's
 * memory: it calls only raw system calls (which change the credentials of
 * the child task alone, unlike glibc's setresuid, which would signal every
 * thread of the process), with every signal blocked, then _exits.
 * 0 or an errno.
 */
static int
keyctl_in_vfork_child(int op, key_serial_t key, uid_t uid, gid_t gid)
{
	sigset_t all, old;
	int status, e;
	pid_t pid;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = vfork();
	if (pid == 0) {
		long r;

		if (syscall(SYS_setgroups, 0, NULL) != 0 ||
		    syscall(SYS_setresgid, gid, gid, gid) != 0 ||
		    syscall(SYS_setresuid, uid, uid, uid) != 0)
			_exit(120);
		if (op == KEYCTL_LINK)
			r = syscall(SYS_keyctl, KEYCTL_LINK, key, KEY_SPEC_USER_KEYRING);
		else
			r = syscall(SYS_keyctl, KEYCTL_INVALIDATE, key);
		_exit(r == 0 ? 0 : errno < 120 ? errno : 121);
	}
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return e;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return errno;
	if (!WIFEXITED(status))
		return ECHILD;          /* killed: nothing known about the keyring */
	return WEXITSTATUS(status) == 120 ? EPERM : WEXITSTATUS(status);
}

/*
 * The same in a program of its own (option keyring_helper=PATH, the
 * program bench/floor/keyring_floor.c), as pam_kubehsm's design asks of
 * user-side keyring work: started with posix_spawn (clone with CLONE_VM and
 * CLONE_VFORK, then exec), an empty environment, every signal at its
 * default and nothing open beyond the standard three; waited for with a
 * deadline through a pidfd, since a user may stop a process that has
 * become them.  0 or an errno.
 */
static int
keyctl_by_helper(const char *path, int op, key_serial_t key, uid_t uid, gid_t gid)
{
	char a_key[24], a_uid[24], a_gid[24];
	char *argv[] = { (char *)"keyring_floor",
			 (char *)(op == KEYCTL_LINK ? "link" : "invalidate"),
			 a_key, a_uid, a_gid, NULL };
	char *envp[] = { NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	struct pollfd pfd;
	int status, rc, pidfd;
	pid_t pid;

	snprintf(a_key, sizeof(a_key), "%ld", (long)key);
	snprintf(a_uid, sizeof(a_uid), "%lu", (unsigned long)uid);
	snprintf(a_gid, sizeof(a_gid), "%lu", (unsigned long)gid);
	sigemptyset(&none);
	sigfillset(&all);
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0)
		return rc;
	if ((rc = posix_spawnattr_init(&attr)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return rc;
	}
	if ((rc = posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1)) == 0 &&
	    (rc = posix_spawnattr_setsigmask(&attr, &none)) == 0 &&
	    (rc = posix_spawnattr_setsigdefault(&attr, &all)) == 0 &&
	    (rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
					   POSIX_SPAWN_SETSIGDEF)) == 0)
		rc = posix_spawn(&pid, path, &fa, &attr, argv, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return rc;
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd >= 0) {
		pfd = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		while ((rc = poll(&pfd, 1, 10000)) < 0 && errno == EINTR)
			;
		if (rc == 0)
			(void)kill(pid, SIGKILL);   /* stopped or hung: the deadline */
		close(pidfd);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return errno;
	if (!WIFEXITED(status))
		return ECHILD;
	return WEXITSTATUS(status) == 120 ? EPERM : WEXITSTATUS(status);
}

static int
keyctl_as_user(const struct opts *o, int op, key_serial_t key, uid_t uid, gid_t gid)
{
	if (o->keyring_helper != NULL)
		return keyctl_by_helper(o->keyring_helper, op, key, uid, gid);
	return keyctl_in_vfork_child(op, key, uid, gid);
}

/* ---- auth -------------------------------------------------------------------------------- */

/* Chain to the CA, time, TLS client purpose, key usage; then CN == user. */
static int
validate(X509 *cert, const char *ca, const char *user)
{
	uint32_t fl = X509_get_extension_flags(cert);
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_NAME *subj = X509_get_subject_name(cert);
	const ASN1_STRING *cn;
	int i, ok = 0;

	if ((fl & EXFLAG_INVALID) ||
	    ((fl & EXFLAG_KUSAGE) && !(X509_get_key_usage(cert) & KU_DIGITAL_SIGNATURE)) ||
	    ((fl & EXFLAG_XKUSAGE) && !(X509_get_extended_key_usage(cert) & XKU_SSL_CLIENT)))
		goto out;
	if (store == NULL || ctx == NULL || X509_STORE_load_file(store, ca) != 1 ||
	    X509_STORE_CTX_init(ctx, store, cert, NULL) != 1 ||
	    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT) != 1 ||
	    X509_verify_cert(ctx) != 1)
		goto out;
	/* exactly one CN, equal to the user name */
	i = X509_NAME_get_index_by_NID(subj, NID_commonName, -1);
	if (i < 0 || X509_NAME_get_index_by_NID(subj, NID_commonName, i) >= 0)
		goto out;
	cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i));
	ok = (size_t)ASN1_STRING_length(cn) == strlen(user) &&
	     memcmp(ASN1_STRING_get0_data(cn), user, strlen(user)) == 0;
out:
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	ERR_clear_error();
	return ok ? 0 : -1;
}

static int
map_rv(CK_RV rv)
{
	switch (rv) {
	case CKR_PIN_INCORRECT:
	case CKR_PIN_LEN_RANGE:
		return PAM_AUTH_ERR;
	case CKR_PIN_LOCKED:
		return PAM_MAXTRIES;
	default:
		return PAM_AUTHINFO_UNAVAIL;
	}
}

/* C_Login, the challenge signed on the token and verified with the
 * certificate; the PIN is wiped here.  A key with CKA_ALWAYS_AUTHENTICATE
 * gets the same PIN for its context-specific login. */
static int
login_and_prove(pam_handle_t *pamh, const struct opts *o, struct timing *t, struct login *l,
		CK_SESSION_HANDLE s, const char *label, unsigned char *id, CK_ULONG idlen)
{
	CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
	CK_ATTRIBUTE kt_tmpl[] = { { CKA_CLASS, &cls, sizeof(cls) }, { CKA_ID, id, idlen } };
	CK_KEY_TYPE kt = 0;
	CK_BBOOL always = CK_FALSE;
	CK_ATTRIBUTE ka[] = { { CKA_KEY_TYPE, &kt, sizeof(kt) },
			      { CKA_ALWAYS_AUTHENTICATE, &always, sizeof(always) } };
	CK_OBJECT_HANDLE key;
	unsigned char challenge[32], *sig = NULL;
	size_t siglen = 0;
	EVP_MD_CTX *md = NULL;
	char *pin = NULL;
	CK_RV rv;
	int rc;

	rc = pam_prompt(pamh, PAM_PROMPT_ECHO_OFF, &pin, "PIN for token '%s': ", label);
	t_step(t, "conv");
	if (rc != PAM_SUCCESS || pin == NULL)
		return rc != PAM_SUCCESS ? rc : PAM_CONV_ERR;
	rv = l->p11.f->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin));
	t_step(t, "login");
	if (rv != CKR_OK) {
		flog(pamh, o, LOG_NOTICE, "user '%s': C_Login: 0x%lx", l->user, rv);
		rc = map_rv(rv);
		goto out;
	}
	rc = PAM_AUTH_ERR;
	if ((rv = floor_p11_find_one(&l->p11, s, kt_tmpl, 2, &key)) != CKR_OK ||
	    ((rv = l->p11.f->C_GetAttributeValue(s, key, ka, 2)) != CKR_OK &&
	     rv != CKR_ATTRIBUTE_TYPE_INVALID) ||
	    RAND_bytes(challenge, sizeof(challenge)) != 1) {
		flog(pamh, o, LOG_ERR, "user '%s': token key: 0x%lx", l->user, rv);
		rc = PAM_AUTHINFO_UNAVAIL;
		goto out;
	}
	if (always == CK_TRUE &&
	    (rv = l->p11.f->C_Login(s, CKU_CONTEXT_SPECIFIC, (CK_UTF8CHAR_PTR)pin,
				    strlen(pin))) != CKR_OK) {
		rc = map_rv(rv);
		goto out;
	}
	if ((rv = floor_p11_sign(&l->p11, s, key, kt, challenge, sizeof(challenge), &sig,
			   &siglen)) != CKR_OK) {
		flog(pamh, o, LOG_ERR, "user '%s': challenge signature: 0x%lx", l->user, rv);
		goto out;
	}
	md = EVP_MD_CTX_new();
	if (md == NULL ||
	    EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, X509_get0_pubkey(l->cert)) != 1 ||
	    EVP_DigestVerify(md, sig, siglen, challenge, sizeof(challenge)) != 1) {
		flog(pamh, o, LOG_NOTICE, "user '%s': the token's key is not the certificate's", l->user);
		goto out;
	}
	rc = PAM_SUCCESS;
out:
	EVP_MD_CTX_free(md);
	free(sig);
	explicit_bzero(pin, strlen(pin));
	free(pin);
	ERR_clear_error();
	t_step(t, "challenge");
	return rc;
}

static int
authenticate(pam_handle_t *pamh, const struct opts *o, struct timing *t)
{
	CK_OBJECT_CLASS cls = CKO_CERTIFICATE;
	CK_ATTRIBUTE cert_tmpl[] = { { CKA_CLASS, &cls, sizeof(cls) },
				     { CKA_LABEL, (void *)o->key_label, strlen(o->key_label) } };
	CK_SESSION_HANDLE s = CK_INVALID_HANDLE;
	CK_OBJECT_HANDLE obj;
	CK_SLOT_ID slot;
	CK_FLAGS flags;
	unsigned char *der = NULL, *id = NULL;
	const unsigned char *p;
	CK_ULONG derlen = 0, idlen = 0;
	struct passwd pw, *pwp = NULL;
	char pwbuf[4096];
	const char *user = NULL;
	struct login *l;
	CK_RV rv;
	int rc;

	if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || user == NULL ||
	    getpwnam_r(user, &pw, pwbuf, sizeof(pwbuf), &pwp) != 0 || pwp == NULL)
		return PAM_USER_UNKNOWN;
	if ((l = calloc(1, sizeof(*l))) == NULL || (l->user = strdup(pw.pw_name)) == NULL) {
		free(l);
		return PAM_BUF_ERR;
	}
	l->uid = pw.pw_uid;
	l->gid = pw.pw_gid;
	t_step(t, "user");
	if (pam_set_data(pamh, DATA_LOGIN, NULL, NULL) != PAM_SUCCESS) {
		free(l->user);
		free(l);
		return PAM_BUF_ERR;
	}
	rc = PAM_AUTHINFO_UNAVAIL;
	if (floor_p11_load(&l->p11, o->module) != 0) {
		flog(pamh, o, LOG_ERR, "cannot load %s", o->module);
		goto fail;
	}
	t_step(t, "floor_p11_load");
	if ((rv = floor_p11_find_token(&l->p11, l->user, &slot, &flags)) != CKR_OK ||
	    (rv = l->p11.f->C_OpenSession(slot, CKF_SERIAL_SESSION, NULL, NULL, &s)) != CKR_OK ||
	    (rv = floor_p11_find_one(&l->p11, s, cert_tmpl, 2, &obj)) != CKR_OK ||
	    (rv = floor_p11_attr(&l->p11, s, obj, CKA_VALUE, &der, &derlen)) != CKR_OK ||
	    (rv = floor_p11_attr(&l->p11, s, obj, CKA_ID, &id, &idlen)) != CKR_OK) {
		flog(pamh, o, LOG_NOTICE, "user '%s': no token or certificate: 0x%lx", l->user, rv);
		goto fail;
	}
	p = der;
	l->cert = d2i_X509(NULL, &p, (long)derlen);
	t_step(t, "find");
	if (l->cert == NULL || validate(l->cert, o->ca, l->user) != 0) {
		flog(pamh, o, LOG_NOTICE, "user '%s': token certificate rejected", l->user);
		rc = PAM_AUTH_ERR;
		goto fail;
	}
	t_step(t, "validate");
	if (flags & CKF_USER_PIN_LOCKED) {
		rc = PAM_MAXTRIES;
		goto fail;
	}
	rc = login_and_prove(pamh, o, t, l, s, l->user, id, idlen);
	if (rc != PAM_SUCCESS)
		goto fail;
	(void)l->p11.f->C_Logout(s);
	(void)l->p11.f->C_CloseSession(s);
	t_step(t, "p11_close");
	free(der);
	free(id);
	/* The module stays loaded, with the certificate, for open_session. */
	if (pam_set_data(pamh, DATA_LOGIN, l, login_cleanup) != PAM_SUCCESS) {
		login_cleanup(pamh, l, 0);
		return PAM_BUF_ERR;
	}
	return PAM_SUCCESS;
fail:
	if (s != CK_INVALID_HANDLE) {
		(void)l->p11.f->C_Logout(s);
		(void)l->p11.f->C_CloseSession(s);
	}
	free(der);
	free(id);
	login_cleanup(pamh, l, 0);
	return rc;
}

/* ---- open_session --------------------------------------------------------------------------- */

/* The issuer PIN from a root-owned file nobody else can read; wipe with
 * explicit_bzero. */
static int
read_pin_file(const char *path, char *pin, size_t size)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || st.st_uid != 0 || (st.st_mode & 077) != 0 ||
	    (n = read(fd, pin, size - 1)) <= 0) {
		close(fd);
		return -1;
	}
	close(fd);
	while (n > 0 && (pin[n - 1] == '\n' || pin[n - 1] == '\r'))
		n--;
	pin[n] = '\0';
	return n > 0 ? 0 : -1;
}

/* The issuer chain file: the issuer certificate first, the PEM kept whole
 * for the record. */
static int
load_chain(const char *path, X509 **issuer, char **pem)
{
	BIO *b = BIO_new_file(path, "r");
	long n;
	char *data;
	int rc = -1;

	if (b == NULL)
		return -1;
	*issuer = PEM_read_bio_X509(b, NULL, NULL, NULL);
	if (*issuer != NULL && BIO_reset(b) == 0) {
		BIO *m = BIO_new(BIO_s_mem());
		char buf[4096];
		int r;

		while (m != NULL && (r = BIO_read(b, buf, sizeof(buf))) > 0)
			(void)BIO_write(m, buf, r);
		if (m != NULL && (n = BIO_get_mem_data(m, &data)) > 0 &&
		    (*pem = strndup(data, (size_t)n)) != NULL)
			rc = 0;
		BIO_free(m);
	}
	BIO_free(b);
	return rc;
}

static int
add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
	int ok = e != NULL && X509_add_ext(x, e, -1) == 1;

	X509_EXTENSION_free(e);
	return ok ? 0 : -1;
}

static time_t
asn1_time(const ASN1_TIME *a)
{
	struct tm tm;

	return ASN1_TIME_to_tm(a, &tm) == 1 ? timegm(&tm) : 0;
}

/* The session certificate for KEY, valid until not_after: CN = user, O =
 * the token certificate's O values; signed by the issuer key on the token
 * with C_Sign. */
static X509 *
mint(struct login *l, struct p11 *ip, X509 *issuer, CK_SESSION_HANDLE s, CK_OBJECT_HANDLE ikey,
     CK_KEY_TYPE ikt, EVP_PKEY *key, time_t now, time_t not_after)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new(), *tsubj = X509_get_subject_name(l->cert);
	X509_ALGOR *alg;
	const X509_ALGOR *calg;
	const ASN1_BIT_STRING *csig;
	ASN1_BIT_STRING *sigbits;
	unsigned char serial[SERIAL_BYTES], *tbs = NULL, *sig = NULL;
	size_t siglen = 0;
	BIGNUM *bn = NULL;
	X509V3_CTX v3;
	int i, tbslen, nid = ikt == CKK_EC ? NID_ecdsa_with_SHA256 : NID_sha256WithRSAEncryption;
	bool ok = false;

	if (x == NULL || name == NULL || X509_set_version(x, X509_VERSION_3) != 1)
		goto out;
	do {    /* positive, non-zero */
		if (RAND_bytes(serial, sizeof(serial)) != 1)
			goto out;
		serial[0] &= 0x7f;
	} while (serial[0] == 0);
	if ((bn = BN_bin2bn(serial, sizeof(serial), NULL)) == NULL ||
	    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) == NULL)
		goto out;
	if (X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
				       (const unsigned char *)l->user, -1, -1, 0) != 1)
		goto out;
	for (i = -1; (i = X509_NAME_get_index_by_NID(tsubj, NID_organizationName, i)) >= 0;)
		if (X509_NAME_add_entry(name, X509_NAME_get_entry(tsubj, i), -1, 0) != 1)
			goto out;
	if (X509_set_subject_name(x, name) != 1 ||
	    X509_set_issuer_name(x, X509_get_subject_name(issuer)) != 1 ||
	    X509_time_adj_ex(X509_getm_notBefore(x), 0, -BACKDATE, &now) == NULL ||
	    ASN1_TIME_set(X509_getm_notAfter(x), not_after) == NULL ||
	    X509_set_pubkey(x, key) != 1)
		goto out;
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
	if (add_ext(x, &v3, NID_basic_constraints, "critical,CA:FALSE") != 0 ||
	    add_ext(x, &v3, NID_key_usage, "critical,digitalSignature") != 0 ||
	    add_ext(x, &v3, NID_ext_key_usage, "clientAuth") != 0 ||
	    add_ext(x, &v3, NID_subject_key_identifier, "hash") != 0 ||
	    add_ext(x, &v3, NID_authority_key_identifier, "keyid,issuer") != 0)
		goto out;
	/*
	 * The signature algorithm goes into the TBSCertificate and beside the
	 * signature; OpenSSL 3 has setters for neither outside X509_sign, so
	 * the two algorithm identifiers and the bit string it returns const
	 * are filled in place (what X509_sign itself does).
	 */
	alg = (X509_ALGOR *)X509_get0_tbs_sigalg(x);
	if (X509_ALGOR_set0(alg, OBJ_nid2obj(nid), ikt == CKK_EC ? V_ASN1_UNDEF : V_ASN1_NULL,
			    NULL) != 1)
		goto out;
	if ((tbslen = i2d_re_X509_tbs(x, &tbs)) <= 0 ||
	    floor_p11_sign(ip, s, ikey, ikt, tbs, (size_t)tbslen, &sig, &siglen) != CKR_OK)
		goto out;
	X509_get0_signature(&csig, &calg, x);
	if (X509_ALGOR_set0((X509_ALGOR *)calg, OBJ_nid2obj(nid),
			    ikt == CKK_EC ? V_ASN1_UNDEF : V_ASN1_NULL, NULL) != 1)
		goto out;
	sigbits = (ASN1_BIT_STRING *)csig;
	if (ASN1_BIT_STRING_set(sigbits, sig, (int)siglen) != 1)
		goto out;
	sigbits->flags &= ~0x07;                        /* no unused bits */
	sigbits->flags |= ASN1_STRING_FLAG_BITS_LEFT;
	/* a wrong issuer_cert for the key fails here, not in every client */
	ok = X509_verify(x, X509_get0_pubkey(issuer)) == 1;
out:
	BN_free(bn);
	X509_NAME_free(name);
	OPENSSL_free(tbs);
	free(sig);
	ERR_clear_error();
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* PEM of a certificate or (secure memory) of a key, appended to B. */
static int
record_payload(X509 *cert, const char *chain_pem, X509 *token_cert, EVP_PKEY *key,
	       char **out, size_t *len)
{
	BIO *b = BIO_new(BIO_s_secmem());
	char *data;
	long n;
	int rc = -1;

	if (b != NULL && BIO_puts(b, "kubehsm-floor record v1\n") > 0 &&
	    PEM_write_bio_X509(b, cert) == 1 && BIO_puts(b, chain_pem) > 0 &&
	    PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) == 1 &&
	    PEM_write_bio_X509(b, token_cert) == 1 &&
	    (n = BIO_get_mem_data(b, &data)) > 0 && (*out = malloc((size_t)n)) != NULL) {
		memcpy(*out, data, (size_t)n);
		*len = (size_t)n;
		rc = 0;
	}
	BIO_free(b);    /* secure memory: wiped */
	return rc;
}

/*
 * polkit as pam_kubehsm's policy ships it ("if-available"), with option
 * polkit=PATH (bench/floor/floor_polkit.c): when nothing accepts a
 * connection at the system bus socket the login goes on and nothing is
 * loaded; otherwise that object asks polkitd for
 * org.kubehsm.cache-credentials with the details pam_kubehsm sends.
 * PAM_SUCCESS when authorized or there is no bus.
 */
static int
polkit_allows(pam_handle_t *pamh, const struct opts *o, const struct login *l,
	      struct timing *t)
{
	static const char bus[] = "/run/dbus/system_bus_socket";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int (*check)(const char *, pid_t, uid_t, const char *const *) = NULL;
	const X509_NAME *subj = X509_get_subject_name(l->cert);
	const void *service = NULL;
	char groups[512] = "";
	size_t glen = 0;
	void *h;
	int fd, rc, e, i;

	if (o->polkit == NULL)
		return PAM_SUCCESS;
	memcpy(sa.sun_path, bus, sizeof(bus));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return PAM_SESSION_ERR;
	rc = connect(fd, (const struct sockaddr *)&sa, sizeof(sa));
	e = errno;
	close(fd);
	if (rc != 0 && (e == ENOENT || e == ECONNREFUSED)) {
		t_step(t, "polkit");
		return PAM_SUCCESS;
	}
	h = dlopen(o->polkit, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (h != NULL)
		*(void **)&check = dlsym(h, "floor_polkit_check");
	t_step(t, "polkit_load");
	if (check == NULL) {
		flog(pamh, o, LOG_ERR, "cannot load %s", o->polkit);
		return PAM_SESSION_ERR;
	}
	for (i = -1; (i = X509_NAME_get_index_by_NID(subj, NID_organizationName, i)) >= 0;) {
		const ASN1_STRING *v = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i));
		size_t n = (size_t)ASN1_STRING_length(v);

		if (glen + n + 2 > sizeof(groups))
			return PAM_SESSION_ERR;
		if (glen > 0)
			groups[glen++] = ',';
		memcpy(groups + glen, ASN1_STRING_get0_data(v), n);
		glen += n;
		groups[glen] = '\0';
	}
	(void)pam_get_item(pamh, PAM_SERVICE, &service);
	{
		const char *const kv[] = {
			"service", service != NULL ? (const char *)service : "", "user", l->user,
			"token_serial", "", "kube_user", l->user, "kube_groups", groups, NULL,
		};

		rc = check("org.kubehsm.cache-credentials", getpid(), l->uid, kv);
	}
	t_step(t, "polkit");
	if (rc != 1)
		flog(pamh, o, LOG_ERR, "user '%s': polkit: %s", l->user,
		     rc == 0 ? "not authorized" : "no answer");
	return rc == 1 ? PAM_SUCCESS : PAM_PERM_DENIED;
}

static int
open_session(pam_handle_t *pamh, const struct opts *o, struct timing *t)
{
	CK_OBJECT_CLASS cls = CKO_PRIVATE_KEY;
	CK_ATTRIBUTE key_tmpl[] = { { CKA_CLASS, &cls, sizeof(cls) },
				    { CKA_LABEL, (void *)o->issuer_key, strlen(o->issuer_key) } };
	CK_KEY_TYPE ikt = 0;
	CK_ATTRIBUTE kt_attr = { CKA_KEY_TYPE, &ikt, sizeof(ikt) };
	CK_SESSION_HANDLE s = CK_INVALID_HANDLE;
	CK_OBJECT_HANDLE ikey;
	CK_SLOT_ID slot;
	CK_FLAGS flags;
	const void *data = NULL;
	const char *user = NULL;
	struct login *l;
	struct p11 *ip;
	X509 *issuer = NULL, *cert = NULL;
	EVP_PKEY *key = NULL;
	char pin[256], *chain_pem = NULL, *payload = NULL;
	size_t len = 0;
	key_serial_t rec;
	time_t now = time(NULL), not_after, t_cert;
	CK_RV rv = CKR_OK;
	int rc = PAM_SESSION_ERR, e = 0;

	if (pam_get_data(pamh, DATA_LOGIN, &data) != PAM_SUCCESS || data == NULL)
		return PAM_IGNORE;      /* no pam_floor authentication in this handle */
	l = (struct login *)data;
	if (pam_get_item(pamh, PAM_USER, (const void **)&user) != PAM_SUCCESS ||
	    user == NULL || strcmp(user, l->user) != 0)
		return PAM_IGNORE;      /* PAM_USER changed (sudo): nothing for either */
	if ((rc = polkit_allows(pamh, o, l, t)) != PAM_SUCCESS)
		return rc;
	rc = PAM_SESSION_ERR;

	/* issuer: its module, PIN file, session, C_Login, key, chain */
	ip = &l->p11;
	if (o->issuer_module != NULL) {
		if (l->issuer_p11.f == NULL && floor_p11_load(&l->issuer_p11, o->issuer_module) != 0) {
			flog(pamh, o, LOG_ERR, "cannot load %s", o->issuer_module);
			return PAM_SESSION_ERR;
		}
		ip = &l->issuer_p11;
	}
	if (read_pin_file(o->issuer_pin_file, pin, sizeof(pin)) != 0) {
		flog(pamh, o, LOG_ERR, "issuer PIN file %s unreadable or not root-only",
		     o->issuer_pin_file);
		explicit_bzero(pin, sizeof(pin));
		return PAM_SESSION_ERR;
	}
	if ((rv = floor_p11_find_token(ip, o->issuer_token, &slot, &flags)) == CKR_OK &&
	    (rv = ip->f->C_OpenSession(slot, CKF_SERIAL_SESSION, NULL, NULL, &s)) == CKR_OK &&
	    ((rv = ip->f->C_Login(s, CKU_USER, (CK_UTF8CHAR_PTR)pin, strlen(pin))) == CKR_OK ||
	     rv == CKR_USER_ALREADY_LOGGED_IN))
		rv = floor_p11_find_one(ip, s, key_tmpl, 2, &ikey);
	explicit_bzero(pin, sizeof(pin));
	if (rv == CKR_OK)
		rv = ip->f->C_GetAttributeValue(s, ikey, &kt_attr, 1);
	if (rv != CKR_OK || load_chain(o->issuer_cert, &issuer, &chain_pem) != 0) {
		flog(pamh, o, LOG_ERR, "issuer: 0x%lx", rv);
		goto out;
	}
	t_step(t, "issuer");

	if ((key = EVP_EC_gen("P-256")) == NULL)
		goto out;
	t_step(t, "keygen");

	/* the session ends by the token's and the issuer's notAfter */
	not_after = now + o->ttl;
	if ((t_cert = asn1_time(X509_get0_notAfter(l->cert))) < not_after)
		not_after = t_cert;
	if ((t_cert = asn1_time(X509_get0_notAfter(issuer))) < not_after)
		not_after = t_cert;
	if (not_after <= now)
		goto out;
	cert = mint(l, ip, issuer, s, ikey, ikt, key, now, not_after);
	if (cert == NULL || record_payload(cert, chain_pem, l->cert, key, &payload, &len) != 0) {
		flog(pamh, o, LOG_ERR, "user '%s': minting failed", l->user);
		goto out;
	}
	t_step(t, "mint");

	/* staging keyring (root's thread keyring) → timeout, owner, perms →
	 * linked by the user into their keyring → unlinked from staging */
	rec = add_key("user", RECORD_DESC, payload, len, KEY_SPEC_THREAD_KEYRING);
	if (rec < 0 || keyctl_set_timeout(rec, (unsigned)(not_after - now)) != 0 ||
	    keyctl_chown(rec, l->uid, (gid_t)-1) != 0 || keyctl_setperm(rec, RECORD_PERM) != 0)
		e = errno;
	else
		e = keyctl_as_user(o, KEYCTL_LINK, rec, l->uid, l->gid);
	if (e != 0) {
		flog(pamh, o, LOG_ERR, "user '%s': keyring: %s", l->user, strerror(e));
		if (rec > 0)
			(void)keyctl_unlink(rec, KEY_SPEC_THREAD_KEYRING);
		goto out;
	}
	(void)keyctl_unlink(rec, KEY_SPEC_THREAD_KEYRING);
	l->record = rec;
	t_step(t, "store");
	rc = PAM_SUCCESS;
out:
	if (payload != NULL) {
		explicit_bzero(payload, len);
		free(payload);
	}
	EVP_PKEY_free(key);     /* OpenSSL clears EC private keys on free */
	X509_free(cert);
	X509_free(issuer);
	free(chain_pem);
	if (s != CK_INVALID_HANDLE) {
		(void)ip->f->C_Logout(s);
		(void)ip->f->C_CloseSession(s);
	}
	t_step(t, "p11_close");
	return rc;
}

static int
close_session(pam_handle_t *pamh, const struct opts *o, struct timing *t)
{
	const void *data = NULL;
	struct login *l;
	int e;

	if (pam_get_data(pamh, DATA_LOGIN, &data) != PAM_SUCCESS || data == NULL)
		return PAM_IGNORE;
	l = (struct login *)data;
	if (l->record <= 0)
		return PAM_IGNORE;
	e = keyctl_as_user(o, KEYCTL_INVALIDATE, l->record, l->uid, l->gid);
	if (e != 0 && e != ENOKEY && e != EKEYEXPIRED && e != EKEYREVOKED)
		flog(pamh, o, LOG_ERR, "user '%s': invalidating the record: %s", l->user,
		     strerror(e));
	l->record = 0;
	t_step(t, "logout");
	return PAM_SUCCESS;
}

/* ---- entry points --------------------------------------------------------------------------- */

typedef int (*entry_fn)(pam_handle_t *, const struct opts *, struct timing *);

static int
run(entry_fn fn, const char *phase, pam_handle_t *pamh, int argc, const char **argv)
{
	struct timing t;
	struct opts o;
	int rc = parse_opts(pamh, argc, argv, &o);

	if (rc != PAM_SUCCESS)
		return rc;
	t_begin(&t, &o, phase);
	rc = fn(pamh, &o, &t);
	t_end(&t, pamh, &o, rc);
	return rc;
}

PAM_EXTERN int
pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	(void)flags;
	return run(authenticate, "auth", pamh, argc, argv);
}

PAM_EXTERN int
pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	(void)pamh;
	(void)flags;
	(void)argc;
	(void)argv;
	return PAM_SUCCESS;
}

PAM_EXTERN int
pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	(void)flags;
	return run(open_session, "open", pamh, argc, argv);
}

PAM_EXTERN int
pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	(void)flags;
	return run(close_session, "close", pamh, argc, argv);
}
