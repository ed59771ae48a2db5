#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizer/texts.jsonl and ids.json: a varied text
corpus and its GPT-2 token ids from tiktoken, the reference the C tokenizer
(src/data/tokenizer.c) is tested against. Hugging Face `tokenizers`, built from
a vocab.json / merges.txt derived from the same ranks, must give the same ids.

No network at run time of tiktoken: the ranks come from
tests/fixtures/tokenizer/gpt2.tiktoken (or $AXONN_GPT2_TIKTOKEN), which
scripts/fetch_gpt2_vocab.sh takes from the pinned openai-whisper package.

Run by hand from the repo root with the pyenv interpreter:
    python3 -m pip install tiktoken tokenizers
    bash scripts/fetch_gpt2_vocab.sh
    python3 tests/ref/make_tokenizer_fixtures.py
The output is deterministic.
"""
import base64
import json
import os
import random
import subprocess
import sys

import tiktoken
import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
# tiktoken's gpt2 pattern (tiktoken_ext/openai_public.py).
GPT2_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOT = "<|endoftext|>"


def rank_file():
    path = os.environ.get("AXONN_GPT2_TIKTOKEN") or os.path.join(OUT, "gpt2.tiktoken")
    if not os.path.exists(path):
        subprocess.run(["bash", os.path.join(ROOT, "scripts", "fetch_gpt2_vocab.sh"), path], check=True)
    return path


def load_ranks(path):
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
    return ranks


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def split_by_lower_ranks(ranks, token):
    """BPE of token's bytes using only merges of rank below the token's own:
    for a BPE-trained rank table this leaves exactly the pair that made it."""
    parts = [token[i:i + 1] for i in range(len(token))]
    limit = ranks[token]
    while True:
        best = None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < limit and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            return parts
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]


def hf_tokenizer(ranks):
    b2u = bytes_to_unicode()
    to_str = lambda b: "".join(b2u[x] for x in b)
    vocab = {to_str(t): r for t, r in ranks.items()}
    vocab[EOT] = len(ranks)
    merges = []
    for tok, r in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(tok) > 1:
            parts = split_by_lower_ranks(ranks, tok)
            assert len(parts) == 2, (tok, parts)
            merges.append((to_str(parts[0]), to_str(parts[1])))
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([EOT])
    return tk, len(merges)


def texts():
    t = [
        "Hello, world! This is a test.",
        "I'm sure it's fine; you're right, we've seen they'll do what he'd say.",
        "I'M SHOUTING AND IT'S LOUD. Don't, can't, won't. 'quoted' \"double\" ''",
        "The year 2024 had 366 days; pi is 3.14159265358979 and 1,000,000 is a million. 0x1F 1e-9 12345678901234567890",
        "spaces:  two   three    four     five      end",
        "trailing spaces   \nleading\n\n\nthree newlines\r\nCRLF\r\n\ttab\t\ttwo tabs \t mixed\n",
        "   leading spaces and a final newline\n",
        "\n\n\n",
        " ",
        "",
        "a",
        "punctuation!!! ??? ... --- *** ### @@@ $$$ %%% ^^^ &&& ((())) [[]] {{}} <<>> ||| \\\\ // ~~ `` ;; ::",
        "email: someone@example.com, url: https://example.org/path?q=1&r=2#frag",
        "def f(x):\n    return x ** 2  # square\n\nif __name__ == '__main__':\n\tprint(f(3))\n",
        "Accented Latin: café, naïve, façade, Ångström, Øresund, Dvořák, Łódź, São Paulo, Müller, Straße, œuvre.",
        "Greek: Η γρήγορη καφέ αλεπού πηδάει πάνω από το τεμπέλικο σκυλί. Ελληνικά!",
        "Cyrillic: Съешь же ещё этих мягких французских булок, да выпей чаю. Україна, Беларусь.",
        "CJK: 我能吞下玻璃而不伤身体。日本語のテキスト、カタカナとひらがな。한국어 텍스트입니다.",
        "Arabic: أنا قادر على أكل الزجاج و هذا لا يؤلمني. العربية ١٢٣٤٥٦٧٨٩٠ Hebrew: שלום עולם",
        "Devanagari: मैं काँच खा सकता हूँ और मुझे उससे कोई चोट नहीं पहुंचती. Thai: ฉันกินกระจกได้",
        "Emoji: 😀😃😄 👍🏽 ❤️ 🇩🇪🇯🇵 family 👨‍👩‍👧‍👦 and 🏳️‍🌈 and 🧑🏿‍💻 done.",
        "Math: ∀x∈ℝ, x² ≥ 0; ∑_{i=1}^{n} i = n(n+1)/2; ½ ¾ ⅓ Ⅷ ① ⁴ ₂ ∞ ≠ ≈",
        "Special in text: before<|endoftext|>after and <|endoftext|> alone, <|endoftext|><|endoftext|> twice, <|endo partial",
        EOT,
        "Whitespace zoo: a\u00a0b\u2003c\u3000d\u2028e\u2029f\u0085g\u200bh\u180ei\u000bj\u000ck\u202fl\u205fm end",
        # Not White_Space although Python's str.isspace() says so (U+001C-1F), or
        # although PCRE2's \s takes it (U+180E): the pattern's \s is Unicode White_Space.
        "Separators: a\x1c b\x1d c\x1e d\x1f e \u180e f \u180e\u180e\n \u180e x\u2060y",
        "Combining marks: e\u0301 a\u0308 n\u0303 \u0915\u093f and zero width joiner a\u200db",
        "Letters with digits: abc123def 123abc 3rd 1st x86_64 ABC-123 ①②③ ٣ ߀ ๓",
        "Supplementary planes: 𝐀𝐁𝐂 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𠀋𠀌 𓀀 𝟘𝟙𝟚 \U0001F9D1\U0001F3FF",
        "Private use and noncharacters: \ue000\uf8ff \ufdd0 \ufffe\uffff \U000f0000 replacement \ufffd",
        "Control chars: \x01\x02\x1b[31mred\x1b[0m\x7f \u0080\u009f",
        "Long word: " + "Supercalifragilisticexpialidocious" * 40 + " and " + "ab" * 300 + " " + "x" * 1000,
        "Long number: " + "1234567890" * 50 + " and spaces" + " " * 200 + "end" + "\n" * 50,
        "Mixed Ünïcödé wörds: naïveté résumé coöperate Zürich's café's",
        "fin",
    ]
    # Deterministic pseudo-random mixtures of the pieces above, to cover
    # boundaries between classes (space before punctuation, letters after digits).
    rng = random.Random(1234)
    alphabet = list("aZ09 \t\n\r'!.,-_é∑😀й中ب\u00a0\u200d") + ["'s", "'ll", " 's", "  ", "\n\n", "<|endoftext|>"]
    for _ in range(40):
        t.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))))
    return t


def main():
    ranks = load_ranks(rank_file())
    enc = tiktoken.Encoding(name="gpt2_local", pat_str=GPT2_PAT, mergeable_ranks=ranks,
                            special_tokens={EOT: len(ranks)})
    tk, nmerges = hf_tokenizer(ranks)
    corpus = texts()
    ordinary = [enc.encode_ordinary(s) for s in corpus]
    special = [enc.encode(s, allowed_special="all") for s in corpus]
    for s, o, sp in zip(corpus, ordinary, special):
        assert enc.decode(o) == s and enc.decode(sp) == s, s
        # tokenizers always matches added tokens in text, like allowed_special="all".
        hf = tk.encode(s).ids
        assert hf == sp, (s, hf, sp)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "texts.jsonl"), "w", encoding="utf-8") as f:
        for s in corpus:
            f.write(json.dumps({"text": s}, ensure_ascii=False) + "\n")
    with open(os.path.join(OUT, "ids.json"), "w") as f:
        json.dump({"encoding": "gpt2", "eot": len(ranks), "merges": nmerges,
                   "tiktoken": tiktoken.__version__, "tokenizers": tokenizers.__version__,
                   "ordinary": ordinary, "special": special}, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(corpus)} texts, {sum(map(len, ordinary))} tokens; tiktoken {tiktoken.__version__}, "
          f"tokenizers {tokenizers.__version__} agree ({nmerges} merges)")


if __name__ == "__main__":
    sys.exit(main())
