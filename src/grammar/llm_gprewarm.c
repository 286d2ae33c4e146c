/*
 * Walks of the JSON building blocks, made when a vocabulary is built (model
 * load), so that the first masks of a schema never seen before find them in
 * the vocabulary's table instead of walking the 150k-token trie themselves.
 *
 * A walk is kept under the canonical text of the grammar above its cut
 * (llm_gmatch.c): the characters of a string, of a bounded string, inside
 * a format, a number are the same text in every schema, so walking them
 * once here in a schema that holds each of them serves all schemas.  Each
 * block appears as an object member and as an array item so that its walk
 * lets past the cut what may follow a value in both (a walk serves every
 * schema whose FOLLOW set is no larger), and twice: as plain JSON and with
 * '<' escaped (LLM_GJSON_NO_LT, the tool-call formats' arguments).
 */
#include <stdio.h>

#include "grammar/llm_gvocab_int.h"

/* the states of one block's grammar explored at most (a block has tens) */
#define PREWARM_STATES 20000

static const char *prewarm_schema =
    "{\"type\":\"object\",\"properties\":{"
    "\"b\":{\"type\":\"string\",\"maxLength\":30},"
    "\"ba\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":30}},"
    "\"s\":{\"type\":\"string\"},"
    "\"sa\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"dt\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"dta\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"date-time\"}},"
    "\"d\":{\"type\":\"string\",\"format\":\"date\"},"
    "\"da\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"date\"}},"
    "\"t\":{\"type\":\"string\",\"format\":\"time\"},"
    "\"ta\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"time\"}},"
    "\"u\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"ua\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"uuid\"}},"
    "\"e\":{\"type\":\"string\",\"format\":\"email\"},"
    "\"ea\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"email\"}},"
    "\"n\":{\"type\":\"number\"},"
    "\"na\":{\"type\":\"array\",\"items\":{\"type\":\"number\"}},"
    "\"i\":{\"type\":\"integer\"},"
    "\"ia\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}}}";

static int
prewarm_one(llm_gvocab *v, const json_t *schema, int flags, char *err, size_t errlen)
{
    llm_gbuild *b = llm_gbuild_new();
    llm_grammar *g = NULL;
    llm_gindex *x = NULL;
    int root, rc = -1;

    if (b == NULL) { llm_gerr(err, errlen, "out of memory"); return -1; }
    root = llm_gbuild_json_schema_flags(b, schema, flags, err, errlen);
    if (root >= 0) g = llm_gbuild_finish(b, root, err, errlen);
    if (g != NULL) x = llm_gindex_create(g, v, NULL, 0, NULL, 0, err, errlen);
    if (x != NULL) {
        if (llm_gindex_walk_cuts(x, PREWARM_STATES) >= 0) rc = 0;
        else llm_gerr(err, errlen, "out of memory");
    }
    llm_gindex_free(x);
    llm_grammar_free(g);
    llm_gbuild_free(b);
    return rc;
}

int
llm_gvocab_prewarm(llm_gvocab *v, char *err, size_t errlen)
{
    json_t *schema = json_loads(prewarm_schema, 0, NULL);
    int rc;

    if (schema == NULL) { llm_gerr(err, errlen, "out of memory"); return -1; }
    rc = prewarm_one(v, schema, 0, err, errlen);
    if (rc == 0) rc = prewarm_one(v, schema, LLM_GJSON_NO_LT, err, errlen);
    json_decref(schema);
    return rc;
}
