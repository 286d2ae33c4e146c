/*
 * What a kept response is (llm_responses.h, "kept responses"): one JSON
 * object {"input": [items], "response": {the response object}}, the bytes
 * api/llm_response_store.h keeps under the response's id.
 */
#include <string.h>

#include "api/llm_api_json.h"
#include "api/llm_responses.h"

int
llm_responses_record(llm_buf *b, const json_t *input, const json_t *response)
{
    json_t *rec;
    int     rc;

    rec = json_pack("{s:O,s:O}", "input", input, "response", response);
    if (rec == NULL) {
        b->failed = 1;
        return -1;
    }
    rc = llm_api_dump(b, rec);
    json_decref(rec);
    return rc;
}

static json_t *
record_load(const char *rec, size_t len)
{
    json_t *root = json_loadb(rec, len, 0, NULL);

    if (root != NULL
        && (!json_is_array(json_object_get(root, "input"))
            || !json_is_object(json_object_get(root, "response"))))
    {
        json_decref(root);
        return NULL;
    }
    return root;
}

json_t *
llm_responses_record_items(const char *rec, size_t len)
{
    json_t *root, *items, *output;

    root = record_load(rec, len);
    if (root == NULL) {
        return NULL;
    }
    items = json_incref(json_object_get(root, "input"));
    output = json_object_get(json_object_get(root, "response"), "output");
    if (json_is_array(output) && json_array_extend(items, output) != 0) {
        json_decref(items);
        items = NULL;
    }
    json_decref(root);
    return items;
}

int
llm_responses_record_response(llm_buf *b, const char *rec, size_t len)
{
    json_t *root;
    int     rc;

    root = record_load(rec, len);
    if (root == NULL) {
        return -1;
    }
    rc = llm_api_dump(b, json_object_get(root, "response"));
    json_decref(root);
    return rc;
}

int
llm_responses_deleted(llm_buf *b, const char *id, size_t id_len)
{
    json_t *o;
    int     rc;

    o = json_object();
    if (o == NULL
        || json_object_set_new(o, "id", llm_api_jstring(id, id_len)) != 0
        || json_object_set_new(o, "object", json_string("response")) != 0
        || json_object_set_new(o, "deleted", json_true()) != 0)
    {
        json_decref(o);
        b->failed = 1;
        return -1;
    }
    rc = llm_api_dump(b, o);
    json_decref(o);
    return rc;
}

int
llm_responses_error_not_found(llm_api_error *err, const char *param,
    const char *id, size_t id_len)
{
    int n = id_len > 128 ? 128 : (int) id_len;

    return llm_api_error_set(err, 404, "invalid_request_error",
        param ? "previous_response_not_found" : "not_found", param,
        param ? "Previous response with id '%.*s' not found."
              : "Response with id '%.*s' not found.", n, id);
}
