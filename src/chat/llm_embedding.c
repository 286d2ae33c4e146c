/*
 * An embeddings request (see the header).
 */
#include <stdlib.h>
#include <string.h>

#include "chat/llm_embedding.h"

struct llm_embedding {
    llm_sched                   *sched;
    const char                  *model;
    llm_embed_request            req;
    const llm_embedding_events  *ev;
    void                        *data;

    llm_seq                    **seqs;
    size_t                       n_submitted;
    size_t                       n_done;
    size_t                       dim;
    long                         prompt_tokens;
    float                       *vectors;      /* n_inputs rows of dim */
    llm_buf                      out;

    int                          ended;
    int                          depth;        /* in a scheduler callback */
    int                          freed;        /* freed meanwhile */
};

static void llm_embedding_on_token(void *owner, llm_seq *seq, int32_t token,
    const llm_token_logprobs *lp);
static void llm_embedding_on_done(void *owner, llm_seq *seq,
    llm_finish reason, const char *error);
static void llm_embedding_on_flush(void *owner);

static const llm_seq_events  llm_embedding_seq_events = {
    llm_embedding_on_token, llm_embedding_on_done, llm_embedding_on_flush
};

int
llm_embedding_create(llm_sched *s, const char *model, llm_embed_request *req,
    int32_t *const *input_ids, const size_t *input_n,
    const llm_embedding_events *ev, void *data, llm_embedding **out,
    llm_api_error *err)
{
    size_t          i, n_ids, n_ctx;
    const int32_t  *ids;
    llm_embedding  *e;

    *out = NULL;
    memset(err, 0, sizeof(*err));

    e = calloc(1, sizeof(llm_embedding));
    if (e == NULL) {
        llm_embed_request_free(req);
        return -1;
    }
    e->sched = s;
    e->req = *req;
    memset(req, 0, sizeof(*req));
    e->model = e->req.model ? e->req.model : model;
    e->ev = ev;
    e->data = data;
    e->dim = (size_t) llm_model_get_info(llm_sched_model(s))->hidden;

    if (e->req.dimensions && (size_t) e->req.dimensions != e->dim) {
        llm_api_bad_request(err, "invalid_value", "dimensions", "Model '%s' "
                            "produces %zu dimensions; other sizes are not "
                            "supported.", model, e->dim);
        goto failed;
    }

    e->vectors = calloc(e->req.n_inputs * e->dim + 1, sizeof(float));
    e->seqs = calloc(e->req.n_inputs + 1, sizeof(llm_seq *));
    if (e->vectors == NULL || e->seqs == NULL) {
        goto failed;
    }

    n_ctx = llm_sched_n_ctx(s);

    for (i = 0; i < e->req.n_inputs; i++) {
        ids = input_ids[i] ? input_ids[i] : e->req.inputs[i].ids;
        n_ids = input_n[i];

        if (n_ids == 0 || n_ids > n_ctx) {
            llm_api_bad_request(err, "context_length_exceeded", "input",
                                "Input %zu has %zu tokens; the limit is %zu.",
                                i, n_ids, n_ctx);
            goto failed;
        }

        e->seqs[i] = llm_seq_create(s, ids, n_ids, 0, NULL, -1,
                                    &llm_embedding_seq_events, e, i);
        if (e->seqs[i] == NULL) {
            goto failed;
        }

        e->prompt_tokens += (long) n_ids;
    }

    *out = e;
    return 0;

failed:

    llm_embedding_free(e);
    return -1;
}

llm_admit
llm_embedding_submit(llm_embedding *e, size_t parallel)
{
    size_t     granted;
    llm_admit  admit;

    admit = llm_sched_reserve(e->sched, 1,
                              e->req.n_inputs < parallel ? e->req.n_inputs
                                                         : parallel,
                              &granted);
    if (admit != LLM_ADMIT_OK) {
        return admit;
    }

    while (e->n_submitted < granted) {
        llm_sched_submit(e->sched, e->seqs[e->n_submitted++]);
    }

    return LLM_ADMIT_OK;
}

/* The next input into the place one that ended gave back. */
static int
llm_embedding_next(llm_embedding *e)
{
    size_t  granted;

    if (e->n_submitted == e->req.n_inputs) {
        return 0;
    }

    if (llm_sched_reserve(e->sched, 1, 1, &granted) != LLM_ADMIT_OK) {
        return -1;
    }

    llm_sched_submit(e->sched, e->seqs[e->n_submitted++]);

    return 0;
}

static void
llm_embedding_end_with(llm_embedding *e, const char *error)
{
    e->ended = 1;

    if (error) {
        e->ev->done(e->data, LLM_EMBEDDING_FAILED, error);
        return;
    }

    if (llm_openai_embeddings_response(&e->out, e->model, e->vectors,
                                       e->req.n_inputs, e->dim,
                                       e->req.base64, e->prompt_tokens)
        != 0)
    {
        e->ev->done(e->data, LLM_EMBEDDING_BROKEN, NULL);
        return;
    }

    e->ev->done(e->data, LLM_EMBEDDING_OK, NULL);
}

static void
llm_embedding_destroy(llm_embedding *e)
{
    free(e->seqs);
    free(e->vectors);
    llm_buf_free(&e->out);
    llm_embed_request_free(&e->req);
    free(e);
}

static void
llm_embedding_on_done(void *owner, llm_seq *seq, llm_finish reason,
    const char *error)
{
    llm_embedding  *e = owner;

    if (e->ended || e->freed) {
        return;
    }

    e->depth++;

    if (error) {
        llm_embedding_end_with(e, error);

    } else {
        /* pooled by the scheduler: the L2-normalised mean of the input */
        memcpy(e->vectors + llm_seq_index(seq) * e->dim,
               llm_seq_embedding(seq), e->dim * sizeof(float));

        if (++e->n_done == e->req.n_inputs) {
            llm_embedding_end_with(e, NULL);

        } else if (llm_embedding_next(e) != 0) {
            llm_embedding_end_with(e, "an input lost its admission place");
        }
    }

    if (--e->depth == 0 && e->freed) {
        llm_embedding_destroy(e);
    }
}

static void
llm_embedding_on_token(void *owner, llm_seq *seq, int32_t token,
    const llm_token_logprobs *lp)
{
}

static void
llm_embedding_on_flush(void *owner)
{
}

long
llm_embedding_prompt_tokens(const llm_embedding *e)
{
    return e->prompt_tokens;
}

llm_buf *
llm_embedding_out(llm_embedding *e)
{
    return &e->out;
}

void
llm_embedding_free(llm_embedding *e)
{
    size_t  i;

    if (e == NULL) {
        return;
    }

    for (i = 0; e->seqs && i < e->req.n_inputs; i++) {
        if (e->seqs[i]) {
            llm_seq_release(e->seqs[i]);
            e->seqs[i] = NULL;
        }
    }

    if (e->depth > 0) {
        e->freed = 1;
        return;
    }

    llm_embedding_destroy(e);
}
