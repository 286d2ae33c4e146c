/* Engine subcommands: logits, generate, bench, synth (being written). */
#include <stdio.h>
#include "llm_cli.h"
static int todo(const char *n) { fprintf(stderr, "llm %s: not available in this build\n", n); return 2; }
int llm_cmd_logits(int argc, char **argv)   { (void) argc; (void) argv; return todo("logits"); }
int llm_cmd_generate(int argc, char **argv) { (void) argc; (void) argv; return todo("generate"); }
int llm_cmd_bench(int argc, char **argv)    { (void) argc; (void) argv; return todo("bench"); }
int llm_cmd_synth(int argc, char **argv)    { (void) argc; (void) argv; return todo("synth"); }
