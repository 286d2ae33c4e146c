/* Model objects and lists in OpenAI's or Anthropic's shape (llm_api_models.h). */
#include <string.h>
#include <time.h>

#include "api/llm_api_models.h"
#include "api/llm_api_route.h"

/* RFC 3339 in UTC, as Anthropic's created_at. */
static json_t *
rfc3339(long long t)
{
    time_t    tt = (time_t) t;
    struct tm tm;
    char      s[32];

    if (gmtime_r(&tt, &tm) == NULL
        || strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    {
        return json_string("1970-01-01T00:00:00Z");
    }
    return json_string(s);
}

void
llm_api_model_card_init(llm_api_model_card *card, const char *id,
    size_t id_len, long long created, long context_length, long max_tokens)
{
    card->id = id;
    card->id_len = id_len;
    card->created = created;
    card->context_length = context_length;
    card->max_output_tokens = max_tokens > 0 && max_tokens < context_length
                              ? max_tokens : context_length;
}

json_t *
llm_api_model_object(const llm_api_model_card *m, int anthropic)
{
    json_t *o = json_object();

    if (o == NULL) {
        return NULL;
    }
    if (anthropic) {
        json_object_set_new(o, "type", json_string("model"));
        json_object_set_new(o, "id", json_stringn(m->id, m->id_len));
        json_object_set_new(o, "display_name", json_stringn(m->id, m->id_len));
        json_object_set_new(o, "created_at", rfc3339(m->created));
    } else {
        json_object_set_new(o, "id", json_stringn(m->id, m->id_len));
        json_object_set_new(o, "object", json_string("model"));
        json_object_set_new(o, "created", json_integer(m->created));
        json_object_set_new(o, "owned_by", json_string("ngx_llm"));
    }
    json_object_set_new(o, "context_length", json_integer(m->context_length));
    json_object_set_new(o, "max_output_tokens",
                        json_integer(m->max_output_tokens));
    return o;
}

json_t *
llm_api_model_list(const llm_api_model_card *m, size_t n, int anthropic)
{
    json_t *list = json_object(), *data = json_array();
    size_t  i;

    if (list == NULL || data == NULL) {
        json_decref(list);
        json_decref(data);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        if (json_array_append_new(data, llm_api_model_object(&m[i], anthropic))
            != 0)
        {
            json_decref(list);
            json_decref(data);
            return NULL;
        }
    }
    if (anthropic) {
        json_object_set_new(list, "data", data);
        json_object_set_new(list, "has_more", json_false());
        json_object_set_new(list, "first_id", n
            ? json_stringn(m[0].id, m[0].id_len) : json_null());
        json_object_set_new(list, "last_id", n
            ? json_stringn(m[n - 1].id, m[n - 1].id_len) : json_null());
    } else {
        json_object_set_new(list, "object", json_string("list"));
        json_object_set_new(list, "data", data);
    }
    return list;
}


json_t *
llm_api_models_get(const llm_api_model_card *m, size_t n, const char *uri,
    size_t uri_len, int anthropic, llm_api_error *err)
{
    char           id[201];    /* as much as the 404 quotes */
    size_t         i, len;
    llm_api_route  route;

    err->status = 0;

    /* the server answers paths other than /models[/{id}] with a 404 */
    if (llm_api_route_uri(LLM_API_MODELS, uri, uri_len, &route) != 0
        || route.id == NULL)
    {
        return llm_api_model_list(m, n, anthropic);
    }

    for (i = 0; i < n; i++) {
        if (m[i].id_len == route.id_len
            && memcmp(m[i].id, route.id, route.id_len) == 0)
        {
            return llm_api_model_object(&m[i], anthropic);
        }
    }

    len = route.id_len < sizeof(id) - 1 ? route.id_len : sizeof(id) - 1;
    memcpy(id, route.id, len);
    id[len] = '\0';
    llm_api_error_model_not_found(err, id);
    return NULL;
}
