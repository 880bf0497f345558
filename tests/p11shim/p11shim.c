/*
 * p11shim — a PKCS#11 module for tests that forwards every call to a real
 * module (SoftHSM2) and changes only what SoftHSM cannot show:
 *
 *   KH_SHIM_MODULE      the real module (default /usr/lib/softhsm/libsofthsm2.so)
 *   KH_SHIM_PIN_FLAGS   comma list of count_low, final_try, locked: OR-ed
 *                       into CK_TOKEN_INFO.flags of every token
 *   KH_SHIM_LOG         file: one line "C_Login" appended per C_Login call
 *                       (also the ones the shim refuses)
 *   KH_SHIM_VANISH      "login": C_Login answers CKR_DEVICE_REMOVED, as if
 *                       the token was pulled mid-login
 *
 * Settings are read from the environment on every call, so one process can
 * change them between logins.  Test code only; never installed.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <p11-kit/pkcs11.h>

#define DEFAULT_MODULE "/usr/lib/softhsm/libsofthsm2.so"

static void *real_handle;
static CK_FUNCTION_LIST_PTR real;
static CK_FUNCTION_LIST shim;

static CK_FLAGS
extra_flags(void)
{
	const char *s = getenv("KH_SHIM_PIN_FLAGS");
	CK_FLAGS f = 0;

	if (s == NULL)
		return 0;
	if (strstr(s, "count_low"))
		f |= CKF_USER_PIN_COUNT_LOW;
	if (strstr(s, "final_try"))
		f |= CKF_USER_PIN_FINAL_TRY;
	if (strstr(s, "locked"))
		f |= CKF_USER_PIN_LOCKED;
	return f;
}

static void
log_call(const char *what)
{
	const char *path = getenv("KH_SHIM_LOG");
	int fd;

	if (path == NULL || *path == '\0')
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, what, strlen(what)) < 0 || write(fd, "\n", 1) < 0) {
		/* a test reading the log will notice the missing line */
	}
	close(fd);
}

static CK_RV
shim_GetTokenInfo(CK_SLOT_ID slot, CK_TOKEN_INFO_PTR info)
{
	CK_RV rv = real->C_GetTokenInfo(slot, info);

	if (rv == CKR_OK && info != NULL)
		info->flags |= extra_flags();
	return rv;
}

static CK_RV
shim_Login(CK_SESSION_HANDLE h, CK_USER_TYPE type, CK_UTF8CHAR_PTR pin, CK_ULONG len)
{
	const char *vanish = getenv("KH_SHIM_VANISH");

	log_call("C_Login");
	if (vanish != NULL && strcmp(vanish, "login") == 0)
		return CKR_DEVICE_REMOVED;
	if (type == CKU_USER && (extra_flags() & CKF_USER_PIN_LOCKED))
		return CKR_PIN_LOCKED;
	return real->C_Login(h, type, pin, len);
}

static CK_RV
load_real(void)
{
	const char *path = getenv("KH_SHIM_MODULE");
	CK_RV (*get)(CK_FUNCTION_LIST_PTR_PTR);

	if (real != NULL)
		return CKR_OK;
	real_handle = dlopen(path && *path ? path : DEFAULT_MODULE, RTLD_NOW | RTLD_LOCAL);
	if (real_handle == NULL)
		return CKR_GENERAL_ERROR;
	get = (CK_RV (*)(CK_FUNCTION_LIST_PTR_PTR))dlsym(real_handle, "C_GetFunctionList");
	if (get == NULL || get(&real) != CKR_OK || real == NULL) {
		dlclose(real_handle);
		real_handle = NULL;
		real = NULL;
		return CKR_GENERAL_ERROR;
	}
	shim = *real;
	shim.C_GetTokenInfo = shim_GetTokenInfo;
	shim.C_Login = shim_Login;
	return CKR_OK;
}

__attribute__((destructor)) static void
unload_real(void)
{
	if (real_handle != NULL)
		dlclose(real_handle);
	real_handle = NULL;
	real = NULL;
}

__attribute__((visibility("default"))) CK_RV
C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list)
{
	CK_RV rv;

	if (list == NULL)
		return CKR_ARGUMENTS_BAD;
	if ((rv = load_real()) != CKR_OK)
		return rv;
	*list = &shim;
	return CKR_OK;
}
