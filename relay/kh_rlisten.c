/*
 * kh_rlisten — the sockets kubehsm-relayd binds as root.
 *
 * Per cluster, 127.0.0.1:PORT and [::1]:PORT (IPv6-only, so the two never
 * overlap), PORT privileged.  In relay.rundir, a root-owned directory:
 * control.sock (mode 0600: root's processes deliver and forget sessions)
 * and user.sock (0666: any user ends its own session).  All are bound
 * before the privilege drop and never again, so a restart is the only way
 * to change them.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/listener.h>

#include "relay/kh_rconn.h"
#include "relay/kh_rctl.h"
#include "relay/kh_rctlpool.h"
#include "relay/kh_rlisten.h"
#include "relay/kh_rlog.h"

#define KH_RLISTEN_BACKLOG 1024

/* One loopback listener; 1 bound, 0 address not available here, -1 error. */
static int
kh_rlisten_bind_one(struct kh_rcluster *cl, int family, kh_error *err)
{
	struct sockaddr_in v4 = { .sin_family = AF_INET };
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6 };
	const char *what = family == AF_INET ? "127.0.0.1" : "[::1]";
	int fd, one = 1, e;

	v4.sin_port = htons((uint16_t)cl->conf->listen);
	v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	v6.sin6_port = htons((uint16_t)cl->conf->listen);
	v6.sin6_addr = in6addr_loopback;
	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		if (family == AF_INET6 && errno == EAFNOSUPPORT)
			return 0;
		return kh_fail(err, KH_ERR_INTERNAL, "socket: %s", strerror(errno));
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    (family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0))
		goto fail;
	if ((family == AF_INET ? bind(fd, (struct sockaddr *)&v4, sizeof(v4))
			       : bind(fd, (struct sockaddr *)&v6, sizeof(v6))) != 0) {
		if (family == AF_INET6 && (errno == EADDRNOTAVAIL || errno == EAFNOSUPPORT)) {
			(void)close(fd);
			return 0;
		}
		goto fail;
	}
	if (listen(fd, KH_RLISTEN_BACKLOG) != 0)
		goto fail;
	cl->fds[cl->nfds++] = fd;
	return 1;
fail:
	e = errno;
	(void)close(fd);
	return kh_fail(err, KH_ERR_INTERNAL, "cluster %s: cannot listen on %s:%d: %s%s",
		       cl->conf->name, what, cl->conf->listen, strerror(e),
		       e == EADDRINUSE ? " (is another kubehsm-relayd running?)" : "");
}

/* The API server's address, when the policy gives an IP literal. */
static void
kh_rlisten_server_addr(struct kh_rcluster *cl)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)&cl->addr;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&cl->addr;

	memset(&cl->addr, 0, sizeof(cl->addr));
	cl->addrlen = 0;
	if (inet_pton(AF_INET, cl->conf->server_host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)cl->conf->server_port);
		cl->addrlen = sizeof(*v4);
	} else if (inet_pton(AF_INET6, cl->conf->server_host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)cl->conf->server_port);
		cl->addrlen = sizeof(*v6);
	}
}

int
kh_rlisten_bind_clusters(struct kh_relayd *rd, kh_error *err)
{
	size_t i;
	int r;

	for (i = 0; i < rd->nclusters; i++) {
		struct kh_rcluster *cl = &rd->clusters[i];

		kh_rlisten_server_addr(cl);
		if (kh_rlisten_bind_one(cl, AF_INET, err) < 0)
			return -1;
		r = kh_rlisten_bind_one(cl, AF_INET6, err);
		if (r < 0)
			return -1;
		if (r == 0)
			kh_rlog(LOG_NOTICE, "cluster %s: no IPv6 loopback here; listening on "
				"127.0.0.1:%d only", cl->conf->name, cl->conf->listen);
	}
	return 0;
}

/* rundir: create it, or accept it only if root owns it and nobody else writes it. */
static int
kh_rlisten_rundir(const char *dir, kh_error *err)
{
	struct stat st;

	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot create %s: %s", dir, strerror(errno));
	if (lstat(dir, &st) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) != 0)
		return kh_fail(err, KH_ERR_CONFIG, "%s must be a directory owned by root and "
			       "writable by root only (the control socket lives there)", dir);
	if ((st.st_mode & 0755) != 0755 && chmod(dir, 0755) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "chmod %s: %s", dir, strerror(errno));
	return 0;
}

static int
kh_rlisten_unix(const char *dir, const char *name, mode_t mode, kh_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, n, e;

	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return kh_fail(err, KH_ERR_CONFIG, "%s/%s is too long for a socket path", dir, name);
	if (unlink(sa.sun_path) != 0 && errno != ENOENT)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot remove the old %s: %s", sa.sun_path,
			       strerror(errno));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return kh_fail(err, KH_ERR_INTERNAL, "socket: %s", strerror(errno));
	/* The mode is right from the start: no window with a looser one. */
	old = umask(0777 & ~mode);
	n = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	e = errno;
	(void)umask(old);
	if (n != 0 || chmod(sa.sun_path, mode) != 0 || listen(fd, KH_RCTL_ROOT_MAX + KH_RCTL_USER_MAX) != 0) {
		e = n != 0 ? e : errno;
		(void)close(fd);
		return kh_fail(err, KH_ERR_INTERNAL, "cannot listen on %s: %s", sa.sun_path,
			       strerror(e));
	}
	return fd;
}

int
kh_rlisten_bind_sockets(struct kh_relayd *rd, kh_error *err)
{
	const char *dir = rd->policy->relay.rundir;

	if (kh_rlisten_rundir(dir, err) != 0)
		return -1;
	rd->ctl_fd = kh_rlisten_unix(dir, KH_RELAY_CONTROL_SOCK, 0600, err);
	if (rd->ctl_fd < 0)
		return -1;
	rd->user_fd = kh_rlisten_unix(dir, KH_RELAY_USER_SOCK, 0666, err);
	return rd->user_fd < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* accepting                                                            */

static void
kh_rlisten_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
		  int salen, void *arg)
{
	struct kh_rcluster *cl = arg;

	(void)l;
	kh_rconn_accept(cl->rd, cl, fd, sa, (socklen_t)salen);
}

static void
kh_rlisten_resume(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)evconnlistener_enable(arg);
}

/* Out of descriptors: stop accepting for a moment instead of spinning. */
static void
kh_rlisten_error(struct evconnlistener *l, void *arg)
{
	static struct kh_rlog_limit lim;
	struct timeval tv = { .tv_sec = 1 };
	int e = EVUTIL_SOCKET_ERROR();

	(void)arg;
	kh_rlog_limited(&lim, LOG_WARNING, "accept: %s; pausing for a second",
			evutil_socket_error_to_string(e));
	if (evconnlistener_disable(l) == 0)
		(void)event_base_once(evconnlistener_get_base(l), -1, EV_TIMEOUT,
				      kh_rlisten_resume, l, &tv);
}

int
kh_rlisten_start(struct kh_relayd *rd, kh_error *err)
{
	size_t i, j;

	for (i = 0; i < rd->nclusters; i++) {
		struct kh_rcluster *cl = &rd->clusters[i];

		cl->rd = rd;
		for (j = 0; j < cl->nfds; j++) {
			cl->listeners[j] = evconnlistener_new(rd->base, kh_rlisten_accept, cl,
							      LEV_OPT_CLOSE_ON_FREE |
							      LEV_OPT_CLOSE_ON_EXEC, 0, cl->fds[j]);
			if (cl->listeners[j] == NULL)
				return kh_fail(err, KH_ERR_INTERNAL, "cannot listen (libevent)");
			cl->fds[j] = -1;        /* the listener owns it now */
			evconnlistener_set_error_cb(cl->listeners[j], kh_rlisten_error);
		}
	}
	return kh_rctl_start(rd, err);
}
