/*
 * Unit tests for the relay's bookkeeping: control-socket admission
 * (relay/kh_rctlpool: root's slots never taken by users, per-uid caps)
 * and I/O blocks (relay/kh_rbuf: held only while bytes wait, given back).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "relay/kh_rbuf.h"
#include "relay/kh_rctlpool.h"

static void
test_users_never_take_roots_slots(void **state)
{
	struct kh_rctlpool p;
	unsigned i, uid;

	(void)state;
	memset(&p, 0, sizeof(p));
	/* One user: only KH_RCTL_USER_PER_UID at once. */
	for (i = 0; i < KH_RCTL_USER_PER_UID; i++)
		assert_true(kh_rctlpool_admit(&p, true, 1001));
	assert_false(kh_rctlpool_admit(&p, true, 1001));
	/* Every user slot taken by many users ... */
	for (uid = 2000; p.nuser < KH_RCTL_USER_MAX; uid++)
		assert_true(kh_rctlpool_admit(&p, true, uid));
	assert_false(kh_rctlpool_admit(&p, true, 5000));
	/* ... and root still has all of its own. */
	for (i = 0; i < KH_RCTL_ROOT_MAX; i++)
		assert_true(kh_rctlpool_admit(&p, false, 0));
	assert_false(kh_rctlpool_admit(&p, false, 0));
	kh_rctlpool_leave(&p, false, 0);
	assert_true(kh_rctlpool_admit(&p, false, 0));
	/* A slot given back is a slot for the next one. */
	kh_rctlpool_leave(&p, true, 1001);
	assert_true(kh_rctlpool_admit(&p, true, 1001));
	assert_false(kh_rctlpool_admit(&p, true, 1001));
	assert_true(kh_rctlpool_timeout_ms(true) < kh_rctlpool_timeout_ms(false));
}

static void
test_uid_slots_are_reused(void **state)
{
	struct kh_rctlpool p;
	unsigned i;

	(void)state;
	memset(&p, 0, sizeof(p));
	/* Thousands of short-lived connections from many uids never run out. */
	for (i = 0; i < 10000; i++) {
		assert_true(kh_rctlpool_admit(&p, true, 3000 + i % 500));
		kh_rctlpool_leave(&p, true, 3000 + i % 500);
	}
	assert_int_equal(p.nuser, 0);
}

static void
test_blocks_only_while_bytes_wait(void **state)
{
	struct kh_rbuf a = { 0 }, b = { 0 };
	size_t used, spare, room;

	(void)state;
	kh_rbuf_trim();
	kh_rbuf_counts(&used, &spare);
	assert_int_equal(used, 0);
	assert_true(kh_rbuf_take(&a));
	assert_true(kh_rbuf_take(&a));          /* idempotent */
	kh_rbuf_counts(&used, &spare);
	assert_int_equal(used, 1);
	room = kh_rbuf_room(&a);
	assert_int_equal(room, KH_RBUF_SIZE);
	memcpy(kh_rbuf_tail(&a), "hello", 5);
	a.len = 5;
	kh_rbuf_give(&a);                       /* bytes wait: kept */
	assert_non_null(a.data);
	kh_rbuf_consume(&a, 2);
	assert_int_equal(memcmp(kh_rbuf_head(&a), "llo", 3), 0);
	kh_rbuf_consume(&a, 3);
	assert_int_equal(a.off, 0);
	kh_rbuf_give(&a);                       /* empty: back to the spares */
	assert_null(a.data);
	kh_rbuf_counts(&used, &spare);
	assert_int_equal(used, 0);
	assert_int_equal(spare, 1);
	assert_true(kh_rbuf_take(&b));          /* the spare, no malloc */
	kh_rbuf_counts(&used, &spare);
	assert_int_equal(spare, 0);
	/* Held bytes move to the front when the room behind them runs short. */
	b.off = KH_RBUF_SIZE - 10;
	b.len = 4;
	memcpy(kh_rbuf_head(&b), "abcd", 4);
	assert_int_equal(kh_rbuf_room(&b), KH_RBUF_SIZE - 4);
	assert_int_equal(memcmp(b.data, "abcd", 4), 0);
	kh_rbuf_drop(&b);
	kh_rbuf_trim();
	kh_rbuf_counts(&used, &spare);
	assert_int_equal(used + spare, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_users_never_take_roots_slots),
		cmocka_unit_test(test_uid_slots_are_reused),
		cmocka_unit_test(test_blocks_only_while_bytes_wait),
	};

	return cmocka_run_group_tests_name("relay/kh_rctlpool+kh_rbuf", tests, NULL, NULL);
}
