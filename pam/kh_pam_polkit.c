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
 *
 * Before loading it, the module looks whether the system bus is there at
 * all (bus_absent): on a host without one, loading GLib only to learn that
 * cost 2.6-4.2 ms per login (issue #24).  The look decides only what the
 * plugin would certainly decide the same way, with the same verdict and
 * log line (kh_polkit_unreachable); in every other case the plugin is
 * loaded and asked, as before.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

/*
 * The system bus the plugin would connect to, when it is certainly a Unix
 * socket at a path: GLib's (gio/gdbusaddress.c) DBUS_SYSTEM_BUS_ADDRESS, or
 * without it the address GLib is built with on Debian.  An address of any
 * other form (several entries, other keys, escapes, abstract sockets, tcp),
 * or a variable set in a setuid process (whether GLib honours it there is
 * GLib's business), is not for this look to judge: NULL.
 */
static const char *
system_bus_path(void)
{
	static const char prefix[] = "unix:path=";
	const char *a = getenv("DBUS_SYSTEM_BUS_ADDRESS");
	const char *path;

	if (a == NULL)
		return "/var/run/dbus/system_bus_socket";
	if (getauxval(AT_SECURE) != 0 || strncmp(a, prefix, sizeof(prefix) - 1) != 0)
		return NULL;
	path = a + sizeof(prefix) - 1;
	if (path[0] != '/' || strpbrk(path, ",;%=") != NULL ||
	    strlen(path) >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
		return NULL;
	return path;
}

/* Plain ASCII passes g_utf8_validate whatever it holds; anything else is
 * left to the plugin, which checks it. */
static bool
ascii(const char *s)
{
	for (; s != NULL && *s != '\0'; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

/*
 * Would the plugin get as far as connecting to the bus with these inputs?
 * It checks them first and fails on bad ones whatever the mode: only
 * inputs it certainly accepts may be answered without it.  (kh_polkit.c:
 * groups without ',', a subject pid and uid it takes, the subject's start
 * time, UTF-8 details.)
 */
static bool
plugin_reaches_bus(pid_t pid, uid_t uid, const struct kh_polkit_login *login)
{
	uint64_t start;

	if (login == NULL || pid <= 0 || uid > (uid_t)INT_MAX ||
	    kh_polkit_start_time(pid, &start, NULL) != 0)
		return false;
	if (!ascii(login->service) || !ascii(login->user) || !ascii(login->token_serial) ||
	    !ascii(login->kube_user))
		return false;
	for (size_t i = 0; i < login->nkube_groups; i++)
		if (login->kube_groups[i] == NULL || strchr(login->kube_groups[i], ',') != NULL ||
		    !ascii(login->kube_groups[i]))
			return false;
	return true;
}

/*
 * Is the system bus certainly not there?  Then the plugin would fail to
 * connect with G_IO_ERROR_NOT_FOUND or _CONNECTION_REFUSED, which it
 * counts as absence (kh_pk_absent): 1, and `why` in GLib's words ("Could
 * not connect: " and the system error; GLib's own translation of that
 * prefix, under a non-C locale, is not reproduced).  0 when only the
 * plugin can tell: the bus answers (or may: a non-blocking connect in
 * progress), any other failure (GLib counts a refused permission, say, as
 * no answer, not absence), an address this look does not judge, or GLib
 * already in the process — its shared bus connection, not the socket,
 * would then answer.
 */
static int
gio_object(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *base = info->dlpi_name != NULL ? strrchr(info->dlpi_name, '/') : NULL;

	(void)size;
	(void)data;
	base = base != NULL ? base + 1 : info->dlpi_name;
	return base != NULL && strncmp(base, "libgio-2.0.so", 13) == 0;
}

/* Is GIO mapped in this process?  Asked of the loader's own list: a
 * dlopen(RTLD_NOLOAD) by name searches the library path, and that costs
 * a dozen system calls per login. */
static bool
gio_loaded(void)
{
	return dl_iterate_phdr(gio_object, NULL) != 0;
}

static int
bus_absent(char *why, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path;
	int fd, rc, e;

	if (gio_loaded())
		return 0;
	if ((path = system_bus_path()) == NULL)
		return 0;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return 0;
	rc = connect(fd, (const struct sockaddr *)&sa, sizeof(sa));
	e = errno;
	(void)close(fd);       /* nothing was sent: nothing to lose */
	if (rc == 0 || (e != ENOENT && e != ECONNREFUSED))
		return 0;
	(void)snprintf(why, len, "Could not connect: %s", strerror(e));
	return 1;
}

/* Timing (NULL = off): the look at the bus and the plugin's check are the
 * step polkit, loading the plugin is polkit_load (absent when not loaded). */
int
kh_pam_polkit_check_login(struct kh_pam_timing *timing, enum kh_polkit_mode mode,
			  pid_t pid, uid_t uid, const struct kh_polkit_login *login,
			  bool *unreachable, kh_error *err)
{
	kh_check_login_fn check;
	char why[KH_ERROR_MAX / 2];

	if (unreachable != NULL)
		*unreachable = false;
	if (mode == KH_POLKIT_OFF)
		return 1;
	kh_pam_timing_mark(timing);
	if ((mode == KH_POLKIT_IF_AVAILABLE || mode == KH_POLKIT_REQUIRED) &&
	    plugin_reaches_bus(pid, uid, login) && bus_absent(why, sizeof(why)))
		return kh_pam_timing_done(timing, KH_STEP_POLKIT,
					  kh_polkit_unreachable(mode,
								KH_POLKIT_ACTION_CACHE_CREDENTIALS,
								why, unreachable, err));
	kh_pam_timing_add(timing, KH_STEP_POLKIT);
	check = load_plugin(err);
	kh_pam_timing_add(timing, KH_STEP_POLKIT_LOAD);
	if (check == NULL)
		return -1;
	return kh_pam_timing_done(timing, KH_STEP_POLKIT,
				  check(mode, pid, uid, login, unreachable, err));
}
