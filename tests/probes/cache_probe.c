/*
 * cache_probe — drive the keyring cache from integration tests.
 *
 *   cache_probe login  UID USER SCOPE TTL [options]   root: kh_cache_login (a new
 *                                                     login; --join: joins), prints
 *                                                     the record's serial
 *   cache_probe store  UID USER SCOPE TTL [options]   root: kh_cache_store (same)
 *   cache_probe count  UID USER                       root: kh_cache_login_count
 *   cache_probe logout UID [--keep] [--user NAME] [--serial N]...
 *                                                     root: kh_cache_logout of one
 *                                                     login (USER defaults to UID's
 *                                                     account; --serial: the scope-
 *                                                     session records it minted)
 *   cache_probe find   [--issuer ID] [--pause|--hold] the caller's record;
 *                                                     pause after (or hold
 *                                                     before) freeing it
 *   cache_probe pin    [--issuer ID]                  the caller's cached PIN
 *   cache_probe revoke UID [--issuer ID]              end a session
 *   cache_probe list   [UID|all]
 *   cache_probe forge  OWNER DEST DESC PERM TTL FILE  root: hand a raw payload
 *                                                     to DEST's user keyring
 *   cache_probe size   [options]                      encoded record size
 * options: --issuer ID --pin PIN --chain F --key F --token-cert F
 *          --groups a,b --expires-in SECONDS (record expiry, default TTL)
 *          --ids: after login/store/logout, print "ids R E S / G E S" (the
 *          probe's own real/effective/saved ids, which must be unchanged)
 *
 * find prints "ok uid=U user=N logins=L expires=E issuer=I" or
 * "miss <reason>: message" (exit 1).  Other errors exit 2.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pwd.h>

#include <keyutils.h>

#include "cache/kh_cache.h"
#include "lib/kh_json.h"
#include "lib/kh_mem.h"

#define DUMMY_PEM "-----BEGIN CERTIFICATE-----\nMIIBdummy\n-----END CERTIFICATE-----\n"
#define DUMMY_KEY "-----BEGIN PRIVATE KEY-----\nKHTESTSECRETKEYMARKER\n-----END PRIVATE KEY-----\n"

struct opts {
	const char *issuer, *pin, *chain, *key, *token_cert, *groups, *user;
	long expires_in;
	int pause, hold, keep, ids, join;
	int32_t serials[8];
	size_t nserials;
};

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "cache_probe: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	buf = calloc(1, (size_t)n + 1);
	if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n)
		exit(2);
	fclose(f);
	return buf;
}

static int
parse_opts(int argc, char **argv, int first, struct opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->issuer = "";
	o->expires_in = -1;
	for (i = first; i < argc; i++) {
		if (strcmp(argv[i], "--pause") == 0) { o->pause = 1; continue; }
		if (strcmp(argv[i], "--hold") == 0) { o->hold = 1; continue; }
		if (strcmp(argv[i], "--keep") == 0) { o->keep = 1; continue; }
		if (strcmp(argv[i], "--ids") == 0) { o->ids = 1; continue; }
		if (strcmp(argv[i], "--join") == 0) { o->join = 1; continue; }
		if (i + 1 >= argc)
			return -1;
		if (strcmp(argv[i], "--issuer") == 0) o->issuer = argv[++i];
		else if (strcmp(argv[i], "--pin") == 0) o->pin = argv[++i];
		else if (strcmp(argv[i], "--chain") == 0) o->chain = argv[++i];
		else if (strcmp(argv[i], "--key") == 0) o->key = argv[++i];
		else if (strcmp(argv[i], "--token-cert") == 0) o->token_cert = argv[++i];
		else if (strcmp(argv[i], "--groups") == 0) o->groups = argv[++i];
		else if (strcmp(argv[i], "--expires-in") == 0) o->expires_in = atol(argv[++i]);
		else if (strcmp(argv[i], "--user") == 0) o->user = argv[++i];
		else if (strcmp(argv[i], "--serial") == 0 && o->nserials < 8)
			o->serials[o->nserials++] = (int32_t)atol(argv[++i]);
		else return -1;
	}
	return 0;
}

static struct kh_record *
build_record(char **argv, const struct opts *o)
{
	struct kh_record *r = calloc(1, sizeof(*r));
	char *g, *save = NULL, *tok;
	long ttl = atol(argv[5]);

	if (r == NULL)
		exit(2);
	r->version = KH_RECORD_VERSION;
	r->uid = (uid_t)strtoul(argv[2], NULL, 10);
	r->user = strdup(argv[3]);
	r->scope = strcmp(argv[4], "session") == 0 ? KH_SCOPE_SESSION : KH_SCOPE_USER;
	r->issuer_id = strdup(o->issuer);
	r->kube_user = strdup(argv[3]);
	r->created = time(NULL);
	r->expires = r->created + (o->expires_in >= 0 ? o->expires_in : ttl);
	r->cert_chain_pem = o->chain ? slurp(o->chain) : strdup(DUMMY_PEM);
	r->key_pem = o->key ? slurp(o->key) : strdup(DUMMY_KEY);
	r->token_cert_pem = o->token_cert ? slurp(o->token_cert) : strdup(DUMMY_PEM);
	r->token_uri = strdup("pkcs11:token=test;object=kube");
	r->logins = 1;
	r->groups = calloc(KH_RECORD_MAX_GROUPS + 1, sizeof(char *));
	if (o->groups != NULL) {
		g = strdup(o->groups);
		for (tok = strtok_r(g, ",", &save); tok && r->ngroups < KH_RECORD_MAX_GROUPS;
		     tok = strtok_r(NULL, ",", &save))
			r->groups[r->ngroups++] = strdup(tok);
		free(g);
	}
	return r;
}

static void
print_ids(const struct opts *o)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (!o->ids || getresuid(&r, &e, &s) != 0 || getresgid(&rg, &eg, &sg) != 0)
		return;
	printf("ids %u %u %u / %u %u %u\n", (unsigned)r, (unsigned)e, (unsigned)s,
	       (unsigned)rg, (unsigned)eg, (unsigned)sg);
}

static int
fail(const kh_error *err)
{
	fprintf(stderr, "error [%s]: %s\n", kh_errcode_name(err->code), err->msg);
	return 2;
}

static const char *
miss_name(enum kh_cache_miss m)
{
	switch (m) {
	case KH_MISS_NONE: return "none";
	case KH_MISS_ABSENT: return "absent";
	case KH_MISS_EXPIRED: return "expired";
	case KH_MISS_REVOKED: return "revoked";
	case KH_MISS_REFUSED: return "refused";
	}
	return "?";
}

static int
cmd_find(const struct opts *o)
{
	struct kh_record *rec = NULL;
	enum kh_cache_miss miss;
	kh_error err;

	if (kh_cache_find(o->issuer, &rec, &miss, &err) != 0) {
		if (miss == KH_MISS_NONE)
			return fail(&err);
		printf("miss %s: %s\n", miss_name(miss), err.msg);
		return 1;
	}
	printf("ok uid=%u user=%s logins=%u expires=%lld issuer=%s groups=%zu\n",
	       (unsigned)rec->uid, rec->user, rec->logins, (long long)rec->expires,
	       rec->issuer_id, rec->ngroups);
	if (o->hold) {
		/* Positive control for the memory scan: the key is still here. */
		printf("holding\n");
		fflush(stdout);
		pause();
	}
	kh_record_free(rec);
	if (o->pause) {
		/* The test dumps our memory now: no secret may be left in it. */
		printf("paused\n");
		fflush(stdout);
		pause();
	}
	return 0;
}

/* Hand a raw payload, owned by OWNER with PERM, to DEST's user keyring:
 * records the real writer would never produce. */
static int
cmd_forge(char **argv)
{
	uid_t owner = (uid_t)strtoul(argv[2], NULL, 10);
	uid_t dest = (uid_t)strtoul(argv[3], NULL, 10);
	key_perm_t perm = (key_perm_t)strtoul(argv[5], NULL, 16);
	char *payload = slurp(argv[7]);
	key_serial_t stage, k;

	stage = add_key("keyring", "probe:stage", NULL, 0, KEY_SPEC_THREAD_KEYRING);
	k = add_key("user", argv[4], payload, strlen(payload), stage);
	if (k < 0 || keyctl_set_timeout(k, (unsigned)atol(argv[6])) != 0 ||
	    (owner != 0 && keyctl_chown(k, owner, (gid_t)-1) != 0) ||
	    keyctl_setperm(k, perm | KEY_POS_LINK) != 0 || setresuid(dest, dest, 0) != 0 ||
	    keyctl_link(k, KEY_SPEC_USER_KEYRING) != 0 || setresuid(0, 0, 0) != 0) {
		perror("forge");
		return 2;
	}
	(void)keyctl_invalidate(stage);
	free(payload);
	printf("%d\n", k);
	return 0;
}

static int
cmd_list(int argc, char **argv)
{
	struct kh_cache_entry *e = NULL;
	size_t n = 0, i;
	uid_t uid = getuid();
	kh_error err;

	if (argc > 2)
		uid = strcmp(argv[2], "all") == 0 ? (uid_t)-1 : (uid_t)strtoul(argv[2], NULL, 10);
	if (kh_cache_list(uid, &e, &n, &err) != 0)
		return fail(&err);
	for (i = 0; i < n; i++)
		printf("%u %s %s%s%s%s%s\n", (unsigned)e[i].uid, e[i].description,
		       miss_name(e[i].state), e[i].rec && e[i].rec->key_pem ? " KEY-LEAKED" : "",
		       e[i].rec ? "" : " no-record", e[i].problem[0] ? ": " : "", e[i].problem);
	printf("count %zu\n", n);
	kh_cache_entries_free(e, n);
	return 0;
}

int
main(int argc, char **argv)
{
	struct kh_record *rec;
	struct opts o;
	kh_error err;
	int rc;

	kh_json_wipe_on_free(true);
	if (argc < 2)
		return 2;
	if (strcmp(argv[1], "login") == 0 || strcmp(argv[1], "store") == 0 ||
	    strcmp(argv[1], "size") == 0) {
		if (strcmp(argv[1], "size") == 0) {
			char *fake[] = { argv[0], argv[1], "1001", "alice", "user", "28800" };
			char *buf;
			size_t len;
			if (parse_opts(argc, argv, 2, &o) != 0)
				return 2;
			rec = build_record(fake, &o);
			rc = kh_record_encode(rec, &buf, &len, &err);
			kh_record_free(rec);
			if (rc != 0)
				return fail(&err);
			printf("%zu\n", len);
			kh_secure_free(buf, len + 1);
			return 0;
		}
		if (argc < 6 || parse_opts(argc, argv, 6, &o) != 0)
			return 2;
		int32_t serial = 0;

		rec = build_record(argv, &o);
		rc = strcmp(argv[1], "login") == 0
			? kh_cache_login(rec, o.pin, o.join ? KH_LOGIN_JOIN : KH_LOGIN_NEW,
					 &serial, &err)
			: kh_cache_store(rec, o.pin, &serial, &err);
		kh_record_free(rec);
		print_ids(&o);
		if (rc != 0)
			return fail(&err);
		printf("%d\n", (int)serial);
		return 0;
	}
	if (strcmp(argv[1], "logout") == 0) {
		if (argc < 3 || parse_opts(argc, argv, 3, &o) != 0)
			return 2;
		uid_t uid = (uid_t)strtoul(argv[2], NULL, 10);
		const struct passwd *pw = o.user ? NULL : getpwuid(uid);

		rc = kh_cache_logout(uid, o.user ? o.user : pw ? pw->pw_name : "?",
				     o.serials, o.nserials, !o.keep, NULL, NULL, &err);
		print_ids(&o);
		if (rc < 0)
			return fail(&err);
		printf(rc == 1 ? "removed\n" : "kept\n");
		return 0;
	}
	if (strcmp(argv[1], "count") == 0 && argc == 4) {
		if (kh_cache_login_count((uid_t)strtoul(argv[2], NULL, 10), argv[3], &err) != 0)
			return fail(&err);
		printf("counted\n");
		return 0;
	}
	if (strcmp(argv[1], "find") == 0) {
		if (parse_opts(argc, argv, 2, &o) != 0)
			return 2;
		return cmd_find(&o);
	}
	if (strcmp(argv[1], "pin") == 0) {
		char *pin = NULL;
		if (parse_opts(argc, argv, 2, &o) != 0)
			return 2;
		if (kh_cache_find_pin(o.issuer, &pin, &err) != 0)
			return fail(&err);
		printf("pin %s\n", pin);
		kh_secure_strfree(pin);
		return 0;
	}
	if (strcmp(argv[1], "revoke") == 0) {
		if (argc < 3 || parse_opts(argc, argv, 3, &o) != 0)
			return 2;
		rc = kh_cache_revoke((uid_t)strtoul(argv[2], NULL, 10), o.issuer, &err);
		if (rc < 0)
			return fail(&err);
		printf(rc > 0 ? "revoked\n" : "none\n");
		return 0;
	}
	if (strcmp(argv[1], "list") == 0)
		return cmd_list(argc, argv);
	if (strcmp(argv[1], "forge") == 0 && argc == 8)
		return cmd_forge(argv);
	fprintf(stderr, "cache_probe: bad command line\n");
	return 2;
}
