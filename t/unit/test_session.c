/*
 * The session's prompt building without nginx: the ids a message request
 * would run equal what count_tokens reports for the same body, named tools
 * included; completions ids, text and echo; the errors.
 */
#include <stdlib.h>

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

/* The rendered prompt of a body for `api` as text; NULL on failure. */
static char *
prompt_text(const llm_session_model *sm, llm_api_kind api, const char *body)
{
    char               *text = NULL;
    size_t              len;
    llm_request         req;
    llm_api_error       err;
    llm_api_limits      lim;
    llm_session_prompt  p;

    llm_api_limits_default(&lim);
    llm_request_init(&req);
    memset(&p, 0, sizeof(p));
    if (llm_api_parse_request(api, body, strlen(body), &lim, &req, &err) == 0
        && llm_session_build_prompt(sm, &req, &p, &err) == 0)
    {
        llm_tokenizer_decode(sm->tok, p.ids, p.n_ids, 0, &text, &len);
    } else {
        diag(err.message);
    }
    llm_session_prompt_free(&p);
    llm_request_free(&req);
    return text;
}

/* Reasoning sent back on an assistant turn after the last user message (a
 * tool loop, or a final assistant turn to continue) is rendered in its
 * think block by the shipped template (which reads
 * message.reasoning_content, as Qwen3's does), in every protocol. */
static void
test_reasoning_sent_back(const llm_session_model *sm)
{
    static const struct {
        llm_api_kind  api;
        const char   *what, *body;
    } cases[] = {
        { LLM_API_CHAT, "chat reasoning_content",
          "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":"
          "\"assistant\",\"content\":\"Hello.\",\"reasoning_content\":\"Greet back "
          "briefly.\"},{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":\"x\"}]}" },
        { LLM_API_CHAT, "chat reasoning (the alias some clients send)",
          "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":"
          "\"assistant\",\"content\":\"Hello.\",\"reasoning\":\"Greet back "
          "briefly.\"},{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":\"x\"}]}" },
        { LLM_API_MESSAGES, "an Anthropic thinking block",
          "{\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},"
          "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":"
          "\"Greet back briefly.\",\"signature\":\"SIG\"},{\"type\":\"text\",\"text\":"
          "\"Hello.\"},{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"w\",\"input\":{}}]},"
          "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
          "\"t1\",\"content\":\"ok\"}]}]}" },
        { LLM_API_RESPONSES, "a Responses reasoning item",
          "{\"input\":[{\"role\":\"user\",\"content\":\"Hi\"},{\"type\":\"reasoning\","
          "\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"Greet "
          "back briefly.\"}]},{\"type\":\"message\",\"role\":\"assistant\",\"content\":"
          "[{\"type\":\"output_text\",\"text\":\"Hello.\"}]}]}" },
    };
    size_t  i;
    char   *text;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        text = prompt_text(sm, cases[i].api, cases[i].body);
        ok(text && strstr(text, "<|im_start|>assistant\n<think>\nGreet back briefly."
                                "\n</think>\n\nHello."),
           "%s is rendered in the turn's think block", cases[i].what);
        if (text && !strstr(text, "<think>\nGreet back")) {
            diag(text);
        }
        free(text);
    }
}

/* Thinking budgets: effort shares of max_new, an explicit budget less the
 * turn's earlier thinking, none when reasoning is off. */
static void
test_thinking_budgets(const llm_session_model *sm)
{
    static const struct {
        const char *effort;
        size_t      max_new;
        long        want;
    } eff[] = {
        { "low", 40, 10 }, { "medium", 40, 20 }, { "high", 40, 30 },
        { "low", 100000, 1024 }, { "medium", 100000, 8192 },
        { "high", 100000, 75000 }, { "high", 1, 1 }, { "none", 40, -1 },
    };
    char                   body[512];
    size_t                 i;
    long                   n;
    int                    oom;
    int32_t               *ids = NULL;
    size_t                 n_ids = 0;
    llm_request            req;
    llm_api_error          e;
    llm_api_limits         lim;
    llm_reasoning_budget  *b;

    llm_api_limits_default(&lim);
    for (i = 0; i < sizeof(eff) / sizeof(eff[0]); i++) {
        llm_request_init(&req);
        snprintf(body, sizeof(body), "{\"messages\":[{\"role\":\"user\",\"content\":"
                 "\"Hi\"}],\"reasoning_effort\":\"%s\"}", eff[i].effort);
        llm_api_parse_request(LLM_API_CHAT, body, strlen(body), &lim, &req, &e);
        n = llm_session_thinking_tokens(&req, sm->tok, eff[i].max_new, &oom);
        is_int(n, eff[i].want, "reasoning_effort %s of %zu tokens: %ld", eff[i].effort,
               eff[i].max_new, eff[i].want);
        llm_request_free(&req);
    }

    llm_request_init(&req);
    snprintf(body, sizeof(body), "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}");
    llm_api_parse_request(LLM_API_CHAT, body, strlen(body), &lim, &req, &e);
    is_int(llm_session_thinking_tokens(&req, sm->tok, 40, &oom), -1, "no effort: no budget");
    llm_request_free(&req);

    /* Anthropic: an explicit budget wins over the effort and spans the turn */
    llm_tokenizer_encode(sm->tok, "Look it up first.", 17, 0, &ids, &n_ids);
    llm_request_init(&req);
    snprintf(body, sizeof(body), "{\"max_tokens\":4000,\"thinking\":{\"type\":\"enabled\","
             "\"budget_tokens\":2000},\"output_config\":{\"effort\":\"low\"},"
             "\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\","
             "\"content\":[{\"type\":\"thinking\",\"thinking\":\"Look it up first.\","
             "\"signature\":\"S\"},{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"w\","
             "\"input\":{}}]},{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
             "\"tool_use_id\":\"t1\",\"content\":\"ok\"}]}]}");
    ok(llm_api_parse_request(LLM_API_MESSAGES, body, strlen(body), &lim, &req, &e) == 0,
       "an Anthropic tool loop parses");
    is_int(llm_session_thinking_tokens(&req, sm->tok, 4000, &oom), 2000 - (long) n_ids,
           "budget_tokens less the turn's earlier thinking (%zu tokens)", n_ids);
    ok(llm_session_reasoning_budget(&req, sm->tok, "think", 0, 4000, &b) == 0 && b != NULL,
       "a budget for the think format");
    llm_reasoning_budget_free(b);
    ok(llm_session_reasoning_budget(&req, sm->tok, NULL, 0, 4000, &b) == 0 && b == NULL,
       "none without a reasoning format");
    llm_request_free(&req);
    free(ids);

    llm_request_init(&req);
    snprintf(body, sizeof(body), "{\"max_tokens\":400,\"thinking\":{\"type\":\"adaptive\"},"
             "\"output_config\":{\"effort\":\"medium\"},\"messages\":[{\"role\":\"user\","
             "\"content\":\"Hi\"}]}");
    llm_api_parse_request(LLM_API_MESSAGES, body, strlen(body), &lim, &req, &e);
    is_int(llm_session_thinking_tokens(&req, sm->tok, 400, &oom), 200,
           "adaptive thinking with effort medium: half of max_tokens");
    llm_request_free(&req);

    llm_request_init(&req);
    snprintf(body, sizeof(body), "{\"max_tokens\":400,\"output_config\":{\"effort\":"
             "\"low\"},\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}");
    llm_api_parse_request(LLM_API_MESSAGES, body, strlen(body), &lim, &req, &e);
    is_int(llm_session_thinking_tokens(&req, sm->tok, 400, &oom), -1,
           "an effort with thinking off: no budget");
    llm_request_free(&req);
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

    test_reasoning_sent_back(&sm);
    test_thinking_budgets(&sm);

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
