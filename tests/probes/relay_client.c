/*
 * relay_client — drive kubehsm-relayd's control protocol from tests.
 *
 *   relay_client RUNDIR deliver UID USER ISSUER EXPIRES CHAIN.pem KEY.pem
 *   relay_client RUNDIR forget UID [ISSUER] [logout|revoked]
 *   relay_client RUNDIR forget-self [ISSUER]
 *   relay_client RUNDIR list [--user]
 *   relay_client RUNDIR raw [--user]      (one request datagram from stdin)
 *
 * It uses the same client library as the login and kubehsm, so the tests
 * exercise the daemon before (and independently of) the PAM module.
 * `list` prints "uid user issuer expires connections" lines.  Exit 0 on
 * success; 1 with the relay's or the library's message on stderr.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/kh_json.h"
#include "lib/kh_mem.h"
#include "lib/kh_relay_client.h"

static char *
read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "relay_client: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	buf = calloc(1, (size_t)n + 1);
	if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "relay_client: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	return buf;
}

static unsigned long
number(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s) {
		fprintf(stderr, "relay_client: not a number: %s\n", s);
		exit(2);
	}
	return v;
}

/* Send stdin as one datagram, print the reply as it came. */
static int
raw(const char *rundir, bool user)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static char buf[70000];
	size_t len = fread(buf, 1, sizeof(buf), stdin);
	ssize_t n;
	int fd;

	(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", rundir,
		       user ? KH_RELAY_USER_SOCK : KH_RELAY_CONTROL_SOCK);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "relay_client: %s: %s\n", sa.sun_path, strerror(errno));
		return 1;
	}
	if (send(fd, buf, len, MSG_NOSIGNAL) < 0) {
		fprintf(stderr, "relay_client: send: %s\n", strerror(errno));
		return 1;
	}
	n = recv(fd, buf, sizeof(buf), 0);
	if (n <= 0) {
		fprintf(stderr, "relay_client: no reply\n");
		return 1;
	}
	fwrite(buf, 1, (size_t)n, stdout);
	putchar('\n');
	return 0;
}

int
main(int argc, char **argv)
{
	const char *rundir, *cmd;
	kh_error err = { 0 };
	unsigned s = 0, c = 0;
	int rc = -1;

	if (argc < 3) {
		fprintf(stderr, "usage: relay_client RUNDIR deliver|forget|forget-self|list|raw ...\n");
		return 2;
	}
	kh_json_wipe_on_free(true);
	rundir = argv[1];
	cmd = argv[2];
	if (strcmp(cmd, "deliver") == 0 && argc == 9) {
		struct kh_relay_session sess = {
			.uid = (uid_t)number(argv[3]), .user = argv[4], .issuer = argv[5],
			.expires = (int64_t)number(argv[6]),
		};

		/* A login's origin, as pam_kubehsm would hand it over. */
		sess.origin.service = getenv("KH_ORIGIN_SERVICE");
		sess.origin.rhost = getenv("KH_ORIGIN_RHOST");
		sess.origin.tty = getenv("KH_ORIGIN_TTY");
		sess.chain_pem = read_file(argv[7]);
		sess.key_pem = read_file(argv[8]);
		rc = kh_relay_deliver(rundir, &sess, &err);
		free(sess.chain_pem);
		kh_secure_strfree(sess.key_pem);
	} else if (strcmp(cmd, "forget") == 0 && argc >= 4 && argc <= 6) {
		enum kh_relay_reason why = argc == 6 && strcmp(argv[5], "logout") == 0 ?
					   KH_RELAY_LOGOUT : KH_RELAY_REVOKED;

		rc = kh_relay_forget(rundir, (uid_t)number(argv[3]),
				     argc >= 5 && argv[4][0] != '*' ? argv[4] : NULL, why, &s, &c,
				     &err);
		if (rc == 0)
			printf("sessions=%u connections=%u\n", s, c);
		/* Not taken, but noted for the relay: done as far as root is concerned. */
		if (rc == 1) {
			printf("noted (%s)\n", err.msg);
			rc = 0;
		}
	} else if (strcmp(cmd, "forget-self") == 0 && argc <= 4) {
		rc = kh_relay_forget_self(rundir, argc == 4 ? argv[3] : NULL, &s, &c, &err);
		if (rc == 0)
			printf("sessions=%u connections=%u\n", s, c);
	} else if (strcmp(cmd, "list") == 0 && argc <= 4) {
		struct kh_relay_request req = { .op = KH_RELAY_OP_LIST };
		struct kh_relay_reply rep;
		bool user = argc == 4 && strcmp(argv[3], "--user") == 0;

		rc = kh_relay_call(rundir, user ? KH_RELAY_USER_SOCK : KH_RELAY_CONTROL_SOCK,
				   &req, &rep, &err);
		for (size_t i = 0; rc == 0 && i < rep.nlist; i++)
			printf("%u %s %s %lld %u\n", (unsigned)rep.list[i].uid, rep.list[i].user,
			       rep.list[i].issuer[0] != '\0' ? rep.list[i].issuer : "-",
			       (long long)rep.list[i].expires, rep.list[i].connections);
		if (rc == 0)
			kh_relay_reply_clear(&rep);
	} else if (strcmp(cmd, "raw") == 0 && argc <= 4) {
		return raw(rundir, argc == 4 && strcmp(argv[3], "--user") == 0);
	} else {
		fprintf(stderr, "relay_client: bad arguments for '%s'\n", cmd);
		return 2;
	}
	if (rc != 0) {
		fprintf(stderr, "relay_client: %s\n", err.msg);
		return 1;
	}
	return 0;
}
