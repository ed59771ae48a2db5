#!/usr/bin/env python3
"""Writes tests/fixtures/instruct/: sft.jsonl (instruction examples, both
forms), plain_tokenizer.json (the Llama-3 fixture's BPE with GPT-2's layout:
ByteLevel pre-tokenizer, <|endoftext|> only, no template, for the plain-text
chat format) and ref.json: for each tokenizer, the T + 1 tokens and T weights
of every example as src/data/instruct.h defines them, computed here
independently of the C code: the chat format rendered in Python, the whole
text encoded by `tokenizers` with offsets, a token supervised when its first
character lies in a completion or an assistant message's content and end
token.

Needs tests/fixtures/llama3/tokenizer.json (tests/ref/make_llama3_fixtures.py).
Run by hand from the repo root with the pyenv interpreter:
    python3 -m pip install tokenizers
    python3 tests/ref/make_instruct_fixtures.py
The output is deterministic.
"""
import json
import os
import sys

import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIX = os.path.join(ROOT, "tests", "fixtures")
OUT = os.path.join(FIX, "instruct")
T = 64
WS = " \t\n\r\v\f"

EXAMPLES = [
    {"prompt": "Translate to French: cheese\n", "completion": "fromage"},
    {"prompt": "Q: What is 12345 + 678?\nA:", "completion": " 13023"},
    {"prompt": "The cap", "completion": "ital of France is Paris."},
    {"prompt": "Say nothing.", "completion": ""},
    None,   # a blank line
    {"messages": [{"role": "system", "content": "You are a terse assistant."},
                  {"role": "user", "content": "Name a prime above 100."},
                  {"role": "assistant", "content": "101"}]},
    {"messages": [{"role": "user", "content": "Bonjour ! Ça va ?"},
                  {"role": "assistant", "content": "Très bien, merci. 😀"},
                  {"role": "user", "content": "日本語で？"},
                  {"role": "assistant", "content": "元気です。"}]},
    {"messages": [{"role": "user", "content": "  \n  padded question?  \n"},
                  {"role": "assistant", "content": "\n\n  I'M SURE it'll be FINE, don't WORRY.  \t\n"}]},
    {"messages": [{"role": "ipython", "content": "{\"x\": 1}"},
                  {"role": "assistant", "content": "x is 1"}]},
    {"prompt": "Count: ", "completion": " ".join(str(i) for i in range(1, 60))},
    {"prompt": "Long prompt " + "word " * 80, "completion": "never seen"},
    {"prompt": "A special in text: <|eot_id|> then more <|endoftext|>", "completion": " fine."},
]


def plain_tokenizer(llama):
    """The same vocabulary and merges in GPT-2's layout (no chat tokens)."""
    model = json.loads(llama.to_str())["model"]
    merges = [tuple(m) for m in model["merges"]]
    tk = Tokenizer(models.BPE(vocab=model["vocab"], merges=merges, ignore_merges=True))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    tk.post_processor = processors.ByteLevel(trim_offsets=False)
    tk.add_special_tokens(["<|endoftext|>"])
    return tk


def render(ex, chat_llama3, bos, eos):
    """The text and its supervised character spans (instruct.h's chat format)."""
    text, spans = bos, []

    def add(s, sup=False):
        nonlocal text
        if sup:
            if spans and spans[-1][1] == len(text):
                spans[-1][1] += len(s)
            else:
                spans.append([len(text), len(text) + len(s)])
        text += s

    if "messages" not in ex:
        add(ex["prompt"])
        add(ex["completion"], True)
        add(eos, True)
        return text, spans
    for m in ex["messages"]:
        sup = m["role"] == "assistant"
        c = m["content"].strip(WS)
        if chat_llama3:
            add("<|start_header_id|>" + m["role"] + "<|end_header_id|>\n\n")
            add(c, sup)
            add("<|eot_id|>", sup)
        else:
            add(m["role"] + ":\n")
            add(c, sup)
            if sup:
                add(eos, True)
            add("\n\n")
    return text, spans


def example_ref(tk, ex, chat_llama3, bos, eos, pad):
    text, spans = render(ex, chat_llama3, bos, eos)
    enc = tk.encode(text, add_special_tokens=False)
    ids = enc.ids
    sup = [any(a <= start < b for a, b in spans) for start, _ in enc.offsets]
    assert tk.decode(ids, skip_special_tokens=False) == text, text
    cut = len(ids) > T + 1
    ids, sup = ids[:T + 1], sup[:T + 1]
    tokens = ids + [pad] * (T + 1 - len(ids))
    weights = [1 if j + 1 < len(ids) and sup[j + 1] else 0 for j in range(T)]
    return {"tokens": tokens, "weights": weights, "cut": cut}


def refs(tk, name):
    vocab = tk.get_vocab(with_added_tokens=True)
    llama3 = all(s in vocab for s in ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"))
    bos = "<|begin_of_text|>" if "<|begin_of_text|>" in vocab else ""
    eos = "<|end_of_text|>" if "<|end_of_text|>" in vocab else "<|endoftext|>"
    pad = vocab[eos]
    rows = [example_ref(tk, ex, llama3, bos, eos, pad) for ex in EXAMPLES if ex is not None]
    return {"tokenizer": name, "chat": "llama3" if llama3 else "plain", "pad": pad, "examples": rows}


def main():
    llama = Tokenizer.from_file(os.path.join(FIX, "llama3", "tokenizer.json"))
    plain = plain_tokenizer(llama)
    os.makedirs(OUT, exist_ok=True)
    plain.save(os.path.join(OUT, "plain_tokenizer.json"), pretty=False)
    lines = []
    for ex in EXAMPLES:
        lines.append("" if ex is None else json.dumps(ex, ensure_ascii=False))
    with open(os.path.join(OUT, "sft.jsonl"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    out = {"tokenizers": tokenizers.__version__, "T": T,
           "lines": [i + 1 for i, ex in enumerate(EXAMPLES) if ex is not None],
           "sets": [refs(llama, "llama3/tokenizer.json"), refs(plain, "instruct/plain_tokenizer.json")]}
    with open(os.path.join(OUT, "ref.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    for s in out["sets"]:
        w = sum(sum(e["weights"]) for e in s["examples"])
        cut = sum(e["cut"] for e in s["examples"])
        print(f"{s['tokenizer']} ({s['chat']} chat): {len(s['examples'])} examples, {w} supervised targets, {cut} cut")


if __name__ == "__main__":
    sys.exit(main())
