/*
 * Responses reasoning.encrypted_content: base64 decoding; sealing and
 * opening (round trips of several lengths, a fresh nonce each time, the
 * text unreadable in the sealed form, any changed byte, another key, a
 * wrong version or a short item refused); the Responses formatter seals
 * reasoning items only when include asks, streamed and not; the parser
 * opens an item sent back into the assistant turn's reasoning_content and
 * refuses one it did not seal with the field's path.
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "api/llm_formatter.h"
#include "api/llm_reasoning_seal.h"
#include "api/llm_responses.h"
#include "core/llm_base64.h"

static llm_thinking_key  key, other;

static int
contains(const unsigned char *p, size_t n, const char *s)
{
    size_t  i, k = strlen(s);

    for (i = 0; i + k <= n; i++) {
        if (memcmp(p + i, s, k) == 0) {
            return 1;
        }
    }
    return 0;
}

static void
test_base64(void)
{
    unsigned char  out[16];
    char           enc[32];
    const char    *in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
    size_t         i;
    long           n;
    int            all = 1;

    for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        llm_base64_encode(in[i], strlen(in[i]), enc);
        n = llm_base64_decode(enc, strlen(enc), out);
        all &= n == (long) strlen(in[i]) && memcmp(out, in[i], (size_t) n) == 0;
    }
    ok(all, "decode(encode(x)) == x for the RFC 4648 test vectors");
    is_int(llm_base64_decode("Zm9vYg==", 8, out), 4, "padded: 4 bytes");
    is_int(llm_base64_decode("Zm9vYg=", 7, out), -1, "a length not a multiple of 4");
    is_int(llm_base64_decode("Zm9v!g==", 8, out), -1, "a character outside the alphabet");
    is_int(llm_base64_decode("Zg==Zm9v", 8, out), -1, "padding before the end");
    is_int(llm_base64_decode("Z===", 4, out), -1, "three padding characters");
    is_int(llm_base64_decode("Zm=v", 4, out), -1, "padding in the middle of a group");
}

static void
test_seal(void)
{
    static const char  text[] = "The user wants rivets; steel ones are in stock, so say yes.";
    size_t             lens[] = { 0, 1, 31, 32, 33, sizeof(text) - 1 };
    size_t             i, n;
    char              *a, *b, *raw;
    llm_buf            out;
    int                all = 1;
    unsigned char      dec[256];
    long               dn;

    llm_buf_init(&out);
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        a = llm_reasoning_seal(&key, text, lens[i]);
        llm_buf_reset(&out);
        all &= a != NULL && llm_reasoning_open(&key, a, strlen(a), &out) == 0
               && out.len == lens[i] && memcmp(out.data ? out.data : "", text, lens[i]) == 0;
        free(a);
    }
    ok(all, "open(seal(text)) is the text, for lengths around a keystream block");

    a = llm_reasoning_seal(&key, text, sizeof(text) - 1);
    b = llm_reasoning_seal(&key, text, sizeof(text) - 1);
    ok(a && b && strcmp(a, b) != 0, "the same text sealed twice differs (a fresh nonce)");
    dn = llm_base64_decode(a, strlen(a), dec);
    is_int(dn, (long) (1 + LLM_REASONING_SEAL_NONCE + sizeof(text) - 1 + 32),
           "version, nonce, ciphertext and tag");
    ok(dn > 0 && dec[0] == LLM_REASONING_SEAL_VERSION, "the version byte first");
    ok(dn > 0 && !contains(dec, (size_t) dn, "rivets"), "the text is not readable in it");

    llm_buf_reset(&out);
    is_int(llm_reasoning_open(&other, a, strlen(a), &out), -1, "another key does not open it");
    is_int((int) out.len, 0, "and writes nothing");

    /* every byte of the decoded item matters: flip one, re-encode */
    n = (size_t) dn;
    raw = malloc(LLM_BASE64_LEN(n) + 1);
    for (i = 0; raw && i < n; i++) {
        dec[i] ^= 0x01;
        llm_base64_encode(dec, n, raw);
        llm_buf_reset(&out);
        all &= llm_reasoning_open(&key, raw, strlen(raw), &out) == -1 && out.len == 0;
        dec[i] ^= 0x01;
    }
    ok(raw && all, "a change of any byte (version, nonce, text, tag) is refused");
    llm_base64_encode(dec, 20, raw);
    is_int(llm_reasoning_open(&key, raw, strlen(raw), &out), -1, "a short item is refused");
    is_int(llm_reasoning_open(&key, "not base64!", 11, &out), -1, "text that is not base64 is refused");
    free(raw);
    free(a);
    free(b);
    llm_buf_free(&out);
}

static llm_formatter *
make(int stream, int seal)
{
    llm_formatter_config  c;

    memset(&c, 0, sizeof(c));
    c.id = "resp_abc";
    c.created = 1700000000;
    c.model = "tiny";
    c.n_choices = 1;
    c.stream = stream;
    c.thinking_key = &key;
    c.seal_reasoning = seal;
    return llm_formatter_create(llm_formatter_find(LLM_API_RESPONSES), &c);
}

/* encrypted_content of the first reasoning item in o's "output", or NULL */
static const char *
sealed_of(const json_t *output)
{
    size_t        i;
    const json_t *it;

    json_array_foreach(output, i, it) {
        if (strcmp(json_string_value(json_object_get(it, "type")), "reasoning") == 0) {
            return json_string_value(json_object_get(it, "encrypted_content"));
        }
    }
    return NULL;
}

static int
opens_to(const char *sealed, const char *want)
{
    llm_buf  out;
    int      rc;

    if (sealed == NULL) {
        return 0;
    }
    llm_buf_init(&out);
    rc = llm_reasoning_open(&key, sealed, strlen(sealed), &out) == 0
         && out.len == strlen(want) && memcmp(out.data, want, out.len) == 0;
    llm_buf_free(&out);
    return rc;
}

#define DONE_EVENT       "event: response.output_item.done\ndata: "
#define COMPLETED_EVENT  "event: response.completed\ndata: "

static void
test_format(void)
{
    llm_buf        b;
    llm_formatter *f;
    llm_result     r;
    llm_usage      u = { 5, 3, 0, 2, 0 };
    llm_event      e;
    json_t        *o;
    const char    *p, *done;

    memset(&r, 0, sizeof(r));
    r.reasoning = "rivets are in stock";
    r.content = "Yes.";
    r.finish = LLM_FINISH_STOP;
    llm_buf_init(&b);

    f = make(0, 1);
    ok(llm_formatter_response(f, &b, &r, NULL) == 0, "a sealed response");
    o = json_loadb(b.data, b.len, 0, NULL);
    ok(opens_to(sealed_of(json_object_get(o, "output")), r.reasoning),
       "include: its reasoning item's encrypted_content opens to the reasoning");
    json_decref(o);
    llm_formatter_free(f);

    llm_buf_reset(&b);
    f = make(0, 0);
    llm_formatter_response(f, &b, &r, NULL);
    ok(strstr(b.data, "encrypted_content") == NULL, "not included: no encrypted_content");
    llm_formatter_free(f);

    llm_buf_reset(&b);
    f = make(1, 1);
    llm_formatter_start(f, &b);
    memset(&e, 0, sizeof(e));
    e.type = LLM_EV_REASONING;
    e.text = "rivets ";
    e.len = 7;
    llm_formatter_event(f, &b, 0, &e, NULL);
    e.text = "are in stock";
    e.len = 12;
    llm_formatter_event(f, &b, 0, &e, NULL);
    p = strstr(b.data, "response.output_item.added");
    ok(p && strstr(p, "encrypted_content") == NULL, "streamed: the added item has none yet");
    e.type = LLM_EV_CONTENT;
    e.text = "Yes.";
    e.len = 4;
    llm_formatter_event(f, &b, 0, &e, NULL);
    llm_formatter_finish(f, &b, &r, &u);
    done = strstr(b.data, DONE_EVENT);
    o = done ? json_loads(done + strlen(DONE_EVENT), JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    ok(opens_to(json_string_value(json_object_get(json_object_get(o, "item"),
                                  "encrypted_content")), "rivets are in stock"),
       "streamed: output_item.done's reasoning item opens to the streamed text");
    json_decref(o);
    p = strstr(b.data, COMPLETED_EVENT);
    o = p ? json_loads(p + strlen(COMPLETED_EVENT), JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    ok(opens_to(sealed_of(json_object_get(json_object_get(o, "response"), "output")),
                "rivets are in stock"), "and so does response.completed's");
    json_decref(o);
    llm_formatter_free(f);
    llm_buf_free(&b);
}

static void
test_parse(void)
{
    char            *sealed, body[1024];
    const char      *p;
    llm_api_limits   lim;
    llm_request      req;
    llm_api_error    err;
    const json_t    *m;

    llm_api_limits_default(&lim);
    lim.thinking_key = &key;
    sealed = llm_reasoning_seal(&key, "they sell rivets", 16);
    snprintf(body, sizeof(body), "{\"include\":[\"reasoning.encrypted_content\"],\"input\":["
             "{\"role\":\"user\",\"content\":\"rivets?\"},"
             "{\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"s\"}],"
             "\"encrypted_content\":\"%s\"},"
             "{\"role\":\"assistant\",\"content\":\"Yes.\"},"
             "{\"role\":\"user\",\"content\":\"nails?\"}]}", sealed);
    memset(&err, 0, sizeof(err));
    ok(llm_responses_parse(body, strlen(body), &lim, &req, &err) == 0, "a sealed item sent back parses");
    ok(req.seal_reasoning, "include reasoning.encrypted_content is noted");
    m = json_array_get(req.messages, 1);
    is_str(json_string_value(json_object_get(m, "reasoning_content")), "they sell rivets",
           "the assistant turn's reasoning_content is the sealed text, not the summary");
    llm_request_free(&req);

    /* one character changed */
    body[strstr(body, sealed) - body + 30] ^= 0x01;
    memset(&err, 0, sizeof(err));
    ok(llm_responses_parse(body, strlen(body), &lim, &req, &err) == -1 && err.status == 400
       && strcmp(err.param, "input[1].encrypted_content") == 0
       && strstr(err.message, "not reasoning this server sealed") != NULL,
       "a changed item is a 400 naming it: %s", err.message);
    llm_request_free(&req);

    lim.thinking_key = &other;
    body[strstr(body, "\"encrypted_content\":\"") - body + 21 + 30] ^= 0x01;
    memset(&err, 0, sizeof(err));
    ok(llm_responses_parse(body, strlen(body), &lim, &req, &err) == -1 && err.status == 400,
       "an item another key sealed is a 400");
    llm_request_free(&req);

    lim.thinking_key = NULL;
    memset(&err, 0, sizeof(err));
    ok(llm_responses_parse(body, strlen(body), &lim, &req, &err) == 0
       && strcmp(json_string_value(json_object_get(json_array_get(req.messages, 1),
                                                   "reasoning_content")), "s") == 0,
       "without a key (the CLI) encrypted_content is ignored: the summary is used");
    llm_request_free(&req);

    lim.thinking_key = &key;
    memset(&err, 0, sizeof(err));
    p = "{\"input\":[{\"type\":\"reasoning\",\"summary\":[],\"encrypted_content\":5}]}";
    ok(llm_responses_parse(p, strlen(p), &lim, &req, &err) == -1 && strcmp(err.param, "input[0].encrypted_content") == 0,
       "a non-string encrypted_content is a 400");
    llm_request_free(&req);
    memset(&err, 0, sizeof(err));
    p = "{\"input\":\"hi\",\"include\":[3]}";
    ok(llm_responses_parse(p, strlen(p), &lim, &req, &err) == -1
       && strcmp(err.param, "include[0]") == 0, "include entries must be strings");
    llm_request_free(&req);
    free(sealed);
}

int
main(void)
{
    char  err[128];

    ok(llm_thinking_key_random(&key, err, sizeof(err)) == 0
       && llm_thinking_key_random(&other, err, sizeof(err)) == 0, "two random keys");
    test_base64();
    test_seal();
    test_format();
    test_parse();
    return done_testing();
}
