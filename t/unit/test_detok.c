/*
 * Incremental detokenizer: for every golden string of every cached real
 * tokenizer, pushing the ids one at a time emits only valid UTF-8 and the
 * pieces add up to the full decode (with and without special tokens).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "engine/llm_detok.h"
#include "engine/llm_tokenizer_int.h"

#define FIX "t/fixtures/text/"
#define CACHE "t/.cache/tokenizers/"

static size_t
parse_ids(const char *s, int32_t *out, size_t max)
{
    size_t n = 0;
    char  *end;

    while (*s && *s != '\t' && *s != '\n' && n < max) {
        long v = strtol(s, &end, 10);
        if (end == s) break;
        out[n++] = (int32_t) v;
        s = end;
        while (*s == ' ') s++;
    }
    return n;
}

/* stream ids through a detokenizer; 0 when the result equals decode() and every chunk is valid UTF-8 */
static int
stream_matches(const llm_tokenizer *t, const int32_t *ids, size_t n, int flags, char *why, size_t whylen)
{
    llm_detok   d;
    char       *acc = malloc(1), *full;
    size_t      al = 0, fl, i;
    const char *txt;
    size_t      tl;
    int         rc = 0;

    llm_detok_init(&d, t, flags);
    for (i = 0; i <= n; i++) {
        if (i < n ? llm_detok_push(&d, ids[i], &txt, &tl) : llm_detok_flush(&d, &txt, &tl)) {
            rc = -1;
            break;
        }
        if (i < n && llm_utf8_valid_prefix(txt, tl) != tl) {
            snprintf(why, whylen, "chunk %zu is not valid UTF-8", i);
            rc = -1;
        }
        acc = realloc(acc, al + tl + 1);
        memcpy(acc + al, txt, tl);
        al += tl;
    }
    llm_detok_free(&d);
    if (rc == 0 && llm_tokenizer_decode(t, ids, n, flags & LLM_DETOK_SKIP_SPECIAL, &full, &fl) == 0) {
        if (fl != al || memcmp(full, acc, al) != 0) {
            acc[al] = '\0';
            snprintf(why, whylen, "stream '%.80s' != decode '%.80s'", acc, full);
            rc = -1;
        }
        free(full);
    }
    free(acc);
    return rc;
}

int
main(void)
{
    const char *names[] = { "qwen3", "llama3", "llama2", "gemma3", "deepseek_v3", "gptoss", "ngxllm-tiny" };
    size_t      k;
    int32_t    *ids = malloc(200000 * sizeof(int32_t));
    FILE       *probe = fopen(CACHE "qwen3/tokenizer.json", "r");

    if (probe == NULL) {
        free(ids);
        return skip_all("no tokenizers in " CACHE " (run t/fetch-tokenizers.sh)");
    }
    fclose(probe);
    for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        char           path[256], err[256], why[256] = "";
        llm_tokenizer *t;
        FILE          *f;
        char          *line = NULL;
        size_t         cap = 0, lines = 0, bad = 0, bad_skip = 0;
        ssize_t        len;

        if (strcmp(names[k], "ngxllm-tiny") == 0) snprintf(path, sizeof(path), "models/%s", names[k]);   /* the shipped model */
        else snprintf(path, sizeof(path), CACHE "%s", names[k]);
        t = llm_tokenizer_load(path, err, sizeof(err));
        if (!ok(t != NULL, "%s: load", names[k])) {
            diag(err);
            continue;
        }
        snprintf(path, sizeof(path), FIX "%s.ids", names[k]);
        f = fopen(path, "r");
        while (f && (len = getline(&line, &cap, f)) > 0) {
            size_t n = parse_ids(line, ids, 200000);
            lines++;
            if (stream_matches(t, ids, n, 0, why, sizeof(why))) {
                if (bad++ == 0) diag(why);
            }
            if (stream_matches(t, ids, n, LLM_DETOK_SKIP_SPECIAL, why, sizeof(why))) {
                if (bad_skip++ == 0) diag(why);
            }
        }
        if (f) fclose(f);
        free(line);
        ok(lines >= 2000 && bad == 0, "%s: streamed text of %zu id lists equals decode (%zu differ)", names[k], lines, bad);
        ok(lines >= 2000 && bad_skip == 0, "%s: same with skip_special (%zu differ)", names[k], bad_skip);
        llm_tokenizer_free(t);
    }
    free(ids);
    return done_testing();
}
