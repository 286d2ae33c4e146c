/*
 * Growable byte buffer.  Formatters append response bytes here; the glue
 * copies them into nginx buffers.  The data is always NUL-terminated so it
 * can be printed or compared in tests.  An allocation failure sets `failed`
 * and every later append is a no-op returning -1, so callers may check once
 * at the end.
 */
#ifndef LLM_BUF_H
#define LLM_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct {
    char   *data;     /* NUL-terminated, NULL until the first append */
    size_t  len;
    size_t  cap;
    size_t  max;      /* refuse to grow past this many bytes; 0 = no limit */
    int     failed;   /* an append failed (out of memory or over max) */
} llm_buf;

void   llm_buf_init(llm_buf *b);
void   llm_buf_free(llm_buf *b);
void   llm_buf_reset(llm_buf *b);          /* len = 0, keeps the memory */
int    llm_buf_reserve(llm_buf *b, size_t extra);
int    llm_buf_append(llm_buf *b, const void *p, size_t n);
int    llm_buf_puts(llm_buf *b, const char *s);
int    llm_buf_putc(llm_buf *b, char c);
int    llm_buf_printf(llm_buf *b, const char *fmt, ...)
           __attribute__((format(printf, 2, 3)));
int    llm_buf_vprintf(llm_buf *b, const char *fmt, va_list ap);
/* Hand the bytes to the caller (free() them); the buffer becomes empty. */
char  *llm_buf_detach(llm_buf *b, size_t *len);

#endif
