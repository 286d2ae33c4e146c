/*
 * Comparing logit vectors in the engine's tests (test_engine.c,
 * test_state.c): the largest absolute difference (NaN counts as the
 * largest) and the greedy token.  Static functions, as tap.h: each test is
 * one translation unit.
 */
#ifndef LOGITS_CHECK_H
#define LOGITS_CHECK_H

#include <math.h>

static double
max_abs(const float *a, const float *b, int n)
{
    double m = 0;
    int i;
    for (i = 0; i < n; i++) {
        double d = fabs((double) a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

static int
argmax(const float *v, int n)
{
    int i, b = 0;
    for (i = 1; i < n; i++) if (v[i] > v[b]) b = i;
    return b;
}

#endif /* LOGITS_CHECK_H */
