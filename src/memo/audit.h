/* Verbatim-memorization audit (SPEC §7): prompt the model with a document's
 * beginning, decode greedily, and compare with what the document really says.
 * Per document: the prompt is all but the last `suffix` tokens (or the first
 * `prefix` tokens when prefix > 0) and the reference is the `suffix` tokens
 * after it. Prompts longer than n_positions - suffix keep their last tokens.
 * Documents too short for a prompt of one token plus the reference are
 * skipped. Decoding is batched over documents with a KV cache. */
#ifndef AX_MEMO_AUDIT_H
#define AX_MEMO_AUDIT_H
#include <stdint.h>
#include "model/gpt.h"

typedef struct {
    int skipped;
    int prompt_len;
    int exact;              /* all suffix tokens reproduced */
    double match_frac;      /* share of positions with the reference token */
    double rouge_l;         /* LCS F-measure on tokens */
} ax_memo_doc;

typedef struct { int docs, evaluated, exact; double match_frac, rouge_l; } ax_memo_summary;

/* ROUGE-L F1 of two token sequences (longest common subsequence). */
double ax_rouge_l(const int32_t *a, int na, const int32_t *b, int nb);

typedef void (*ax_progress_fn)(int done, int total, void *ctx);
/* Collective over the model's grid; every rank gets the results. gen, when
 * non-NULL, receives the generated tokens: gen[d*suffix + i]. */
void ax_memo_audit(ax_gpt *m, int32_t *const *docs, const int *lens, int ndocs, int suffix, int prefix,
                   int batch, ax_memo_doc *res, int32_t *gen, ax_memo_summary *sum,
                   ax_progress_fn progress, void *ctx);
#endif
