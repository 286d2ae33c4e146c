/* Unicode tables for the NFC normalizer (generated data in llm_tokenizer_nfc_data.c). */
#ifndef LLM_TOKENIZER_NFC_H
#define LLM_TOKENIZER_NFC_H

#include <stddef.h>
#include <stdint.h>

typedef struct { uint32_t cp; uint8_t ccc; } llm_nfc_ccc;               /* ccc != 0 only */
typedef struct { uint32_t cp; uint16_t off, len; } llm_nfc_dec;          /* full canonical decomposition */
typedef struct { uint32_t first, second, composite; } llm_nfc_comp;      /* primary composites */

extern const llm_nfc_ccc  llm_nfc_ccc_table[];
extern const size_t       llm_nfc_n_ccc;
extern const llm_nfc_dec  llm_nfc_dec_table[];
extern const size_t       llm_nfc_n_dec;
extern const uint32_t     llm_nfc_dec_pool[];
extern const llm_nfc_comp llm_nfc_comp_table[];
extern const size_t       llm_nfc_n_comp;
extern const uint32_t     llm_nfc_seconds0[];
extern const size_t       llm_nfc_n_seconds0;

#endif
