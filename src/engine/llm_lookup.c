/* Prompt lookup (llm_lookup.h): one backward scan over prompt and output. */
#include "engine/llm_lookup.h"

static int32_t
tok_at(const llm_tokens2 *t, size_t i)
{
    return i < t->na ? t->a[i] : t->b[i - t->na];
}

int
llm_lookup_propose(const llm_tokens2 *t, int n_min, int n_max,
    int32_t *out, int k, int *match)
{
    size_t   n = t->na + t->nb, end, best_end = 0;
    int      len, best = 0, j;
    int32_t  last;

    *match = 0;
    if (n < 2 || k <= 0 || n_min < 1 || n_max < n_min) {
        return 0;
    }

    last = tok_at(t, n - 1);

    /*
     * end: the index of the token after a candidate occurrence, latest
     * first; the occurrence ends at end - 1 and must lie before the suffix
     * itself starts repeating into it (end < n).
     */
    for (end = n - 1; end >= 1; end--) {
        if (tok_at(t, end - 1) != last) {
            continue;
        }
        for (len = 1; len < n_max && (size_t) len < end
                      && tok_at(t, end - 1 - len) == tok_at(t, n - 1 - len);
             len++)
        { /* void */ }
        if (len > best) {
            best = len;
            best_end = end;
            if (len == n_max) {
                break;
            }
        }
    }

    if (best < n_min) {
        return 0;
    }

    /*
     * what followed the occurrence; past the context's end that is what
     * this proposal has just put there (an overlapping copy): a tail that
     * repeats with period n - best_end goes on repeating, instead of the
     * proposal stopping after one period
     */
    for (j = 0; j < k; j++) {
        out[j] = best_end + j < n ? tok_at(t, best_end + j) : out[best_end + j - n];
    }

    *match = best;
    return j;
}
