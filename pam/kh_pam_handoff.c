/*
 * kh_pam_handoff — the auth → session stash (see kh_pam.h).
 *
 * A stash file is one compact JSON object:
 *   {"v":1,"created":T,"service":"sshd","user":"alice","uid":1001,
 *    "token_label":...,"token_serial":...,"token_uri":...,"token_cert":PEM,
 *    "token_not_after":T,"kube_user":...,"groups":[...]}
 * Root reads it back as strictly as any input: the handle must be exactly
 * what auth makes, the file root's own with nobody else's access and one
 * link, it is unlinked before it is trusted (single use), it must be young
 * and made by the same PAM service.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <keyutils.h>
#include <openssl/rand.h>
#include <security/pam_ext.h>

#include "lib/kh_io.h"
#include "lib/kh_json.h"
#include "lib/kh_mem.h"
#include "cache/kh_record.h"
#include "pam/kh_pam.h"
#include "lib/kh_rundir.h"

#define HANDOFF_DIR       "handoff"
#define HANDOFF_VERSION   1
#define HANDOFF_HANDLE_BYTES 16
#define HANDOFF_HANDLE_LEN (2 * HANDOFF_HANDLE_BYTES)
#define HANDOFF_FILE_MAX  (64 * 1024)
#define HANDOFF_SWEEP_MAX 4096     /* entries looked at per sweep */
#define HANDOFF_PIN_DESC  "kubehsm:handoff-pin:"

static const char *const fields[] = {
	"v", "created", "service", "user", "uid", "token_label", "token_serial",
	"token_uri", "token_cert", "token_not_after", "kube_user", "groups", NULL,
};

static int
handle_valid(const char *h)
{
	size_t i;

	if (strlen(h) != HANDOFF_HANDLE_LEN)
		return 0;
	for (i = 0; i < HANDOFF_HANDLE_LEN; i++)
		if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
			return 0;
	return 1;
}

static int
make_handle(char out[HANDOFF_HANDLE_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[HANDOFF_HANDLE_BYTES];
	size_t i;

	if (RAND_bytes(raw, sizeof(raw)) != 1)
		return -1;
	for (i = 0; i < sizeof(raw); i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[HANDOFF_HANDLE_LEN] = '\0';
	return 0;
}

static const char *
service_of(pam_handle_t *pamh)
{
	const void *service = NULL;

	if (pam_get_item(pamh, PAM_SERVICE, &service) != PAM_SUCCESS || service == NULL)
		return "";
	return service;
}

/* ---- the PIN's kernel key (session.cache_pin only) ------------------------ */

/*
 * Root's user keyring outlives sshd's auth child, and the monitor finds it
 * as KEY_SPEC_USER_KEYRING.  But pam_keyinit links root's user keyring into
 * every root login's session keyring, and a process of another uid started
 * inside such a login (sudo -u, su, a daemon from a root shell) possesses
 * it and all it holds.  So the PIN's key grants its possessor nothing: only
 * its owner, uid 0 — which the kernel matches against the fs-uid, never
 * another uid's — may view, read, search (find it) and link it; group and
 * other get nothing either.  A process of another uid that possesses root's
 * keyring can list the key's serial, and nothing more: not its description
 * (which holds the handle), not its payload.  The key is made in this
 * thread's own keyring and made owner-only there, before it is linked
 * where anyone else could reach it, and it lives KH_HANDOFF_TTL at most.
 */
#define HANDOFF_PIN_PERM (KEY_USR_VIEW | KEY_USR_READ | KEY_USR_SEARCH | KEY_USR_LINK)

static void
pin_desc(const char *handle, char *buf, size_t size)
{
	(void)snprintf(buf, size, "%s%s", HANDOFF_PIN_DESC, handle);
}

static int
pin_put(const char *handle, const char *pin)
{
	char desc[64];
	key_serial_t k;
	int rc = -1, e;

	pin_desc(handle, desc, sizeof(desc));
	k = add_key("user", desc, pin, strlen(pin), KEY_SPEC_THREAD_KEYRING);
	if (k < 0)
		return -1;
	if (keyctl_set_timeout(k, KH_HANDOFF_TTL) == 0 &&
	    keyctl_setperm(k, HANDOFF_PIN_PERM) == 0 &&
	    keyctl_link(k, KEY_SPEC_USER_KEYRING) == 0)
		rc = 0;
	e = errno;
	if (rc != 0)
		(void)keyctl_invalidate(k);
	(void)keyctl_unlink(k, KEY_SPEC_THREAD_KEYRING);
	errno = e;
	return rc;
}

/* Is k the key pin_put made: root's, owner-only?  Anything else of that
 * name was not made here and is not read. */
static int
pin_key_is_ours(key_serial_t k)
{
	char *text = NULL;
	unsigned owner, perm;
	int ok;

	if (keyctl_describe_alloc(k, &text) < 0)
		return 0;
	ok = sscanf(text, "user;%u;%*u;%x;", &owner, &perm) == 2 && owner == 0 &&
	     perm == HANDOFF_PIN_PERM;
	free(text);
	return ok;
}

/* The PIN key pin_put made for handle, or -1. */
static key_serial_t
pin_find(const char *handle)
{
	char desc[64];
	key_serial_t k;

	if (getuid() != 0)
		return -1;
	pin_desc(handle, desc, sizeof(desc));
	k = keyctl_search(KEY_SPEC_USER_KEYRING, "user", desc, 0);
	return k >= 0 && pin_key_is_ours(k) ? k : -1;
}

/* Take (read and invalidate) the PIN key of handle; NULL if none. */
static char *
pin_take(const char *handle)
{
	void *buf = NULL;
	key_serial_t k;
	long n;

	if ((k = pin_find(handle)) < 0)
		return NULL;
	n = keyctl_read_alloc(k, &buf);
	(void)keyctl_invalidate(k);
	if (n < 0)
		return NULL;
	if ((size_t)n != strlen(buf)) {
		kh_secure_free(buf, (size_t)n + 1);
		return NULL;
	}
	return buf;
}

/* ---- encoding ------------------------------------------------------------- */

static json_t *
encode_login(pam_handle_t *pamh, const struct kh_pam_login *l)
{
	json_t *groups = json_array(), *doc;
	size_t i;

	if (groups == NULL)
		return NULL;
	for (i = 0; i < l->ngroups; i++)
		if (json_array_append_new(groups, json_string(l->groups[i])) != 0) {
			json_decref(groups);
			return NULL;
		}
	doc = json_pack("{s:i, s:I, s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:I, s:s, s:o}",
			"v", HANDOFF_VERSION, "created", (json_int_t)time(NULL),
			"service", service_of(pamh), "user", l->user,
			"uid", (json_int_t)l->uid, "token_label", l->token_label,
			"token_serial", l->token_serial, "token_uri", l->token_uri,
			"token_cert", l->token_cert_pem,
			"token_not_after", (json_int_t)l->token_not_after,
			"kube_user", l->kube_user, "groups", groups);
	return doc;
}

/* Abandoned stashes (an authentication whose session never opened) go
 * once they are older than the hand-off may take. */
static void
sweep(const char *dir)
{
	time_t now = time(NULL);
	struct dirent *d;
	int dfd, seen = 0;
	DIR *dp;

	dp = opendir(dir);
	if (dp == NULL)
		return;
	dfd = dirfd(dp);
	while ((d = readdir(dp)) != NULL && seen++ < HANDOFF_SWEEP_MAX) {
		struct stat st;

		if (!handle_valid(d->d_name) ||
		    fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (now - st.st_mtime > KH_HANDOFF_TTL)
			(void)unlinkat(dfd, d->d_name, 0);
	}
	closedir(dp);
}

static int
remove_stash(const char *handle)
{
	char path[sizeof(KH_RUNDIR) + 96];

	if (kh_rundir_file(HANDOFF_DIR, handle, path, sizeof(path), NULL) != 0)
		return -1;
	return unlink(path);
}

int
kh_pam_handoff_put(pam_handle_t *pamh, const struct kh_pam_login *l)
{
	char dir[sizeof(KH_RUNDIR) + 64], path[sizeof(KH_RUNDIR) + 96];
	char handle[HANDOFF_HANDLE_LEN + 1], env[sizeof(KH_HANDOFF_ENV) + HANDOFF_HANDLE_LEN + 2];
	const char *old = pam_getenv(pamh, KH_HANDOFF_ENV);
	kh_error err = { 0 };
	json_t *doc;
	size_t len = 0;
	char *text;
	int fd, rc;

	/* A second authentication in one handle replaces the first stash, and
	 * the first PIN key with it: nothing would ever take it. */
	if (old != NULL && handle_valid(old)) {
		key_serial_t k = pin_find(old);

		if (k >= 0)
			(void)keyctl_invalidate(k);
		(void)remove_stash(old);
	}
	if (kh_rundir_sub(HANDOFF_DIR, dir, sizeof(dir), &err) != 0 ||
	    make_handle(handle) != 0 ||
	    kh_rundir_file(HANDOFF_DIR, handle, path, sizeof(path), &err) != 0) {
		pam_syslog(pamh, LOG_ERR, "user '%s': cannot hand the authentication to the "
			   "session step: %s", l->user, err.msg[0] ? err.msg : "no randomness");
		return PAM_SYSTEM_ERR;
	}
	sweep(dir);
	doc = encode_login(pamh, l);
	text = doc != NULL ? kh_json_dump_secret(doc, &len) : NULL;
	json_decref(doc);
	if (text == NULL)
		return PAM_BUF_ERR;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	rc = fd >= 0 && fchmod(fd, 0600) == 0 && kh_write_all(fd, text, len) == 0 ? 0 : -1;
	if (fd >= 0 && close(fd) != 0)
		rc = -1;
	kh_secure_free(text, len + 1);
	if (rc != 0) {
		pam_syslog(pamh, LOG_ERR, "user '%s': cannot write %s: %s", l->user, path,
			   strerror(errno));
		(void)unlink(path);
		return PAM_SYSTEM_ERR;
	}
	if (l->pin != NULL && getuid() == 0 && pin_put(handle, l->pin) != 0)
		pam_syslog(pamh, LOG_WARNING, "user '%s': cannot keep the PIN for the session "
			   "step (session.cache_pin): %s", l->user, strerror(errno));
	(void)snprintf(env, sizeof(env), "%s=%s", KH_HANDOFF_ENV, handle);
	rc = pam_putenv(pamh, env);
	explicit_bzero(env, sizeof(env));
	if (rc != PAM_SUCCESS) {
		(void)remove_stash(handle);
		pam_syslog(pamh, LOG_ERR, "pam_putenv: %s", pam_strerror(pamh, rc));
		return rc;
	}
	return PAM_SUCCESS;
}

/* ---- decoding ------------------------------------------------------------- */

static char *
dup_str(json_t *doc, const char *name, size_t max, int allow_empty)
{
	json_t *v = json_object_get(doc, name);
	const char *s;
	size_t len;

	if (!json_is_string(v))
		return NULL;
	s = json_string_value(v);
	len = json_string_length(v);
	if (len > max || strlen(s) != len || (!allow_empty && len == 0))
		return NULL;
	return strdup(s);
}

static int
get_time(json_t *doc, const char *name, json_int_t *out)
{
	json_t *v = json_object_get(doc, name);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = json_integer_value(v);
	return 0;
}

static int
only_known_fields(json_t *doc)
{
	const char *key;
	json_t *v;
	size_t i;

	json_object_foreach(doc, key, v) {
		for (i = 0; fields[i] != NULL && strcmp(fields[i], key) != 0; i++)
			;
		if (fields[i] == NULL)
			return 0;
	}
	return json_object_size(doc) == sizeof(fields) / sizeof(fields[0]) - 1;
}

static int
decode_groups(json_t *doc, struct kh_pam_login *l)
{
	json_t *arr = json_object_get(doc, "groups"), *g;
	size_t i;

	if (!json_is_array(arr) || json_array_size(arr) > KH_RECORD_MAX_GROUPS)
		return -1;
	l->groups = calloc(json_array_size(arr) + 1, sizeof(char *));
	if (l->groups == NULL)
		return -1;
	json_array_foreach(arr, i, g) {
		if (!json_is_string(g) || json_string_length(g) == 0 ||
		    json_string_length(g) > 256 ||
		    strlen(json_string_value(g)) != json_string_length(g))
			return -1;
		if ((l->groups[i] = strdup(json_string_value(g))) == NULL)
			return -1;
		l->ngroups++;
	}
	return 0;
}

static struct kh_pam_login *
decode_login(pam_handle_t *pamh, const char *text, size_t len, const char **why)
{
	json_t *doc = json_loadb(text, len, KH_JSON_DECODE_FLAGS, NULL);
	struct kh_pam_login *l = calloc(1, sizeof(*l));
	json_int_t v, created, uid;
	char *service = NULL;
	time_t now = time(NULL);

	*why = "malformed";
	if (doc == NULL || l == NULL || !json_is_object(doc) || !only_known_fields(doc) ||
	    get_time(doc, "v", &v) != 0 || v != HANDOFF_VERSION ||
	    get_time(doc, "created", &created) != 0 || get_time(doc, "uid", &uid) != 0 ||
	    uid > UINT32_MAX - 1 || get_time(doc, "token_not_after", &v) != 0)
		goto fail;
	l->uid = (uid_t)uid;
	l->token_not_after = (time_t)v;
	if ((service = dup_str(doc, "service", 256, 1)) == NULL ||
	    (l->user = dup_str(doc, "user", 256, 0)) == NULL ||
	    (l->token_label = dup_str(doc, "token_label", 256, 0)) == NULL ||
	    (l->token_serial = dup_str(doc, "token_serial", 256, 1)) == NULL ||
	    (l->token_uri = dup_str(doc, "token_uri", 1024, 0)) == NULL ||
	    (l->token_cert_pem = dup_str(doc, "token_cert", 16384, 0)) == NULL ||
	    (l->kube_user = dup_str(doc, "kube_user", 256, 0)) == NULL ||
	    decode_groups(doc, l) != 0)
		goto fail;
	if (created > now + 60 || now - created > KH_HANDOFF_TTL) {
		*why = "too old";
		goto fail;
	}
	if (strcmp(service, service_of(pamh)) != 0) {
		*why = "made by another PAM service";
		goto fail;
	}
	free(service);
	json_decref(doc);
	return l;
fail:
	free(service);
	json_decref(doc);
	kh_pam_login_free(l);
	return NULL;
}

/*
 * Open and check the stash; its text into *text.  0 or -1.  With consume
 * it is unlinked before it is trusted (single use: whoever unlinks it owns
 * it); without (setcred, which only asks whether there is one) it stays
 * for open_session.
 */
static int
read_stash(const char *path, bool consume, char **text, size_t *len, const char **why)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	*text = NULL;
	if (fd < 0) {
		*why = errno == ENOENT ? "already used or expired" : strerror(errno);
		return -1;
	}
	*why = "not a root-only file";
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 077) != 0 || st.st_nlink != 1 || st.st_size <= 0 ||
	    st.st_size > HANDOFF_FILE_MAX)
		goto fail;
	*why = "already used";
	if (consume && unlink(path) != 0)
		goto fail;
	*text = malloc((size_t)st.st_size + 1);
	*why = "unreadable";
	if (*text == NULL)
		goto fail;
	n = read(fd, *text, (size_t)st.st_size);
	if (n != st.st_size)
		goto fail;
	(*text)[n] = '\0';
	*len = (size_t)n;
	close(fd);
	return 0;
fail:
	if (*text != NULL)
		kh_secure_free(*text, (size_t)st.st_size + 1);
	*text = NULL;
	close(fd);
	return -1;
}

/* The stash behind handle, checked as the session step checks it: the
 * decoded login, or NULL with *why. */
static struct kh_pam_login *
load_stash(pam_handle_t *pamh, const char *handle, bool consume, const char **why)
{
	char path[sizeof(KH_RUNDIR) + 96];
	struct kh_pam_login *l = NULL;
	kh_error err = { 0 };
	char *text = NULL;
	size_t len = 0;

	if (kh_rundir_file(HANDOFF_DIR, handle, path, sizeof(path), &err) != 0) {
		pam_syslog(pamh, LOG_ERR, "authentication hand-off: %s", err.msg);
		*why = NULL;
		return NULL;
	}
	if (read_stash(path, consume, &text, &len, why) == 0) {
		l = decode_login(pamh, text, len, why);
		kh_secure_free(text, len + 1);
	}
	return l;
}

int
kh_pam_handoff_pending(pam_handle_t *pamh)
{
	const char *h = pam_getenv(pamh, KH_HANDOFF_ENV), *why = NULL;
	struct kh_pam_login *l;

	if (h == NULL || !handle_valid(h))
		return 0;
	l = load_stash(pamh, h, false, &why);
	if (l == NULL)
		return 0;
	kh_pam_login_free(l);
	return 1;
}

/*
 * The handle the PAM environment names, into handle[]: 1; 0 when there is
 * none; -1 when it is malformed (logged).  Either way the variable is gone
 * from the environment before anything else can fail, so it never reaches
 * the user's shell.
 */
static int
consume_handle(pam_handle_t *pamh, char handle[HANDOFF_HANDLE_LEN + 1])
{
	const char *h = pam_getenv(pamh, KH_HANDOFF_ENV);
	bool valid;

	if (h == NULL)
		return 0;
	valid = handle_valid(h);
	if (valid)
		memcpy(handle, h, HANDOFF_HANDLE_LEN + 1);
	(void)pam_putenv(pamh, KH_HANDOFF_ENV);
	if (!valid) {
		pam_syslog(pamh, LOG_NOTICE, "ignoring a malformed %s in the PAM environment",
			   KH_HANDOFF_ENV);
		return -1;
	}
	return 1;
}

/* The notice for a hand-off that is not used. */
static void
log_not_used(pam_handle_t *pamh, const char *handle, const char *why)
{
	pam_syslog(pamh, LOG_NOTICE, "authentication hand-off %.8s...: %s; not used",
		   handle, why);
}

int
kh_pam_handoff_take(pam_handle_t *pamh, struct kh_pam_login **out)
{
	char handle[HANDOFF_HANDLE_LEN + 1];
	const char *why = NULL;
	struct kh_pam_login *l;
	char *pin;
	int rc;

	*out = NULL;
	if ((rc = consume_handle(pamh, handle)) <= 0)
		return rc;
	pin = pin_take(handle);
	l = load_stash(pamh, handle, true, &why);
	if (l == NULL) {
		if (why != NULL)
			log_not_used(pamh, handle, why);
		kh_secure_strfree(pin);
		return -1;
	}
	l->pin = pin;
	*out = l;
	return 1;
}

void
kh_pam_handoff_discard(pam_handle_t *pamh)
{
	char handle[HANDOFF_HANDLE_LEN + 1];
	key_serial_t k;

	if (consume_handle(pamh, handle) <= 0)
		return;
	if ((k = pin_find(handle)) >= 0)
		(void)keyctl_invalidate(k);
	/* A handle whose stash is gone is worth the same line as in take,
	 * whoever's state the session uses. */
	if (remove_stash(handle) != 0)
		log_not_used(pamh, handle,
			     errno == ENOENT ? "already used or expired" : strerror(errno));
}
