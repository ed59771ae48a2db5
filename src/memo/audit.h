/* Verbatim-memorization audit (docs/algorithm.md §7): prompt the model with a document's
 * beginning, decode greedily, and compare with what the document really says.
 * Per document: the prompt is all but the last `suffix` tokens (or the first
 * `prefix` tokens when prefix > 0) and the reference is the `suffix` tokens
 * after it. Prompts longer than n_positions - suffix keep their last tokens.
 * Documents too short for a prompt of one token plus the reference are
 * skipped. Decoding is batched over documents with a KV cache.
 *
 * Instruction examples (fine-tuning data) give each document its own span
 * instead: the reference is what training supervised last (the completion,
 * or the final assistant reply, with its end token), at most `suffix` of its
 * tokens, and the prompt everything before it (ax_memo_last_supervised). */
#ifndef AX_MEMO_AUDIT_H
#define AX_MEMO_AUDIT_H
#include <stdint.h>
#include "model/gpt.h"

typedef struct {
    int skipped;
    int prompt_len;
    int ref_len;       /* reference tokens compared */
    int exact;         /* all suffix tokens reproduced */
    double match_frac; /* share of positions with the reference token */
    double rouge_l;    /* LCS F-measure on tokens */
} ax_memo_doc;

typedef struct {
    int docs, evaluated, exact;
    double match_frac, rouge_l;
} ax_memo_summary;

/* ROUGE-L F1 of two token sequences (longest common subsequence). */
double ax_rouge_l(const int32_t *a, int na, const int32_t *b, int nb);

/* A document's reference: tokens [start, start + len) (len 0: none, skipped) */
typedef struct {
    int start, len;
} ax_memo_span;
/* The reference of an instruction example of n tokens (data/instruct.h:
 * sup[k] = 1 where token k is a supervised target): its last run of
 * supervised tokens (token 0 is never a target). */
ax_memo_span ax_memo_last_supervised(const uint8_t *sup, int n);

typedef void (*ax_progress_fn)(int done, int total, void *ctx);
/* Collective over the model's grid; every rank gets the results. spans,
 * when non-NULL, gives each document's reference (at most suffix tokens of
 * it; prefix unused). gen, when non-NULL, receives the generated tokens:
 * gen[d*suffix + i] (the first ref_len of them compared). */
void ax_memo_audit(ax_gpt *m, int32_t *const *docs, const int *lens, const ax_memo_span *spans, int ndocs, int suffix,
                   int prefix, int batch, ax_memo_doc *res, int32_t *gen, ax_memo_summary *sum, ax_progress_fn progress,
                   void *ctx);
#endif
