#include "config.h"

#include "kh_cli.h"

int
kh_cmd_kubeconfig(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	kh_cli_error("kubeconfig: not implemented yet");
	return KH_EXIT_FAIL;
}
