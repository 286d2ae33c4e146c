/*
 * Thinking-block signatures: SHA-256 (FIPS 180-4 examples) and HMAC-SHA256
 * (RFC 4231 cases 1, 2, 6), base64, signing whole and in pieces, key files;
 * the Anthropic parser verifies a block sent back (good, bad, missing
 * signatures) and the formatter signs what it sends, streamed or not, with
 * the same signature.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

#include "api/llm_anthropic.h"
#include "api/llm_thinking_sig.h"
#include "core/llm_base64.h"
#include "core/llm_sha256.h"

static const char *
hex(const unsigned char *p, size_t n)
{
    static char  buf[2 * LLM_SHA256_SIZE + 1];
    size_t       i;

    for (i = 0; i < n; i++) {
        snprintf(buf + 2 * i, 3, "%02x", p[i]);
    }
    return buf;
}

static const char *
sha(const void *p, size_t n, size_t repeat)
{
    unsigned char  out[LLM_SHA256_SIZE];
    llm_sha256     c;
    size_t         i;

    llm_sha256_init(&c);
    for (i = 0; i < repeat; i++) {
        llm_sha256_update(&c, p, n);
    }
    llm_sha256_final(&c, out);
    return hex(out, sizeof(out));
}

static const char *
hmac(const void *key, size_t klen, const char *msg)
{
    unsigned char    out[LLM_SHA256_SIZE];
    llm_hmac_sha256  h;

    llm_hmac_sha256_init(&h, key, klen);
    llm_hmac_sha256_update(&h, msg, strlen(msg));
    llm_hmac_sha256_final(&h, out);
    return hex(out, sizeof(out));
}

static int
write_file(const char *path, const void *p, size_t n)
{
    FILE  *f = fopen(path, "wb");
    int    rc;

    if (f == NULL) {
        return -1;
    }
    rc = fwrite(p, 1, n, f) == n ? 0 : -1;
    fclose(f);
    return rc;
}

/* An Anthropic body whose assistant turn sends back a thinking block. */
static int
parse_with(const llm_thinking_key *k, const char *signature_field,
    llm_api_error *e)
{
    char            body[1024];
    int             rc;
    llm_request     req;
    llm_api_limits  lim;

    snprintf(body, sizeof(body), "{\"max_tokens\":8,\"messages\":[{\"role\":\"user\","
             "\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":[{\"type\":"
             "\"thinking\",\"thinking\":\"Greet back briefly.\"%s},{\"type\":\"text\","
             "\"text\":\"Hello.\"}]},{\"role\":\"user\",\"content\":\"And?\"}]}",
             signature_field);
    llm_api_limits_default(&lim);
    lim.thinking_key = k;
    llm_request_init(&req);
    memset(e, 0, sizeof(*e));
    rc = llm_anthropic_parse_messages(body, strlen(body), &lim, &req, e);
    llm_request_free(&req);
    return rc;
}

int
main(void)
{
    static const char  abc448[] =
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    unsigned char      k0b[20], kaa[131], long_key[100];
    char               out[LLM_THINKING_SIG_LEN + 1], out2[LLM_THINKING_SIG_LEN + 1];
    char               field[128], path[] = "/tmp/llm-thinking-keyXXXXXX", err[256];
    char               b64[16];
    int                fd;
    llm_thinking_key   key, k2;
    llm_thinking_signer s;
    llm_api_error      e;
    llm_anthropic_meta meta = { "msg_1", "tiny", NULL };
    llm_anthropic_stream st;
    llm_result         r;
    llm_event          ev;
    llm_buf            b;
    const char        *p;

    /* SHA-256 */
    is_str(sha("", 0, 1), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sha256('')");
    is_str(sha("abc", 3, 1), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256('abc')");
    is_str(sha(abc448, strlen(abc448), 1),
           "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "sha256 of 448 bits");
    is_str(sha("aaaaaaaaaa", 10, 100000),
           "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
           "sha256 of a million 'a' in pieces of 10");

    /* HMAC-SHA256, RFC 4231 */
    memset(k0b, 0x0b, sizeof(k0b));
    memset(kaa, 0xaa, sizeof(kaa));
    is_str(hmac(k0b, sizeof(k0b), "Hi There"),
           "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", "RFC 4231 case 1");
    is_str(hmac("Jefe", 4, "what do ya want for nothing?"),
           "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", "RFC 4231 case 2");
    is_str(hmac(kaa, sizeof(kaa), "Test Using Larger Than Block-Size Key - Hash Key First"),
           "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
           "RFC 4231 case 6 (a key longer than a block)");

    /* base64 */
    llm_base64_encode("M", 1, b64);
    is_str(b64, "TQ==", "base64 of 1 byte");
    llm_base64_encode("Ma", 2, b64);
    is_str(b64, "TWE=", "of 2");
    is_int(llm_base64_encode("Man", 3, b64), 4, "of 3: 4 characters");
    is_str(b64, "TWFu", "TWFu");

    /* signing: 32 bytes of 'k' as the key */
    memset(&key, 0, sizeof(key));
    memset(key.bytes, 'k', 32);
    key.len = 32;
    llm_thinking_sign(&key, "Greet back briefly.", 19, out);
    is_str(out, "UfOMB52e/UZHxb0Xtq6qVNO3Y88t4gK1JUB2iPazzRU=", "the signature is base64(HMAC)");
    llm_thinking_signer_init(&s, &key);
    llm_thinking_signer_update(&s, "Greet ", 6);
    llm_thinking_signer_update(&s, "back briefly.", 13);
    llm_thinking_signer_final(&s, out2);
    is_str(out2, out, "signed in pieces: the same");
    ok(llm_thinking_verify(&key, "Greet back briefly.", 19, out, strlen(out)), "it verifies");
    ok(!llm_thinking_verify(&key, "Greet back briefly!", 19, out, strlen(out)),
       "not for other text");
    ok(!llm_thinking_verify(&key, "Greet back briefly.", 19, out, 43), "nor cut short");
    llm_thinking_sign(NULL, "x", 1, out2);
    is_str(out2, "", "no key: an empty signature");

    /* key files */
    fd = mkstemp(path);
    ok(fd >= 0, "a key file");
    close(fd);
    write_file(path, "short", 5);
    ok(llm_thinking_key_load(&k2, path, err, sizeof(err)) != 0 && strstr(err, "at least 16"),
       "a 5-byte key is refused: %s", err);
    write_file(path, key.bytes, 32);
    ok(llm_thinking_key_load(&k2, path, err, sizeof(err)) == 0 && k2.len == 32
       && memcmp(k2.bytes, key.bytes, 32) == 0, "a 32-byte key is its bytes");
    memset(long_key, 'L', sizeof(long_key));
    write_file(path, long_key, sizeof(long_key));
    ok(llm_thinking_key_load(&k2, path, err, sizeof(err)) == 0, "a 100-byte key loads");
    llm_thinking_sign(&k2, "abc", 3, out);
    {
        unsigned char    mac[LLM_SHA256_SIZE];
        llm_hmac_sha256  h;

        llm_hmac_sha256_init(&h, long_key, sizeof(long_key));
        llm_hmac_sha256_update(&h, "abc", 3);
        llm_hmac_sha256_final(&h, mac);
        llm_base64_encode(mac, sizeof(mac), out2);
    }
    is_str(out, out2, "and signs as HMAC with the whole file as its key");
    unlink(path);
    ok(llm_thinking_key_load(&k2, path, err, sizeof(err)) != 0 && strstr(err, "cannot open"),
       "a missing file: %s", err);
    ok(llm_thinking_key_random(&k2, err, sizeof(err)) == 0 && k2.len == 32
       && memcmp(k2.bytes, key.bytes, 32) != 0, "a random key");

    /* the parser verifies blocks sent back */
    llm_thinking_sign(&key, "Greet back briefly.", 19, out);
    snprintf(field, sizeof(field), ",\"signature\":\"%s\"", out);
    is_int(parse_with(&key, field, &e), 0, "the block's own signature: accepted");
    is_int(parse_with(&k2, field, &e), -1, "another key's: refused");
    is_int(e.status, 400, "with 400");
    is_str(e.type, "invalid_request_error", "invalid_request_error");
    is_str(e.param, "messages[1].content[0].signature", "naming the signature");
    ok(strstr(e.message, "Invalid 'signature' in 'thinking' block") != NULL, "%s", e.message);
    is_int(parse_with(&key, ",\"signature\":\"\"", &e), -1, "an empty signature: refused");
    is_int(parse_with(&key, "", &e), -1, "none: refused");
    is_str(e.code, "missing_required_parameter", "as a missing parameter");
    is_int(parse_with(NULL, "", &e), 0, "without a key nothing is checked");

    /* the formatter signs: non-streamed and streamed alike */
    meta.thinking_key = &key;
    memset(&r, 0, sizeof(r));
    r.reasoning = (char *) "Greet back briefly.";
    r.content = (char *) "Hello.";
    r.finish = LLM_FINISH_STOP;
    llm_buf_init(&b);
    llm_anthropic_message_response(&b, &meta, &r);
    llm_thinking_sign(&key, "Greet back briefly.", 19, out);
    snprintf(field, sizeof(field), "\"signature\":\"%s\"", out);
    ok(b.data && strstr(b.data, field) != NULL, "the message's thinking block is signed");
    llm_buf_free(&b);

    llm_buf_init(&b);
    llm_anthropic_stream_init(&st, &meta);
    memset(&ev, 0, sizeof(ev));
    ev.type = LLM_EV_REASONING;
    ev.text = "Greet back";
    ev.len = 10;
    llm_anthropic_stream_event(&st, &b, &ev);
    ev.text = " briefly.";
    ev.len = 9;
    llm_anthropic_stream_event(&st, &b, &ev);
    ev.type = LLM_EV_CONTENT;
    ev.text = "Hello.";
    ev.len = 6;
    llm_anthropic_stream_event(&st, &b, &ev);
    snprintf(field, sizeof(field), "\"delta\":{\"type\":\"signature_delta\",\"signature\":\"%s\"}", out);
    p = b.data ? strstr(b.data, field) : NULL;
    ok(p != NULL, "streamed: a signature_delta with the same signature");
    ok(p && strstr(p, "content_block_stop") && strstr(p, "content_block_stop") < strstr(p, "text_delta"),
       "before the thinking block's content_block_stop");
    llm_buf_free(&b);

    return done_testing();
}
