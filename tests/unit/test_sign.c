#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
static void t_stub(void **s) { (void)s; }
int main(void) { const struct CMUnitTest t[] = { cmocka_unit_test(t_stub) }; return cmocka_run_group_tests_name("sign", t, NULL, NULL); }
