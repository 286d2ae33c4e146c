/* Text subcommands: tokenize, detokenize, render (being written). */
#include <stdio.h>
#include "llm_cli.h"
static int todo(const char *n) { fprintf(stderr, "llm %s: not available in this build\n", n); return 2; }
int llm_cmd_tokenize(int argc, char **argv)   { (void) argc; (void) argv; return todo("tokenize"); }
int llm_cmd_detokenize(int argc, char **argv) { (void) argc; (void) argv; return todo("detokenize"); }
int llm_cmd_render(int argc, char **argv)     { (void) argc; (void) argv; return todo("render"); }
