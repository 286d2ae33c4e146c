/*
 * Repacking at load: Q8_0 / Q4_0 / Q5_0 matrices into 16-row panels (the layout
 * and why: kernels/cpu/llm_quant.h, "Panels"), so that decode and batches
 * read one layout that a SIMD register holds 4 codes of 16 rows of.  The
 * panels are made in huge-page memory (llm_hugepages.h), and every other
 * matrix that decode streams from a mapped file (float types, K-quants) and
 * that spans at least a huge page is copied there: a read of every weight per
 * token runs faster in 2 MiB pages than through the file's 4 KiB ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/llm_hugepages.h"
#include "engine/llm_model_impl.h"
#include "kernels/cpu/llm_quant.h"

/* the source's memory back: a buffer made at load freed (its slot now owns the panels), the
 * whole pages of a mapped file's range dropped; 1 if the panels took the buffer's slot */
static int
release(llm_model *m, const void *src, size_t bytes, void *panels)
{
    const char *p = src;
    long page = sysconf(_SC_PAGESIZE);
    int i;

    for (i = 0; i < m->n_owned; i++) {
        if (m->owned[i] == src) {
            free(m->owned[i]);
            m->owned[i] = panels;
            return 1;
        }
    }
    for (i = 0; i < m->n_files; i++) {
        const char *map = m->files[i].map;
        if (map && p >= map && p + bytes <= map + m->files[i].size && page > 0) {
            uintptr_t a = ((uintptr_t) p + (uintptr_t) page - 1) & ~((uintptr_t) page - 1);
            uintptr_t b = ((uintptr_t) p + bytes) & ~((uintptr_t) page - 1);
            /* read-only shared mapping: the pages come back from the file if touched again */
            if (b > a) (void) madvise((void *) a, b - a, MADV_DONTNEED);
            break;
        }
    }
    return 0;
}

/* 1 if bytes at p lie in one of the model's mapped files */
static int
in_file(const llm_model *m, const void *p, size_t bytes)
{
    const char *c = p;
    int i;

    for (i = 0; i < m->n_files; i++) {
        const char *map = m->files[i].map;
        if (map && c >= map && c + bytes <= map + m->files[i].size) return 1;
    }
    return 0;
}

/* a row-major matrix read from a mapped file into huge-page memory (same bytes) */
static int
copy_resident(llm_model *m, llm_mat *w, char *err, size_t errlen)
{
    size_t bytes = llm_wtype_row_bytes(w->type, w->cols) * (size_t) w->rows;
    const void *src = w->data;
    void *dst;
    int tied = m->embed.data == src;

    if (bytes < LLM_HUGE_PAGE || !in_file(m, src, bytes)) return 0;
    dst = llm_alloc_streamed(bytes);
    if (dst == NULL || llm_model_own(m, dst) != 0) {
        free(dst);
        snprintf(err, errlen, "out of memory copying a %d x %d matrix", w->rows, w->cols);
        return -1;
    }
    memcpy(dst, src, bytes);
    (void) release(m, src, bytes, dst);
    w->data = dst;
    if (tied) m->embed = *w;
    return 0;
}

static int
repack(llm_model *m, llm_mat *w, char *err, size_t errlen)
{
    int pt = w->data ? llm_panel_type(w->type) : -1;
    size_t bytes;
    void *panels = NULL;
    const void *src = w->data;
    int tied;

    if (w->data == NULL) return 0;
    if (pt < 0 || w->cols % LLM_QB != 0) return copy_resident(m, w, err, errlen);
    bytes = llm_panel_bytes((llm_wtype) pt, w->rows, w->cols);
    panels = llm_alloc_streamed(bytes);
    if (panels == NULL) {
        snprintf(err, errlen, "out of memory repacking a %d x %d matrix", w->rows, w->cols);
        return -1;
    }
    llm_panel_pack((llm_wtype) pt, panels, src, w->rows, w->cols);
    tied = m->embed.data == src;
    if (!release(m, src, llm_wtype_row_bytes(w->type, w->cols) * (size_t) w->rows, panels)
        && llm_model_own(m, panels) != 0)
    {
        free(panels);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    w->data = panels;
    w->type = (llm_wtype) pt;
    if (tied) m->embed = *w;
    return 0;
}

int
llm_model_repack(llm_model *m, char *err, size_t errlen)
{
    int l;

    for (l = 0; l < m->info.n_layers; l++) {
        llm_layer *L = &m->layers[l];
        /* latent attention's kv_b_proj stays in rows (copied resident only): llm_mla.c widens
         * it a head at a time */
        llm_mat *mats[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down,
                            &L->conv_in, &L->conv_out, &L->wq_a };
        size_t i;
        for (i = 0; i < sizeof(mats) / sizeof(mats[0]); i++) {
            if (repack(m, mats[i], err, errlen) != 0) return -1;
        }
        if (L->kv_b.data && copy_resident(m, &L->kv_b, err, errlen) != 0) return -1;
    }
    return repack(m, &m->lm_head, err, errlen);
}
