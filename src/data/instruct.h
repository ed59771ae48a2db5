/* Instruction data for fine-tuning: JSON Lines, one example per line, either
 *   {"prompt": "...", "completion": "..."}
 *   {"messages": [{"role": "system"|"user"|"assistant"|..., "content": "..."}, ...]}
 * rendered as text (docs/tokenizer.md, "Chat format"):
 *   prompt/completion: BOS + prompt + completion + EOS, the text as given;
 *   messages, when the tokenizer has Llama-3's chat tokens: BOS, then per message
 *     <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|>
 *   (Llama-3's own template; CONTENT stripped of ASCII whitespace at both ends);
 *   messages otherwise (GPT-2's tokenizer): BOS, then per message
 *     ROLE:\nCONTENT\n\n        (the assistant's: ROLE:\nCONTENT<EOS>\n\n)
 * where BOS is the tokenizer template's (Llama-3's <|begin_of_text|>; none for
 * GPT-2) and EOS is ax_tok_eos (<|end_of_text|>, <|endoftext|>). The text is
 * encoded whole, special tokens matched (as `tokenizers` encodes a rendered
 * chat), and a token is supervised (weight 1) when its first byte lies in a
 * completion, or in an assistant message's content and the end token after
 * it; everything else (prompts, other roles, headers) has weight 0.
 *
 * Sequences: each example is its own sequence of T + 1 tokens, never packed
 * with others (so no example attends to another without document masks in
 * attention): longer examples are cut to their first T + 1 tokens, shorter
 * ones padded with EOS (or id 0) at weight 0. tokens[j + 1] is the target of
 * position j, and weights[j] its weight.
 *
 *   ax_instruct d;
 *   if (ax_instruct_open(&d, "sft.jsonl", tok, 1024)) ax_err_exit(0);
 *   const char *note = ax_instruct_notice(&d);      // truncations, said once
 *   if (note && rank == 0) fprintf(stderr, "axonn: %s\n", note);
 *   int32_t tokens[1025]; float weights[1024];
 *   for (int64_t i = 0; i < ax_instruct_count(&d); i++) {
 *       ax_instruct_get(&d, i, tokens, weights);    // loss = sum w * nll / sum w
 *   }
 *   ax_instruct_close(&d);
 *
 * Bad input (malformed JSON, missing or mistyped fields, a messages list
 * without an assistant message, no examples) fails the open with one line
 * naming the file and line. */
#ifndef AX_DATA_INSTRUCT_H
#define AX_DATA_INSTRUCT_H
#include "data/tokenizer.h"
#include <stdint.h>

typedef struct {
    int T;        /* sequence length: T + 1 tokens, T weights */
    int64_t n;    /* examples */
    int32_t *ids; /* example i: ids[off[i] .. off[i + 1]), at most T + 1 */
    uint8_t *sup; /* 1 where that token is supervised (as a target) */
    int64_t *off;
    int *line; /* the line of each example in the file */
    int32_t pad;
    int64_t ntrunc, nempty; /* cut to T + 1 tokens; left without a supervised target */
    int first_trunc;        /* line of the first cut example */
    char *path, *notice;
} ax_instruct;

int ax_instruct_open(ax_instruct *d, const char *path, const ax_tokenizer *tok, int T);
int64_t ax_instruct_count(const ax_instruct *d);
/* tokens[0..T] and weights[0..T); fails on i out of range. */
int ax_instruct_get(const ax_instruct *d, int64_t i, int32_t *tokens, float *weights);
/* The line of example i in the file (for messages about it). */
int ax_instruct_line(const ax_instruct *d, int64_t i);
/* One line about cut examples ("FILE: 3 of 120 examples longer than T + 1 =
 * 257 tokens are cut (the first at line 17) ..."), or NULL when none were. */
const char *ax_instruct_notice(const ax_instruct *d);
void ax_instruct_close(ax_instruct *d);
#endif
