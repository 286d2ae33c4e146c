/* Subcommands of build/llm; each lives in its own src/cli/cmd_*.c file. */
#ifndef LLM_CLI_H
#define LLM_CLI_H

int llm_cmd_logits(int argc, char **argv);
int llm_cmd_generate(int argc, char **argv);
int llm_cmd_bench(int argc, char **argv);
int llm_cmd_synth(int argc, char **argv);
int llm_cmd_tokenize(int argc, char **argv);
int llm_cmd_detokenize(int argc, char **argv);
int llm_cmd_render(int argc, char **argv);
int llm_cmd_chat(int argc, char **argv);

#endif
