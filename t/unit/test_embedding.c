/*
 * An embeddings request without nginx (chat/llm_embedding.h): inputs into
 * embedding sequences through the admission places, one after another when
 * there is one place, pooled vectors in input order, and the refusals that
 * come before anything is queued.
 */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "tap.h"

#include "chat/llm_embedding.h"
#include "chat/llm_served.h"

#define MODEL "models/ngxllm-tiny"

static llm_served  served;

typedef struct {
    llm_embedding      *emb;
    int                 done;
    llm_embedding_end   end;
    char               *body;      /* the response, copied at done */
    int                 free_in_done;
} driver;

static void
on_done(void *data, llm_embedding_end end, const char *error)
{
    driver   *d = data;
    llm_buf  *out;

    d->done++;
    d->end = end;
    out = llm_embedding_out(d->emb);
    d->body = strndup(out->data ? out->data : "", out->len);
    if (d->free_in_done) {
        llm_embedding_free(d->emb);
        d->emb = NULL;
    }
}

static const llm_embedding_events  events = { on_done };

static llm_sched *
sched_new(int parallel, int queue, int n_ctx)
{
    char              err[256];
    llm_sched_config  sc;

    memset(&sc, 0, sizeof(sc));
    sc.parallel = parallel;
    sc.queue = queue;
    sc.n_ctx = n_ctx;
    sc.threads = 1;
    return llm_sched_create(served.model, &sc, err, sizeof(err));
}

static int
parse(const char *body, llm_embed_request *req)
{
    llm_api_error   e;
    llm_api_limits  lim;

    llm_api_limits_default(&lim);
    memset(req, 0, sizeof(*req));
    return llm_openai_parse_embeddings(body, strlen(body), &lim, req, &e);
}

static void
run_steps(llm_sched *s, driver *d)
{
    int  guard = 0;

    while (!d->done && llm_sched_step_prepare(s) > 0 && guard++ < 1000) {
        llm_sched_step_run(s);
        llm_sched_step_complete(s);
    }
}

int
main(void)
{
    char               err[512];
    size_t             i, k, n[3], dim;
    int32_t           *ids[3];
    double             norm;
    json_t            *o, *data, *v;
    driver             d;
    llm_sched         *s;
    llm_api_error      e;
    llm_sched_stats    st;
    llm_served_opts    so;
    llm_embed_request  req;

    memset(&so, 0, sizeof(so));
    so.path = MODEL;
    so.parallel = 1;
    so.threads = 1;
    if (!ok(llm_served_load(&so, &served, err, sizeof(err)) == 0,
            "the shipped model loads")) {
        printf("# %s\n", err);
        return done_testing();
    }
    dim = (size_t) llm_model_get_info(served.model)->hidden;

    /* three inputs on one place: each follows the one before */
    memset(&d, 0, sizeof(d));
    s = sched_new(1, 0, 64);
    ok(parse("{\"model\":\"e\",\"input\":[\"Hello\",\"world wide web\",\"Hello\"]}",
             &req) == 0, "three text inputs");
    for (i = 0; i < 3; i++) {
        llm_tokenizer_encode(served.tok, req.inputs[i].text, req.inputs[i].text_len,
                             1, &ids[i], &n[i]);
    }
    ok(llm_embedding_create(s, "tiny", &req, ids, n, &events, &d, &d.emb, &e) == 0,
       "made");
    ok(req.inputs == NULL, "the request was taken");
    is_int(llm_embedding_prompt_tokens(d.emb), (long long) (n[0] + n[1] + n[2]),
           "prompt tokens: every input's");
    is_int(llm_embedding_submit(d.emb, 4), LLM_ADMIT_OK, "admitted on one place");
    llm_sched_get_stats(s, &st);
    is_int(st.waiting + st.running, 1, "one input at a time");
    run_steps(s, &d);
    is_int(d.done, 1, "done once");
    is_int(d.end, LLM_EMBEDDING_OK, "ended well");

    o = json_loads(d.body, 0, NULL);
    data = json_object_get(o, "data");
    is_int(json_array_size(data), 3, "three embeddings");
    is_str(json_string_value(json_object_get(o, "model")), "e",
           "named as the request named the model");
    for (i = 0; i < 3; i++) {
        v = json_object_get(json_array_get(data, i), "embedding");
        norm = 0;
        for (k = 0; k < json_array_size(v); k++) {
            norm += json_real_value(json_array_get(v, k))
                    * json_real_value(json_array_get(v, k));
        }
        ok(json_array_size(v) == dim && fabs(norm - 1.0) < 1e-3,
           "input %zu: %zu floats, L2-normalised (%f)", i, dim, norm);
        is_int(json_integer_value(json_object_get(json_array_get(data, i), "index")),
               (long long) i, "input %zu: in order", i);
    }
    ok(json_equal(json_object_get(json_array_get(data, 0), "embedding"),
                  json_object_get(json_array_get(data, 2), "embedding")),
       "the same text, the same vector");
    ok(!json_equal(json_object_get(json_array_get(data, 0), "embedding"),
                   json_object_get(json_array_get(data, 1), "embedding")),
       "another text, another vector");
    json_decref(o);
    free(d.body);
    llm_embedding_free(d.emb);

    /* refusals before anything is made */
    memset(&d, 0, sizeof(d));
    parse("{\"input\":\"Hello\",\"dimensions\":7}", &req);
    ok(llm_embedding_create(s, "tiny", &req, ids, n, &events, &d, &d.emb, &e) == -1
       && d.emb == NULL, "dimensions=7: refused");
    ok(e.status == 400 && strcmp(e.param, "dimensions") == 0
       && strstr(e.message, "Model 'tiny' produces") != NULL,
       "dimensions=7: a 400 naming the model's size (%s)", e.message);

    {
        int32_t  *none[1] = { NULL };
        size_t    many[1] = { 65 };

        parse("{\"input\":[[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,"
              "21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,"
              "42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,"
              "63,64,65]]}", &req);
        ok(llm_embedding_create(s, "tiny", &req, none, many, &events, &d,
                                &d.emb, &e) == -1, "65 tokens on a context of 64: refused");
        ok(e.status == 400 && strcmp(e.code, "context_length_exceeded") == 0
           && strcmp(e.param, "input") == 0, "context_length_exceeded on input (%s)",
           e.message);
    }
    llm_sched_get_stats(s, &st);
    is_int(st.cancelled, 0, "no sequence was made for a refusal");

    /* no place free: BUSY, nothing queued; free from inside done */
    {
        driver    d2;
        int32_t  *none[1] = { NULL };
        size_t    three[1] = { 3 };

        memset(&d, 0, sizeof(d));
        memset(&d2, 0, sizeof(d2));
        d.free_in_done = 1;
        parse("{\"input\":[[1,2,3]]}", &req);
        ok(llm_embedding_create(s, "tiny", &req, none, three, &events, &d2,
                                &d2.emb, &e) == 0
           && llm_embedding_submit(d2.emb, 1) == LLM_ADMIT_OK,
           "another request takes the only place");
        parse("{\"input\":[[4,5,6]]}", &req);
        ok(llm_embedding_create(s, "tiny", &req, none, three, &events, &d,
                                &d.emb, &e) == 0, "ids as given: made");
        is_int(llm_embedding_submit(d.emb, 1), LLM_ADMIT_BUSY, "busy: refused for now");
        llm_sched_get_stats(s, &st);
        is_int(st.waiting + st.running, 1, "busy: nothing of it queued");
        run_steps(s, &d2);
        is_int(llm_embedding_submit(d.emb, 1), LLM_ADMIT_OK, "the place back: admitted");
        run_steps(s, &d);
        ok(d.done == 1 && d.end == LLM_EMBEDDING_OK && d.emb == NULL,
           "done, and freed from inside done");
        free(d.body);
        free(d2.body);
        llm_embedding_free(d2.emb);
    }

    for (i = 0; i < 3; i++) {
        free(ids[i]);
    }
    llm_sched_free(s);
    llm_served_free(&served);
    return done_testing();
}
