/*
 * What the engine benches (grammar.c, spec.c) collect from a sequence: its
 * tokens and the times of its first and last one (decode speed counts the
 * tokens after the first, which comes with the prompt).  Header-only: each
 * bench is one file.
 */
#ifndef BENCH_SEQ_H
#define BENCH_SEQ_H

#include <time.h>

#include "engine/llm_sched.h"

#define BENCH_OUT_MAX  2048

typedef struct {
    int32_t  toks[BENCH_OUT_MAX];
    int      n;                     /* all tokens, also past BENCH_OUT_MAX */
    double   t_first, t_last;       /* ms, monotonic */
} bench_out;

static inline double
bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
bench_on_token(void *o, llm_seq *seq, int32_t tok, const llm_token_logprobs *lp)
{
    bench_out *r = o;
    double t = bench_now_ms();
    (void) seq; (void) lp;
    if (r->n == 0) r->t_first = t;
    r->t_last = t;
    if (r->n < BENCH_OUT_MAX) r->toks[r->n] = tok;
    r->n++;
}

static void bench_on_done(void *o, llm_seq *seq, llm_finish reason, const char *error)
{ (void) o; (void) seq; (void) reason; (void) error; }
static void bench_on_flush(void *o) { (void) o; }
static const llm_seq_events bench_events = { bench_on_token, bench_on_done, bench_on_flush };

#endif
