/*
 * kh_pam_polkit — the polkit client as a plugin.
 *
 * libpolkit-gobject brings GLib, GObject, GIO and some twenty more shared
 * objects.  Linked into the module they would be mapped into every sshd,
 * login and su that loads it, and cost every login about 3.5 ms, whether or
 * not the policy asks polkit.  So the client (pam/kh_polkit.c) is built as
 * kubehsm-polkit.so and loaded only when polkit.mode is not "off".
 *
 * Once loaded it stays (RTLD_NODELETE): libpolkit registers GObject types
 * and signal handlers on the process-wide system-bus connection, and GLib
 * and GIO are never unloaded, so libpolkit's code must outlive every
 * unload of this module.
 *
 * The plugin is looked for beside the module first (a build tree), then in
 * $(pkglibdir) (kh_path_beside).
 */
#include "config.h"

#include <dlfcn.h>

#include "lib/kh_path.h"
#include "pam/kh_pam.h"

#define KH_POLKIT_PLUGIN_NAME "kubehsm-polkit.so"

typedef int (*kh_check_login_fn)(enum kh_polkit_mode, pid_t, uid_t,
				 const struct kh_polkit_login *, bool *, kh_error *);

static int
plugin_path(char *buf, size_t size)
{
	static const char *const beside[] = { KH_POLKIT_PLUGIN_NAME };
	Dl_info self;

	if (dladdr((const void *)kh_pam_polkit_check_login, &self) == 0)
		self.dli_fname = NULL;
	return kh_path_beside(self.dli_fname, beside, 1, KH_POLKIT_PLUGIN, buf, size);
}

static kh_check_login_fn
load_plugin(kh_error *err)
{
	char path[4096];
	const char *why;
	void *handle;
	void *fn;

	if (plugin_path(path, sizeof(path)) != 0) {
		kh_fail(err, KH_ERR_INTERNAL, "polkit plugin path too long");
		return NULL;
	}
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (handle == NULL) {
		why = dlerror();
		kh_fail(err, KH_ERR_CONFIG, "cannot load the polkit plugin (%s); is kubehsm "
			"completely installed?", why != NULL ? why : path);
		return NULL;
	}
	fn = dlsym(handle, "kh_polkit_check_login");
	if (fn == NULL) {
		kh_fail(err, KH_ERR_CONFIG, "%s is not the kubehsm polkit plugin", path);
		return NULL;   /* the handle stays: NODELETE keeps it anyway */
	}
	return (kh_check_login_fn)fn;
}

int
kh_pam_polkit_check_login(enum kh_polkit_mode mode, pid_t pid, uid_t uid,
			  const struct kh_polkit_login *login,
			  bool *unreachable, kh_error *err)
{
	kh_check_login_fn check;

	if (unreachable != NULL)
		*unreachable = false;
	if (mode == KH_POLKIT_OFF)
		return 1;
	check = load_plugin(err);
	if (check == NULL)
		return -1;
	return check(mode, pid, uid, login, unreachable, err);
}
