/*
 * p11shim — a PKCS#11 module for tests that forwards every call to a real
 * module (SoftHSM2 by default) and misbehaves on request: SoftHSM never
 * locks a PIN and never disappears, so the lockout and token-removal paths
 * need a token that does.
 *
 * Environment (read on every call, so one process can change it):
 *   KH_SHIM_MODULE      the real module (default /usr/lib/softhsm/libsofthsm2.so)
 *   KH_SHIM_PIN_FLAGS   list of count_low, final_try, locked, to_be_changed:
 *                       OR-ed into CK_TOKEN_INFO.flags; with "locked",
 *                       C_Login answers CKR_PIN_LOCKED without asking
 *   KH_SHIM_LOG         file: one line "C_Login" appended per C_Login call
 *                       (also the ones the shim refuses)
 *   KH_SHIM_TRACE       file: one line per C_Initialize, C_Finalize,
 *                       C_OpenSession, C_CloseSession, C_CloseAllSessions,
 *                       C_Login and C_Logout, with the slot ("C_Login 1"),
 *                       in call order: what a module's life in one login was
 *   KH_SHIM_CALLS       file: one line per PKCS#11 call of any kind, its name
 *                       ("C_FindObjects"): what a login costs a network HSM,
 *                       counted (tests/integration/tokens/p11_calls.sh)
 *   KH_SHIM_AFTER_LOGIN shell command run after every successful C_Login,
 *                       before it returns (pull the emulated card from its
 *                       reader at exactly that point)
 *   KH_SHIM_SLOT_FLAGS  "removable": CK_SLOT_INFO.flags gains
 *                       CKF_REMOVABLE_DEVICE, as a card reader's slot has
 *   KH_SHIM_VANISH      "login": C_Login answers CKR_DEVICE_REMOVED (token
 *                       pulled mid-login); "after-login": a successful
 *                       C_Login works, then the token is gone (slot info
 *                       without CKF_TOKEN_PRESENT, token info
 *                       CKR_TOKEN_NOT_PRESENT, session calls CKR_DEVICE_REMOVED);
 *                       "sign": everything works up to the first C_SignInit,
 *                       which finds the token gone (the challenge signature)
 *
 * The same settings may come from files in $KH_P11SHIM_DIR, for PAM stacks
 * that scrub the environment: "module", "flags", "vanish" (content as the
 * variable; an empty vanish file means after-login); C_Login lines are then
 * also appended to "logins" there.
 *
 * Some hosts empty the environment altogether (sshd's keyboard-interactive
 * auth child starts with none): without KH_P11SHIM_DIR the control files
 * are looked up in KH_SHIM_FIXED_DIR (/run/kubehsm-p11shim), which a test
 * bind-mounts over in its private mount namespace (tests/harness/logins.sh).
 * Outside such a namespace that directory is absent or empty, so the shim
 * just forwards; C_Login lines go to its "logins" only when that file
 * exists, so the shim never creates files there.
 *
 * Built by tests/integration/pam.mk (libkhp11shim.la).  Test code only: it
 * keeps process-global state, never installed.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <p11-kit/pkcs11.h>

#define KH_SHIM_DEFAULT_MODULE "/usr/lib/softhsm/libsofthsm2.so"
#ifndef KH_SHIM_FIXED_DIR
#define KH_SHIM_FIXED_DIR "/run/kubehsm-p11shim"
#endif

CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list);

static void *real_dl;
static CK_FUNCTION_LIST_PTR real;
static CK_FUNCTION_LIST shim;
static bool vanished;

/* True when no KH_P11SHIM_DIR is set and the fixed directory is in use. */
static bool
ctl_fixed(void)
{
	const char *dir = getenv("KH_P11SHIM_DIR");

	return dir == NULL || dir[0] == '\0';
}

/* Path of a control file, or NULL when it does not fit. */
static const char *
ctl_path(const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s",
			 ctl_fixed() ? KH_SHIM_FIXED_DIR : getenv("KH_P11SHIM_DIR"), name);

	return n > 0 && (size_t)n < len ? buf : NULL;
}

/* First line of a control file into buf; false if absent. */
static bool
ctl_read(const char *name, char *buf, size_t len)
{
	char path[4096];
	const char *p = ctl_path(name, path, sizeof(path));
	FILE *f;
	bool ok;

	if (p == NULL || (f = fopen(p, "re")) == NULL)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

static bool
ctl_exists(const char *name)
{
	char path[4096];
	const char *p = ctl_path(name, path, sizeof(path));
	FILE *f;

	if (p == NULL || (f = fopen(p, "re")) == NULL)
		return false;
	fclose(f);
	return true;
}

/* A setting from the environment, else from the control directory. */
static const char *
setting(const char *var, const char *file, char *buf, size_t len)
{
	const char *v = getenv(var);

	if (v != NULL && v[0] != '\0')
		return v;
	if (ctl_read(file, buf, len))
		return buf;
	if (strcmp(file, "vanish") == 0 && ctl_exists("vanish")) {
		snprintf(buf, len, "after-login");
		return buf;
	}
	return NULL;
}

static bool
vanish_is(const char *mode)
{
	char buf[64];
	const char *v = setting("KH_SHIM_VANISH", "vanish", buf, sizeof(buf));

	if (v == NULL)
		return false;
	if (v[0] == '\0')
		v = "after-login";
	return strcmp(v, mode) == 0;
}

static CK_FLAGS
ctl_flags(void)
{
	char store[256];
	const char *buf = setting("KH_SHIM_PIN_FLAGS", "flags", store, sizeof(store));
	CK_FLAGS f = 0;

	if (buf == NULL)
		return 0;
	if (strstr(buf, "locked") != NULL)
		f |= CKF_USER_PIN_LOCKED;
	if (strstr(buf, "final_try") != NULL)
		f |= CKF_USER_PIN_FINAL_TRY;
	if (strstr(buf, "count_low") != NULL)
		f |= CKF_USER_PIN_COUNT_LOW;
	if (strstr(buf, "to_be_changed") != NULL)
		f |= CKF_USER_PIN_TO_BE_CHANGED;
	return f;
}

/* Append a line to path; with create false only to a file that exists. */
static void
append_line(const char *path, const char *line, bool create)
{
	int fd;

	if (path == NULL || path[0] == '\0')
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
	if (fd < 0)
		return;
	if (write(fd, line, strlen(line)) < 0 || write(fd, "\n", 1) < 0) {
		/* a test reading the log will notice the missing line */
	}
	close(fd);
}

static void
log_login(void)
{
	char path[4096];

	append_line(getenv("KH_SHIM_LOG"), "C_Login", true);
	append_line(ctl_path("logins", path, sizeof(path)), "C_Login", !ctl_fixed());
}

/* One KH_SHIM_TRACE line: the call, and its slot when it has one. */
static void
trace(const char *call, bool has_slot, CK_SLOT_ID slot)
{
	char line[96];

	if (has_slot)
		(void)snprintf(line, sizeof(line), "%s %lu", call, (unsigned long)slot);
	else
		(void)snprintf(line, sizeof(line), "%s", call);
	append_line(getenv("KH_SHIM_TRACE"), line, true);
}

/* One KH_SHIM_CALLS line. */
static void
count_call(const char *call)
{
	append_line(getenv("KH_SHIM_CALLS"), call, true);
}

/* The slot of session s, for the trace. */
static void
trace_session(const char *call, CK_SESSION_HANDLE s)
{
	CK_SESSION_INFO info;

	if (getenv("KH_SHIM_TRACE") == NULL)
		return;
	if (real->C_GetSessionInfo(s, &info) == CKR_OK)
		trace(call, true, info.slotID);
	else
		trace(call, false, 0);
}

static CK_RV
shim_Initialize(CK_VOID_PTR args)
{
	count_call("C_Initialize");
	trace("C_Initialize", false, 0);
	return real->C_Initialize(args);
}

static CK_RV
shim_GetSlotInfo(CK_SLOT_ID slot, CK_SLOT_INFO_PTR info)
{
	const char *f = getenv("KH_SHIM_SLOT_FLAGS");
	CK_RV rv;

	count_call("C_GetSlotInfo");
	rv = real->C_GetSlotInfo(slot, info);
	if (rv == CKR_OK && info != NULL && f != NULL && strstr(f, "removable") != NULL)
		info->flags |= CKF_REMOVABLE_DEVICE;
	if (rv == CKR_OK && info != NULL && vanished)
		info->flags &= ~(CK_FLAGS)CKF_TOKEN_PRESENT;
	return rv;
}

static CK_RV
shim_Logout(CK_SESSION_HANDLE s)
{
	count_call("C_Logout");
	trace_session("C_Logout", s);
	return real->C_Logout(s);
}

static CK_RV
shim_CloseSession(CK_SESSION_HANDLE s)
{
	count_call("C_CloseSession");
	trace_session("C_CloseSession", s);
	return real->C_CloseSession(s);
}

static CK_RV
shim_CloseAllSessions(CK_SLOT_ID slot)
{
	count_call("C_CloseAllSessions");
	trace("C_CloseAllSessions", true, slot);
	return real->C_CloseAllSessions(slot);
}

static CK_RV
shim_GetTokenInfo(CK_SLOT_ID slot, CK_TOKEN_INFO_PTR info)
{
	CK_RV rv;

	count_call("C_GetTokenInfo");
	if (vanished)
		return CKR_TOKEN_NOT_PRESENT;
	rv = real->C_GetTokenInfo(slot, info);
	if (rv == CKR_OK && info != NULL)
		info->flags |= ctl_flags();
	return rv;
}

static CK_RV
shim_Login(CK_SESSION_HANDLE s, CK_USER_TYPE type, CK_UTF8CHAR_PTR pin, CK_ULONG len)
{
	CK_RV rv;

	count_call("C_Login");
	log_login();
	trace_session("C_Login", s);
	if (vanished || vanish_is("login"))
		return CKR_DEVICE_REMOVED;
	if (type == CKU_USER && (ctl_flags() & CKF_USER_PIN_LOCKED))
		return CKR_PIN_LOCKED;
	rv = real->C_Login(s, type, pin, len);
	if (rv == CKR_OK && getenv("KH_SHIM_AFTER_LOGIN") != NULL &&
	    system(getenv("KH_SHIM_AFTER_LOGIN")) != 0) {
		/* the test checks what the command did */
	}
	if (rv == CKR_OK && vanish_is("after-login"))
		vanished = true;
	return rv;
}

/* After "removal" every session operation fails the way a pulled card does. */
#define SHIM_GONE(name, params, args)                             \
	static CK_RV shim_##name params                           \
	{                                                         \
		count_call("C_" #name);                                \
		if (vanished)                                     \
			return CKR_DEVICE_REMOVED;                \
		return real->C_##name args;                       \
	}

static CK_RV
shim_OpenSession(CK_SLOT_ID a, CK_FLAGS b, CK_VOID_PTR c, CK_NOTIFY d, CK_SESSION_HANDLE_PTR e)
{
	count_call("C_OpenSession");
	trace("C_OpenSession", true, a);
	if (vanished)
		return CKR_DEVICE_REMOVED;
	return real->C_OpenSession(a, b, c, d, e);
}
SHIM_GONE(GetSessionInfo, (CK_SESSION_HANDLE a, CK_SESSION_INFO_PTR b), (a, b))
SHIM_GONE(FindObjectsInit, (CK_SESSION_HANDLE a, CK_ATTRIBUTE_PTR b, CK_ULONG c), (a, b, c))
SHIM_GONE(FindObjects, (CK_SESSION_HANDLE a, CK_OBJECT_HANDLE_PTR b, CK_ULONG c, CK_ULONG_PTR d),
	  (a, b, c, d))
SHIM_GONE(GetAttributeValue, (CK_SESSION_HANDLE a, CK_OBJECT_HANDLE b, CK_ATTRIBUTE_PTR c, CK_ULONG d),
	  (a, b, c, d))

static CK_RV
shim_SignInit(CK_SESSION_HANDLE a, CK_MECHANISM_PTR b, CK_OBJECT_HANDLE c)
{
	count_call("C_SignInit");
	if (!vanished && vanish_is("sign"))
		vanished = true;
	if (vanished)
		return CKR_DEVICE_REMOVED;
	return real->C_SignInit(a, b, c);
}
SHIM_GONE(Sign, (CK_SESSION_HANDLE a, CK_BYTE_PTR b, CK_ULONG c, CK_BYTE_PTR d, CK_ULONG_PTR e),
	  (a, b, c, d, e))

static CK_RV
shim_Finalize(CK_VOID_PTR reserved)
{
	CK_RV rv;

	count_call("C_Finalize");
	trace("C_Finalize", false, 0);
	rv = real->C_Finalize(reserved);

	vanished = false;
	return rv;
}

/* Every other call: counted, then forwarded. */
#define SHIM_PASS(name, params, args)                             \
	static CK_RV shim_##name params                           \
	{                                                         \
		count_call("C_" #name);                                \
		return real->C_##name args;                       \
	}
SHIM_PASS(GetInfo, (CK_INFO_PTR info),
	  (info))
SHIM_PASS(GetSlotList, (CK_BBOOL token_present, CK_SLOT_ID_PTR slot_list, CK_ULONG_PTR count),
	  (token_present, slot_list, count))
SHIM_PASS(WaitForSlotEvent, (CK_FLAGS flags, CK_SLOT_ID_PTR slot, CK_VOID_PTR reserved),
	  (flags, slot, reserved))
SHIM_PASS(GetMechanismList, (CK_SLOT_ID slot_id, CK_MECHANISM_TYPE_PTR mechanism_list, CK_ULONG_PTR count),
	  (slot_id, mechanism_list, count))
SHIM_PASS(GetMechanismInfo, (CK_SLOT_ID slot_id, CK_MECHANISM_TYPE type, CK_MECHANISM_INFO_PTR info),
	  (slot_id, type, info))
SHIM_PASS(InitToken, (CK_SLOT_ID slot_id, CK_BYTE_PTR pin, CK_ULONG pin_len, CK_BYTE_PTR label),
	  (slot_id, pin, pin_len, label))
SHIM_PASS(InitPIN, (CK_SESSION_HANDLE session, CK_BYTE_PTR pin, CK_ULONG pin_len),
	  (session, pin, pin_len))
SHIM_PASS(SetPIN, (CK_SESSION_HANDLE session, CK_BYTE_PTR old_pin, CK_ULONG old_len, CK_BYTE_PTR new_pin, CK_ULONG new_len),
	  (session, old_pin, old_len, new_pin, new_len))
SHIM_PASS(GetOperationState, (CK_SESSION_HANDLE session, CK_BYTE_PTR operation_state, CK_ULONG_PTR operation_state_len),
	  (session, operation_state, operation_state_len))
SHIM_PASS(SetOperationState, (CK_SESSION_HANDLE session, CK_BYTE_PTR operation_state, CK_ULONG operation_state_len, CK_OBJECT_HANDLE encryption_key, CK_OBJECT_HANDLE authentiation_key),
	  (session, operation_state, operation_state_len, encryption_key, authentiation_key))
SHIM_PASS(CreateObject, (CK_SESSION_HANDLE session, CK_ATTRIBUTE_PTR templ, CK_ULONG count, CK_OBJECT_HANDLE_PTR object),
	  (session, templ, count, object))
SHIM_PASS(CopyObject, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE object, CK_ATTRIBUTE_PTR templ, CK_ULONG count, CK_OBJECT_HANDLE_PTR new_object),
	  (session, object, templ, count, new_object))
SHIM_PASS(DestroyObject, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE object),
	  (session, object))
SHIM_PASS(GetObjectSize, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE object, CK_ULONG_PTR size),
	  (session, object, size))
SHIM_PASS(SetAttributeValue, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE object, CK_ATTRIBUTE_PTR templ, CK_ULONG count),
	  (session, object, templ, count))
SHIM_PASS(FindObjectsFinal, (CK_SESSION_HANDLE session),
	  (session))
SHIM_PASS(EncryptInit, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE key),
	  (session, mechanism, key))
SHIM_PASS(Encrypt, (CK_SESSION_HANDLE session, CK_BYTE_PTR data, CK_ULONG data_len, CK_BYTE_PTR encrypted_data, CK_ULONG_PTR encrypted_data_len),
	  (session, data, data_len, encrypted_data, encrypted_data_len))
SHIM_PASS(EncryptUpdate, (CK_SESSION_HANDLE session, CK_BYTE_PTR part, CK_ULONG part_len, CK_BYTE_PTR encrypted_part, CK_ULONG_PTR encrypted_part_len),
	  (session, part, part_len, encrypted_part, encrypted_part_len))
SHIM_PASS(EncryptFinal, (CK_SESSION_HANDLE session, CK_BYTE_PTR last_encrypted_part, CK_ULONG_PTR last_encrypted_part_len),
	  (session, last_encrypted_part, last_encrypted_part_len))
SHIM_PASS(DecryptInit, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE key),
	  (session, mechanism, key))
SHIM_PASS(Decrypt, (CK_SESSION_HANDLE session, CK_BYTE_PTR encrypted_data, CK_ULONG encrypted_data_len, CK_BYTE_PTR data, CK_ULONG_PTR data_len),
	  (session, encrypted_data, encrypted_data_len, data, data_len))
SHIM_PASS(DecryptUpdate, (CK_SESSION_HANDLE session, CK_BYTE_PTR encrypted_part, CK_ULONG encrypted_part_len, CK_BYTE_PTR part, CK_ULONG_PTR part_len),
	  (session, encrypted_part, encrypted_part_len, part, part_len))
SHIM_PASS(DecryptFinal, (CK_SESSION_HANDLE session, CK_BYTE_PTR last_part, CK_ULONG_PTR last_part_len),
	  (session, last_part, last_part_len))
SHIM_PASS(DigestInit, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism),
	  (session, mechanism))
SHIM_PASS(Digest, (CK_SESSION_HANDLE session, CK_BYTE_PTR data, CK_ULONG data_len, CK_BYTE_PTR digest, CK_ULONG_PTR digest_len),
	  (session, data, data_len, digest, digest_len))
SHIM_PASS(DigestUpdate, (CK_SESSION_HANDLE session, CK_BYTE_PTR part, CK_ULONG part_len),
	  (session, part, part_len))
SHIM_PASS(DigestKey, (CK_SESSION_HANDLE session, CK_OBJECT_HANDLE key),
	  (session, key))
SHIM_PASS(DigestFinal, (CK_SESSION_HANDLE session, CK_BYTE_PTR digest, CK_ULONG_PTR digest_len),
	  (session, digest, digest_len))
SHIM_PASS(SignUpdate, (CK_SESSION_HANDLE session, CK_BYTE_PTR part, CK_ULONG part_len),
	  (session, part, part_len))
SHIM_PASS(SignFinal, (CK_SESSION_HANDLE session, CK_BYTE_PTR signature, CK_ULONG_PTR signature_len),
	  (session, signature, signature_len))
SHIM_PASS(SignRecoverInit, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE key),
	  (session, mechanism, key))
SHIM_PASS(SignRecover, (CK_SESSION_HANDLE session, CK_BYTE_PTR data, CK_ULONG data_len, CK_BYTE_PTR signature, CK_ULONG_PTR signature_len),
	  (session, data, data_len, signature, signature_len))
SHIM_PASS(VerifyInit, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE key),
	  (session, mechanism, key))
SHIM_PASS(Verify, (CK_SESSION_HANDLE session, CK_BYTE_PTR data, CK_ULONG data_len, CK_BYTE_PTR signature, CK_ULONG signature_len),
	  (session, data, data_len, signature, signature_len))
SHIM_PASS(VerifyUpdate, (CK_SESSION_HANDLE session, CK_BYTE_PTR part, CK_ULONG part_len),
	  (session, part, part_len))
SHIM_PASS(VerifyFinal, (CK_SESSION_HANDLE session, CK_BYTE_PTR signature, CK_ULONG signature_len),
	  (session, signature, signature_len))
SHIM_PASS(VerifyRecoverInit, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE key),
	  (session, mechanism, key))
SHIM_PASS(VerifyRecover, (CK_SESSION_HANDLE session, CK_BYTE_PTR signature, CK_ULONG signature_len, CK_BYTE_PTR data, CK_ULONG_PTR data_len),
	  (session, signature, signature_len, data, data_len))
SHIM_PASS(DigestEncryptUpdate, (CK_SESSION_HANDLE session, CK_BYTE_PTR part, CK_ULONG part_len, CK_BYTE_PTR encrypted_part, CK_ULONG_PTR encrypted_part_len),
	  (session, part, part_len, encrypted_part, encrypted_part_len))
SHIM_PASS(DecryptDigestUpdate, (CK_SESSION_HANDLE session, CK_BYTE_PTR encrypted_part, CK_ULONG encrypted_part_len, CK_BYTE_PTR part, CK_ULONG_PTR part_len),
	  (session, encrypted_part, encrypted_part_len, part, part_len))
SHIM_PASS(SignEncryptUpdate, (CK_SESSION_HANDLE session, CK_BYTE_PTR part, CK_ULONG part_len, CK_BYTE_PTR encrypted_part, CK_ULONG_PTR encrypted_part_len),
	  (session, part, part_len, encrypted_part, encrypted_part_len))
SHIM_PASS(DecryptVerifyUpdate, (CK_SESSION_HANDLE session, CK_BYTE_PTR encrypted_part, CK_ULONG encrypted_part_len, CK_BYTE_PTR part, CK_ULONG_PTR part_len),
	  (session, encrypted_part, encrypted_part_len, part, part_len))
SHIM_PASS(GenerateKey, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_ATTRIBUTE_PTR templ, CK_ULONG count, CK_OBJECT_HANDLE_PTR key),
	  (session, mechanism, templ, count, key))
SHIM_PASS(GenerateKeyPair, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_ATTRIBUTE_PTR public_key_template, CK_ULONG public_key_attribute_count, CK_ATTRIBUTE_PTR private_key_template, CK_ULONG private_key_attribute_count, CK_OBJECT_HANDLE_PTR public_key, CK_OBJECT_HANDLE_PTR private_key),
	  (session, mechanism, public_key_template, public_key_attribute_count, private_key_template, private_key_attribute_count, public_key, private_key))
SHIM_PASS(WrapKey, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE wrapping_key, CK_OBJECT_HANDLE key, CK_BYTE_PTR wrapped_key, CK_ULONG_PTR wrapped_key_len),
	  (session, mechanism, wrapping_key, key, wrapped_key, wrapped_key_len))
SHIM_PASS(UnwrapKey, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE unwrapping_key, CK_BYTE_PTR wrapped_key, CK_ULONG wrapped_key_len, CK_ATTRIBUTE_PTR templ, CK_ULONG attribute_count, CK_OBJECT_HANDLE_PTR key),
	  (session, mechanism, unwrapping_key, wrapped_key, wrapped_key_len, templ, attribute_count, key))
SHIM_PASS(DeriveKey, (CK_SESSION_HANDLE session, CK_MECHANISM_PTR mechanism, CK_OBJECT_HANDLE base_key, CK_ATTRIBUTE_PTR templ, CK_ULONG attribute_count, CK_OBJECT_HANDLE_PTR key),
	  (session, mechanism, base_key, templ, attribute_count, key))
SHIM_PASS(SeedRandom, (CK_SESSION_HANDLE session, CK_BYTE_PTR seed, CK_ULONG seed_len),
	  (session, seed, seed_len))
SHIM_PASS(GenerateRandom, (CK_SESSION_HANDLE session, CK_BYTE_PTR random_data, CK_ULONG random_len),
	  (session, random_data, random_len))
SHIM_PASS(GetFunctionStatus, (CK_SESSION_HANDLE session),
	  (session))
SHIM_PASS(CancelFunction, (CK_SESSION_HANDLE session),
	  (session))

static CK_RV
shim_load(void)
{
	char buf[4096];
	const char *path = setting("KH_SHIM_MODULE", "module", buf, sizeof(buf));
	CK_RV (*get)(CK_FUNCTION_LIST_PTR_PTR);

	if (real != NULL)
		return CKR_OK;
	if (path == NULL)
		path = KH_SHIM_DEFAULT_MODULE;
	real_dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (real_dl == NULL)
		return CKR_GENERAL_ERROR;
	*(void **)&get = dlsym(real_dl, "C_GetFunctionList");
	if (get == NULL || get(&real) != CKR_OK || real == NULL) {
		dlclose(real_dl);
		real_dl = NULL;
		real = NULL;
		return CKR_GENERAL_ERROR;
	}
	shim = *real;
	shim.C_GetFunctionList = C_GetFunctionList;
	shim.C_Initialize = shim_Initialize;
	shim.C_Finalize = shim_Finalize;
	shim.C_GetSlotInfo = shim_GetSlotInfo;
	shim.C_Logout = shim_Logout;
	shim.C_CloseSession = shim_CloseSession;
	shim.C_CloseAllSessions = shim_CloseAllSessions;
	shim.C_GetTokenInfo = shim_GetTokenInfo;
	shim.C_Login = shim_Login;
	shim.C_OpenSession = shim_OpenSession;
	shim.C_GetSessionInfo = shim_GetSessionInfo;
	shim.C_FindObjectsInit = shim_FindObjectsInit;
	shim.C_FindObjects = shim_FindObjects;
	shim.C_GetAttributeValue = shim_GetAttributeValue;
	shim.C_SignInit = shim_SignInit;
	shim.C_Sign = shim_Sign;
	shim.C_GetInfo = shim_GetInfo;
	shim.C_GetSlotList = shim_GetSlotList;
	shim.C_WaitForSlotEvent = shim_WaitForSlotEvent;
	shim.C_GetMechanismList = shim_GetMechanismList;
	shim.C_GetMechanismInfo = shim_GetMechanismInfo;
	shim.C_InitToken = shim_InitToken;
	shim.C_InitPIN = shim_InitPIN;
	shim.C_SetPIN = shim_SetPIN;
	shim.C_GetOperationState = shim_GetOperationState;
	shim.C_SetOperationState = shim_SetOperationState;
	shim.C_CreateObject = shim_CreateObject;
	shim.C_CopyObject = shim_CopyObject;
	shim.C_DestroyObject = shim_DestroyObject;
	shim.C_GetObjectSize = shim_GetObjectSize;
	shim.C_SetAttributeValue = shim_SetAttributeValue;
	shim.C_FindObjectsFinal = shim_FindObjectsFinal;
	shim.C_EncryptInit = shim_EncryptInit;
	shim.C_Encrypt = shim_Encrypt;
	shim.C_EncryptUpdate = shim_EncryptUpdate;
	shim.C_EncryptFinal = shim_EncryptFinal;
	shim.C_DecryptInit = shim_DecryptInit;
	shim.C_Decrypt = shim_Decrypt;
	shim.C_DecryptUpdate = shim_DecryptUpdate;
	shim.C_DecryptFinal = shim_DecryptFinal;
	shim.C_DigestInit = shim_DigestInit;
	shim.C_Digest = shim_Digest;
	shim.C_DigestUpdate = shim_DigestUpdate;
	shim.C_DigestKey = shim_DigestKey;
	shim.C_DigestFinal = shim_DigestFinal;
	shim.C_SignUpdate = shim_SignUpdate;
	shim.C_SignFinal = shim_SignFinal;
	shim.C_SignRecoverInit = shim_SignRecoverInit;
	shim.C_SignRecover = shim_SignRecover;
	shim.C_VerifyInit = shim_VerifyInit;
	shim.C_Verify = shim_Verify;
	shim.C_VerifyUpdate = shim_VerifyUpdate;
	shim.C_VerifyFinal = shim_VerifyFinal;
	shim.C_VerifyRecoverInit = shim_VerifyRecoverInit;
	shim.C_VerifyRecover = shim_VerifyRecover;
	shim.C_DigestEncryptUpdate = shim_DigestEncryptUpdate;
	shim.C_DecryptDigestUpdate = shim_DecryptDigestUpdate;
	shim.C_SignEncryptUpdate = shim_SignEncryptUpdate;
	shim.C_DecryptVerifyUpdate = shim_DecryptVerifyUpdate;
	shim.C_GenerateKey = shim_GenerateKey;
	shim.C_GenerateKeyPair = shim_GenerateKeyPair;
	shim.C_WrapKey = shim_WrapKey;
	shim.C_UnwrapKey = shim_UnwrapKey;
	shim.C_DeriveKey = shim_DeriveKey;
	shim.C_SeedRandom = shim_SeedRandom;
	shim.C_GenerateRandom = shim_GenerateRandom;
	shim.C_GetFunctionStatus = shim_GetFunctionStatus;
	shim.C_CancelFunction = shim_CancelFunction;
	return CKR_OK;
}

__attribute__((visibility("default"))) CK_RV
C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list)
{
	CK_RV rv;

	if (list == NULL)
		return CKR_ARGUMENTS_BAD;
	rv = shim_load();
	if (rv != CKR_OK)
		return rv;
	*list = &shim;
	return CKR_OK;
}

/* The real module stays mapped while we are: drop it when we go. */
__attribute__((destructor)) static void
shim_unload(void)
{
	if (real_dl != NULL)
		dlclose(real_dl);
	real_dl = NULL;
	real = NULL;
}
