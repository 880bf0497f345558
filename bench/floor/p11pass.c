/*
 * p11pass — the benchmark's pass-through PKCS#11 module (issue #30): every
 * C_* call goes to a real module, counted and timed per function, each
 * optionally delayed by a fixed time first, as if it crossed a network to
 * an HSM.  Benchmark yardstick only, not product code; never installed.
 *
 * Configuration: the file at this module's own path with ".conf" appended
 * (found with dladdr), so that two copies of the module in one process —
 * the users' module and the issuer's — each have their own.  Lines
 * "key = value" ('#' starts a comment):
 *   module   = PATH       the real module (required)
 *   delay_us = N          sleep N µs before forwarding each call (0..1000000)
 *   counts   = PATH       append one line per load of the module: the calls
 *                         and the time spent in them, per function
 *   label    = NAME       names that line (e.g. users, issuer)
 *   env      = NAME=VALUE set while the real module's C_GetFunctionList and
 *                         C_Initialize run, then restored (at most 8): a
 *                         SoftHSM2 copy reads its SOFTHSM2_CONF there, and
 *                         p11-kit-client.so its P11_KIT_SERVER_ADDRESS
 *
 * The counts line, written at C_Finalize and, for calls made after it or
 * without one, when the module is unloaded or the process exits:
 *   p11pass v1 label=L pid=P delay_us=D calls=N us=T C_Name=count/us ...
 * (us: wall time inside the calls, the delay included; functions never
 * called are left out).  C_GetFunctionList is not forwarded per call and
 * not counted: it never leaves the process.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <p11-kit/pkcs11.h>

#define PASS_MAX_ENV 8
#define PASS_MAX_DELAY_US 1000000L

/* Every function of a version 2.40 function list but C_Initialize,
 * C_Finalize and C_GetFunctionList: X(name, (params), (args)). */
#define PASS_FUNCTIONS(X) \
	X(GetInfo, (CK_INFO *info), \
	  (info)) \
	X(GetSlotList, (unsigned char token_present, CK_SLOT_ID *slot_list, \
	  unsigned long *count), \
	  (token_present, slot_list, count)) \
	X(GetSlotInfo, (CK_SLOT_ID slot_id, CK_SLOT_INFO *info), \
	  (slot_id, info)) \
	X(GetTokenInfo, (CK_SLOT_ID slot_id, CK_TOKEN_INFO *info), \
	  (slot_id, info)) \
	X(WaitForSlotEvent, (CK_FLAGS flags, CK_SLOT_ID *slot, void *reserved), \
	  (flags, slot, reserved)) \
	X(GetMechanismList, (CK_SLOT_ID slot_id, CK_MECHANISM_TYPE *mechanism_list, \
	  unsigned long *count), \
	  (slot_id, mechanism_list, count)) \
	X(GetMechanismInfo, (CK_SLOT_ID slot_id, CK_MECHANISM_TYPE type, \
	  CK_MECHANISM_INFO *info), \
	  (slot_id, type, info)) \
	X(InitToken, (CK_SLOT_ID slot_id, unsigned char *pin, unsigned long pin_len, \
	  unsigned char *label), \
	  (slot_id, pin, pin_len, label)) \
	X(InitPIN, (CK_SESSION_HANDLE session, unsigned char *pin, unsigned long pin_len), \
	  (session, pin, pin_len)) \
	X(SetPIN, (CK_SESSION_HANDLE session, unsigned char *old_pin, \
	  unsigned long old_len, unsigned char *new_pin, unsigned long new_len), \
	  (session, old_pin, old_len, new_pin, new_len)) \
	X(OpenSession, (CK_SLOT_ID slot_id, CK_FLAGS flags, void *application, \
	  CK_NOTIFY notify, CK_SESSION_HANDLE *session), \
	  (slot_id, flags, application, notify, session)) \
	X(CloseSession, (CK_SESSION_HANDLE session), \
	  (session)) \
	X(CloseAllSessions, (CK_SLOT_ID slot_id), \
	  (slot_id)) \
	X(GetSessionInfo, (CK_SESSION_HANDLE session, CK_SESSION_INFO *info), \
	  (session, info)) \
	X(GetOperationState, (CK_SESSION_HANDLE session, unsigned char *operation_state, \
	  unsigned long *operation_state_len), \
	  (session, operation_state, operation_state_len)) \
	X(SetOperationState, (CK_SESSION_HANDLE session, unsigned char *operation_state, \
	  unsigned long operation_state_len, CK_OBJECT_HANDLE encryption_key, \
	  CK_OBJECT_HANDLE authentiation_key), \
	  (session, operation_state, operation_state_len, encryption_key, authentiation_key)) \
	X(Login, (CK_SESSION_HANDLE session, CK_USER_TYPE user_type, \
	  unsigned char *pin, unsigned long pin_len), \
	  (session, user_type, pin, pin_len)) \
	X(Logout, (CK_SESSION_HANDLE session), \
	  (session)) \
	X(CreateObject, (CK_SESSION_HANDLE session, CK_ATTRIBUTE *templ, \
	  unsigned long count, CK_OBJECT_HANDLE *object), \
	  (session, templ, count, object)) \
	X(CopyObject, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE object, \
	  CK_ATTRIBUTE *templ, unsigned long count, CK_OBJECT_HANDLE *new_object), \
	  (session, object, templ, count, new_object)) \
	X(DestroyObject, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE object), \
	  (session, object)) \
	X(GetObjectSize, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE object, \
	  unsigned long *size), \
	  (session, object, size)) \
	X(GetAttributeValue, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE object, \
	  CK_ATTRIBUTE *templ, unsigned long count), \
	  (session, object, templ, count)) \
	X(SetAttributeValue, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE object, \
	  CK_ATTRIBUTE *templ, unsigned long count), \
	  (session, object, templ, count)) \
	X(FindObjectsInit, (CK_SESSION_HANDLE session, CK_ATTRIBUTE *templ, \
	  unsigned long count), \
	  (session, templ, count)) \
	X(FindObjects, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE *object, \
	  unsigned long max_object_count, unsigned long *object_count), \
	  (session, object, max_object_count, object_count)) \
	X(FindObjectsFinal, (CK_SESSION_HANDLE session), \
	  (session)) \
	X(EncryptInit, (CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, \
	  CK_OBJECT_HANDLE key), \
	  (session, mechanism, key)) \
	X(Encrypt, (CK_SESSION_HANDLE session, unsigned char *data, \
	  unsigned long data_len, unsigned char *encrypted_data, \
	  unsigned long *encrypted_data_len), \
	  (session, data, data_len, encrypted_data, encrypted_data_len)) \
	X(EncryptUpdate, (CK_SESSION_HANDLE session, unsigned char *part, \
	  unsigned long part_len, unsigned char *encrypted_part, \
	  unsigned long *encrypted_part_len), \
	  (session, part, part_len, encrypted_part, encrypted_part_len)) \
	X(EncryptFinal, (CK_SESSION_HANDLE session, unsigned char *last_encrypted_part, \
	  unsigned long *last_encrypted_part_len), \
	  (session, last_encrypted_part, last_encrypted_part_len)) \
	X(DecryptInit, (CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, \
	  CK_OBJECT_HANDLE key), \
	  (session, mechanism, key)) \
	X(Decrypt, (CK_SESSION_HANDLE session, unsigned char *encrypted_data, \
	  unsigned long encrypted_data_len, unsigned char *data, unsigned long *data_len), \
	  (session, encrypted_data, encrypted_data_len, data, data_len)) \
	X(DecryptUpdate, (CK_SESSION_HANDLE session, unsigned char *encrypted_part, \
	  unsigned long encrypted_part_len, unsigned char *part, unsigned long *part_len), \
	  (session, encrypted_part, encrypted_part_len, part, part_len)) \
	X(DecryptFinal, (CK_SESSION_HANDLE session, unsigned char *last_part, \
	  unsigned long *last_part_len), \
	  (session, last_part, last_part_len)) \
	X(DigestInit, (CK_SESSION_HANDLE session, CK_MECHANISM *mechanism), \
	  (session, mechanism)) \
	X(Digest, (CK_SESSION_HANDLE session, unsigned char *data, \
	  unsigned long data_len, unsigned char *digest, unsigned long *digest_len), \
	  (session, data, data_len, digest, digest_len)) \
	X(DigestUpdate, (CK_SESSION_HANDLE session, unsigned char *part, \
	  unsigned long part_len), \
	  (session, part, part_len)) \
	X(DigestKey, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key), \
	  (session, key)) \
	X(DigestFinal, (CK_SESSION_HANDLE session, unsigned char *digest, \
	  unsigned long *digest_len), \
	  (session, digest, digest_len)) \
	X(SignInit, (CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, \
	  CK_OBJECT_HANDLE key), \
	  (session, mechanism, key)) \
	X(Sign, (CK_SESSION_HANDLE session, unsigned char *data, unsigned long data_len, \
	  unsigned char *signature, unsigned long *signature_len), \
	  (session, data, data_len, signature, signature_len)) \
	X(SignUpdate, (CK_SESSION_HANDLE session, unsigned char *part, \
	  unsigned long part_len), \
	  (session, part, part_len)) \
	X(SignFinal, (CK_SESSION_HANDLE session, unsigned char *signature, \
	  unsigned long *signature_len), \
	  (session, signature, signature_len)) \
	X(SignRecoverInit, (CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, \
	  CK_OBJECT_HANDLE key), \
	  (session, mechanism, key)) \
	X(SignRecover, (CK_SESSION_HANDLE session, unsigned char *data, \
	  unsigned long data_len, unsigned char *signature, unsigned long *signature_len), \
	  (session, data, data_len, signature, signature_len)) \
	X(VerifyInit, (CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, \
	  CK_OBJECT_HANDLE key), \
	  (session, mechanism, key)) \
	X(Verify, (CK_SESSION_HANDLE session, unsigned char *data, \
	  unsigned long data_len, unsigned char *signature, unsigned long signature_len), \
	  (session, data, data_len, signature, signature_len)) \
	X(VerifyUpdate, (CK_SESSION_HANDLE session, unsigned char *part, \
	  unsigned long part_len), \
	  (session, part, part_len)) \
	X(VerifyFinal, (CK_SESSION_HANDLE session, unsigned char *signature, \
	  unsigned long signature_len), \
	  (session, signature, signature_len)) \
	X(VerifyRecoverInit, (CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, \
	  CK_OBJECT_HANDLE key), \
	  (session, mechanism, key)) \
	X(VerifyRecover, (CK_SESSION_HANDLE session, unsigned char *signature, \
	  unsigned long signature_len, unsigned char *data, unsigned long *data_len), \
	  (session, signature, signature_len, data, data_len)) \
	X(DigestEncryptUpdate, (CK_SESSION_HANDLE session, unsigned char *part, \
	  unsigned long part_len, unsigned char *encrypted_part, \
	  unsigned long *encrypted_part_len), \
	  (session, part, part_len, encrypted_part, encrypted_part_len)) \
	X(DecryptDigestUpdate, (CK_SESSION_HANDLE session, unsigned char *encrypted_part, \
	  unsigned long encrypted_part_len, unsigned char *part, unsigned long *part_len), \
	  (session, encrypted_part, encrypted_part_len, part, part_len)) \
	X(SignEncryptUpdate, (CK_SESSION_HANDLE session, unsigned char *part, \
	  unsigned long part_len, unsigned char *encrypted_part, \
	  unsigned long *encrypted_part_len), \
	  (session, part, part_len, encrypted_part, encrypted_part_len)) \
	X(DecryptVerifyUpdate, (CK_SESSION_HANDLE session, unsigned char *encrypted_part, \
	  unsigned long encrypted_part_len, unsigned char *part, unsigned long *part_len), \
	  (session, encrypted_part, encrypted_part_len, part, part_len)) \
	X(GenerateKey, (CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, \
	  CK_ATTRIBUTE *templ, unsigned long count, CK_OBJECT_HANDLE *key), \
	  (session, mechanism, templ, count, key)) \
	X(GenerateKeyPair, (CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, \
	  CK_ATTRIBUTE *public_key_template, \
	  unsigned long public_key_attribute_count, \
	  CK_ATTRIBUTE *private_key_template, \
	  unsigned long private_key_attribute_count, CK_OBJECT_HANDLE *public_key, \
	  CK_OBJECT_HANDLE *private_key), \
	  (session, mechanism, public_key_template, public_key_attribute_count, \
	   private_key_template, private_key_attribute_count, public_key, private_key)) \
	X(WrapKey, (CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, \
	  CK_OBJECT_HANDLE wrapping_key, CK_OBJECT_HANDLE key, \
	  unsigned char *wrapped_key, unsigned long *wrapped_key_len), \
	  (session, mechanism, wrapping_key, key, wrapped_key, wrapped_key_len)) \
	X(UnwrapKey, (CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, \
	  CK_OBJECT_HANDLE unwrapping_key, unsigned char *wrapped_key, \
	  unsigned long wrapped_key_len, CK_ATTRIBUTE *templ, \
	  unsigned long attribute_count, CK_OBJECT_HANDLE *key), \
	  (session, mechanism, unwrapping_key, wrapped_key, wrapped_key_len, templ, \
	   attribute_count, key)) \
	X(DeriveKey, (CK_SESSION_HANDLE session, CK_MECHANISM *mechanism, \
	  CK_OBJECT_HANDLE base_key, CK_ATTRIBUTE *templ, \
	  unsigned long attribute_count, CK_OBJECT_HANDLE *key), \
	  (session, mechanism, base_key, templ, attribute_count, key)) \
	X(SeedRandom, (CK_SESSION_HANDLE session, unsigned char *seed, \
	  unsigned long seed_len), \
	  (session, seed, seed_len)) \
	X(GenerateRandom, (CK_SESSION_HANDLE session, unsigned char *random_data, \
	  unsigned long random_len), \
	  (session, random_data, random_len)) \
	X(GetFunctionStatus, (CK_SESSION_HANDLE session), \
	  (session)) \
	X(CancelFunction, (CK_SESSION_HANDLE session), \
	  (session))

enum pass_fn {
	FN_Initialize,
	FN_Finalize,
#define X(name, params, args) FN_##name,
	PASS_FUNCTIONS(X)
#undef X
	FN_COUNT
};

static const char *const fn_names[FN_COUNT] = {
	[FN_Initialize] = "C_Initialize",
	[FN_Finalize] = "C_Finalize",
#define X(name, params, args) [FN_##name] = "C_" #name,
	PASS_FUNCTIONS(X)
#undef X
};

struct pass_conf {
	char module[4096];
	char counts[4096];
	char label[64];
	long delay_us;
	int nenv;
	char env[PASS_MAX_ENV][1024];   /* NAME=VALUE */
};

static struct pass_conf conf;
static bool conf_loaded;
static void *real_dl;
static CK_FUNCTION_LIST_PTR real;
static CK_FUNCTION_LIST pass_list;
static unsigned long n_calls[FN_COUNT];
static unsigned long long ns_in[FN_COUNT];

/* ---- configuration ------------------------------------------------------------------ */

static char *
trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static bool
copy_value(char *dst, size_t size, const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n >= size)
		return false;
	memcpy(dst, v, n + 1);
	return true;
}

static bool
conf_line(struct pass_conf *c, char *line)
{
	char *eq, *key, *val, *end;

	line[strcspn(line, "#")] = '\0';
	key = trim(line);
	if (*key == '\0')
		return true;
	if ((eq = strchr(key, '=')) == NULL)
		return false;
	*eq = '\0';
	key = trim(key);
	val = trim(eq + 1);
	if (strcmp(key, "module") == 0)
		return copy_value(c->module, sizeof(c->module), val);
	if (strcmp(key, "counts") == 0)
		return copy_value(c->counts, sizeof(c->counts), val);
	if (strcmp(key, "label") == 0)
		return copy_value(c->label, sizeof(c->label), val);
	if (strcmp(key, "env") == 0) {
		if (c->nenv >= PASS_MAX_ENV || strchr(val, '=') == NULL || val[0] == '=' ||
		    !copy_value(c->env[c->nenv], sizeof(c->env[0]), val))
			return false;
		c->nenv++;
		return true;
	}
	if (strcmp(key, "delay_us") == 0) {
		errno = 0;
		c->delay_us = strtol(val, &end, 10);
		return errno == 0 && end != val && *end == '\0' && c->delay_us >= 0 &&
		       c->delay_us <= PASS_MAX_DELAY_US;
	}
	return false;
}

/* This module's path + ".conf", read once; false (and a line on stderr,
 * the bench's log) when missing or wrong. */
static bool
conf_load(void)
{
	Dl_info self;
	char path[4096], line[2048];
	unsigned lineno = 0;
	FILE *f;
	int n;

	if (conf_loaded)
		return true;
	memset(&conf, 0, sizeof(conf));
	if (dladdr((void *)&conf_load, &self) == 0 || self.dli_fname == NULL ||
	    (n = snprintf(path, sizeof(path), "%s.conf", self.dli_fname)) <= 0 ||
	    (size_t)n >= sizeof(path))
		return false;
	if ((f = fopen(path, "re")) == NULL) {
		fprintf(stderr, "p11pass: %s: %s\n", path, strerror(errno));
		return false;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		if (!conf_line(&conf, line)) {
			fprintf(stderr, "p11pass: %s:%u: bad line\n", path, lineno);
			fclose(f);
			return false;
		}
	}
	fclose(f);
	if (conf.module[0] == '\0') {
		fprintf(stderr, "p11pass: %s: no module\n", path);
		return false;
	}
	if (conf.label[0] == '\0')
		memcpy(conf.label, "p11pass", sizeof("p11pass"));
	conf_loaded = true;
	return true;
}

/* ---- the environment around the real module's start ------------------------------------ */

struct saved_env {
	int n;
	char *old[PASS_MAX_ENV];        /* strdup'd previous value, or NULL: unset */
	bool was_set[PASS_MAX_ENV];
};

static bool
env_push(struct saved_env *s)
{
	int i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < conf.nenv; i++) {
		char name[1024];
		const char *eq = strchr(conf.env[i], '='), *old;
		size_t n = (size_t)(eq - conf.env[i]);

		memcpy(name, conf.env[i], n);
		name[n] = '\0';
		old = getenv(name);
		s->was_set[i] = old != NULL;
		if (old != NULL && (s->old[i] = strdup(old)) == NULL)
			return false;
		s->n = i + 1;
		if (setenv(name, eq + 1, 1) != 0)
			return false;
	}
	return true;
}

static void
env_pop(struct saved_env *s)
{
	int i;

	for (i = 0; i < s->n; i++) {
		char name[1024];
		size_t n = strcspn(conf.env[i], "=");

		memcpy(name, conf.env[i], n);
		name[n] = '\0';
		if (s->was_set[i])
			(void)setenv(name, s->old[i], 1);
		else
			(void)unsetenv(name);
		free(s->old[i]);
	}
	s->n = 0;
}

/* ---- counting, delay -------------------------------------------------------------------- */

static unsigned long long
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* The call's start; sleeps the configured delay first (the round trip). */
static unsigned long long
call_begin(void)
{
	unsigned long long start = now_ns();
	struct timespec until;
	unsigned long long end;

	if (conf.delay_us > 0) {
		end = start + (unsigned long long)conf.delay_us * 1000ULL;
		until.tv_sec = (time_t)(end / 1000000000ULL);
		until.tv_nsec = (long)(end % 1000000000ULL);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
			;
	}
	return start;
}

static void
call_end(enum pass_fn fn, unsigned long long start)
{
	__atomic_fetch_add(&n_calls[fn], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&ns_in[fn], now_ns() - start, __ATOMIC_RELAXED);
}

/* One counts line (see the top), then the counters start again. */
static void
counts_flush(void)
{
	char line[8192];
	size_t len;
	unsigned long calls = 0;
	unsigned long long ns = 0;
	int i, n, fd;

	for (i = 0; i < FN_COUNT; i++) {
		calls += n_calls[i];
		ns += ns_in[i];
	}
	if (calls == 0 || conf.counts[0] == '\0')
		return;
	n = snprintf(line, sizeof(line), "p11pass v1 label=%s pid=%ld delay_us=%ld calls=%lu us=%llu",
		     conf.label, (long)getpid(), conf.delay_us, calls, ns / 1000ULL);
	if (n <= 0 || (size_t)n >= sizeof(line))
		return;
	len = (size_t)n;
	for (i = 0; i < FN_COUNT; i++) {
		if (n_calls[i] == 0)
			continue;
		n = snprintf(line + len, sizeof(line) - len, " %s=%lu/%llu", fn_names[i],
			     n_calls[i], ns_in[i] / 1000ULL);
		if (n <= 0 || (size_t)n >= sizeof(line) - len - 1)
			return;
		len += (size_t)n;
	}
	line[len++] = '\n';
	fd = open(conf.counts, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, len) != (ssize_t)len)
		fprintf(stderr, "p11pass: %s: short write\n", conf.counts);
	close(fd);
	memset(n_calls, 0, sizeof(n_calls));
	memset(ns_in, 0, sizeof(ns_in));
}

__attribute__((destructor)) static void
pass_unload(void)
{
	counts_flush();
}

/* ---- the forwarded calls ------------------------------------------------------------------ */

#define X(name, params, args)                                      \
	static CK_RV pass_##name params                            \
	{                                                          \
		unsigned long long t0 = call_begin();              \
		CK_RV rv = real->C_##name args;                    \
                                                                   \
		call_end(FN_##name, t0);                           \
		return rv;                                         \
	}
PASS_FUNCTIONS(X)
#undef X

/* The real module: loaded and its list taken once, the configured
 * environment around it. */
static CK_RV
real_load(void)
{
	CK_C_GetFunctionList get;
	struct saved_env se;
	CK_RV rv = CKR_GENERAL_ERROR;

	if (real != NULL)
		return CKR_OK;
	if (!conf_load())
		return CKR_GENERAL_ERROR;
	if ((real_dl = dlopen(conf.module, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		fprintf(stderr, "p11pass: %s\n", dlerror());
		return CKR_GENERAL_ERROR;
	}
	*(void **)&get = dlsym(real_dl, "C_GetFunctionList");
	if (get != NULL) {
		if (env_push(&se))
			rv = get(&real);
		env_pop(&se);
	}
	if (rv != CKR_OK || real == NULL) {
		real = NULL;
		dlclose(real_dl);
		real_dl = NULL;
		return rv != CKR_OK ? rv : CKR_GENERAL_ERROR;
	}
	return CKR_OK;
}

static CK_RV
pass_Initialize(void *init_args)
{
	struct saved_env se;
	unsigned long long t0;
	CK_RV rv = real_load();

	if (rv != CKR_OK)
		return rv;
	t0 = call_begin();
	rv = env_push(&se) ? real->C_Initialize(init_args) : CKR_HOST_MEMORY;
	env_pop(&se);
	call_end(FN_Initialize, t0);
	return rv;
}

static CK_RV
pass_Finalize(void *reserved)
{
	unsigned long long t0;
	CK_RV rv;

	if (real == NULL)
		return CKR_CRYPTOKI_NOT_INITIALIZED;
	t0 = call_begin();
	rv = real->C_Finalize(reserved);
	call_end(FN_Finalize, t0);
	counts_flush();
	return rv;
}

CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list);

CK_RV
C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list)
{
	CK_RV rv;

	if (list == NULL)
		return CKR_ARGUMENTS_BAD;
	if ((rv = real_load()) != CKR_OK)
		return rv;
	pass_list.version.major = 2;
	pass_list.version.minor = 40;
	pass_list.C_Initialize = pass_Initialize;
	pass_list.C_Finalize = pass_Finalize;
	pass_list.C_GetFunctionList = C_GetFunctionList;
#define X(name, params, args) pass_list.C_##name = real->C_##name != NULL ? pass_##name : NULL;
	PASS_FUNCTIONS(X)
#undef X
	*list = &pass_list;
	return CKR_OK;
}
