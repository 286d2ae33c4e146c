/*
 * /tokenize and /detokenize below the glue: the two request shapes (vLLM's
 * prompt or messages, llama-server's content) with their defaults and
 * errors, the two answer shapes (pieces as strings, or byte values when a
 * token is not UTF-8 on its own), and through the session with the shipped
 * model: messages give the ids chat would run, text round-trips.
 */
#include "tap.h"

#include "api/llm_api_tokenize.h"
#include "chat/llm_session.h"

#define MODEL "models/ngxllm-tiny"

static int
parse(const char *body, llm_request *req, llm_tokenize_opts *o,
    llm_api_error *err)
{
    llm_api_limits  lim;

    llm_api_limits_default(&lim);
    memset(err, 0, sizeof(*err));
    return llm_api_parse_tokenize(body, strlen(body), &lim, req, o, err);
}

/* A fake tokenizer: id 1 is "hi", id 2 the lone byte 0xE2, others "?". */
static int
fake_bytes(void *ctx, int32_t id, char *out, size_t cap)
{
    (void) ctx;
    if (id == 1 && cap >= 2) {
        memcpy(out, "hi", 2);
        return 2;
    }
    if (id == 2 && cap >= 1) {
        out[0] = (char) 0xE2;
        return 1;
    }
    out[0] = '?';
    return 1;
}

static void
test_parse(void)
{
    llm_request        req;
    llm_tokenize_opts  o;
    llm_api_error      e;
    llm_api_limits     lim;

    ok(parse("{\"model\":\"m\",\"prompt\":\"Hello\"}", &req, &o, &e) == 0
       && req.api == LLM_API_COMPLETIONS && req.prompt_len == 5
       && strcmp(req.prompt, "Hello") == 0 && strcmp(req.model, "m") == 0
       && o.shape == LLM_TOKENIZE_VLLM && o.add_special == 1
       && o.parse_special == 1 && o.with_pieces == 0,
       "vLLM prompt: text, add_special_tokens on by default");
    llm_request_free(&req);

    ok(parse("{\"prompt\":\"x\",\"add_special_tokens\":false,\"return_token_strs\":true}",
             &req, &o, &e) == 0 && req.model == NULL
       && o.add_special == 0 && o.with_pieces == 1,
       "add_special_tokens false, return_token_strs true; model optional");
    llm_request_free(&req);

    ok(parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"add_generation_prompt\":false}",
             &req, &o, &e) == 0 && req.api == LLM_API_CHAT && req.messages
       && req.add_generation_prompt == 0 && o.shape == LLM_TOKENIZE_VLLM
       && o.add_special == 0,
       "vLLM messages: a chat request, add_special_tokens off by default");
    llm_request_free(&req);

    ok(parse("{\"content\":\"<s>a\",\"with_pieces\":true,\"parse_special\":false}",
             &req, &o, &e) == 0 && o.shape == LLM_TOKENIZE_LLAMA
       && o.add_special == 0 && o.parse_special == 0 && o.with_pieces == 1
       && strcmp(req.prompt, "<s>a") == 0,
       "llama-server content: add_special off by default, parse_special, with_pieces");
    llm_request_free(&req);

    ok(parse("{\"model\":\"m\"}", &req, &o, &e) == -1 && e.status == 400
       && strcmp(e.param, "prompt") == 0 && strstr(e.message, "messages"),
       "nothing to tokenize: a 400 saying what to send");
    ok(parse("{\"prompt\":[1,2]}", &req, &o, &e) == -1 && e.status == 400
       && strcmp(e.param, "prompt") == 0, "prompt must be a string: %s", e.message);
    ok(parse("{\"prompt\":\"x\",\"add_special_tokens\":\"yes\"}", &req, &o, &e) == -1
       && strcmp(e.param, "add_special_tokens") == 0, "a non-boolean flag is a 400");
    ok(parse("{\"messages\":[]}", &req, &o, &e) == -1 && e.status == 400
       && strcmp(e.param, "messages") == 0, "empty messages: the chat parser's 400");
    ok(parse("[1]", &req, &o, &e) == -1 && e.status == 400, "not an object: 400");

    llm_api_limits_default(&lim);
    memset(&e, 0, sizeof(e));
    ok(llm_api_parse_detokenize("{\"tokens\":[5,0,7]}", 18, &lim, &req, &e) == 0
       && req.n_prompt_ids == 3 && req.prompt_ids[0] == 5 && req.prompt_ids[2] == 7,
       "detokenize: the ids");
    llm_request_free(&req);
    ok(llm_api_parse_detokenize("{\"tokens\":[]}", 13, &lim, &req, &e) == 0
       && req.n_prompt_ids == 0, "no ids: empty text, not an error");
    llm_request_free(&req);
    ok(llm_api_parse_detokenize("{\"tokens\":[1,-2]}", 17, &lim, &req, &e) == -1
       && strcmp(e.param, "tokens[1]") == 0, "a negative id: 400 naming it");
    ok(llm_api_parse_detokenize("{\"tokens\":[1,\"a\"]}", 18, &lim, &req, &e) == -1
       && strcmp(e.param, "tokens[1]") == 0, "a string id: 400 naming it");
    ok(llm_api_parse_detokenize("{\"ids\":[1]}", 11, &lim, &req, &e) == -1
       && strcmp(e.param, "tokens") == 0 && strcmp(e.code, "missing_required_parameter") == 0,
       "no tokens: 400 missing_required_parameter");
}

static void
test_format(void)
{
    llm_buf            b;
    llm_tokenize_opts  o = { LLM_TOKENIZE_VLLM, 1, 1, 0 };
    int32_t            ids[] = { 1, 2 };

    llm_buf_init(&b);
    llm_api_tokenize_json(&b, &o, ids, 2, 256, fake_bytes, NULL);
    is_str(b.data, "{\"count\":2,\"max_model_len\":256,\"tokens\":[1,2],\"token_strs\":null}",
           "vLLM answer");
    llm_buf_reset(&b);

    o.with_pieces = 1;
    llm_api_tokenize_json(&b, &o, ids, 2, 256, fake_bytes, NULL);
    is_str(b.data, "{\"count\":2,\"max_model_len\":256,\"tokens\":[1,2],"
           "\"token_strs\":[\"hi\",\"\xef\xbf\xbd\"]}",
           "vLLM token_strs (a partial character prints as U+FFFD)");
    llm_buf_reset(&b);

    o.shape = LLM_TOKENIZE_LLAMA;
    o.with_pieces = 0;
    llm_api_tokenize_json(&b, &o, ids, 2, 256, fake_bytes, NULL);
    is_str(b.data, "{\"tokens\":[1,2]}", "llama-server answer");
    llm_buf_reset(&b);

    o.with_pieces = 1;
    llm_api_tokenize_json(&b, &o, ids, 2, 256, fake_bytes, NULL);
    is_str(b.data, "{\"tokens\":[{\"id\":1,\"piece\":\"hi\"},{\"id\":2,\"piece\":[226]}]}",
           "llama-server pieces: a string, or the byte values");
    llm_buf_reset(&b);

    llm_api_detokenize_json(&b, "a\"b", 3);
    is_str(b.data, "{\"prompt\":\"a\\\"b\",\"content\":\"a\\\"b\"}",
           "detokenize answer: both servers' field");
    llm_buf_free(&b);
}

static void
test_session(void)
{
    int                 rc;
    char                err[512], *text = NULL;
    size_t              len = 0;
    const char         *chat_body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Hello there\"}]}";
    llm_request         req, chat_req;
    llm_tokenize_opts   o;
    llm_api_error       e;
    llm_api_limits      lim;
    llm_session_prompt  p, q;
    llm_session_model   sm = { 0 };
    llm_tokenizer      *tok;
    llm_chat           *chat;
    int32_t            *ref = NULL;
    size_t              n_ref = 0;

    tok = llm_tokenizer_load(MODEL, err, sizeof(err));
    chat = tok ? llm_chat_load(MODEL, tok, err, sizeof(err)) : NULL;
    if (!ok(tok && chat, "the shipped model's tokenizer and template load")) {
        diag(err);
        return;
    }
    sm.alias = "tiny";
    sm.chat = chat;
    sm.tok = tok;

    /* messages: exactly the prompt a chat request would run */
    llm_api_limits_default(&lim);
    parse(chat_body, &req, &o, &e);
    llm_api_parse_request(LLM_API_CHAT, chat_body, strlen(chat_body), &lim, &chat_req, &e);
    /* called before ok(): its arguments are read in no set order */
    rc = llm_session_tokenize(&sm, &req, &o, &p, &e) == 0
         && llm_session_build_prompt(&sm, &chat_req, &q, &e) == 0;
    ok(rc && p.n_ids == q.n_ids && p.n_ids > 5
       && memcmp(p.ids, q.ids, p.n_ids * sizeof(int32_t)) == 0,
       "messages: the ids of the chat prompt (%zu)", p.n_ids);
    llm_session_prompt_free(&p);
    llm_session_prompt_free(&q);
    llm_request_free(&req);
    llm_request_free(&chat_req);

    /* text: as the tokenizer encodes it, with and without special tokens */
    parse("{\"prompt\":\"Hello world\",\"add_special_tokens\":false}", &req, &o, &e);
    llm_tokenizer_encode(tok, "Hello world", 11, 0, &ref, &n_ref);
    ok(llm_session_tokenize(&sm, &req, &o, &p, &e) == 0 && p.n_ids == n_ref
       && memcmp(p.ids, ref, n_ref * sizeof(int32_t)) == 0,
       "text without special tokens: the tokenizer's ids");
    free(ref);
    ref = NULL;

    /* and back */
    free(req.prompt_ids);
    req.prompt_ids = p.ids;
    req.n_prompt_ids = p.n_ids;
    p.ids = NULL;
    rc = llm_session_detokenize(&sm, &req, &text, &len, &e) == 0;
    ok(rc && len == 11 && memcmp(text, "Hello world", 11) == 0,
       "detokenize gives the text back: '%s'", text ? text : "");
    free(text);
    text = NULL;

    req.prompt_ids[0] = (int32_t) llm_tokenizer_n_vocab(tok) + 5;
    memset(&e, 0, sizeof(e));
    rc = llm_session_detokenize(&sm, &req, &text, &len, &e);
    ok(rc == -1 && e.status == 400
       && strcmp(e.param, "tokens") == 0 && strstr(e.message, "tokens[0]")
       && text == NULL,
       "an id outside the vocabulary: 400: %s", e.message);
    llm_session_prompt_free(&p);
    llm_request_free(&req);

    /* special-token text: a control token, or plain text with parse_special off */
    {
        const char *eos = llm_tokenizer_eos(tok);
        char        body[256];
        size_t      n_parsed;

        snprintf(body, sizeof(body), "{\"content\":\"a%s\"}", eos ? eos : "");
        parse(body, &req, &o, &e);
        rc = eos && llm_session_tokenize(&sm, &req, &o, &p, &e) == 0;
        ok(rc && p.n_ids >= 2 && p.ids[p.n_ids - 1] == llm_tokenizer_eos_id(tok),
           "parse_special (default): '%s' is the control token", eos ? eos : "(none)");
        n_parsed = p.n_ids;
        llm_session_prompt_free(&p);
        o.parse_special = 0;
        rc = llm_session_tokenize(&sm, &req, &o, &p, &e) == 0;
        ok(rc && p.n_ids > n_parsed,
           "parse_special false: it is plain text (%zu tokens)", p.n_ids);
        llm_session_prompt_free(&p);
        llm_request_free(&req);
    }

    llm_chat_free(chat);
    llm_tokenizer_free(tok);
}

int
main(void)
{
    test_parse();
    test_format();
    test_session();
    return done_testing();
}
