/* IR lifetime helpers and small shared utilities. */
#include "core/llm_ir.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void
llm_request_init(llm_request *r)
{
    memset(r, 0, sizeof(*r));
    r->sampling.temperature = 1.0;
    r->sampling.top_p = 1.0;
    r->sampling.repetition_penalty = 1.0;
    r->parallel_tool_calls = 1;
    r->reasoning = -1;
    r->add_generation_prompt = 1;
    r->max_tokens = -1;
    r->default_max_tokens = -1;
    r->thinking_budget = -1;
    r->n = 1;
    r->speculation = -1;
    r->cache_messages = -1;
}

void
llm_request_free(llm_request *r)
{
    size_t i;

    free(r->model);
    json_decref(r->messages);
    json_decref(r->tools);
    free(r->tool_choice_name);
    free(r->grammar);
    free(r->regex);
    json_decref(r->template_kwargs);
    free(r->prompt);
    free(r->prompt_ids);
    free(r->sampling.logit_bias);
    for (i = 0; i < r->n_stop; i++) {
        free(r->stop[i]);
    }
    free(r->stop);
    json_decref(r->response_format);
    json_decref(r->metadata);
    json_decref(r->response_fields);
    json_decref(r->response_input);
    memset(r, 0, sizeof(*r));
}

void
llm_result_free(llm_result *r)
{
    size_t i;

    free(r->content);
    free(r->reasoning);
    for (i = 0; i < r->n_tool_calls; i++) {
        free(r->tool_calls[i].id);
        free(r->tool_calls[i].name);
        free(r->tool_calls[i].arguments);
    }
    free(r->tool_calls);
    free(r->stop_sequence);
    memset(r, 0, sizeof(*r));
}

const char *
llm_finish_openai(llm_finish f)
{
    switch (f) {
    case LLM_FINISH_LENGTH:     return "length";
    case LLM_FINISH_TOOL_CALLS: return "tool_calls";
    case LLM_FINISH_NONE:       return NULL;
    default:                    return "stop";
    }
}

const char *
llm_finish_anthropic(llm_finish f)
{
    switch (f) {
    case LLM_FINISH_LENGTH:     return "max_tokens";
    case LLM_FINISH_TOOL_CALLS: return "tool_use";
    case LLM_FINISH_STOP_SEQ:   return "stop_sequence";
    case LLM_FINISH_NONE:       return NULL;
    default:                    return "end_turn";
    }
}

void
llm_random_id(char *out, size_t outlen, const char *prefix, size_t nrand)
{
    static const char alnum[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char  raw[64];
    size_t         plen, i;
    int            fd;

    plen = strlen(prefix);
    if (outlen == 0) {
        return;
    }
    if (plen + 1 > outlen) {
        out[0] = '\0';
        return;
    }
    if (nrand > sizeof(raw)) {
        nrand = sizeof(raw);
    }
    if (plen + nrand + 1 > outlen) {
        nrand = outlen - plen - 1;
    }

    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, raw, nrand) != (ssize_t) nrand) {
        /* fall back to a time-seeded mix; ids need uniqueness, not secrecy */
        uint64_t x = (uint64_t) time(NULL) ^ ((uint64_t) getpid() << 32)
                     ^ (uint64_t) (uintptr_t) out;
        for (i = 0; i < nrand; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            raw[i] = (unsigned char) x;
        }
    }
    if (fd >= 0) {
        close(fd);
    }

    memcpy(out, prefix, plen);
    for (i = 0; i < nrand; i++) {
        out[plen + i] = alnum[raw[i] % (sizeof(alnum) - 1)];
    }
    out[plen + nrand] = '\0';
}
