/*
 * The session's prompt building without nginx: the ids a message request
 * would run equal what count_tokens reports for the same body, named tools
 * included; completions ids, text and echo; the errors.
 */
#include "tap.h"

#include "chat/llm_session.h"

#define MODEL "models/ngxllm-tiny"

static const char *TOOLS =
    "\"tools\":[{\"name\":\"get_weather\",\"description\":\"Weather now\","
    "\"input_schema\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
    "\"string\"}}}},{\"name\":\"send_email\",\"description\":\"Send a mail "
    "to someone with a subject and a long body text\",\"input_schema\":"
    "{\"type\":\"object\",\"properties\":{\"to\":{\"type\":\"string\"},"
    "\"body\":{\"type\":\"string\"}}}}]";

/* The prompt of an Anthropic body for `api`; -1 with err on failure. */
static long
prompt_len(const llm_session_model *sm, llm_api_kind api, const char *body,
    llm_api_error *err)
{
    long                n;
    llm_request         req;
    llm_api_limits      lim;
    llm_session_prompt  p;

    llm_api_limits_default(&lim);
    llm_request_init(&req);
    memset(err, 0, sizeof(*err));
    if (llm_api_parse_request(api, body, strlen(body), &lim, &req, err) != 0) {
        llm_request_free(&req);
        return -1;
    }
    n = llm_session_build_prompt(sm, &req, &p, err) == 0 ? (long) p.n_ids : -1;
    llm_session_prompt_free(&p);
    llm_request_free(&req);
    return n;
}

int
main(void)
{
    char                err[512], body[2048];
    long                named, named_count, all, all_count;
    llm_api_error       e;
    llm_request         req;
    llm_api_limits      lim;
    llm_session_prompt  p;
    llm_session_model   sm = { 0 };
    llm_tokenizer      *tok;
    llm_chat           *chat;

    tok = llm_tokenizer_load(MODEL, err, sizeof(err));
    chat = tok ? llm_chat_load(MODEL, tok, err, sizeof(err)) : NULL;
    if (!ok(tok && chat, "the default model's tokenizer and template load")) {
        diag(err);
        return done_testing();
    }
    sm.alias = "tiny";
    sm.chat = chat;
    sm.tok = tok;
    sm.reasoning_parser = "think";
    sm.split_special_tokens = 1;

    snprintf(body, sizeof(body), "{\"model\":\"tiny\",\"max_tokens\":8,"
             "\"messages\":[{\"role\":\"user\",\"content\":\"Weather in "
             "Oslo?\"}],%s,\"tool_choice\":{\"type\":\"tool\",\"name\":"
             "\"get_weather\"}}", TOOLS);
    named = prompt_len(&sm, LLM_API_MESSAGES, body, &e);
    named_count = prompt_len(&sm, LLM_API_COUNT_TOKENS, body, &e);
    ok(named > 0, "a message request with a named tool renders (%ld ids)", named);
    is_int(named_count, named, "count_tokens counts the same prompt");

    snprintf(body, sizeof(body), "{\"model\":\"tiny\",\"max_tokens\":8,"
             "\"messages\":[{\"role\":\"user\",\"content\":\"Weather in "
             "Oslo?\"}],%s}", TOOLS);
    all = prompt_len(&sm, LLM_API_MESSAGES, body, &e);
    all_count = prompt_len(&sm, LLM_API_COUNT_TOKENS, body, &e);
    is_int(all_count, all, "count_tokens = the prompt with every tool too");
    ok(all > named, "a named tool offers only that tool (%ld < %ld ids)",
       named, all);

    /* user text that looks like control tokens stays text */
    named = prompt_len(&sm, LLM_API_MESSAGES, "{\"model\":\"tiny\",\"max_tokens"
                       "\":8,\"messages\":[{\"role\":\"user\",\"content\":"
                       "\"<|im_end|>\"}]}", &e);
    all = prompt_len(&sm, LLM_API_MESSAGES, "{\"model\":\"tiny\",\"max_tokens"
                     "\":8,\"messages\":[{\"role\":\"user\",\"content\":"
                     "\"x\"}]}", &e);
    ok(named > all, "<|im_end|> in content is several text tokens (%ld > %ld)",
       named, all);

    /* completions: text, echo */
    llm_api_limits_default(&lim);
    llm_request_init(&req);
    snprintf(body, sizeof(body), "{\"model\":\"tiny\",\"prompt\":\"Once "
             "upon\",\"echo\":true}");
    ok(llm_api_parse_request(LLM_API_COMPLETIONS, body, strlen(body), &lim,
                             &req, &e) == 0, "completion parses");
    ok(llm_session_build_prompt(&sm, &req, &p, &e) == 0 && p.n_ids > 0,
       "completion prompt ids");
    ok(p.echo && strcmp(p.echo, "Once upon") == 0, "echo is the prompt text");
    ok(!p.starts_in_reasoning, "completions never start in reasoning");
    llm_session_prompt_free(&p);
    llm_request_free(&req);

    /* a model without a template */
    sm.chat = NULL;
    ok(prompt_len(&sm, LLM_API_CHAT, "{\"model\":\"tiny\",\"messages\":[{\"role"
                  "\":\"user\",\"content\":\"hi\"}]}", &e) < 0,
       "chat without a template fails");
    is_int(e.status, 400, "with 400");
    is_str(e.code, "unsupported", "code unsupported");

    llm_chat_free(chat);
    llm_tokenizer_free(tok);
    return done_testing();
}
