/* Documented paths of prefix-matched llm_api locations (llm_api_route.h). */
#include <string.h>

#include "api/llm_api_route.h"

static int
ends_with(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);

    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* Offset just after the first "/models" segment (followed by '/' or the
 * end), or -1. */
static long
models_segment(const char *uri, size_t len)
{
    static const char seg[] = "/models";
    size_t            n = sizeof(seg) - 1, i;

    for (i = 0; i + n <= len; i++) {
        if (memcmp(uri + i, seg, n) == 0
            && (i + n == len || uri[i + n] == '/'))
        {
            return (long) (i + n);
        }
    }
    return -1;
}

int
llm_api_route_uri(llm_api_kind location_api, const char *uri, size_t len,
    llm_api_route *out)
{
    long end;

    out->api = location_api;
    out->id = NULL;
    out->id_len = 0;

    switch (location_api) {
    case LLM_API_MESSAGES:
    case LLM_API_COUNT_TOKENS:
        if (ends_with(uri, len, "/messages")) {
            out->api = LLM_API_MESSAGES;
            return 0;
        }
        if (ends_with(uri, len, "/messages/count_tokens")) {
            out->api = LLM_API_COUNT_TOKENS;
            return 0;
        }
        return -1;

    case LLM_API_RESPONSES:
        if (ends_with(uri, len, "/responses")) {
            return 0;
        }
        /* ".../responses/{id}" after the first "/responses/": a kept
         * response (the id non-empty, without '/') */
        for (end = 0; end + 11 <= (long) len; end++) {
            if (memcmp(uri + end, "/responses/", 11) == 0) {
                break;
            }
        }
        if (end + 11 > (long) len) {
            return -1;
        }
        end += 11;
        if ((size_t) end == len || memchr(uri + end, '/', len - end)) {
            return -1;
        }
        out->id = uri + end;
        out->id_len = len - (size_t) end;
        return 0;

    case LLM_API_MODELS:
        end = models_segment(uri, len);
        if (end < 0) {
            return -1;
        }
        if ((size_t) end == len) {
            return 0;
        }
        /* "/models/" then the id, which must not be empty */
        if ((size_t) end + 1 == len) {
            return -1;
        }
        out->id = uri + end + 1;
        out->id_len = len - (size_t) end - 1;
        return 0;

    case LLM_API_PAGE:
        /* the page's directory ("/", "/chat/"), not every path under it */
        return len > 0 && uri[len - 1] == '/' ? 0 : -1;

    default:
        return 0;
    }
}

/* llm_api's names, by kind (NULL: no location of its own). */
static const char *const  llm_api_location_names[] = {
    "chat",            /* LLM_API_CHAT */
    "completions",     /* LLM_API_COMPLETIONS */
    "messages",        /* LLM_API_MESSAGES */
    NULL,              /* LLM_API_COUNT_TOKENS: a path of "messages" */
    "embeddings",      /* LLM_API_EMBEDDINGS */
    "models",          /* LLM_API_MODELS */
    "health",          /* LLM_API_HEALTH */
    "tokenize",        /* LLM_API_TOKENIZE */
    "detokenize",      /* LLM_API_DETOKENIZE */
    "responses",       /* LLM_API_RESPONSES */
    "metrics",         /* LLM_API_METRICS */
    "page",            /* LLM_API_PAGE */
};

static int
is_word(const char *s, size_t len, const char *word)
{
    return word && len == strlen(word) && memcmp(s, word, len) == 0;
}

int
llm_api_location_kind(const char *name, size_t len)
{
    size_t  i;

    for (i = 0; i < sizeof(llm_api_location_names) / sizeof(char *); i++) {
        if (is_word(name, len, llm_api_location_names[i])) {
            return (int) i;
        }
    }

    return -1;
}

int
llm_api_error_shape(const char *name, size_t len)
{
    return is_word(name, len, "openai") ? LLM_API_CHAT
           : is_word(name, len, "anthropic") ? LLM_API_MESSAGES
           : -1;
}

int
llm_api_route_reads(llm_api_kind api)
{
    return api == LLM_API_MODELS || api == LLM_API_HEALTH
           || api == LLM_API_METRICS || api == LLM_API_PAGE;
}
