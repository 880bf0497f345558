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
 *   KH_SHIM_SLOT_FLAGS  "removable": CK_SLOT_INFO.flags gains
 *                       CKF_REMOVABLE_DEVICE, as a card reader's slot has
 *   KH_SHIM_VANISH      "login": C_Login answers CKR_DEVICE_REMOVED (token
 *                       pulled mid-login); "after-login": a successful
 *                       C_Login works, then the token is gone (token info
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
	trace("C_Initialize", false, 0);
	return real->C_Initialize(args);
}

static CK_RV
shim_GetSlotInfo(CK_SLOT_ID slot, CK_SLOT_INFO_PTR info)
{
	const char *f = getenv("KH_SHIM_SLOT_FLAGS");
	CK_RV rv = real->C_GetSlotInfo(slot, info);

	if (rv == CKR_OK && info != NULL && f != NULL && strstr(f, "removable") != NULL)
		info->flags |= CKF_REMOVABLE_DEVICE;
	return rv;
}

static CK_RV
shim_Logout(CK_SESSION_HANDLE s)
{
	trace_session("C_Logout", s);
	return real->C_Logout(s);
}

static CK_RV
shim_CloseSession(CK_SESSION_HANDLE s)
{
	trace_session("C_CloseSession", s);
	return real->C_CloseSession(s);
}

static CK_RV
shim_CloseAllSessions(CK_SLOT_ID slot)
{
	trace("C_CloseAllSessions", true, slot);
	return real->C_CloseAllSessions(slot);
}

static CK_RV
shim_GetTokenInfo(CK_SLOT_ID slot, CK_TOKEN_INFO_PTR info)
{
	CK_RV rv;

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

	log_login();
	trace_session("C_Login", s);
	if (vanished || vanish_is("login"))
		return CKR_DEVICE_REMOVED;
	if (type == CKU_USER && (ctl_flags() & CKF_USER_PIN_LOCKED))
		return CKR_PIN_LOCKED;
	rv = real->C_Login(s, type, pin, len);
	if (rv == CKR_OK && vanish_is("after-login"))
		vanished = true;
	return rv;
}

/* After "removal" every session operation fails the way a pulled card does. */
#define SHIM_GONE(name, params, args)                             \
	static CK_RV shim_##name params                           \
	{                                                         \
		if (vanished)                                     \
			return CKR_DEVICE_REMOVED;                \
		return real->C_##name args;                       \
	}

static CK_RV
shim_OpenSession(CK_SLOT_ID a, CK_FLAGS b, CK_VOID_PTR c, CK_NOTIFY d, CK_SESSION_HANDLE_PTR e)
{
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

	trace("C_Finalize", false, 0);
	rv = real->C_Finalize(reserved);

	vanished = false;
	return rv;
}

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
