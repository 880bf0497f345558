/*
 * kubehsm-relayd — stock kube clients, no key bytes in any user process.
 *
 * Start-up, in this order, each step needing what the one before made:
 *   as root:  policy, privileged-port check, run_as user, CA stores, the
 *             loopback listeners and the control sockets (errors still
 *             reach the terminal), then (daemon mode) fork;
 *   still root, in the process that serves: a fresh session keyring (not
 *             the starter's), the keyring store (a process keyring does
 *             not survive fork), the netlink socket;
 *   drop:     for good, to run_as, with nothing left (kh_rpriv_drop);
 *   as run_as: restore the sessions the keyring kept, start serving,
 *             tell systemd (or the waiting parent) it is ready.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "lib/kh_json.h"
#include "relay/kh_raudit.h"
#include "relay/kh_rbuf.h"
#include "relay/kh_rconn.h"
#include "relay/kh_rctlpool.h"
#include "relay/kh_relayd.h"
#include "relay/kh_rlisten.h"
#include "relay/kh_rlog.h"
#include "relay/kh_rpeer.h"
#include "relay/kh_rprog.h"
#include "relay/kh_rpending.h"
#include "relay/kh_rpriv.h"
#include "relay/kh_rsession.h"
#include "relay/kh_rstore.h"
#include "relay/kh_rup.h"

#define KH_RELAYD_BUCKETS 1024
/* The persistent keyring expires 3 days (by default) after its last use. */
#define KH_RELAYD_REFRESH_SEC 3600

static void
kh_relayd_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm-relayd [--config FILE] [--foreground] [--debug] [--check]\n\n"
		"Serve kube clients on a privileged loopback port per cluster (policy\n"
		"section relay): each request is relayed over mTLS to the API server\n"
		"with the session of the uid the kernel says owns the connection, over\n"
		"upstream connections pooled per uid, and written to the audit log\n"
		"(relay.audit).  Starts as root, then runs as relay.run_as.  SIGHUP\n"
		"reopens the audit log.  See kubehsm-relayd(8).\n\n"
		"  -f, --config FILE  the policy (default %s)\n"
		"  -F, --foreground   stay in the foreground and log to stderr\n"
		"  -d, --debug        log every connection\n"
		"  -t, --check        check the policy and the port setup, then exit\n"
		"  -h, --help         show this help\n"
		"  -V, --version      show the version\n", KH_DEFAULT_CONFIG);
}

static int
kh_relayd_args(int argc, char **argv, struct kh_relayd_opts *o, bool *check)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'f' },
		{ "foreground", no_argument, NULL, 'F' },
		{ "debug", no_argument, NULL, 'd' },
		{ "check", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->config = KH_DEFAULT_CONFIG;
	while ((c = getopt_long(argc, argv, "f:FdthV", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': o->config = optarg; break;
		case 'F': o->foreground = true; break;
		case 'd': o->debug = true; break;
		case 't': *check = true; break;
		case 'h': kh_relayd_usage(stdout); exit(0);
		case 'V': printf("kubehsm-relayd %s\n", PACKAGE_VERSION); exit(0);
		default:
			fprintf(stderr, "kubehsm-relayd: run 'kubehsm-relayd --help'\n");
			return -1;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "kubehsm-relayd: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* set-up                                                               */

static int
kh_relayd_clusters(struct kh_relayd *rd, kh_error *err)
{
	const struct kh_relay_policy *rp = &rd->policy->relay;
	size_t i;

	rd->clusters = calloc(rp->nclusters, sizeof(*rd->clusters));
	if (rd->clusters == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	rd->nclusters = rp->nclusters;
	for (i = 0; i < rd->nclusters; i++) {
		struct kh_rcluster *cl = &rd->clusters[i];

		cl->rd = rd;
		cl->conf = &rp->clusters[i];
		cl->index = i;
		cl->fds[0] = cl->fds[1] = -1;
		cl->issuer_id = kh_policy_issuer(rd->policy, cl->conf->issuer)->id;
		cl->store = X509_STORE_new();
		if (cl->store == NULL || X509_STORE_load_file(cl->store, cl->conf->ca_file) != 1)
			return kh_fail_ssl(err, KH_ERR_CONFIG, "cluster %s: cannot load ca_file %s",
					   cl->conf->name, cl->conf->ca_file);
	}
	return 0;
}

/* systemd's readiness protocol (sd_notify(3)): one datagram, no library. */
static int
kh_relayd_notify_open(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd;

	if (path == NULL || (path[0] != '/' && path[0] != '@') ||
	    strlen(path) >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, path, strlen(path));
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, len) != 0) {
		(void)close(fd);
		fd = -1;
	}
	(void)unsetenv("NOTIFY_SOCKET");
	return fd;
}

static void
kh_relayd_ready(struct kh_relayd *rd)
{
	char msg[128];
	int n;

	n = snprintf(msg, sizeof(msg), "READY=1\nSTATUS=serving %zu cluster(s), %u session(s)\n"
		     "MAINPID=%ld\n", rd->nclusters, rd->nsessions, (long)getpid());
	if (rd->notify_fd >= 0 && n > 0)
		(void)send(rd->notify_fd, msg, (size_t)n, MSG_NOSIGNAL);
	if (rd->ready_fd >= 0) {
		(void)write(rd->ready_fd, "", 1);
		(void)close(rd->ready_fd);
		rd->ready_fd = -1;
	}
	kh_rlog(LOG_INFO, "ready: %zu cluster(s), %u session(s), running as uid %u",
		rd->nclusters, rd->nsessions, (unsigned)getuid());
}

/*
 * Daemon mode: fork once the sockets are bound; the parent exits when the
 * child is ready (0) or has failed (1), so an init script sees the truth.
 */
static int
kh_relayd_daemonize(struct kh_relayd *rd)
{
	int p[2], fd;
	ssize_t n;
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0) {
		(void)close(p[1]);
		do {
			n = read(p[0], &c, 1);
		} while (n < 0 && errno == EINTR);
		/* EOF without the byte: the child failed (it logged why). */
		_exit(n == 1 ? 0 : 1);
	}
	(void)close(p[0]);
	rd->ready_fd = p[1];
	if (setsid() < 0 || chdir("/") != 0)
		return -1;
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		return -1;
	if (fd > 2)
		(void)close(fd);
	kh_rlog_init(false, rd->opts.debug);
	return 0;
}

/* ------------------------------------------------------------------ */
/* running                                                              */

static void
kh_relayd_stop(evutil_socket_t sig, short what, void *arg)
{
	struct kh_relayd *rd = arg;

	(void)what;
	kh_rlog(LOG_INFO, "signal %d: stopping (sessions stay in the keyring)", (int)sig);
	rd->stopping = true;
	(void)event_base_loopbreak(rd->base);
}

/* SIGHUP: logrotate moved the audit log; the policy itself needs a restart. */
static void
kh_relayd_hup(evutil_socket_t sig, short what, void *arg)
{
	struct kh_relayd *rd = arg;
	kh_error err = { 0 };

	(void)sig;
	(void)what;
	if (kh_raudit_reopen(rd->audit, &err) != 0)
		kh_rlog(LOG_ERR, "SIGHUP: %s; still writing the old audit log", err.msg);
	kh_rlog(LOG_NOTICE, "SIGHUP: audit log reopened; the policy is read at start only: "
		"restart kubehsm-relayd to apply changes (sessions survive a restart)");
}

/* kh_rsession's way to end a uid's connections: clients, then the pool. */
static unsigned
kh_relayd_close_user(struct kh_relayd *rd, struct kh_ruser *u, const char *issuer)
{
	unsigned n = kh_rconn_close_user(u, issuer);

	(void)kh_rpool_close_user(rd, u, issuer);
	return n;
}

static void
kh_relayd_refresh(evutil_socket_t fd, short what, void *arg)
{
	struct kh_relayd *rd = arg;
	kh_error err = { 0 };

	(void)fd;
	(void)what;
	if (kh_rstore_refresh(rd->store, &err) != 0)
		kh_rlog(LOG_WARNING, "%s", err.msg);
}

/*
 * Once a second at most, hand the heap that connections gave back to the
 * kernel: thousands of TLS handshakes and bursts free their buffers in
 * scattered places, which malloc would otherwise keep as resident memory
 * (a connection waiting for its answer needs none of it).
 */
static void
kh_relayd_trim(evutil_socket_t fd, short what, void *arg)
{
	struct kh_relayd *rd = arg;

	(void)fd;
	(void)what;
	if (!rd->trim_due && !kh_rbuf_heap_dirty())
		return;
	rd->trim_due = false;
	kh_rbuf_trim();
	(void)malloc_trim(0);
}

static int
kh_relayd_events(struct kh_relayd *rd, kh_error *err)
{
	struct timeval hour = { .tv_sec = KH_RELAYD_REFRESH_SEC }, second = { .tv_sec = 1 };

	rd->sig_term = evsignal_new(rd->base, SIGTERM, kh_relayd_stop, rd);
	rd->sig_int = evsignal_new(rd->base, SIGINT, kh_relayd_stop, rd);
	rd->sig_hup = evsignal_new(rd->base, SIGHUP, kh_relayd_hup, rd);
	rd->refresh = event_new(rd->base, -1, EV_PERSIST, kh_relayd_refresh, rd);
	rd->trim = event_new(rd->base, -1, EV_PERSIST, kh_relayd_trim, rd);
	if (rd->sig_term == NULL || rd->sig_int == NULL || rd->sig_hup == NULL ||
	    rd->refresh == NULL || rd->trim == NULL || evsignal_add(rd->sig_term, NULL) != 0 ||
	    evsignal_add(rd->sig_int, NULL) != 0 || evsignal_add(rd->sig_hup, NULL) != 0 ||
	    event_add(rd->refresh, &hour) != 0 || event_add(rd->trim, &second) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot set up signal handling");
	return 0;
}

static int
kh_relayd_start(struct kh_relayd *rd, kh_error *err)
{
	struct event_config *cfg;
	struct kh_rpending *pending = NULL;
	kh_error perr = { 0 };
	const struct kh_relay_policy *rp = &rd->policy->relay;
	size_t i, npending = 0;
	bool dns = false;
	long ses;

	if (kh_relayd_clusters(rd, err) != 0 ||
	    kh_rpriv_raise_nofile((unsigned long)rd->policy->relay.max_connections * 2 + 256,
				  err) != 0 ||
	    kh_rlisten_bind_clusters(rd, err) != 0 ||
	    kh_rlisten_bind_sockets(rd, err) != 0)
		return -1;
	if (!rd->opts.foreground && kh_relayd_daemonize(rd) != 0)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot become a daemon: %s", strerror(errno));
	/* From here on in the process that serves. */
	ses = kh_rpriv_leave_session_keyring(err);
	if (ses < 0)
		return -1;
	kh_rlog(LOG_INFO, "session keyring %ld: a fresh one, not the one it was started with", ses);
	rd->store = kh_rstore_open(rd->run_uid, rd->policy->relay.rundir,
				   (size_t)rd->policy->relay.max_sessions, err);
	if (rd->store == NULL)
		return -1;
	rd->netlink_fd = kh_rpeer_open(err);
	if (rd->netlink_fd < 0)
		return -1;
	cfg = event_config_new();
	if (cfg == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "out of memory");
	(void)event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
	rd->base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	if (rd->base == NULL)
		return kh_fail(err, KH_ERR_INTERNAL, "cannot make the event loop");
	for (i = 0; i < rd->nclusters; i++)
		dns = dns || rd->clusters[i].addrlen == 0;
	/* resolv.conf and hosts are read now, as root, once. */
	if (dns) {
		rd->dns = evdns_base_new(rd->base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
					 EVDNS_BASE_DISABLE_WHEN_INACTIVE);
		if (rd->dns == NULL)
			return kh_fail(err, KH_ERR_INTERNAL, "cannot set up DNS (resolv.conf)");
	}
	rd->notify_fd = kh_relayd_notify_open();
	/* Root's notes of what ended while we were down, and the directory
	 * descriptor that shows the running relay the notes still to come. */
	if (kh_rpending_open(rd, &pending, &npending, &perr) != 0)
		kh_rlog(LOG_WARNING, "%s: logouts the relay was not told of are not applied",
			perr.msg);
	/* The audit log: root's file, written by the relay after the drop. */
	rd->audit = kh_raudit_open(rp->audit_file, rp->audit_syslog, rd->run_uid, rd->run_gid,
				   err);
	if (rd->audit == NULL) {
		free(pending);
		return -1;
	}
	/* The audit names each client's program: the finder that may look
	 * for it in /proc is forked now, as root, and keeps what it needs. */
	if ((rp->audit_file != NULL && rp->audit_file[0] != '\0') || rp->audit_syslog) {
		if (kh_rprog_finder_start(rd->run_uid, rd->run_gid, &rd->prog_fd, &rd->prog_pid,
					  err) != 0) {
			free(pending);
			return -1;
		}
		rd->prog_ev = event_new(rd->base, rd->prog_fd, EV_READ | EV_PERSIST,
					kh_rconn_prog_readable, rd);
		if (rd->prog_ev == NULL || event_add(rd->prog_ev, NULL) != 0) {
			free(pending);
			return kh_fail(err, KH_ERR_INTERNAL, "cannot watch the program finder");
		}
	}
	if (kh_rpriv_drop(rd->run_uid, rd->run_gid, err) != 0) {
		free(pending);
		return -1;
	}
	kh_rlog(LOG_INFO, "running as %s (uid %u), no capabilities",
		rd->policy->relay.run_as, (unsigned)rd->run_uid);
	kh_rsession_restore(rd);
	kh_rpending_apply(rd, pending, npending);
	free(pending);
	if (kh_rlisten_start(rd, err) != 0 || kh_relayd_events(rd, err) != 0 ||
	    kh_rpending_start(rd, err) != 0)
		return -1;
	return 0;
}

static void
kh_relayd_free(struct kh_relayd *rd)
{
	size_t i, j;

	kh_rsession_free_all(rd);
	for (i = 0; rd->clusters != NULL && i < rd->nclusters; i++) {
		for (j = 0; j < 2; j++) {
			if (rd->clusters[i].listeners[j] != NULL)
				evconnlistener_free(rd->clusters[i].listeners[j]);
			if (rd->clusters[i].fds[j] >= 0)
				(void)close(rd->clusters[i].fds[j]);
		}
		X509_STORE_free(rd->clusters[i].store);
	}
	free(rd->clusters);
	if (rd->ctl_listener != NULL)
		evconnlistener_free(rd->ctl_listener);
	if (rd->user_listener != NULL)
		evconnlistener_free(rd->user_listener);
	if (rd->ctl_fd >= 0)
		(void)close(rd->ctl_fd);
	if (rd->user_fd >= 0)
		(void)close(rd->user_fd);
	if (rd->netlink_fd >= 0)
		(void)close(rd->netlink_fd);
	if (rd->notify_fd >= 0)
		(void)close(rd->notify_fd);
	if (rd->sig_term != NULL)
		event_free(rd->sig_term);
	if (rd->sig_int != NULL)
		event_free(rd->sig_int);
	if (rd->sig_hup != NULL)
		event_free(rd->sig_hup);
	if (rd->refresh != NULL)
		event_free(rd->refresh);
	if (rd->trim != NULL)
		event_free(rd->trim);
	if (rd->pending_scan != NULL)
		event_free(rd->pending_scan);
	if (rd->pending_fd >= 0)
		(void)close(rd->pending_fd);
	kh_rconn_prog_shutdown(rd);
	if (rd->prog_ev != NULL)
		event_free(rd->prog_ev);
	if (rd->prog_fd >= 0)
		(void)close(rd->prog_fd);   /* the finder reads EOF and ends */
	if (rd->prog_pid > 0)
		(void)waitpid(rd->prog_pid, NULL, 0);
	kh_raudit_free(rd->audit);
	free(rd->ctlpool);
	kh_rbuf_trim();
	if (rd->dns != NULL)
		evdns_base_free(rd->dns, 0);
	if (rd->base != NULL)
		event_base_free(rd->base);
	kh_rstore_free(rd->store);
	free(rd->users);
	kh_policy_free(rd->policy);
}

int
main(int argc, char **argv)
{
	struct kh_relayd rd = {
		.netlink_fd = -1, .ctl_fd = -1, .user_fd = -1, .notify_fd = -1, .ready_fd = -1,
		.pending_fd = -1, .prog_fd = -1, .close_user = kh_relayd_close_user,
		.count_user = kh_rconn_count_user,
	};
	bool check = false;
	kh_error err = { 0 };
	int rc = 1;

	TAILQ_INIT(&rd.prog_wait);
	TAILQ_INIT(&rd.audit_wait);
	if (kh_relayd_args(argc, argv, &rd.opts, &check) != 0)
		return 2;
	kh_rlog_init(true, rd.opts.debug);
	if (geteuid() != 0) {
		fprintf(stderr, "kubehsm-relayd: must start as root: it binds privileged ports, "
			"then runs as relay.run_as\n");
		return 1;
	}
	(void)signal(SIGPIPE, SIG_IGN);
	kh_json_wipe_on_free(true);
	kh_json_seed();
	rd.policy = kh_policy_load(rd.opts.config, NULL, &err);
	if (rd.policy == NULL)
		goto fail;
	if (!rd.policy->relay.configured) {
		kh_fail(&err, KH_ERR_CONFIG, "%s: no relay section: nothing to serve",
			rd.opts.config);
		goto fail;
	}
	if (kh_rpriv_check_ports(rd.policy, &err) != 0 ||
	    kh_rpriv_lookup(rd.policy->relay.run_as, &rd.run_uid, &rd.run_gid, &err) != 0)
		goto fail;
	if (check) {
		printf("%s: relay configuration OK (%zu cluster(s), running as %s)\n",
		       rd.opts.config, rd.policy->relay.nclusters, rd.policy->relay.run_as);
		rc = 0;
		goto out;
	}
	rd.nbuckets = KH_RELAYD_BUCKETS;
	rd.users = calloc(rd.nbuckets, sizeof(*rd.users));
	rd.ctlpool = calloc(1, sizeof(*rd.ctlpool));
	if (rd.users == NULL || rd.ctlpool == NULL) {
		kh_fail(&err, KH_ERR_INTERNAL, "out of memory");
		goto fail;
	}
	if (kh_relayd_start(&rd, &err) != 0)
		goto fail;
	kh_relayd_ready(&rd);
	if (event_base_dispatch(rd.base) < 0) {
		kh_fail(&err, KH_ERR_INTERNAL, "the event loop failed");
		goto fail;
	}
	rc = 0;
	goto out;
fail:
	kh_rlog(LOG_ERR, "%s", err.msg);
out:
	kh_relayd_free(&rd);
	return rc;
}
