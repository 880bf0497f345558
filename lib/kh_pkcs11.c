/*
 * kh_pkcs11 — see kh_pkcs11.h.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libp11.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/rand.h>

#include "lib/kh_dl.h"
#include "lib/kh_mem.h"
#include "lib/kh_p11_raw.h"
#include "lib/kh_p11_raw_key.h"
#include "lib/kh_p11_ui.h"
#include "lib/kh_pcsc.h"
#include "lib/kh_pkcs11.h"

/*
 * The few PKCS#11 return values we act on.  libp11 reports a failed call as
 * an OpenSSL error whose library is ERR_get_CKR_code() and whose reason is
 * the CK_RV (the values are the standard's, from <p11-kit/pkcs11.h>).
 */

/* More private keys than this with one CKA_ID is a token we do not understand. */
#define KH_KEYS_PER_ID 8

struct kh_p11 {
	char *path;
	PKCS11_CTX *ctx;
	bool loaded;
	void *dl;               /* our own handle on the module: its function list */
	CK_C_GetFunctionList get_fl;
	CK_FUNCTION_LIST_PTR fl;
	bool fl_initialized;    /* fl is an instance of its own, initialised by us */
	UI_METHOD *ui;          /* answers context-specific logins with `pin` */
	struct kh_env env;      /* pkcs11.env (a copy), set when the module connects */
	char *pin;              /* the PIN the token accepted; wiped at logout */
	PKCS11_SLOT *slots;
	unsigned int nslots;
	unsigned generation;    /* bumped by every slot listing */
	PKCS11_SLOT *slot;      /* the selected token's slot, inside slots, or NULL: */
	/* The selected token: from libp11's list (slot), or found without
	 * libp11 by kh_p11_use_uri_token (the issuer's; slot NULL). */
	bool selected;
	CK_SLOT_ID sel_slot;
	char *sel_label;        /* control characters replaced */
	bool sel_locked;        /* CKF_USER_PIN_LOCKED when it was listed */
	bool sel_removable;
	bool logged_in;
	/* From C_Login to logout the token is ours alone (kh_p11_raw.h): the
	 * session we logged in on, and signs through. */
	struct kh_p11_raw raw;
	struct kh_p11_raw_methods *methods;   /* of the keys handed out */
};

/* The CK_RV behind the last libp11 failure, 0 if it was not a PKCS#11 one. */
static unsigned long
kh_p11_last_ckr(void)
{
	unsigned long e = ERR_peek_last_error();

	if (e == 0 || ERR_GET_LIB(e) != ERR_get_CKR_code())
		return 0;
	return (unsigned long)ERR_GET_REASON(e);
}

static bool
kh_p11_token_gone(unsigned long ckr)
{
	return ckr == CKR_TOKEN_NOT_PRESENT || ckr == CKR_DEVICE_REMOVED;
}

bool
kh_p11_last_error_token_gone(void)
{
	return kh_p11_token_gone(kh_p11_last_ckr());
}

/* A failed token operation: "removed" when the token went away, else the
 * library's own reason. */
static int
kh_p11_fail_op(kh_error *err, const char *label, const char *what)
{
	if (kh_p11_token_gone(kh_p11_last_ckr())) {
		ERR_clear_error();
		return kh_fail(err, KH_ERR_NOTFOUND, "token '%s' was removed", label);
	}
	return kh_fail_ssl(err, KH_ERR_TOKEN, "token '%s': %s", label, what);
}

/* A failed raw call on token `label`: "removed" when the token went away,
 * else what failed. */
static int
kh_p11_fail_raw(kh_error *err, const char *label, const char *what)
{
	char why[KH_ERROR_MAX];

	if (err == NULL)
		return -1;
	if (err->code == KH_ERR_NOTFOUND)
		return kh_fail(err, KH_ERR_NOTFOUND, "token '%s' was removed", label);
	(void)snprintf(why, sizeof(why), "%s", err->msg);
	return kh_fail(err, KH_ERR_TOKEN, "token '%s': %s: %s", label, what, why);
}

/*
 * Our own look at the module before libp11 loads it: libp11 writes
 * dlerror() to stderr (the PAM host's terminal) and reports only "unable
 * to load".  The handle stays open for the module's function list.
 *
 * RTLD_NODELETE: once loaded, the module stays mapped in the process.  A
 * login opens a module twice — the user's token in auth, the issuer key in
 * open_session, usually the same module — and closing the first (libp11's
 * unload and our dlclose) used to unmap it, so the issuer paid for mapping
 * and relocating it again (issue #24: issuer setup 2.55 ms against the
 * floor's 0.84).  Nothing else changes: every open still runs its own
 * C_Initialize and every close its C_Logout and C_Finalize, so no session,
 * login or PIN outlives its handle; only the code and its static data stay,
 * as libp11 itself does (kh_p11_pin_library).  PKCS#11 lets an application
 * call C_Initialize again after C_Finalize; a process that opens a module
 * twice in a row now does exactly that.  (pam_kubehsm goes one step further
 * for a module that holds both tokens and no card: kh_p11_release_token and
 * pam/kh_pam_module.c.)
 */
static int
kh_p11_dlopen(struct kh_p11 *p, kh_error *err)
{
	CK_C_GetFunctionList get;
	const char *why;

	p->dl = dlopen(p->path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (p->dl == NULL) {
		why = dlerror();
		return kh_fail(err, KH_ERR_TOKEN, "cannot load PKCS#11 module %s: %s", p->path,
			       why != NULL ? why : "unknown error");
	}
	get = (CK_C_GetFunctionList)dlsym(p->dl, "C_GetFunctionList");
	if (get == NULL)
		return kh_fail(err, KH_ERR_TOKEN, "%s is not a PKCS#11 module (no C_GetFunctionList)",
			       p->path);
	if (get(&p->fl) != CKR_OK || p->fl == NULL)
		return kh_fail(err, KH_ERR_TOKEN, "%s: C_GetFunctionList failed", p->path);
	p->get_fl = get;
	return 0;
}

/*
 * The policy's environment (pkcs11.env) is set where a module reads it and
 * put back right after: around C_Initialize, where OpenSC (OPENSC_CONF,
 * and libpcsclite's PCSCLITE_CSOCK_NAME through its first connection) and
 * tpm2-pkcs11 (TPM2_PKCS11_STORE, TPM2_PKCS11_TCTI, the bus) read
 * theirs; and around every slot listing, since ykcs11 connects to pcscd
 * only in C_GetSlotList, afresh each time (measured; see kubehsm.conf(5)).
 */
static int
kh_p11_copy_env(struct kh_p11 *p, const struct kh_env *env, kh_error *err)
{
	if (env == NULL || env->n == 0)
		return 0;
	p->env.names = calloc(env->n, sizeof(*p->env.names));
	p->env.values = calloc(env->n, sizeof(*p->env.values));
	if (p->env.names == NULL || p->env.values == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	for (; p->env.n < env->n; p->env.n++) {
		p->env.names[p->env.n] = strdup(env->names[p->env.n]);
		p->env.values[p->env.n] = strdup(env->values[p->env.n]);
		if (p->env.names[p->env.n] == NULL || p->env.values[p->env.n] == NULL) {
			free(p->env.names[p->env.n]);
			free(p->env.values[p->env.n]);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
	}
	return 0;
}

/* C_Initialize, with the module's environment set around it. */
static int
kh_p11_load(struct kh_p11 *p, kh_error *err)
{
	struct kh_env_saved saved;
	int rc;

	if (kh_env_apply(&p->env, &saved, err) != 0)
		return -1;
	ERR_clear_error();
	rc = PKCS11_CTX_load(p->ctx, p->path);
	kh_env_restore(&saved);
	if (rc != 0)
		return kh_fail_ssl(err, KH_ERR_TOKEN, "cannot initialise PKCS#11 module %s", p->path);
	p->loaded = true;
	return 0;
}

/*
 * Our function list is libp11's module — except where a module makes a new
 * instance at every C_GetFunctionList: p11-kit's client does, each with a
 * connection of its own to the p11-kit server (a forwarded token, `kubehsm
 * login`).  Such an instance answers CKR_CRYPTOKI_NOT_INITIALIZED and gets
 * a C_Initialize of its own (and a C_Finalize at close); one module shared
 * with libp11 answers C_GetInfo at once and is not initialised twice.
 */
static int
kh_p11_init_own(struct kh_p11 *p, kh_error *err)
{
	CK_C_INITIALIZE_ARGS args = { .flags = CKF_OS_LOCKING_OK };
	CK_FUNCTION_LIST_PTR again = NULL;
	struct kh_env_saved saved;
	CK_INFO info;
	CK_RV rv;

	/* A module that hands out one list to every caller gave libp11 this
	 * one too, which libp11 has initialised: no question to ask it (a
	 * round trip on a network HSM, issue #30). */
	if (p->get_fl(&again) == CKR_OK && again == p->fl)
		return 0;
	if (p->fl->C_GetInfo(&info) != CKR_CRYPTOKI_NOT_INITIALIZED)
		return 0;
	if (kh_env_apply(&p->env, &saved, err) != 0)
		return -1;
	rv = p->fl->C_Initialize(&args);
	kh_env_restore(&saved);
	if (rv != CKR_OK)
		return kh_fail(err, KH_ERR_TOKEN, "cannot initialise PKCS#11 module %s (CKR 0x%lx)",
			       p->path, (unsigned long)rv);
	p->fl_initialized = true;
	return 0;
}

struct kh_p11 *
kh_p11_open(const char *path, const struct kh_env *env, kh_error *err)
{
	struct kh_p11 *p;

	if (path == NULL || path[0] == '\0') {
		kh_fail(err, KH_ERR_CONFIG, "no PKCS#11 module configured");
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL || (p->path = strdup(path)) == NULL) {
		free(p);
		kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		return NULL;
	}
	p->ctx = PKCS11_CTX_new();
	p->ui = kh_p11_ui_method_new();
	if (p->ctx == NULL || p->ui == NULL) {
		kh_fail_ssl(err, KH_ERR_INTERNAL, "cannot create a PKCS#11 context");
		goto fail;
	}
	/* Before anything can sign: libp11 falls back to OpenSSL's default
	 * UI, which reads /dev/tty, when a context has none. */
	if (PKCS11_set_ui_method(p->ctx, p->ui, &p->pin) != 0) {
		kh_fail(err, KH_ERR_INTERNAL, "cannot set the PKCS#11 context's PIN method");
		goto fail;
	}
	if (kh_p11_copy_env(p, env, err) != 0 || kh_p11_dlopen(p, err) != 0 ||
	    kh_p11_load(p, err) != 0 || kh_p11_init_own(p, err) != 0)
		goto fail;
	return p;
fail:
	kh_p11_close(p);
	return NULL;
}

static void
kh_p11_forget_pin(struct kh_p11 *p)
{
	kh_secure_strfree(p->pin);
	p->pin = NULL;
}

/*
 * Log out of the selected token and close our session.  C_Logout goes on
 * our own session, never through libp11: libp11 0.4.13's logout asks its
 * session pool for a session and waits for ever when the token is gone.
 * A token that went away is logged out of all the same.  0, or -1 when
 * the module refused the logout.
 */
static int
kh_p11_logout(struct kh_p11 *p)
{
	CK_RV rv = CKR_OK;

	if (p->logged_in && p->raw.open)
		rv = kh_p11_raw_logout(&p->raw);
	kh_p11_raw_close(&p->raw);
	p->logged_in = false;
	kh_p11_forget_pin(p);
	return rv == CKR_OK || kh_p11_raw_gone(rv) ? 0 : -1;
}

static void
kh_p11_unselect(struct kh_p11 *p)
{
	p->slot = NULL;
	p->selected = false;
	free(p->sel_label);
	p->sel_label = NULL;
}

static void
kh_p11_release_slots(struct kh_p11 *p)
{
	kh_p11_unselect(p);
	if (p->slots != NULL)
		PKCS11_release_all_slots(p->ctx, p->slots, p->nslots);
	p->slots = NULL;
	p->nslots = 0;
}

void
kh_p11_close(struct kh_p11 *p)
{
	if (p == NULL)
		return;
	/* Logging out first keeps the token from staying unlocked in a
	 * module that outlives us (proxy modules, p11-kit). */
	(void)kh_p11_logout(p);
	kh_p11_release_slots(p);
	kh_p11_raw_methods_free(p->methods);
	if (p->fl_initialized)
		(void)p->fl->C_Finalize(NULL);
	if (p->loaded)
		PKCS11_CTX_unload(p->ctx);
	if (p->ctx != NULL)
		PKCS11_CTX_free(p->ctx);
	if (p->ui != NULL)
		UI_destroy_method(p->ui);
	if (p->dl != NULL)
		dlclose(p->dl);
	kh_env_clear(&p->env);
	free(p->path);
	free(p);
	/* libp11 and the module leave their failures in the queue: they must
	 * not surface in an unrelated later kh_fail_ssl. */
	ERR_clear_error();
}

bool
kh_p11_is_module(const struct kh_p11 *p, const char *path, const struct kh_env *env)
{
	return p != NULL && path != NULL && p->loaded && strcmp(p->path, path) == 0 &&
	       kh_env_equal(&p->env, env);
}

bool
kh_p11_token_removable(const struct kh_p11 *p)
{
	/* No selected slot: nothing known, so the cautious answer. */
	return p == NULL || !p->selected || p->sel_removable;
}

int
kh_p11_release_token(struct kh_p11 *p)
{
	int rc = 0;

	if (p == NULL)
		return -1;
	ERR_clear_error();
	rc = kh_p11_logout(p);
	/* libp11 closes the slots' sessions as it releases them. */
	kh_p11_release_slots(p);
	ERR_clear_error();
	return rc;
}

const char *
kh_p11_module_manufacturer(const struct kh_p11 *p)
{
	return p != NULL && p->ctx != NULL && p->ctx->manufacturer != NULL ?
		p->ctx->manufacturer : "";
}

void
kh_p11_token_info_clear(struct kh_p11_token_info *info)
{
	if (info == NULL)
		return;
	free(info->label);
	free(info->serial);
	memset(info, 0, sizeof(*info));
}

static unsigned
kh_p11_pin_flags(const PKCS11_TOKEN *tok)
{
	unsigned f = 0;

	if (tok->userPinCountLow)
		f |= KH_P11_PIN_COUNT_LOW;
	if (tok->userPinFinalTry)
		f |= KH_P11_PIN_FINAL_TRY;
	if (tok->userPinLocked)
		f |= KH_P11_PIN_LOCKED;
	if (tok->userPinToBeChanged)
		f |= KH_P11_PIN_TO_BE_CHANGED;
	return f;
}

/*
 * A new listing of the module's slots begins, by libp11 or the raw layer:
 * sessions belong to one listing (the token in a slot may be another one
 * by the next), and the modules measured read pkcs11.env around every
 * listing.  The caller restores *saved once the listing is made.
 */
static int
kh_p11_listing_begin(struct kh_p11 *p, struct kh_env_saved *saved, kh_error *err)
{
	if (p->logged_in)
		return kh_fail(err, KH_ERR_INTERNAL, "a token is already logged in on this handle");
	kh_p11_raw_close(&p->raw);
	kh_p11_release_slots(p);
	p->generation++;
	return kh_env_apply(&p->env, saved, err);
}

/* Read the slot list afresh.  (PKCS11_update_slots would keep the old
 * objects, but crashes in libp11 0.4.12.) */
static int
kh_p11_enumerate(struct kh_p11 *p, kh_error *err)
{
	struct kh_env_saved saved;
	const char *pcsc_hint;
	int rc;

	if (kh_p11_listing_begin(p, &saved, err) != 0)
		return -1;
	ERR_clear_error();
	rc = PKCS11_enumerate_slots(p->ctx, &p->slots, &p->nslots);
	/* A PC/SC module fails here when pcscd refused us: say so (kh_pcsc.h). */
	pcsc_hint = rc != 0 ? kh_pcsc_refusal() : NULL;
	kh_env_restore(&saved);
	if (rc != 0) {
		p->slots = NULL;
		p->nslots = 0;
		kh_fail_ssl(err, KH_ERR_TOKEN, "PKCS#11 module %s: cannot list slots", p->path);
		if (pcsc_hint != NULL)
			kh_error_append(err, "; %s", pcsc_hint);
		return -1;
	}
	return 0;
}

/*
 * A copy of what a token or certificate says, fit for prompts and logs:
 * control characters (C0, DEL, and C1 as UTF-8) become '?', so a label
 * chosen by a card's issuer cannot move the cursor of the terminal that
 * shows it.  Bytes that are not UTF-8 become '?' too.
 */
static char *
kh_p11_clean_text(const char *s)
{
	const unsigned char *in = (const unsigned char *)(s != NULL ? s : "");
	size_t n = strlen((const char *)in), i = 0, j = 0;
	char *out = malloc(n + 1);

	if (out == NULL)
		return NULL;
	while (i < n) {
		unsigned char c = in[i];
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			     (c & 0xf8) == 0xf0 ? 4 : 0;
		size_t k;

		for (k = 1; len > 1 && k < len; k++)
			if (i + k >= n || (in[i + k] & 0xc0) != 0x80)
				break;
		if (len == 0 || k < len || c < 0x20 || c == 0x7f ||
		    (c == 0xc2 && in[i + 1] >= 0x80 && in[i + 1] <= 0x9f)) {
			out[j++] = '?';
			i += len > 1 && k == len ? len : 1;
			continue;
		}
		memcpy(out + j, in + i, len);
		i += len;
		j += len;
	}
	out[j] = '\0';
	return out;
}

static void
kh_p11_cert_clear(struct kh_p11_cert *c)
{
	X509_free(c->x509);
	free(c->label);
	memset(c, 0, sizeof(*c));
}

/* What one token entry holds (not the entry). */
static void
kh_p11_tokens_free_one(struct kh_p11_token *t)
{
	for (size_t j = 0; j < t->ncerts; j++)
		kh_p11_cert_clear(&t->certs[j]);
	free(t->certs);
	free(t->slot_description);
	free(t->slot_manufacturer);
	free(t->label);
	free(t->manufacturer);
	free(t->model);
	free(t->serial);
	free(t->certs_error);
	memset(t, 0, sizeof(*t));
}

void
kh_p11_tokens_free(struct kh_p11_token *t, size_t n)
{
	for (size_t i = 0; t != NULL && i < n; i++)
		kh_p11_tokens_free_one(&t[i]);
	free(t);
}

/*
 * The handle's session on `slot`, opened now unless it is open there
 * already: a login reuses the session its token's certificates were read
 * on (issue #30: every call is a round trip on a network HSM).  Only
 * before login; a listing of the slots closes it (kh_p11_enumerate).
 */
static int
kh_p11_session_on(struct kh_p11 *p, CK_SLOT_ID slot, kh_error *err)
{
	if (p->raw.open && p->raw.slot == slot)
		return 0;
	if (p->logged_in)
		return kh_fail(err, KH_ERR_INTERNAL, "a token is already logged in on this handle");
	kh_p11_raw_close(&p->raw);
	return kh_p11_raw_open(p->fl, slot, &p->raw, err);
}

/* One certificate object: CKA_VALUE, CKA_ID and CKA_LABEL in two calls.
 * 0, -1 with err when the token cannot be read, -2 when out of memory. */
static int
kh_p11_read_cert(struct kh_p11_raw *r, CK_OBJECT_HANDLE obj, struct kh_p11_cert *out,
		 kh_error *err)
{
	enum { VALUE, ID, LABEL, N };
	CK_ATTRIBUTE a[N] = { { CKA_VALUE, NULL, 0 }, { CKA_ID, NULL, 0 }, { CKA_LABEL, NULL, 0 } };
	const unsigned char *der;
	char *label;
	int rc = -2;

	memset(out, 0, sizeof(*out));
	if (kh_p11_raw_attrs(r, obj, a, N, err) != 0)
		return err != NULL && err->code == KH_ERR_INTERNAL ? -2 : -1;
	/* A value OpenSSL cannot read leaves x509 NULL: not anyone's. */
	if ((der = a[VALUE].pValue) != NULL && a[VALUE].ulValueLen <= LONG_MAX)
		out->x509 = d2i_X509(NULL, &der, (long)a[VALUE].ulValueLen);
	ERR_clear_error();
	if (a[ID].pValue != NULL && a[ID].ulValueLen <= sizeof(out->id)) {
		memcpy(out->id, a[ID].pValue, a[ID].ulValueLen);
		out->id_len = a[ID].ulValueLen;
	}
	label = a[LABEL].pValue != NULL ? strndup(a[LABEL].pValue, a[LABEL].ulValueLen) :
		strdup("");
	if (label != NULL) {
		out->label = kh_p11_clean_text(label);
		free(label);
		rc = out->label != NULL ? 0 : -2;
	}
	kh_p11_raw_attrs_free(a, N);
	return rc;
}

/*
 * The certificates of one token, without login, on the handle's session
 * (kept for the login) — or, after a login on another token, on one of
 * their own.  A token whose certificates cannot be read is reported in
 * certs_error, not fatal: it is simply not anyone's.  -1: out of memory.
 */
static int
kh_p11_copy_certs(struct kh_p11 *p, struct kh_p11_token *t)
{
	struct kh_p11_raw own = { 0 }, *r = &p->raw;
	CK_OBJECT_HANDLE *objs = NULL;
	size_t n = 0;
	kh_error e = { 0 };
	int got;

	if (p->logged_in && !(p->raw.open && p->raw.slot == t->slot_id)) {
		r = &own;
		got = kh_p11_raw_open(p->fl, t->slot_id, r, &e);
	} else {
		got = kh_p11_session_on(p, t->slot_id, &e);
	}
	if (got == 0)
		got = kh_p11_raw_find_certs(r, &objs, &n, &e);
	if (got == 0 && n > 0 && (t->certs = calloc(n, sizeof(*t->certs))) == NULL)
		got = -2;
	for (; got == 0 && t->ncerts < n; t->ncerts++) {
		if ((got = kh_p11_read_cert(r, objs[t->ncerts], &t->certs[t->ncerts], &e)) != 0)
			kh_p11_cert_clear(&t->certs[t->ncerts]);
	}
	free(objs);
	kh_p11_raw_close(&own);
	if (got == 0)
		return 0;
	for (size_t j = 0; j < t->ncerts; j++)
		kh_p11_cert_clear(&t->certs[j]);
	free(t->certs);
	t->certs = NULL;
	t->ncerts = 0;
	if (got == -2 || e.code == KH_ERR_INTERNAL)
		return -1;
	kh_p11_fail_raw(&e, t->label, "cannot list certificates");
	t->certs_error = strdup(e.msg);
	return t->certs_error != NULL ? 0 : -1;
}

static int
kh_p11_describe(struct kh_p11 *p, size_t i, struct kh_p11_token *t)
{
	PKCS11_SLOT *slot = &p->slots[i];
	PKCS11_TOKEN *tok = slot->token;

	t->index = i;
	t->generation = p->generation;
	t->slot_id = PKCS11_get_slotid_from_slot(slot);
	t->slot_description = kh_p11_clean_text(slot->description);
	t->slot_manufacturer = kh_p11_clean_text(slot->manufacturer);
	t->present = tok != NULL;
	t->initialized = tok != NULL && tok->initialized;
	t->label = kh_p11_clean_text(tok != NULL ? tok->label : NULL);
	t->manufacturer = kh_p11_clean_text(tok != NULL ? tok->manufacturer : NULL);
	t->model = kh_p11_clean_text(tok != NULL ? tok->model : NULL);
	t->serial = kh_p11_clean_text(tok != NULL ? tok->serialnr : NULL);
	if (t->slot_description == NULL || t->slot_manufacturer == NULL || t->label == NULL ||
	    t->manufacturer == NULL || t->model == NULL || t->serial == NULL)
		return -1;
	if (t->initialized)
		t->pin_flags = kh_p11_pin_flags(tok);
	return 0;
}

int
kh_p11_list_tokens(struct kh_p11 *p, struct kh_p11_token **tokens, size_t *n, kh_error *err)
{
	struct kh_p11_token *t;
	size_t i;

	*tokens = NULL;
	*n = 0;
	if (p == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "no PKCS#11 module");
	if (kh_p11_enumerate(p, err) != 0)
		return -1;
	if (p->nslots == 0)
		return 0;
	t = calloc(p->nslots, sizeof(*t));
	if (t == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	for (i = 0; i < p->nslots; i++) {
		if (kh_p11_describe(p, i, &t[i]) != 0) {
			kh_p11_tokens_free(t, i + 1);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
	}
	*tokens = t;
	*n = p->nslots;
	return 0;
}

/* t names a token of p's current slot list. */
static bool
kh_p11_current(const struct kh_p11 *p, const struct kh_p11_token *t)
{
	return p != NULL && t != NULL && t->generation == p->generation &&
	       t->index < p->nslots && p->slots[t->index].token != NULL && t->initialized;
}

int
kh_p11_read_certs(struct kh_p11 *p, struct kh_p11_token *t, kh_error *err)
{
	if (t != NULL && t->certs_read)
		return 0;
	if (!kh_p11_current(p, t))
		return kh_fail(err, KH_ERR_INTERNAL, "that token is not in the module's current list");
	t->certs_read = true;
	/* A token that went away since the slots were listed is said to be
	 * gone without asking it for a session: the module learns of a pulled
	 * card in C_GetSlotInfo (OpenSC; see kh_p11_raw_sign). */
	if (kh_p11_raw_token_present(p->fl, t->slot_id, NULL) == 0) {
		t->certs_error = strdup("the token was removed");
		return t->certs_error != NULL ? 0 : kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	}
	if (kh_p11_copy_certs(p, t) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	return 0;
}

/* Select slot, one of libp11's list. */
static int
kh_p11_select_slot(struct kh_p11 *p, PKCS11_SLOT *slot, kh_error *err)
{
	char *label = kh_p11_clean_text(slot->token->label);

	if (label == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	kh_p11_unselect(p);
	p->slot = slot;
	p->selected = true;
	p->sel_slot = PKCS11_get_slotid_from_slot(slot);
	p->sel_label = label;
	p->sel_locked = slot->token->userPinLocked != 0;
	p->sel_removable = slot->removable != 0;
	return 0;
}

int
kh_p11_use_token(struct kh_p11 *p, const struct kh_p11_token *t, kh_error *err)
{
	if (!kh_p11_current(p, t))
		return kh_fail(err, KH_ERR_INTERNAL, "that token is not in the module's current list");
	if (p->logged_in)
		return kh_fail(err, KH_ERR_INTERNAL, "a token is already logged in on this handle");
	return kh_p11_select_slot(p, &p->slots[t->index], err);
}

/* The same token: same slot, label and serial (what identifies it to us). */
static bool
kh_p11_same_token(PKCS11_SLOT *slot, const struct kh_p11_token *t)
{
	char *label, *serial;
	bool same;

	if (slot->token == NULL || !slot->token->initialized ||
	    PKCS11_get_slotid_from_slot(slot) != t->slot_id)
		return false;
	label = kh_p11_clean_text(slot->token->label);
	serial = kh_p11_clean_text(slot->token->serialnr);
	same = label != NULL && serial != NULL && strcmp(label, t->label) == 0 &&
	       strcmp(serial, t->serial) == 0;
	free(label);
	free(serial);
	return same;
}

int
kh_p11_refresh_token(struct kh_p11 *p, struct kh_p11_token *t, kh_error *err)
{
	unsigned int i;

	if (kh_p11_enumerate(p, err) != 0)
		return -1;
	for (i = 0; i < p->nslots; i++) {
		if (!kh_p11_same_token(&p->slots[i], t))
			continue;
		t->index = i;
		t->generation = p->generation;
		t->pin_flags = kh_p11_pin_flags(p->slots[i].token);
		return kh_p11_select_slot(p, &p->slots[i], err);
	}
	return kh_fail(err, KH_ERR_NOTFOUND, "token '%s' was removed", t->label);
}

int
kh_p11_find_token(struct kh_p11 *p, const char *label,
		  struct kh_p11_token_info *info, kh_error *err)
{
	PKCS11_SLOT *found = NULL;
	unsigned int i, n = 0;

	if (p == NULL || label == NULL || label[0] == '\0')
		return kh_fail(err, KH_ERR_INPUT, "no token label given");
	if (kh_p11_enumerate(p, err) != 0)
		return -1;
	for (i = 0; i < p->nslots; i++) {
		PKCS11_TOKEN *tok = p->slots[i].token;

		if (tok == NULL || !tok->initialized || tok->label == NULL)
			continue;
		if (strcmp(tok->label, label) == 0) {
			found = &p->slots[i];
			n++;
		}
	}
	if (n == 0)
		return kh_fail(err, KH_ERR_NOTFOUND, "no token labelled '%s' is present", label);
	if (n > 1)
		return kh_fail(err, KH_ERR_REFUSED,
			       "%u tokens are labelled '%s'; remove all but one", n, label);
	if (kh_p11_select_slot(p, found, err) != 0)
		return -1;
	if (info != NULL) {
		memset(info, 0, sizeof(*info));
		info->label = strdup(found->token->label);
		info->serial = strdup(found->token->serialnr != NULL ? found->token->serialnr : "");
		info->pin_flags = kh_p11_pin_flags(found->token);
		if (info->label == NULL || info->serial == NULL) {
			kh_p11_token_info_clear(info);
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		}
	}
	return 0;
}

static const char *
kh_p11_text_mismatch(const char *want, const char *have, const char *name)
{
	return want != NULL && strcmp(want, have) != 0 ? name : NULL;
}

const char *
kh_p11_uri_mismatch(const struct kh_p11_uri *u, const struct kh_p11_token *t)
{
	const char *bad;

	if (u == NULL)
		return NULL;
	if ((bad = kh_p11_text_mismatch(u->token, t->label, "token")) != NULL ||
	    (bad = kh_p11_text_mismatch(u->manufacturer, t->manufacturer, "manufacturer")) != NULL ||
	    (bad = kh_p11_text_mismatch(u->model, t->model, "model")) != NULL ||
	    (bad = kh_p11_text_mismatch(u->serial, t->serial, "serial")) != NULL ||
	    (bad = kh_p11_text_mismatch(u->slot_description, t->slot_description,
					"slot-description")) != NULL ||
	    (bad = kh_p11_text_mismatch(u->slot_manufacturer, t->slot_manufacturer,
					"slot-manufacturer")) != NULL)
		return bad;
	if (u->has_slot_id && u->slot_id != t->slot_id)
		return "slot-id";
	return NULL;
}

/*
 * ---- A token named by a URI, found without libp11 (the issuer's) ----
 *
 * libp11's listing reads every slot's CK_SLOT_INFO and CK_TOKEN_INFO and
 * closes every slot's sessions when released: on a network HSM each is a
 * round trip (issue #30), and the issuer's token needs none of libp11
 * after this.  So: the slots with a token, each one's CK_TOKEN_INFO, and
 * CK_SLOT_INFO only when the URI names the slot's description or maker.
 */

/* A blank-padded CK_*_INFO text field as a C string, cleaned. */
static char *
kh_p11_padded(const CK_UTF8CHAR *field, size_t size)
{
	char buf[65];
	size_t n = size < sizeof(buf) - 1 ? size : sizeof(buf) - 1;

	memcpy(buf, field, n);
	while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\0'))
		n--;
	buf[n] = '\0';
	return kh_p11_clean_text(buf);
}

static unsigned
kh_p11_info_pin_flags(CK_FLAGS f)
{
	return ((f & CKF_USER_PIN_COUNT_LOW) ? KH_P11_PIN_COUNT_LOW : 0) |
	       ((f & CKF_USER_PIN_FINAL_TRY) ? KH_P11_PIN_FINAL_TRY : 0) |
	       ((f & CKF_USER_PIN_LOCKED) ? KH_P11_PIN_LOCKED : 0) |
	       ((f & CKF_USER_PIN_TO_BE_CHANGED) ? KH_P11_PIN_TO_BE_CHANGED : 0);
}

/* The initialised token in slot s into t: 0, 1 when there is none, -1
 * with err. */
static int
kh_p11_raw_token_info(struct kh_p11 *p, CK_SLOT_ID s, struct kh_p11_token *t, kh_error *err)
{
	CK_TOKEN_INFO ti;
	CK_RV rv = p->fl->C_GetTokenInfo(s, &ti);

	memset(t, 0, sizeof(*t));
	if (rv == CKR_TOKEN_NOT_PRESENT || rv == CKR_TOKEN_NOT_RECOGNIZED ||
	    rv == CKR_SLOT_ID_INVALID || rv == CKR_DEVICE_REMOVED)
		return 1;
	if (rv != CKR_OK)
		return kh_fail(err, KH_ERR_TOKEN, "PKCS#11 module %s: cannot read the token in "
			       "slot %lu (CKR 0x%lx)", p->path, (unsigned long)s, (unsigned long)rv);
	if (!(ti.flags & CKF_TOKEN_INITIALIZED))
		return 1;
	t->slot_id = s;
	t->present = t->initialized = true;
	t->pin_flags = kh_p11_info_pin_flags(ti.flags);
	t->label = kh_p11_padded(ti.label, sizeof(ti.label));
	t->manufacturer = kh_p11_padded(ti.manufacturerID, sizeof(ti.manufacturerID));
	t->model = kh_p11_padded(ti.model, sizeof(ti.model));
	t->serial = kh_p11_padded(ti.serialNumber, sizeof(ti.serialNumber));
	t->slot_description = strdup("");
	t->slot_manufacturer = strdup("");
	if (t->label == NULL || t->manufacturer == NULL || t->model == NULL ||
	    t->serial == NULL || t->slot_description == NULL || t->slot_manufacturer == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	return 0;
}

/* The slot's description and maker into t; *removable. */
static int
kh_p11_raw_slot_info(struct kh_p11 *p, struct kh_p11_token *t, bool *removable, kh_error *err)
{
	CK_SLOT_INFO si;
	CK_RV rv = p->fl->C_GetSlotInfo(t->slot_id, &si);

	if (rv != CKR_OK)
		return kh_fail(err, kh_p11_raw_gone(rv) ? KH_ERR_NOTFOUND : KH_ERR_TOKEN,
			       "PKCS#11 module %s: cannot read slot %lu (CKR 0x%lx)", p->path,
			       t->slot_id, (unsigned long)rv);
	free(t->slot_description);
	free(t->slot_manufacturer);
	t->slot_description = kh_p11_padded(si.slotDescription, sizeof(si.slotDescription));
	t->slot_manufacturer = kh_p11_padded(si.manufacturerID, sizeof(si.manufacturerID));
	if (t->slot_description == NULL || t->slot_manufacturer == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	*removable = (si.flags & CKF_REMOVABLE_DEVICE) != 0;
	return 0;
}

/* The slots with a token: C_GetSlotList twice (the first asks the module
 * to look afresh, which OpenSC does only then).  *ids: free(). */
static int
kh_p11_raw_slots(struct kh_p11 *p, CK_SLOT_ID **ids, CK_ULONG *n, kh_error *err)
{
	CK_ULONG count = 0;
	CK_RV rv;

	*ids = NULL;
	*n = 0;
	for (int tries = 0; tries < 3; tries++) {
		rv = p->fl->C_GetSlotList(CK_TRUE, NULL, &count);
		if (rv != CKR_OK)
			break;
		if (count == 0)
			return 0;
		if (count > 4096)
			return kh_fail(err, KH_ERR_TOKEN, "PKCS#11 module %s: %lu slots", p->path,
				       (unsigned long)count);
		free(*ids);
		if ((*ids = calloc(count, sizeof(**ids))) == NULL)
			return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
		rv = p->fl->C_GetSlotList(CK_TRUE, *ids, &count);
		if (rv != CKR_BUFFER_TOO_SMALL)
			break;
	}
	if (rv != CKR_OK) {
		free(*ids);
		*ids = NULL;
		return kh_fail(err, KH_ERR_TOKEN, "PKCS#11 module %s: cannot list slots (CKR 0x%lx)",
			       p->path, (unsigned long)rv);
	}
	*n = count;
	return 0;
}

/* The one initialised token labelled u->token, into *found (its slot's
 * text read only when u names it).  -1 with err. */
static int
kh_p11_raw_find_token(struct kh_p11 *p, const struct kh_p11_uri *u, struct kh_p11_token *found,
		      bool *removable, kh_error *err)
{
	struct kh_p11_token t;
	CK_SLOT_ID *ids = NULL;
	CK_ULONG n = 0, i;
	size_t hits = 0;
	int r = 0;

	memset(found, 0, sizeof(*found));
	if (kh_p11_raw_slots(p, &ids, &n, err) != 0)
		return -1;
	for (i = 0; i < n && r >= 0; i++) {
		if ((r = kh_p11_raw_token_info(p, ids[i], &t, err)) == 0 &&
		    strcmp(t.label, u->token) == 0 && hits++ == 0) {
			*found = t;
			continue;
		}
		kh_p11_tokens_free_one(&t);
	}
	free(ids);
	if (r < 0)
		return -1;
	if (hits == 0)
		return kh_fail(err, KH_ERR_NOTFOUND, "no token labelled '%s' is present", u->token);
	if (hits > 1)
		return kh_fail(err, KH_ERR_REFUSED, "%zu tokens are labelled '%s'; remove all but one",
			       hits, u->token);
	*removable = true;      /* not read: the cautious answer */
	if (u->slot_description != NULL || u->slot_manufacturer != NULL)
		return kh_p11_raw_slot_info(p, found, removable, err);
	return 0;
}

int
kh_p11_use_uri_token(struct kh_p11 *p, const struct kh_p11_uri *u, const char *uri,
		     kh_error *err)
{
	struct kh_p11_token t;
	struct kh_env_saved saved;
	const char *bad;
	bool removable = true;
	int rc;

	if (p == NULL || u == NULL || u->token == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "no module or token to select");
	if (kh_p11_listing_begin(p, &saved, err) != 0)
		return -1;
	rc = kh_p11_raw_find_token(p, u, &t, &removable, err);
	kh_env_restore(&saved);
	if (rc != 0) {
		kh_p11_tokens_free_one(&t);
		return -1;
	}
	if (u->serial != NULL && strcmp(u->serial, t.serial) != 0) {
		rc = kh_fail(err, KH_ERR_NOTFOUND, "token '%s' has serial %s, not %s as %s says",
			     u->token, t.serial, u->serial, uri);
	} else if ((bad = kh_p11_uri_mismatch(u, &t)) != NULL) {
		rc = kh_fail(err, KH_ERR_NOTFOUND, "token '%s' does not have the %s %s says",
			     u->token, bad, uri);
	} else {
		p->selected = true;
		p->sel_slot = t.slot_id;
		p->sel_label = t.label;
		p->sel_locked = (t.pin_flags & KH_P11_PIN_LOCKED) != 0;
		p->sel_removable = removable;
		t.label = NULL;
	}
	kh_p11_tokens_free_one(&t);
	return rc;
}

/* What identifies the user's key and certificate on the token. */
struct kh_p11_match {
	const char *label;          /* NULL = any */
	const unsigned char *id;    /* NULL = any */
	size_t id_len;
};

static bool
kh_p11_matches(const struct kh_p11_match *m, const char *label,
	       const unsigned char *id, size_t id_len)
{
	if (m->label != NULL && (label == NULL || strcmp(label, m->label) != 0))
		return false;
	if (m->id != NULL && (id_len != m->id_len || memcmp(id, m->id, id_len) != 0))
		return false;
	return true;
}

static const char *
kh_p11_match_name(const struct kh_p11_match *m)
{
	return m->label != NULL ? m->label : "(by id)";
}

static int
kh_p11_need_token(const struct kh_p11 *p, kh_error *err)
{
	if (p == NULL || !p->selected)
		return kh_fail(err, KH_ERR_INTERNAL, "no token selected (kh_p11_use_token first)");
	return 0;
}

static int
kh_p11_cert_by_match(struct kh_p11 *p, const struct kh_p11_match *m,
		     X509 **cert, kh_error *err)
{
	PKCS11_CERT *certs = NULL, *found = NULL;
	unsigned int i, n = 0, hits = 0;

	*cert = NULL;
	if (kh_p11_need_token(p, err) != 0)
		return -1;
	if (p->slot == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "token '%s' was not listed by libp11",
			       p->sel_label);
	ERR_clear_error();
	if (PKCS11_enumerate_certs(p->slot->token, &certs, &n) != 0)
		return kh_p11_fail_op(err, p->slot->token->label, "cannot list certificates");
	for (i = 0; i < n; i++) {
		if (kh_p11_matches(m, certs[i].label, certs[i].id, certs[i].id_len)) {
			found = &certs[i];
			hits++;
		}
	}
	if (hits == 0)
		return kh_fail(err, KH_ERR_NOTFOUND, "token '%s' holds no certificate for key %s",
			       p->slot->token->label, kh_p11_match_name(m));
	if (hits > 1)
		return kh_fail(err, KH_ERR_REFUSED,
			       "token '%s' holds %u certificates for key %s; it must be exactly one",
			       p->slot->token->label, hits, kh_p11_match_name(m));
	if (found->x509 == NULL || X509_up_ref(found->x509) != 1)
		return kh_fail(err, KH_ERR_TOKEN, "token '%s': certificate %s cannot be read",
			       p->slot->token->label, kh_p11_match_name(m));
	*cert = found->x509;
	return 0;
}

/* Is a token key of type t the same kind of key as pub (a certificate's)?
 * Only a cheap first check, with the right message: that it is the very
 * key shows in the signature, which every caller handing in a certificate
 * verifies with it (the proof of possession; kh_x509_mint_cert). */
static bool
kh_p11_key_type_is(CK_KEY_TYPE t, const EVP_PKEY *pub)
{
	switch (EVP_PKEY_get_base_id(pub)) {
	case EVP_PKEY_RSA:
	case EVP_PKEY_RSA_PSS:
		return t == CKK_RSA;
	case EVP_PKEY_EC:
		return t == CKK_EC;
	default:
		return false;
	}
}

/*
 * The one private key m names, by one exact search on our logged-in
 * session (never a listing of the token's keys: its cost would grow with
 * what else the token holds, issue #30).  Its public half is pub's when the
 * caller has the certificate, else read from the token.
 */
static int
kh_p11_key_by_match(struct kh_p11 *p, const struct kh_p11_match *m, const EVP_PKEY *pub,
		    EVP_PKEY **key, kh_error *err)
{
	struct kh_p11_raw_match rm = {
		.cls = CKO_PRIVATE_KEY, .label = m->label, .id = m->id, .id_len = m->id_len,
	};
	CK_OBJECT_HANDLE obj[2];
	CK_KEY_TYPE type;
	EVP_PKEY *read = NULL;
	const char *label;
	size_t n = 0;
	bool always_auth;

	*key = NULL;
	if (kh_p11_need_token(p, err) != 0)
		return -1;
	label = p->sel_label;
	if (!p->logged_in || !p->raw.open)
		return kh_fail(err, KH_ERR_INTERNAL, "token '%s': not logged in", label);
	/* Two at most: a second one is all "exactly one" needs to know. */
	if (kh_p11_raw_find(&p->raw, &rm, obj, 2, &n, err) != 0)
		return kh_p11_fail_raw(err, label, "cannot search for the key");
	if (n == 0)
		return kh_fail(err, KH_ERR_NOTFOUND, "token '%s' holds no private key %s", label,
			       kh_p11_match_name(m));
	if (n > 1)
		return kh_fail(err, KH_ERR_REFUSED,
			       "token '%s' holds more than one private key %s; it must be exactly one",
			       label, kh_p11_match_name(m));
	if (kh_p11_raw_key_facts(&p->raw, obj[0], &type, &always_auth, err) != 0)
		return kh_p11_fail_raw(err, label, "cannot read the key");
	if (pub != NULL && !kh_p11_key_type_is(type, pub))
		return kh_fail(err, KH_ERR_CONFIG, "token '%s': private key %s is not of the "
			       "certificate's key type", label, kh_p11_match_name(m));
	if (pub == NULL && (pub = read = kh_p11_raw_public(&p->raw, obj[0], &rm, err)) == NULL)
		return kh_p11_fail_raw(err, label, "cannot read the key");
	*key = kh_p11_raw_key_new(&p->methods, &p->raw, obj[0], pub,
				  always_auth ? p->pin : NULL, err);
	EVP_PKEY_free(read);
	return *key != NULL ? 0 : -1;
}

/* Turn the caller's label / hex id into a match; *id_buf is freed by the caller. */
static int
kh_p11_match_init(struct kh_p11_match *m, const char *key_label, const char *key_id,
		  unsigned char **id_buf, kh_error *err)
{
	memset(m, 0, sizeof(*m));
	*id_buf = NULL;
	if (key_label != NULL && key_label[0] != '\0')
		m->label = key_label;
	if (key_id != NULL && key_id[0] != '\0') {
		if (kh_p11_hex_decode(key_id, id_buf, &m->id_len, err) != 0)
			return -1;
		m->id = *id_buf;
	}
	if (m->label == NULL && m->id == NULL)
		return kh_fail(err, KH_ERR_CONFIG, "neither a key label nor a key id is configured");
	return 0;
}

int
kh_p11_find_cert(struct kh_p11 *p, const char *key_label, const char *key_id,
		 X509 **cert, kh_error *err)
{
	struct kh_p11_match m;
	unsigned char *id = NULL;
	int rc;

	*cert = NULL;
	if (kh_p11_match_init(&m, key_label, key_id, &id, err) != 0)
		return -1;
	rc = kh_p11_cert_by_match(p, &m, cert, err);
	free(id);
	return rc;
}

int
kh_p11_find_key(struct kh_p11 *p, const char *key_label, const char *key_id,
		EVP_PKEY **key, kh_error *err)
{
	struct kh_p11_match m;
	unsigned char *id = NULL;
	int rc;

	*key = NULL;
	if (kh_p11_match_init(&m, key_label, key_id, &id, err) != 0)
		return -1;
	rc = kh_p11_key_by_match(p, &m, NULL, key, err);
	free(id);
	return rc;
}

int
kh_p11_find_key_by_id(struct kh_p11 *p, const unsigned char *id, size_t id_len,
		      const char *key_label, EVP_PKEY **key, kh_error *err)
{
	struct kh_p11_match m = {
		.label = key_label != NULL && key_label[0] != '\0' ? key_label : NULL,
		.id = id,
		.id_len = id_len,
	};

	*key = NULL;
	if (id == NULL || id_len == 0)
		return kh_fail(err, KH_ERR_INTERNAL, "no CKA_ID to find the key by");
	return kh_p11_key_by_match(p, &m, NULL, key, err);
}

int
kh_p11_find_key_match(struct kh_p11 *p, const char *key_label, const unsigned char *id,
		      size_t id_len, const EVP_PKEY *pub, EVP_PKEY **key, kh_error *err)
{
	struct kh_p11_match m = {
		.label = key_label,
		.id = id_len > 0 ? id : NULL,
		.id_len = id_len,
	};

	*key = NULL;
	return kh_p11_key_by_match(p, &m, pub, key, err);
}

int
kh_p11_find_cert_key(struct kh_p11 *p, const struct kh_p11_cert *cert, const char *key_label,
		     const char *token_label, EVP_PKEY **key, kh_error *err)
{
	/* The certificate's public key is the key's (the proof of
	 * possession checks it): nothing more to read from the token. */
	struct kh_p11_match m = {
		.label = key_label != NULL && key_label[0] != '\0' ? key_label : NULL,
		.id = cert->id_len > 0 ? cert->id : NULL,
		.id_len = cert->id_len,
	};
	EVP_PKEY *pub = cert->x509 != NULL ? X509_get0_pubkey(cert->x509) : NULL;

	*key = NULL;
	if (m.id != NULL || m.label != NULL)
		return kh_p11_key_by_match(p, &m, pub, key, err);
	return kh_fail(err, KH_ERR_NOTFOUND, "the certificate on token '%s' has no CKA_ID to "
		       "find its key by; set token.key_label", token_label);
}

int
kh_p11_key_info(struct kh_p11 *p, const struct kh_p11_token *t, const unsigned char *id,
		size_t id_len, struct kh_p11_key_info *info, kh_error *err)
{
	struct kh_p11_raw_match m = {
		.cls = CKO_PRIVATE_KEY, .id = id, .id_len = id_len,
	};
	CK_OBJECT_HANDLE keys[KH_KEYS_PER_ID];
	struct kh_p11_raw r;
	size_t n = 0, i;
	int v, rc = -1;

	memset(info, 0, sizeof(*info));
	if (p == NULL || t == NULL || id == NULL || id_len == 0)
		return kh_fail(err, KH_ERR_INTERNAL, "no token or CKA_ID to look the key up by");
	if (kh_p11_raw_open(p->fl, t->slot_id, &r, err) != 0)
		return -1;
	if (kh_p11_raw_find(&r, &m, keys, KH_KEYS_PER_ID, &n, err) != 0)
		goto out;
	info->visible = n > 0;
	info->count = (unsigned)n;
	for (i = 0; i < n; i++) {
		if ((v = kh_p11_raw_bool(&r, keys[i], CKA_ALWAYS_AUTHENTICATE, err)) < 0)
			goto out;
		info->always_auth = info->always_auth || v == 1;
	}
	rc = 0;
out:
	kh_p11_raw_close(&r);
	return rc;
}

/* What a failed C_Login means to the user. */
static int
kh_p11_login_fail(kh_error *err, CK_RV rv, const char *label)
{
	switch (rv) {
	case CKR_PIN_INCORRECT:
	case CKR_PIN_INVALID:
	case CKR_PIN_LEN_RANGE:
		return kh_fail(err, KH_ERR_AUTH, "wrong PIN for token '%s'", label);
	case CKR_PIN_LOCKED:
		return kh_fail(err, KH_ERR_LOCKED, "token '%s' is locked (too many wrong PINs)", label);
	case CKR_PIN_EXPIRED:
		return kh_fail(err, KH_ERR_AUTH, "the PIN of token '%s' has expired; change it first", label);
	default:
		if (kh_p11_raw_gone(rv))
			return kh_fail(err, KH_ERR_NOTFOUND, "token '%s' was removed", label);
		return kh_fail(err, KH_ERR_TOKEN, "token '%s': login failed (CKR 0x%lx)", label,
			       (unsigned long)rv);
	}
}

/*
 * C_Login on a session of our own, which then finds and signs: from here
 * on libp11 is not asked for a session (kh_p11_raw.h), so a token pulled
 * now ends the login with a clear error instead of a wait in libp11
 * 0.4.13's session pool.
 */
int
kh_p11_login(struct kh_p11 *p, const char *pin, kh_error *err)
{
	const char *label;
	CK_RV rv;

	if (kh_p11_need_token(p, err) != 0)
		return -1;
	label = p->sel_label;
	if (pin == NULL)
		return kh_fail(err, KH_ERR_INPUT, "no PIN given for token '%s'", label);
	if (p->logged_in)
		return 0;
	/* The flags were read when the token was listed, just before: a
	 * locked PIN must not cost the user (or an attacker) another try —
	 * and the modules measured (OpenSC, ykcs11) send the PIN to a blocked
	 * card all the same, so this check is ours to make. */
	if (p->sel_locked)
		return kh_fail(err, KH_ERR_LOCKED,
			       "token '%s' is locked (too many wrong PINs); ask an administrator to unlock it",
			       label);
	if (kh_p11_session_on(p, p->sel_slot, err) != 0)
		return kh_p11_fail_raw(err, label, "cannot open a session");
	rv = kh_p11_raw_login(&p->raw, pin);
	if (rv != CKR_OK) {
		kh_p11_raw_close(&p->raw);
		return kh_p11_login_fail(err, rv, label);
	}
	p->logged_in = true;
	/* For context-specific logins only (kh_p11_raw_key): a PIN the
	 * token has just accepted. */
	p->pin = strdup(pin);
	if (p->pin == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	return 0;
}

/*
 * libp11 0.4.12 allocates its OpenSSL EC and RSA method tables once per
 * load and never frees them: a PAM host that unloads it with the module at
 * every pam_end would lose them at every login.
 */
bool
kh_p11_pin_library(void)
{
	return kh_pin_library_of((const void *)PKCS11_CTX_new);
}
