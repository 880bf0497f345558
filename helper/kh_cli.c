/*
 * kh_cli — helpers shared by the kubehsm front end and kubehsm-tool.so.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "helper/kh_cli.h"

void
kh_cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("kubehsm: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *
kh_cli_config_path(const char *option)
{
	const char *env;

	if (option != NULL)
		return option;
	env = getenv("KUBEHSM_CONFIG");
	if (env != NULL && env[0] != '\0')
		return env;
	return KH_DEFAULT_CONFIG;
}

int
kh_cli_no_dumps(void)
{
	static const struct rlimit none = { 0, 0 };

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		return -1;
	return setrlimit(RLIMIT_CORE, &none);
}
