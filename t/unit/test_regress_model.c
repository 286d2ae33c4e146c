/*
 * Crash regressions found by t/fuzz/fuzz_config: config.json values that
 * must be refused with a message, not converted with undefined behaviour.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "engine/llm_model_impl.h"

static int
parse(const char *json, char *msg, size_t msglen)
{
    char dir[] = "/tmp/llm-regress-model-XXXXXX", path[256];
    FILE *f;
    llm_model *m;
    int rc;

    if (mkdtemp(dir) == NULL) return 99;
    snprintf(path, sizeof(path), "%s/config.json", dir);
    f = fopen(path, "w");
    if (f == NULL) return 99;
    fputs(json, f);
    fclose(f);
    m = calloc(1, sizeof(*m));
    rc = llm_model_parse_config(m, dir, msg, msglen);
    llm_model_free(m);
    unlink(path);
    rmdir(dir);
    return rc;
}

int
main(void)
{
    char msg[512];

    /* fuzz_config input 9ec7f4c5: a float integer far past int range was cast to int */
    msg[0] = '\0';
    is_int(parse("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\":41e281, "
                 "\"ing\": {\"rope_type\":8.8}}", msg, sizeof(msg)), -1, "huge float hidden_size refused");
    ok(strstr(msg, "\"hidden_size\" is not an integer") != NULL, "message names the field (%s)", msg);
    msg[0] = '\0';
    is_int(parse("{\"architectures\": [\"LlamaForCausalLM\"], \"num_hidden_layers\": -1e300}", msg, sizeof(msg)),
           -1, "huge negative float refused");
    ok(strstr(msg, "\"num_hidden_layers\" is not an integer") != NULL, "message names the field (%s)", msg);
    /* an integral float inside int range is still accepted as before */
    msg[0] = '\0';
    is_int(parse("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64.0, \"num_attention_heads\": 4, "
                 "\"num_key_value_heads\": 4, \"intermediate_size\": 128, \"num_hidden_layers\": 1, "
                 "\"vocab_size\": 256}", msg, sizeof(msg)), 0, "integral float in range accepted (%s)", msg);
    return done_testing();
}
