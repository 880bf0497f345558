#include "config.h"
#include "kh_cli.h"
int kh_cmd_config(int argc, char **argv) { (void)argc; (void)argv; return 1; }
