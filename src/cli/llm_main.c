/* build/llm: drives the engine without nginx, for debugging and benchmarks. */
#include <stdio.h>
#include <string.h>

#include "llm_cli.h"

static const struct {
    const char *name;
    int       (*run)(int argc, char **argv);
    const char *help;
} commands[] = {
    { "logits",     llm_cmd_logits,     "--model DIR --ids 1,2,3 | --text T   last-position logits as JSON" },
    { "generate",   llm_cmd_generate,   "--model DIR --ids ... --max-tokens N [sampling flags]" },
    { "bench",      llm_cmd_bench,      "--model DIR --prompt-len P --gen N --batch B" },
    { "synth",      llm_cmd_synth,      "--config config.json --out DIR [--dtype bf16]" },
    { "tokenize",   llm_cmd_tokenize,   "--model DIR [--text T] [--special]" },
    { "detokenize", llm_cmd_detokenize, "--model DIR   (JSON id arrays on stdin)" },
    { "render",     llm_cmd_render,     "--model DIR --request FILE.json" },
    { "chat",       llm_cmd_chat,       "--model DIR --request FILE.json [--api chat|completions|messages] [--stream]" },
};

int
main(int argc, char **argv)
{
    size_t i;

    if (argc >= 2) {
        for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
            if (strcmp(argv[1], commands[i].name) == 0) {
                return commands[i].run(argc - 1, argv + 1);
            }
        }
    }
    fprintf(stderr, "usage: llm COMMAND [options]\n");
    for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        fprintf(stderr, "  %-10s %s\n", commands[i].name, commands[i].help);
    }
    return 2;
}
