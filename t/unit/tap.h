/* Minimal TAP producer for C unit tests, read by prove. */
#ifndef LLM_TAP_H
#define LLM_TAP_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

static inline int tap_ok(int pass, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#include <stdarg.h>
static inline int
tap_ok(int pass, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    tap_n++;
    printf("%s %d - ", pass ? "ok" : "not ok", tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!pass) {
        tap_failed++;
        printf("#   Failed at %s line %d\n", file, line);
    }
    fflush(stdout);
    return pass;
}

#define is_int(got, want, ...) do { long long g_ = (got), w_ = (want); \
    if (!ok(g_ == w_, __VA_ARGS__)) printf("#   got %lld, want %lld\n", g_, w_); } while (0)

#define is_str(got, want, ...) do { const char *g_ = (got), *w_ = (want); \
    if (!ok(g_ && w_ && strcmp(g_, w_) == 0, __VA_ARGS__)) \
        printf("#   got '%s'\n#  want '%s'\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); } while (0)

#define is_near(got, want, tol, ...) do { double g_ = (got), w_ = (want); \
    if (!ok(fabs(g_ - w_) <= (tol), __VA_ARGS__)) printf("#   got %g, want %g (tol %g)\n", g_, w_, (double)(tol)); } while (0)

static inline void diag(const char *msg) { printf("# %s\n", msg); }

/* Skip the whole file (e.g. a fixture that a network fetch did not provide). */
static inline int skip_all(const char *why) { printf("1..0 # SKIP %s\n", why); return 0; }

static inline int done_testing(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
