/*
 * Crash regressions found by t/fuzz/fuzz_tokenizer: text that is not valid
 * UTF-8 must encode (ids in the vocabulary) and decode without a fault.
 * Uses the real tokenizers of t/.cache/tokenizers when fetched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "engine/llm_tokenizer.h"

/* fuzz_tokenizer input 11c99987: a run of 0xff inside a CJK character
 * sent PCRE2's JIT past the end of the subject (deepseek_v3 Split regex) */
static const char crash_1[] =
    "caf\xc3\xa9 \xe2\x98\x95 \xf0\x9f\x98\x80 \xe4\xff\xff\xff\xff\xff\xff\xff\xff\xff\xad\xe6\xb8\x96\x87";

static const char *const bad_texts[] = {
    crash_1,
    "\x80",                          /* lone continuation byte */
    "abc \xf0\x9f\x98",              /* truncated at the end */
    "\xc0\xaf overlong",
    "\xed\xa0\x80 surrogate",
    "\xff\xfe\xfd 123 \xf4\x90\x80\x80",
    "<|im_start|>\xe4<|im_end|>",
};

static void
check(const char *dir)
{
    char err[512];
    llm_tokenizer *tok = llm_tokenizer_load(dir, err, sizeof(err));
    size_t i, j;

    if (tok == NULL) {
        printf("# skip %s: %s\n", dir, err);
        return;
    }
    for (i = 0; i < sizeof(bad_texts) / sizeof(bad_texts[0]); i++) {
        int32_t *ids = NULL;
        size_t n = 0, len = 0, bad = 0;
        char *text = NULL;
        int rc = llm_tokenizer_encode(tok, bad_texts[i], strlen(bad_texts[i]), 1, &ids, &n);

        ok(rc == 0 && n > 0, "%s: invalid UTF-8 text %zu encodes (%zu ids)", dir, i, n);
        for (j = 0; j < n; j++) {
            if (ids[j] < 0 || (size_t) ids[j] >= llm_tokenizer_n_vocab(tok)) bad++;
        }
        is_int(bad, 0, "%s: text %zu: ids in the vocabulary", dir, i);
        ok(llm_tokenizer_decode(tok, ids, n, 0, &text, &len) == 0 && text != NULL,
           "%s: text %zu decodes", dir, i);
        free(text);
        free(ids);
    }
    llm_tokenizer_free(tok);
}

int
main(void)
{
    static const char *const dirs[] = {
        "t/fixtures/models/qwen3_f32",
        "t/.cache/tokenizers/deepseek_v3",
        "t/.cache/tokenizers/qwen3",
        "t/.cache/tokenizers/llama2",
    };
    size_t i;

    for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) check(dirs[i]);
    if (tap_n == 0) return skip_all("no tokenizer found");
    return done_testing();
}
