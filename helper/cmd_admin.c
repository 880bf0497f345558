/*
 * kubehsm admin list [--json]           — every user's kube sessions (root)
 * kubehsm admin revoke USER [--issuer ID] — end one user's session (root)
 * kubehsm admin audit [--user U] [--since T] [--cluster C] [--json]
 *                     [--program GLOB] [--pid N]
 *                                       — kubehsm-relayd's audit log, filtered
 *
 * The records live in each user's own keyring; reaching another uid's
 * keyring needs root, so these views run as root (sudo, or pkexec for the
 * polkit action org.kubehsm.admin-sessions).  kubehsm is never setuid.
 * Listings never carry the session key.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cache/kh_cache.h"
#include "helper/kh_cli.h"
#include "conf/kh_policy.h"
#include "lib/kh_duration.h"
#include "lib/kh_exec_proto.h"
#include "lib/kh_relay_client.h"

static void
kh_admin_usage(FILE *out)
{
	fprintf(out,
		"Usage: kubehsm admin list [--json]\n"
		"       kubehsm admin scan [--json] [--ttl D] [--user U]... [PATH...]\n"
		"       kubehsm admin revoke USER [--issuer ID]\n"
		"       kubehsm admin audit [--user U] [--since T] [--cluster C]\n"
		"                           [--program GLOB] [--pid N] [--json]\n\n"
		"Administrator views of the kube session cache.  They read and change\n"
		"other users' kernel keyrings, which only root can: run them with sudo,\n"
		"or through pkexec (polkit action org.kubehsm.admin-sessions, auth_admin).\n\n"
		"  list            every user's sessions: uid, user, issuer, state, expiry,\n"
		"                  identity and groups (never the key)\n"
		"  revoke USER     end USER's session now (a user name or uid); kubectl\n"
		"                  stops getting credentials for them until they log in\n"
		"  --issuer ID     revoke that issuer's session (default: the default issuer)\n"
		"  audit           kubehsm-relayd's audit log (policy relay.audit.file): one\n"
		"                  line per request with uid, user, login origin, client\n"
		"                  program (pid and executable; ? when not found), method,\n"
		"                  path, status, bytes and duration\n"
		"  --user U        only U's requests (a user name or uid)\n"
		"  --since T       only from T on: RFC 3339 (2026-11-24T21:00:00Z) or a\n"
		"                  duration back from now (30m, 2h, 1d)\n"
		"  --cluster C     only requests to relay cluster C\n"
		"  --program GLOB  only requests of programs whose executable (its path or\n"
		"                  base name) matches GLOB, e.g. kubectl*\n"
		"  --pid N         only requests of process N\n"
		"  --file FILE     read FILE instead of relay.audit.file\n"
		"  --json          list as a JSON array; audit: the matching lines as they\n"
		"                  are in the log (one JSON object per line, for jq)\n"
		"  -h, --help      show this help\n\n"
		"Exit status: 0 done, 1 failed (not root, no such user...), 2 usage.\n");
}

static const char *
kh_state_name(enum kh_cache_miss m)
{
	switch (m) {
	case KH_MISS_NONE: return "active";
	case KH_MISS_ABSENT: return "none";
	case KH_MISS_EXPIRED: return "expired";
	case KH_MISS_REVOKED: return "ended";
	case KH_MISS_REFUSED: return "refused";
	}
	return "unknown";
}

static int
kh_need_root(void)
{
	if (geteuid() == 0)
		return 0;
	kh_cli_error("admin views need root: run 'sudo kubehsm admin ...' or "
		     "'pkexec kubehsm admin ...' (polkit action org.kubehsm.admin-sessions)");
	return -1;
}

static int
kh_admin_list(bool json)
{
	struct kh_cache_entry *e = NULL;
	size_t n = 0, i, g;
	json_t *arr = NULL;
	kh_error err;

	if (kh_cache_list((uid_t)-1, &e, &n, &err) != 0) {
		kh_cli_error("admin list: %s", err.msg);
		return KH_EXIT_FAIL;
	}
	if (json)
		arr = json_array();
	else
		printf("%-7s %-16s %-10s %-8s %-21s %-16s %s\n", "UID", "USER", "ISSUER", "STATE",
		       "EXPIRES", "IDENTITY", "GROUPS");
	for (i = 0; i < n; i++) {
		const struct kh_record *r = e[i].rec;
		char exp[32] = "-";
		const char *issuer = r && r->issuer_id && r->issuer_id[0] ? r->issuer_id : "default";

		if (r != NULL && kh_format_rfc3339((time_t)r->expires, exp, sizeof(exp), NULL) != 0)
			snprintf(exp, sizeof(exp), "-");
		if (json) {
			json_t *o = json_object(), *ga = json_array();

			json_object_set_new(o, "uid", json_integer((json_int_t)e[i].uid));
			json_object_set_new(o, "key", json_string(e[i].description));
			json_object_set_new(o, "state", json_string(kh_state_name(e[i].state)));
			if (e[i].problem[0])
				json_object_set_new(o, "problem", json_string(e[i].problem));
			if (r != NULL) {
				json_object_set_new(o, "user", json_string(r->user));
				json_object_set_new(o, "issuerId", json_string(r->issuer_id ? r->issuer_id : ""));
				json_object_set_new(o, "username", json_string(r->kube_user));
				for (g = 0; g < r->ngroups; g++)
					json_array_append_new(ga, json_string(r->groups[g]));
				json_object_set_new(o, "expirationTimestamp", json_string(exp));
				json_object_set_new(o, "logins", json_integer(r->logins));
			}
			json_object_set_new(o, "groups", ga);
			json_array_append_new(arr, o);
		} else {
			printf("%-7u %-16s %-10s %-8s %-21s %-16s ", (unsigned)e[i].uid,
			       r ? r->user : "-", issuer, kh_state_name(e[i].state), exp,
			       r ? r->kube_user : "-");
			for (g = 0; r != NULL && g < r->ngroups; g++)
				printf("%s%s", g ? "," : "", r->groups[g]);
			printf("%s%s\n", e[i].problem[0] ? "  # " : "", e[i].problem);
		}
	}
	if (json) {
		json_dumpf(arr, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(arr);
	}
	kh_cache_entries_free(e, n);
	return fflush(stdout) == 0 ? KH_EXIT_OK : KH_EXIT_FAIL;
}

/*
 * When the policy has a relay, make it forget uid's session too and close
 * that uid's connections (control.sock).  *r becomes 1 ("ended") when the
 * relay had one.  A relay that is not running has nothing to forget.
 */
static int
kh_admin_revoke_relay(uid_t uid, const char *issuer, int *r)
{
	const char *path = kh_cli_config_path(NULL);
	struct kh_policy *policy;
	unsigned sessions = 0, conns = 0;
	kh_error err;
	int rc = 0;

	if (access(path, F_OK) != 0 && errno == ENOENT)
		return 0;       /* no policy here, so no relay either */
	policy = kh_policy_load(path, NULL, &err);
	if (policy == NULL) {
		kh_cli_error("admin revoke: %s; cannot tell whether kubehsm-relayd holds the "
			     "session too", err.msg);
		return -1;
	}
	if (policy->relay.configured) {
		switch (kh_relay_forget(policy->relay.rundir, uid, issuer, KH_RELAY_REVOKED,
					&sessions, &conns, &err)) {
		case 1:
			if (err.code != KH_ERR_NOTFOUND)
				printf("kubehsm-relayd did not answer (%s); it ends the session "
				       "within a second from root's note.\n", err.msg);
			break;
		case 0:
			break;
		default:
			kh_cli_error("admin revoke: %s", err.msg);
			rc = -1;
			break;
		}
		if (rc == 0 && sessions > 0) {
			*r = 1;
			printf("kubehsm-relayd forgot the session and closed %u connection%s.\n",
			       conns, conns == 1 ? "" : "s");
		}
	}
	kh_policy_free(policy);
	return rc;
}

static int
kh_admin_revoke(const char *who, const char *issuer)
{
	struct passwd *pw = getpwnam(who);
	char *end;
	uid_t uid;
	kh_error err;
	int r, relay_rc, relay_ended = 0;

	if (pw != NULL) {
		uid = pw->pw_uid;
	} else {
		errno = 0;
		unsigned long v = strtoul(who, &end, 10);

		if (who[0] == '\0' || *end != '\0' || errno != 0 || v >= (unsigned long)(uid_t)-1) {
			kh_cli_error("admin revoke: no such user '%s'", who);
			return KH_EXIT_FAIL;
		}
		uid = (uid_t)v;
	}
	/* The relay first (or root's note for it), whatever the keyring step
	 * then meets: the user must not keep being served because of it. */
	relay_rc = kh_admin_revoke_relay(uid, issuer, &relay_ended);
	r = kh_cache_revoke(uid, issuer, &err);
	if (r < 0)
		kh_cli_error("admin revoke: %s", err.msg);
	if (r < 0 || relay_rc != 0)
		return KH_EXIT_FAIL;
	printf(r > 0 || relay_ended > 0 ? "Ended the kube session of %s (uid %u).\n"
					 : "%s (uid %u) has no kube session.\n", who, (unsigned)uid);
	return KH_EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* audit                                                                */

struct kh_audit_filter {
	const char *user;       /* a name, or */
	bool by_uid;
	uid_t uid;
	const char *cluster;
	const char *program;    /* glob on the executable's path or base name */
	bool has_pid;
	long pid;
	bool has_since;
	time_t since;
	bool json;
};

/* --since: an RFC 3339 UTC time, or a duration back from now. */
static int
kh_audit_since(const char *v, time_t *out)
{
	struct tm tm;
	const char *end;
	kh_error err;
	long secs;

	memset(&tm, 0, sizeof(tm));
	end = strptime(v, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end != NULL) {
		while (*end == '.' || (*end >= '0' && *end <= '9'))
			end++;      /* fractions of a second */
		if (strcmp(end, "Z") != 0 && *end != '\0')
			return -1;
		*out = timegm(&tm);
		return 0;
	}
	if (kh_duration_parse(v, &secs, &err) != 0)
		return -1;
	*out = time(NULL) - secs;
	return 0;
}

/* Whether one audit line passes the filter. */
static bool
kh_audit_match(json_t *o, const struct kh_audit_filter *f)
{
	const char *t = json_string_value(json_object_get(o, "time"));
	const char *user = json_string_value(json_object_get(o, "user"));
	const char *cl = json_string_value(json_object_get(o, "cluster"));
	time_t when;

	if (f->by_uid && json_integer_value(json_object_get(o, "uid")) != (json_int_t)f->uid)
		return false;
	if (!f->by_uid && f->user != NULL && (user == NULL || strcmp(user, f->user) != 0))
		return false;
	if (f->cluster != NULL && (cl == NULL || strcmp(cl, f->cluster) != 0))
		return false;
	if (f->has_pid && json_integer_value(json_object_get(o, "pid")) != (json_int_t)f->pid)
		return false;
	if (f->program != NULL) {
		const char *exe = json_string_value(json_object_get(o, "exe"));
		const char *base = exe != NULL ? strrchr(exe, '/') : NULL;

		if (exe == NULL || (fnmatch(f->program, exe, 0) != 0 &&
				    (base == NULL || fnmatch(f->program, base + 1, 0) != 0)))
			return false;
	}
	if (f->has_since && (t == NULL || kh_audit_since(t, &when) != 0 || when < f->since))
		return false;
	return true;
}

/* A string member of o, or "-". */
static const char *
kh_jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "-";
}

/* The PROGRAM column: "PID NAME" (the executable's base name), "?" when
 * the relay could not find the process, "-" on a line older than that. */
static void
kh_audit_program(json_t *o, char *buf, size_t cap)
{
	json_t *pid = json_object_get(o, "pid");
	const char *exe = json_string_value(json_object_get(o, "exe"));
	const char *base = exe != NULL ? strrchr(exe, '/') : NULL;

	if (pid == NULL)
		(void)snprintf(buf, cap, "-");
	else if (!json_is_integer(pid))
		(void)snprintf(buf, cap, "?");
	else
		(void)snprintf(buf, cap, "%lld %s", (long long)json_integer_value(pid),
			       base != NULL ? base + 1 : exe != NULL ? exe : "?");
}

static void
kh_audit_print_row(json_t *o)
{
	json_t *orig = json_object_get(o, "origin");
	char origin[300] = "-", prog[300];

	if (json_is_object(orig))
		(void)snprintf(origin, sizeof(origin), "%s%s%s", kh_jstr(orig, "service"),
			       json_object_get(orig, "rhost") != NULL ? "@" : "",
			       json_object_get(orig, "rhost") != NULL ? kh_jstr(orig, "rhost") : "");
	kh_audit_program(o, prog, sizeof(prog));
	printf("%-24s %-6lld %-12s %-8s %-7s %-4lld %8lld %8lld %9.2f %-20s %-22s %s%s\n",
	       kh_jstr(o, "time"), (long long)json_integer_value(json_object_get(o, "uid")),
	       kh_jstr(o, "user"), kh_jstr(o, "cluster"), kh_jstr(o, "method"),
	       (long long)json_integer_value(json_object_get(o, "status")),
	       (long long)json_integer_value(json_object_get(o, "bytesIn")),
	       (long long)json_integer_value(json_object_get(o, "bytesOut")),
	       json_number_value(json_object_get(o, "durationMs")), origin, prog,
	       kh_jstr(o, "path"),
	       json_is_true(json_object_get(o, "watch")) ? "  (watch)" :
	       json_is_true(json_object_get(o, "upgrade")) ? "  (upgrade)" : "");
}

static int
kh_admin_audit_file(const char *file, const struct kh_audit_filter *f)
{
	FILE *in = fopen(file, "re");
	char *line = NULL;
	size_t cap = 0;
	unsigned long bad = 0;
	ssize_t n;

	if (in == NULL) {
		kh_cli_error("admin audit: %s: %s", file, strerror(errno));
		return KH_EXIT_FAIL;
	}
	if (!f->json)
		printf("%-24s %-6s %-12s %-8s %-7s %-4s %8s %8s %9s %-20s %-22s %s\n", "TIME",
		       "UID", "USER", "CLUSTER", "METHOD", "CODE", "IN", "OUT", "MS", "ORIGIN",
		       "PROGRAM", "PATH");
	while ((n = getline(&line, &cap, in)) > 0) {
		json_t *o = json_loadb(line, (size_t)n, JSON_REJECT_DUPLICATES, NULL);

		if (!json_is_object(o)) {
			bad++;
		} else if (kh_audit_match(o, f)) {
			if (f->json)
				fputs(line, stdout);
			else
				kh_audit_print_row(o);
		}
		json_decref(o);
	}
	free(line);
	(void)fclose(in);
	if (bad > 0)
		kh_cli_error("admin audit: %s: %lu line(s) are not audit lines; skipped", file, bad);
	return fflush(stdout) == 0 ? KH_EXIT_OK : KH_EXIT_FAIL;
}

static int
kh_admin_audit(struct kh_audit_filter *f, const char *file)
{
	struct kh_policy *policy = NULL;
	struct passwd *pw = f->user != NULL ? getpwnam(f->user) : NULL;
	kh_error err;
	int rc;

	if (f->user != NULL && pw == NULL) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(f->user, &end, 10);
		if (f->user[0] == '\0' || *end != '\0' || errno != 0 || v >= (unsigned long)(uid_t)-1) {
			kh_cli_error("admin audit: no such user '%s'", f->user);
			return KH_EXIT_FAIL;
		}
		f->by_uid = true;
		f->uid = (uid_t)v;
	} else if (f->user != NULL) {
		f->by_uid = true;
		f->uid = pw->pw_uid;
	}
	if (file == NULL) {
		policy = kh_policy_load(kh_cli_config_path(NULL), NULL, &err);
		if (policy == NULL) {
			kh_cli_error("admin audit: %s", err.msg);
			return KH_EXIT_FAIL;
		}
		if (!policy->relay.configured || policy->relay.audit_file[0] == '\0') {
			kh_cli_error("admin audit: %s has no relay audit file (relay.audit.file)",
				     policy->path);
			kh_policy_free(policy);
			return KH_EXIT_FAIL;
		}
		file = policy->relay.audit_file;
	}
	rc = kh_admin_audit_file(file, f);
	kh_policy_free(policy);
	return rc;
}

static int
kh_cmd_admin_audit(int argc, char **argv)
{
	struct kh_audit_filter f = { 0 };
	const char *file = NULL;
	int i;

	for (i = 2; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "--json") == 0) {
			f.json = true;
		} else if (v != NULL && strcmp(argv[i], "--user") == 0) {
			f.user = v;
			i++;
		} else if (v != NULL && strcmp(argv[i], "--cluster") == 0) {
			f.cluster = v;
			i++;
		} else if (v != NULL && strcmp(argv[i], "--program") == 0) {
			f.program = v;
			i++;
		} else if (v != NULL && strcmp(argv[i], "--pid") == 0) {
			char *end;

			errno = 0;
			f.pid = strtol(v, &end, 10);
			if (v[0] == '\0' || *end != '\0' || errno != 0 || f.pid <= 0 ||
			    f.pid > INT32_MAX) {
				kh_cli_error("admin audit: --pid '%s' is not a process id", v);
				return KH_EXIT_USAGE;
			}
			f.has_pid = true;
			i++;
		} else if (v != NULL && strcmp(argv[i], "--file") == 0) {
			file = v;
			i++;
		} else if (v != NULL && strcmp(argv[i], "--since") == 0) {
			if (kh_audit_since(v, &f.since) != 0) {
				kh_cli_error("admin audit: --since '%s' is neither an RFC 3339 time "
					     "(2026-11-24T21:00:00Z) nor a duration (30m, 2h)", v);
				return KH_EXIT_USAGE;
			}
			f.has_since = true;
			i++;
		} else {
			kh_cli_error("admin audit: unexpected argument '%s'; run 'kubehsm admin "
				     "--help'", argv[i]);
			return KH_EXIT_USAGE;
		}
	}
	return kh_need_root() == 0 ? kh_admin_audit(&f, file) : KH_EXIT_FAIL;
}

int
kh_cmd_admin(int argc, char **argv)
{
	const char *issuer = "", *user = NULL;
	bool json = false;
	int i;

	if (argc < 2) {
		kh_admin_usage(stderr);
		return KH_EXIT_USAGE;
	}
	if (strcmp(argv[1], "scan") == 0)       /* its own options and help */
		return kh_cmd_admin_scan(argc, argv);
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "help") == 0) {
			kh_admin_usage(stdout);
			return KH_EXIT_OK;
		}
	}
	if (strcmp(argv[1], "list") == 0) {
		for (i = 2; i < argc; i++) {
			if (strcmp(argv[i], "--json") == 0) {
				json = true;
			} else {
				kh_cli_error("admin list: unexpected argument '%s'", argv[i]);
				return KH_EXIT_USAGE;
			}
		}
		return kh_need_root() == 0 ? kh_admin_list(json) : KH_EXIT_FAIL;
	}
	if (strcmp(argv[1], "revoke") == 0) {
		for (i = 2; i < argc; i++) {
			if (strcmp(argv[i], "--issuer") == 0 && i + 1 < argc)
				issuer = argv[++i];
			else if (user == NULL && argv[i][0] != '-')
				user = argv[i];
			else {
				kh_cli_error("admin revoke: unexpected argument '%s'", argv[i]);
				return KH_EXIT_USAGE;
			}
		}
		if (user == NULL) {
			kh_cli_error("admin revoke: which user? run 'kubehsm admin --help'");
			return KH_EXIT_USAGE;
		}
		return kh_need_root() == 0 ? kh_admin_revoke(user, issuer) : KH_EXIT_FAIL;
	}
	if (strcmp(argv[1], "audit") == 0)
		return kh_cmd_admin_audit(argc, argv);
	kh_cli_error("unknown admin command '%s'; run 'kubehsm admin --help'", argv[1]);
	return KH_EXIT_USAGE;
}
