#!/usr/bin/env python3
"""Writes tests/fixtures/llama3/: a small Llama-3-style tokenizer.json made
with Hugging Face `tokenizers`, extra test texts, and the ids `tokenizers`
gives them, the reference the C tokenizer (src/data/tok_hf.c) is tested
against.

The tokenizer is laid out like Meta's Llama-3 tokenizer.json, only smaller:
a byte-level BPE (ignore_merges) trained here on the fortunes corpus and
tests/fixtures/tokenizer/texts.jsonl, a Sequence pre-tokenizer of a Split on
Llama-3's pattern and ByteLevel without its own regex, special tokens after
the vocabulary (<|begin_of_text|>, <|eot_id|>, headers, reserved ones) and a
TemplateProcessing post-processor that puts <|begin_of_text|> first.

The texts are those of tests/fixtures/tokenizer/texts.jsonl followed by the
ones written to llama3/texts.jsonl (what Llama-3's pattern treats differently:
digit runs, contractions in any case, newlines after punctuation and spaces,
special tokens in text). For each, ids.json has
  "special":  encode(text, add_special_tokens=False), added tokens matched;
  "ordinary": the same with encode_special_tokens (added tokens are text);
and the script asserts that add_special_tokens=True gives [bos] + special and
that decoding gives the text back.

No network: the fortunes come from Debian's package `fortunes`
(/usr/share/games/fortunes). Run by hand from the repo root with the pyenv
interpreter:
    python3 -m pip install tokenizers
    python3 tests/ref/make_llama3_fixtures.py
The output is deterministic for a given tokenizers version and fortunes package.
"""
import glob
import json
import os
import random
import sys

import tokenizers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
GPT2_TEXTS = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "texts.jsonl")
OUT = os.path.join(ROOT, "tests", "fixtures", "llama3")
FORTUNES = "/usr/share/games/fortunes"
VOCAB = 2048   # trained ids (256 bytes + merges); the special tokens follow

# Llama-3's pre-tokenisation pattern, as its tokenizer.json spells it.
LLAMA3_PAT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")
BOS, EOS, EOT = "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"
SPECIALS = [BOS, EOS, "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
            "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>", "<|start_header_id|>",
            "<|end_header_id|>", "<|eom_id|>", EOT, "<|python_tag|>"]


def fortunes():
    docs = []
    for path in sorted(glob.glob(os.path.join(FORTUNES, "*"))):
        if path.endswith((".dat", ".u8")) or not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            docs += [d for d in f.read().split("\n%\n") if d.strip()]
    return docs


def gpt2_texts():
    with open(GPT2_TEXTS, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def build(train_docs):
    split = pre_tokenizers.Split(Regex(LLAMA3_PAT), behavior="isolated", invert=False)
    bytelevel = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.Sequence([split, bytelevel])
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tk.train_from_iterator(train_docs, trainer)
    # Rebuilt with ignore_merges, as Llama-3's model has it.
    model = json.loads(tk.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    tk2 = Tokenizer(models.BPE(vocab=model["vocab"], merges=merges, ignore_merges=True))
    tk2.pre_tokenizer = pre_tokenizers.Sequence([split, bytelevel])
    tk2.decoder = decoders.ByteLevel()
    tk2.add_special_tokens(SPECIALS)
    bos = tk2.token_to_id(BOS)
    tk2.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A {BOS}:1 $B:1",
                                      special_tokens=[(BOS, bos)]),
    ])
    return tk2


def extra_texts():
    t = [
        "Digits: 1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890 x1234y 3.14159 1,234,567",
        "Long digits: " + "9876543210" * 31 + " and ٣٤٥٦٧ ①②③④ ¹²³⁴ 𝟘𝟙𝟚𝟛",
        "Contractions: I'm I'M i'M it's IT'S It'S we're WE'RE We'Re you've YOU'VE they'll THEY'LL She'Ll he'd HE'D "
        "don't DON'T Don'T can't ain't 's 'S 'll 'LL 'Ll ''s x'sy 'ſ 'K 'ß",
        "Punctuation then newlines: end.\n\nnext!\r\n\r\nmore?\n\n\n...\n  \n\tindented\n",
        "Spaces and newlines:   \n   \n\n  a  \n\n\n   b\t\t\n\r\n \r\n",
        "Letters after punctuation: (hello) [world] {x} \"quoted\" 'single' -dash _under +plus @at #hash $dollar",
        "Letters after a newline:\nword\n\nWORD\r\nWord",
        "Unicode letters and marks: naïve café Ångström e\u0301\u0301 \u0915\u093f\u0937 한국어 Ελληνικά Съешь",
        "CJK: 我能吞下玻璃而不伤身体。日本語のテキスト、カタカナ。中文，标点！",
        "Emoji: 😀😃 👍🏽 ❤️ 🇩🇪 👨‍👩‍👧‍👦 🏳️‍🌈 done😀.",
        "Specials: <|begin_of_text|>Hello<|eot_id|> <|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
        "Specials glued: a<|eot_id|>b <|eot_id|><|eot_id|> <|end_of_text|>x <|reserved_special_token_2|>",
        "Partial specials: <|eot_id <|eot_id| <|begin_of_text <|start_header_id|user <|> <||>",
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        BOS,
        EOT,
        "Code:\n\tfor (int i = 0; i < 100; i++) {\n\t\tx[i] = 12345 * i;\n\t}\n",
        "Mixed: abc123def 12ab 3rd 1st2nd x86_64 0xFF 1e-10 -42 +7 $100.00 50% #1",
    ]
    rng = random.Random(4321)
    alphabet = list("aZ09 \t\n\r'!.,-_é∑😀й中ب\u00a0\u200d") + ["'s", "'LL", "'Ve", "123", "4567", "  ", "\n\n",
                                                             " \n", ".\n", EOT, BOS, "<|eot"]
    for _ in range(40):
        t.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))))
    return t


def main():
    corpus = gpt2_texts()
    train_docs = fortunes() + corpus
    tk = build(train_docs)
    extras = extra_texts()
    texts = corpus + extras
    bos = tk.token_to_id(BOS)
    special = [tk.encode(s, add_special_tokens=False).ids for s in texts]
    framed = [tk.encode(s).ids for s in texts]
    tk.encode_special_tokens = True
    ordinary = [tk.encode(s, add_special_tokens=False).ids for s in texts]
    tk.encode_special_tokens = False
    for s, sp, fr, o in zip(texts, special, framed, ordinary):
        assert fr == [bos] + sp, (s, fr[:10], sp[:10])
        assert tk.decode(sp, skip_special_tokens=False) == s, s
        assert tk.decode(o, skip_special_tokens=False) == s, s
        assert tk.decode(fr, skip_special_tokens=False) == BOS + s, s
    os.makedirs(OUT, exist_ok=True)
    tk.save(os.path.join(OUT, "tokenizer.json"), pretty=False)
    with open(os.path.join(OUT, "texts.jsonl"), "w", encoding="utf-8") as f:
        for s in extras:
            f.write(json.dumps({"text": s}, ensure_ascii=False) + "\n")
    specials = {s: tk.token_to_id(s) for s in SPECIALS}
    with open(os.path.join(OUT, "ids.json"), "w") as f:
        json.dump({"tokenizers": tokenizers.__version__, "texts": len(texts), "gpt2_texts": len(corpus),
                   "vocab_size": tk.get_vocab_size(with_added_tokens=True), "bos": bos, "specials": specials,
                   "special": special, "ordinary": ordinary}, f, separators=(",", ":"))
        f.write("\n")
    n_ids = sum(map(len, special)) + sum(map(len, ordinary))
    print(f"tokenizers {tokenizers.__version__}: {tk.get_vocab_size(with_added_tokens=True)} ids, "
          f"{len(texts)} texts ({len(extras)} new), {n_ids} ids in the two encodings, {len(train_docs)} training docs")


if __name__ == "__main__":
    sys.exit(main())
