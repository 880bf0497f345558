#include "config.h"

#include "kh_cli.h"

int
kh_cmd_admin(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	kh_cli_error("admin: not implemented yet");
	return KH_EXIT_FAIL;
}
