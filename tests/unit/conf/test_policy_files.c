/*
 * Unit tests for the files the policy trusts (conf/kh_policy_file.c): the
 * policy's own owner, mode and directory, the issuer PIN file, symbolic
 * links, and StrictModes for every directory above them.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "conf/kh_policy.h"
#include "tests/unit/conf/policy_fixture.h"

static char *
write_config(const struct fixture *fx, const char *dir, const char *text, mode_t mode)
{
	char *path = NULL;

	assert_true(asprintf(&path, "%s/kubehsm.conf", dir) > 0);
	write_file(path, text, mode);
	return path;
}

static void
test_pin_file_mode(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = test_opts();
	char *text = base_with(fx, 0, NULL), *pin = path_in(fx, "issuer.pin");
	char *conf = write_config(fx, fx->sub, text, 0644), want[512];
	struct kh_policy *p;
	kh_error err;

	assert_int_equal(chmod(pin, 0644), 0);
	p = kh_policy_load(conf, &o, &err);
	assert_null(p);
	snprintf(want, sizeof(want), "%s: mode 0644 lets group/others read the issuer PIN; "
		 "chmod 0600", pin);
	assert_error_at(&err, conf, 7, want);
	assert_null(strstr(err.msg, PIN_SECRET));

	assert_int_equal(chmod(pin, 0640), 0);
	assert_null(kh_policy_load(conf, &o, &err));
	assert_non_null(strstr(err.msg, "mode 0640"));

	/* 0400 is as good as 0600. */
	assert_int_equal(chmod(pin, 0400), 0);
	p = kh_policy_load(conf, &o, &err);
	assert_non_null(p);
	kh_policy_free(p);
	assert_int_equal(chmod(pin, 0600), 0);
	free(pin);
	free(conf);
	free(text);
}

static void
test_pin_file_symlink(void **state)
{
	struct fixture *fx = *state;
	char *link = path_in(fx, "pin-link"), *pin = path_in(fx, "issuer.pin");
	char *text = base_with(fx, 7,
		"  cert_file = \"@D@/issuer.pem\"; pin_file = \"@D@/pin-link\";");
	kh_error err;

	assert_int_equal(symlink(pin, link), 0);
	assert_null(load_text(text, &err));
	assert_error_at(&err, "test.conf", 7, "is a symbolic link");
	free(text);
	free(link);
	free(pin);
}

static void
test_config_file_modes(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = test_opts();
	char *text = base_with(fx, 0, NULL), *conf, *link = NULL;
	struct kh_policy *p;
	kh_error err;

	conf = write_config(fx, fx->sub, text, 0664);
	assert_null(kh_policy_load(conf, &o, &err));
	assert_error_at(&err, conf, 0, "mode 0664: group/others could change the policy");

	assert_int_equal(chmod(conf, 0602), 0);
	assert_null(kh_policy_load(conf, &o, &err));
	assert_non_null(strstr(err.msg, "mode 0602"));

	assert_int_equal(chmod(conf, 0600), 0);
	p = kh_policy_load(conf, &o, &err);
	assert_non_null(p);
	kh_policy_free(p);

	/* A writable parent directory is as bad as a writable file. */
	assert_int_equal(chmod(fx->sub, 0775), 0);
	assert_null(kh_policy_load(conf, &o, &err));
	assert_non_null(strstr(err.msg, "directory"));
	assert_non_null(strstr(err.msg, "mode 0775"));
	assert_int_equal(chmod(fx->sub, 0755), 0);

	/* A symlink is refused rather than followed. */
	assert_true(asprintf(&link, "%s/link.conf", fx->sub) > 0);
	assert_int_equal(symlink(conf, link), 0);
	assert_null(kh_policy_load(link, &o, &err));
	assert_error_at(&err, link, 0, "symbolic link");

	/* Missing file, directory. */
	assert_null(kh_policy_load("/nonexistent-kubehsm/kubehsm.conf", &o, &err));
	assert_non_null(strstr(err.msg, "No such file or directory"));
	assert_null(kh_policy_load(fx->sub, &o, &err));
	assert_non_null(strstr(err.msg, "not a regular file"));
	assert_null(kh_policy_load(NULL, &o, &err));
	assert_int_equal(err.code, KH_ERR_INPUT);
	free(link);
	free(conf);
	free(text);
}

/*
 * StrictModes for the directories above every file the policy trusts: a
 * writer of any of them could replace the file.  A sticky directory of
 * root's (or the trusted uid's), like /tmp, is safe: others may add
 * entries there but not rename or remove another owner's (#13).
 */
static void
test_parent_dirs(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = test_opts();
	char *text = base_with(fx, 0, NULL), *conf = write_config(fx, fx->sub, text, 0644);
	char *cadir = path_in(fx, "ca"), *ca = path_in(fx, "ca/ca.pem"), *catext;
	struct kh_policy *p;
	kh_error err;

	/* The policy's grandparent open to others, then to the group. */
	assert_int_equal(chmod(fx->dir, 0777), 0);
	assert_null(kh_policy_load(conf, &o, &err));
	assert_non_null(strstr(err.msg, fx->dir));
	assert_non_null(strstr(err.msg, "mode 0777"));
	assert_int_equal(chmod(fx->dir, 0770), 0);
	assert_null(kh_policy_load(conf, &o, &err));
	assert_non_null(strstr(err.msg, "mode 0770"));
	/* Sticky and the trusted uid's: safe (this is /tmp for every test). */
	assert_int_equal(chmod(fx->dir, 01777), 0);
	p = kh_policy_load(conf, &o, &err);
	if (p == NULL)
		print_error("%s\n", err.msg);
	assert_non_null(p);
	kh_policy_free(p);
	assert_int_equal(chmod(fx->dir, 0700), 0);

	/* A named file (the users' CA) in a directory others may write. */
	assert_int_equal(mkdir(cadir, 0777), 0);
	assert_int_equal(chmod(cadir, 0777), 0);
	write_file(ca, "-----BEGIN CERTIFICATE-----\n", 0644);
	catext = base_with(fx, 4, "trust = { ca_file = \"@D@/ca/ca.pem\"; map = \"cn\"; };");
	assert_null(load_text(catext, &err));
	assert_error_at(&err, "test.conf", 4, "mode 0777");
	assert_non_null(strstr(err.msg, cadir));
	assert_int_equal(chmod(cadir, 0755), 0);
	p = load_text(catext, &err);
	assert_non_null(p);
	kh_policy_free(p);
	free(catext);
	free(ca);
	free(cadir);
	free(conf);
	free(text);
}

static void
test_config_owner(void **state)
{
	struct fixture *fx = *state;
	struct kh_policy_load_opts o = { .trusted_uid = 0 };
	char *text = base_with(fx, 0, NULL), *conf;
	kh_error err;

	if (geteuid() == 0) {
		/* Root can hand the file to someone else; the loader must notice. */
		conf = write_config(fx, fx->sub, text, 0644);
		assert_int_equal(chown(conf, 65534, (gid_t)-1), 0);
		assert_null(kh_policy_load(conf, &o, &err));
		assert_error_at(&err, conf, 0, "owned by uid 65534; it must be owned by root");
	} else {
		/* Unprivileged: our own file is not root's. */
		conf = write_config(fx, fx->sub, text, 0644);
		assert_null(kh_policy_load(conf, &o, &err));
		assert_non_null(strstr(err.msg, "must be owned by root"));
	}
	free(conf);
	free(text);
}
int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pin_file_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin_file_symlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_file_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parent_dirs, setup, teardown),
	};

	return cmocka_run_group_tests_name("policy files", tests, NULL, NULL);
}
