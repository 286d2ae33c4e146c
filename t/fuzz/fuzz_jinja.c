/*
 * Chat template rendering with fuzzed conversations, through the chat
 * adapter the glue uses (llm_chat_render), on the real templates of
 * t/.cache/tokenizers/ and the fixture model's.  Input: one byte picks the
 * template and the mode; then either an OpenAI chat request body (parsed by
 * the API layer, as in production) or a byte-built conversation: chunks
 * separated by 0x00, each a kind byte (role, tool calls, reasoning) and text.
 * A render must succeed or fail with a message, never fault or hang.
 */
#include "llm_fuzz.h"
#include <jansson.h>
#include "api/llm_api.h"
#include "api/llm_openai.h"
#include "chat/llm_chat.h"

static const char *const dirs[] = {
    "t/fixtures/models/qwen3_f32",
    "t/.cache/tokenizers/qwen3",
    "t/.cache/tokenizers/llama3_1",
    "t/.cache/tokenizers/deepseek_v3",
    "t/.cache/tokenizers/gptoss",
    "t/.cache/tokenizers/gemma3",
    "t/.cache/tokenizers/llama2",
    "t/.cache/tokenizers/llama3",
};
static llm_chat *chats[sizeof(dirs) / sizeof(dirs[0])];
static size_t n_chats;
static json_t *tools;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char dir[1024], err[512];
    size_t i;

    (void) argc; (void) argv;
    for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(dir, sizeof(dir), "%s/%s", LLM_FUZZ_ROOT, dirs[i]);
        chats[n_chats] = llm_chat_load(dir, NULL, err, sizeof(err));
        if (chats[n_chats] == NULL) {
            fprintf(stderr, "fuzz_jinja: skip %s: %s\n", dirs[i], err);
            continue;
        }
        n_chats++;
    }
    if (n_chats == 0) exit(1);
    tools = json_loads("[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
        "\"description\":\"Weather\",\"parameters\":{\"type\":\"object\",\"properties\":"
        "{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}]", 0, NULL);
    return 0;
}

/* role / shape of one byte-built message */
static json_t *
message(unsigned kind, const char *s, size_t len)
{
    static const char *const roles[] = { "user", "assistant", "system", "tool", "developer" };
    json_t *m = json_object(), *text = json_stringn(s, len);

    if (text == NULL) text = json_string("\xef\xbf\xbd");   /* invalid UTF-8 never reaches here */
    json_object_set_new(m, "role", json_string(roles[kind % 5]));
    switch ((kind >> 3) % 6) {
    case 0:
        json_object_set_new(m, "content", text);
        break;
    case 1:   /* assistant tool call, text as the arguments */
        json_object_set_new(m, "content", json_string(""));
        json_object_set_new(m, "tool_calls", json_pack("[{s:s,s:s,s:{s:s,s:o}}]",
            "id", "call_1", "type", "function", "function", "name", "get_weather",
            "arguments", text));
        break;
    case 2:   /* reasoning beside content */
        json_object_set_new(m, "content", json_string("ok"));
        json_object_set_new(m, "reasoning_content", text);
        break;
    case 3:   /* content parts */
        json_object_set_new(m, "content", json_pack("[{s:s,s:o}]", "type", "text", "text", text));
        break;
    case 4:   /* null content */
        json_decref(text);
        json_object_set_new(m, "content", json_null());
        break;
    default:  /* a tool result with a name */
        json_object_set_new(m, "content", text);
        json_object_set_new(m, "tool_call_id", json_string("call_1"));
        json_object_set_new(m, "name", json_string("get_weather"));
        break;
    }
    return m;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    llm_fuzz_in in = { data, size };
    unsigned sel = llm_fuzz_byte(&in), flags = llm_fuzz_byte(&in);
    const llm_chat *chat = chats[sel % n_chats];
    llm_request req;
    llm_api_error aerr;
    llm_api_limits lim;
    char *prompt = NULL, err[512];
    size_t plen = 0;
    int rc;

    if (size > 1 << 16) return 0;
    llm_request_init(&req);
    if (sel & 0x80) {
        llm_api_limits_default(&lim);
        if (llm_openai_parse_chat((const char *) in.p, in.n, &lim, &req, &aerr) != 0) {
            llm_request_free(&req);
            return 0;
        }
    } else {
        const char *s;
        size_t len;
        req.api = LLM_API_CHAT;
        req.messages = json_array();
        while (in.n > 0 && json_array_size(req.messages) < 64) {
            unsigned kind = llm_fuzz_byte(&in);
            len = llm_fuzz_chunk(&in, 0, &s);
            json_array_append_new(req.messages, message(kind, s, len));
        }
        if (flags & 1) req.tools = json_incref(tools);
        req.tool_choice = (flags >> 1) & 3;
        req.reasoning = (int) ((flags >> 3) % 3) - 1;
        req.add_generation_prompt = (flags >> 5) & 1;
    }
    err[0] = '\0';
    rc = llm_chat_render(chat, &req, &prompt, &plen, err, sizeof(err));
    if (rc == LLM_CHAT_OK) {
        if (prompt == NULL || prompt[plen] != '\0') __builtin_trap();
        (void) llm_chat_prompt_opens_think(prompt, plen);
    } else if (err[0] == '\0') {
        fprintf(stderr, "render failed without a message\n");
        __builtin_trap();
    }
    free(prompt);
    llm_request_free(&req);
    return 0;
}
