/*
 * kh_tool — the entry point of kubehsm-tool.so, the module the kubehsm
 * front end loads for every subcommand but `exec` (see kubehsm.c).
 */
#ifndef KH_TOOL_H
#define KH_TOOL_H

/* Run the subcommand argv[1] as `kubehsm` would; returns the exit status. */
int kh_tool_main(int argc, char **argv);

#endif
