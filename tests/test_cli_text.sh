#!/usr/bin/env bash
# cli_text: the text side of the command line, end to end.
#  - `axonn tokenizer train` on a small inline corpus (English-like text with
#    accents, emoji, CJK, digits) to --vocab-size 300: ids 0..299, 43 merges,
#    <|endoftext|> one id; deterministic (twice, and with 2 threads: identical
#    bytes); encode/decode round trips through the CLI, also of invalid UTF-8.
#  - `axonn prepare` on a plain file, a JSON Lines file (3 docs) and a fortune
#    file (4 records and an empty one), read back with stdlib Python: headers
#    (magic, version, count = file size), <|endoftext|> before each document,
#    decoded text = the documents in order (CLI decode of each split's whole
#    stream; each document with a Python decoder of tokenizer.json), tokens =
#    `tokenizer encode` of each document; --val-count, --val-frac,
#    --shard-tokens; --out new, empty, with a trailing slash; DIR/tokenizer.json
#    loads and encodes like the original; vocab.json + merges.txt; a .tiktoken
#    of 65,793 ids gives version-7 (uint32) shards; GPT-2 when its fixture is
#    there. A 5 MB line without a newline, invalid UTF-8 bytes and a 1.3 MB
#    plain document (read in pieces: tokens must equal the whole file's) work,
#    also with the Llama-3-style fixture tokenizer.json (prepare, the saved
#    tokenizer.json, encode --add-special and decode against `tokenizers`).
#  - bad input: empty file, only '%' separators, malformed / WordPiece
#    tokenizer.json, a one-token merges.txt line, missing files, invalid JSON
#    Lines, a non-empty or file --out (untouched), an unwritable --out parent,
#    bad options, a failure after shards were written: exit 2, exactly one
#    "axonn: error:" line naming the input, no DIR and no DIR.tmp left.
# Each CLI start costs ~0.4 s (MPI_Init), so decoding goes through the CLI once
# per token stream. About 40 s on 2 busy cores. KEEP=1 keeps the work dir.
. "$(dirname "$0")/cli_lib.sh"
mkdir -p cap in
skip() { echo "skip - $*"; }
# check DESC CMD...: ok when CMD succeeds, else FAIL with its output
check() {
  local d=$1; shift
  if "$@" >cap/check.out 2>&1; then
    local note; note=$(tail -n 1 cap/check.out)
    ok "$d${note:+ ($note)}${CHECK_NOTE:+ ($CHECK_NOTE)}"
  else bad "$d: $(head -c 400 cap/check.out | tr '\n' ' ')"; fi
}
ax() { "$BIN" "$@"; }

# ---------------------------------------------------------------- helper (stdlib Python)
cat >"$W/t.py" <<'EOF'
import glob, json, os, re, struct, subprocess, sys
BIN = os.environ['AXONN_BIN']
EOT_TEXT = b'<|endoftext|>'

def fail(msg):
    print(msg); sys.exit(1)

def run(args, inp=None):
    p = subprocess.run([BIN] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0 or p.stderr:
        fail('axonn %s: rc %d, stderr %r' % (' '.join(args[:2]), p.returncode, p.stderr[:300]))
    return p.stdout

def cli_encode_file(tok, path):
    out = run(['tokenizer', 'encode', '--tokenizer', tok, path]).strip()
    return [int(x) for x in out.split(b',')] if out else []

def cli_decode(tok, ids):
    out = run(['tokenizer', 'decode', '--tokenizer', tok, '--ids', ','.join(map(str, ids))])
    if not out.endswith(b'\n'): fail('decode output does not end with a newline')
    return out[:-1]

def bytes_to_unicode():
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(0xa1, 0xac + 1)) + list(range(0xae, 0xff + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs: bs.append(b); cs.append(256 + n); n += 1
    return {chr(c): b for b, c in zip(bs, cs)}

def py_decoder(tokjson):
    """id -> bytes from a byte-level tokenizer.json (independent of the C code)."""
    j = json.load(open(tokjson, encoding='utf-8'))
    dec = bytes_to_unicode()
    table = {}
    for s, i in j['model']['vocab'].items(): table[i] = bytes(dec[c] for c in s)
    for a in j.get('added_tokens') or []: table[a['id']] = a['content'].encode()
    return table

def read_shard(path):
    b = open(path, 'rb').read()
    if len(b) < 1024: fail('%s: %d bytes, shorter than the header' % (path, len(b)))
    h = struct.unpack('<256i', b[:1024])
    if h[0] != 20240520: fail('%s: magic %d' % (path, h[0]))
    if h[1] not in (1, 7): fail('%s: version %d' % (path, h[1]))
    w = 2 if h[1] == 1 else 4
    if len(b) != 1024 + w * h[2]: fail('%s: %d bytes, header says %d tokens of %d bytes' % (path, len(b), h[2], w))
    if any(h[3:]): fail('%s: header words 3.. not zero' % path)
    return h[1], list(struct.unpack('<%d%s' % (h[2], 'H' if w == 2 else 'I'), b[1024:]))

def read_split(d, split):
    """(versions, per-shard counts, all tokens) of DIR/split_*.bin, numbered 0.. without gaps."""
    files = sorted(glob.glob('%s/%s_*.bin' % (d, split)))
    names = ['%s/%s_%06d.bin' % (d, split, i) for i in range(len(files))]
    if files != names: fail('%s shards not numbered 000000..: %s' % (split, [os.path.basename(f) for f in files]))
    vers, counts, toks = [], [], []
    for f in files:
        v, t = read_shard(f); vers.append(v); counts.append(len(t)); toks += t
    return vers, counts, toks

def split_docs(toks, eot):
    if toks and toks[0] != eot: fail('stream starts with %d, not the EOT id %d' % (toks[0], eot))
    docs = []
    for t in toks:
        if t == eot: docs.append([])
        else: docs[-1].append(t)
    return docs

def expected(path):
    return [bytes.fromhex(h) for h in json.load(open(path))]

def cmd_inputs(W):
    """The three inputs and the expected documents, in order."""
    plain = ('Plain document: the first input, one document.\n'
             'Crème brûlée, déjà vu, naïve façade — 🎉🚀 and 東京 too.\n\n'
             'It ends here, with two spaces  and a tab\tinside.\n').encode()
    open(W + '/in/plain.txt', 'wb').write(plain)
    jl = ['JSON line one: café "quoted" \\ backslash.', 'Line two\nhas a newline and an emoji 😀 (surrogates).',
          'Third: 12345 and 3.14, don\'t stop.']
    with open(W + '/in/docs.jsonl', 'w', encoding='utf-8') as f:
        f.write(json.dumps({'text': jl[0], 'id': 1}) + '\n\n')          # a blank line is skipped
        f.write(json.dumps({'id': 2, 'text': jl[1]}, ensure_ascii=True) + '\r\n')
        f.write(json.dumps({'text': jl[2]}, ensure_ascii=False) + '\n')
    recs = ['Fortune one: a penny saved is a penny earned.\n',
            'Fortune two spans\n  two lines, the second indented.\n',
            'Fortune three — señor Ödön says hi 👋\n',
            'Fortune four, the last.\n']
    fortune = recs[0] + '%\n' + recs[1] + '%\n%\n' + recs[2] + '%\n' + recs[3] + '%\n'   # %\n%\n: an empty record
    open(W + '/in/quotes', 'w', encoding='utf-8').write(fortune)
    docs = [plain] + [s.encode() for s in jl] + [s.encode() for s in recs]
    json.dump([d.hex() for d in docs], open(W + '/in/expected.json', 'w'))

def cmd_write_docs(exp, prefix):
    for i, d in enumerate(expected(exp)): open('%s%d' % (prefix, i), 'wb').write(d)

def cmd_roundtrip(tok, *strings):
    """decode(encode(x)) == x through the CLI for each string (one encode and one decode call each)."""
    for s in strings:
        x = s.encode('utf-8', 'surrogateescape')
        ids = [int(v) for v in run(['tokenizer', 'encode', '--tokenizer', tok, '--text', s]).strip().split(b',')]
        y = cli_decode(tok, ids)
        if y != x: fail('round trip of %r gave %r' % (x, y))
    print('%d strings' % len(strings))

def cmd_vocab(tok, n, eot):
    j = json.load(open(tok, encoding='utf-8'))
    v, added = j['model']['vocab'], j.get('added_tokens') or []
    ids = sorted(set(v.values()) | {a['id'] for a in added})
    if ids != list(range(int(n))): fail('ids are not 0..%d: %d ids, max %d' % (int(n) - 1, len(ids), ids[-1]))
    if len(set(v.values())) != len(v): fail('model.vocab gives an id twice')
    if [a['id'] for a in added if a['content'] == '<|endoftext|>'] != [int(eot)]:
        fail('<|endoftext|> is not id %s in added_tokens' % eot)
    if len(j['model']['merges']) != int(n) - 257: fail('%d merges, expected %d' % (len(j['model']['merges']), int(n) - 257))
    print('%d vocab entries, %d merges' % (len(v), len(j['model']['merges'])))

def cmd_prepared(d, tok, eot, exp, mode, arg, version='1'):
    """DIR from prepare: headers, EOT before each doc, split by mode, text = expected docs in order."""
    eot, docs = int(eot), expected(exp)
    n = len(docs)
    if mode == 'count': val = set(range(min(int(arg), n)))
    else: f = float(arg); val = {i for i in range(n) if int((i + 1) * f) > int(i * f)}
    want = {'train': [docs[i] for i in range(n) if i not in val], 'val': [docs[i] for i in range(n) if i in val]}
    table = py_decoder(d + '/tokenizer.json')
    got_files = sorted(os.listdir(d))
    info = []
    for split in ('train', 'val'):
        vers, counts, toks = read_split(d, split)
        if not want[split]:
            if counts: fail('%s: %d shards, expected none' % (split, len(counts)))
            info.append('%s 0 docs' % split); continue
        if set(vers) != {int(version)}: fail('%s: versions %s, expected %s' % (split, vers, version))
        ds = split_docs(toks, eot)
        if len(ds) != len(want[split]): fail('%s: %d documents, expected %d' % (split, len(ds), len(want[split])))
        for k, (ids, w) in enumerate(zip(ds, want[split])):
            got = b''.join(table[i] for i in ids)
            if got != w: fail('%s doc %d: decodes (Python) to %r, expected %r' % (split, k, got[:80], w[:80]))
        whole = cli_decode(d + '/tokenizer.json', toks)
        if whole != b''.join(EOT_TEXT + w for w in want[split]):
            fail('%s: CLI decode of the stream differs from the documents: %r' % (split, whole[:200]))
        info.append('%s %d docs %d tokens %d shards' % (split, len(ds), len(toks), len(counts)))
    extra = [f for f in got_files if not re.fullmatch(r'(train|val)_\d{6}\.bin|tokenizer\.json', f)]
    if extra: fail('unexpected files in %s: %s' % (d, extra))
    if os.path.exists(d + '.tmp'): fail(d + '.tmp left behind')
    print('; '.join(info))

def cmd_same_tokens(d, tok, *files):
    """the train stream of DIR = EOT + `tokenizer encode FILE` for each (one-document) file."""
    eot = int(run(['tokenizer', 'encode', '--tokenizer', tok, '--text', os.environ.get('EOT_TEXT', '<|endoftext|>')]).strip())
    _, _, toks = read_split(d, 'train')
    want = []
    for f in files: want += [eot] + cli_encode_file(tok, f)
    if toks != want:
        i = next((i for i in range(min(len(toks), len(want))) if toks[i] != want[i]), min(len(toks), len(want)))
        fail('%d tokens vs %d from encode; first difference at %d: %s vs %s'
             % (len(toks), len(want), i, toks[max(0, i - 2):i + 3], want[max(0, i - 2):i + 3]))
    print('%d tokens' % len(toks))

def cmd_hf_ids(tok, fix):
    """`tokenizer encode --add-special` / `decode` of the llama3 fixture's texts with special tokens = tokenizers' ids."""
    texts = [json.loads(l)['text'] for f in ('tokenizer/texts.jsonl', 'llama3/texts.jsonl')
             for l in open(os.path.join(fix, f), encoding='utf-8')]
    ref = json.load(open(os.path.join(fix, 'llama3/ids.json')))
    picked = [i for i, s in enumerate(texts) if s.startswith(('Specials', 'Digits', 'Contractions'))]
    for i in picked:
        got = [int(x) for x in run(['tokenizer', 'encode', '--tokenizer', tok, '--add-special', '--text', texts[i]]).split(b',')]
        if got != [ref['bos']] + ref['special'][i]: fail('text %d: %s vs %s' % (i, got[:12], ref['special'][i][:12]))
        if cli_decode(tok, got) != ('<|begin_of_text|>' + texts[i]).encode(): fail('text %d: decode differs' % i)
    print('%d texts' % len(picked))

def cmd_shards(d, ref, cap):
    """DIR cut in shards of <= cap tokens whose concatenation is REF's single train shard."""
    _, counts, toks = read_split(d, 'train')
    _, rcounts, rtoks = read_split(ref, 'train')
    if len(counts) < 2: fail('%d shards, expected several' % len(counts))
    if max(counts) > int(cap): fail('shard sizes %s exceed %s' % (counts, cap))
    if any(c != int(cap) for c in counts[:-1]): fail('shards before the last not full: %s' % counts)
    if sum(counts) != sum(rcounts) or toks != rtoks: fail('shards hold %d tokens, unsharded %d' % (sum(counts), sum(rcounts)))
    print('%d shards: %s' % (len(counts), counts))

def cmd_one_doc(d, file, eot, version='1'):
    """DIR holds one train document whose bytes (Python decoder) are FILE's."""
    vers, counts, toks = read_split(d, 'train')
    if set(vers) != {int(version)}: fail('versions %s, expected %s' % (vers, version))
    ds = split_docs(toks, int(eot))
    if len(ds) != 1: fail('%d documents, expected 1' % len(ds))
    table = py_decoder(d + '/tokenizer.json')
    got, want = b''.join(table[i] for i in ds[0]), open(file, 'rb').read()
    if got != want: fail('decoded %d bytes differ from the %d of %s' % (len(got), len(want), file))
    if version == '7' and max(toks) < 65536: fail('no token >= 65536 in a version-7 shard')
    print('%d tokens, %d bytes' % (len(toks), len(want)))

def cmd_cli_file_roundtrip(tok, file):
    """decode(encode FILE) == FILE's bytes through the CLI."""
    want = open(file, 'rb').read()
    got = cli_decode(tok, cli_encode_file(tok, file))
    if got != want: fail('round trip of %r gave %r' % (want[:60], got[:60]))
    print('%d bytes' % len(want))

def cmd_same_encoding(tok_a, tok_b, text):
    a = run(['tokenizer', 'encode', '--tokenizer', tok_a, '--text', text])
    b = run(['tokenizer', 'encode', '--tokenizer', tok_b, '--text', text])
    if a != b: fail('%s gives %s, %s gives %s' % (tok_a, a.strip()[:80], tok_b, b.strip()[:80]))

def cmd_vocab_merges(tok, d):
    """tokenizer.json -> vocab.json + merges.txt (good and with a one-token line)."""
    j = json.load(open(tok, encoding='utf-8'))
    os.makedirs(d + '/good'); os.makedirs(d + '/bad')
    merges = ['#version: 0.2'] + [m if isinstance(m, str) else ' '.join(m) for m in j['model']['merges']]
    vocab = dict(j['model']['vocab'])
    for a in j['added_tokens']: vocab[a['content']] = a['id']
    for sub, lines in (('good', merges), ('bad', merges[:4] + ['\u0120t'] + merges[4:])):
        json.dump(vocab, open('%s/%s/vocab.json' % (d, sub), 'w', encoding='utf-8'), ensure_ascii=False)
        open('%s/%s/merges.txt' % (d, sub), 'w', encoding='utf-8').write('\n'.join(lines) + '\n')

def cmd_wordpiece(tok, out):
    j = json.load(open(tok, encoding='utf-8'))
    j['model']['type'] = 'WordPiece'
    json.dump(j, open(out, 'w', encoding='utf-8'), ensure_ascii=False)

def cmd_big_tiktoken(out):
    """256 single bytes + all 65,536 byte pairs: <|endoftext|> gets id 65792."""
    import base64
    with open(out, 'w') as f:
        r = 0
        for t in [bytes([b]) for b in range(256)] + [bytes([a, b]) for a in range(256) for b in range(256)]:
            f.write('%s %d\n' % (base64.b64encode(t).decode(), r)); r += 1

def cmd_files(out, which):
    if which == 'huge':      # 5 MB, one line, no newline, mixed scripts
        words = ['alpha', 'beta', 'café', 'naïve', '🎉', 'the', 'quick', 'fox', '12345', "don't", '東京', '—', 'x' * 40]
        s, i, parts, n = 0, 0, [], 0
        while n < 5_000_000:
            w = words[(i * 7 + i // 13) % len(words)] + (' ' if i % 11 else ',  ')
            parts.append(w); n += len(w.encode()); i += 1
        open(out, 'wb').write(''.join(parts).encode()[:5_000_000].rstrip(b'\n'))
    elif which == 'badutf8':  # invalid UTF-8 among valid text
        open(out, 'wb').write(b'ok \xff\xfe bytes, a cut \xc3 char, overlong \xc0\xaf, lone \x80\x80 continuation, '
                              b'surrogate \xed\xa0\x80, emoji \xf0\x9f\x8e\x89, truncated emoji \xf0\x9f\x8e end\n\xe9t\xe9\n')
    elif which == 'paragraphs':   # > 1 MiB of paragraphs separated by 2 blank lines
        s, i = [], 0
        n = 0
        while n < 1_300_000:
            p = 'Paragraph %d tells of café %d.\n\n\n' % (i, i * 7); s.append(p); n += len(p.encode()); i += 1
        open(out, 'w', encoding='utf-8').write(''.join(s))
    elif which == 'literal_eot':
        open(out, 'w').write('a text that mentions <|endoftext|> literally\n')

if __name__ == '__main__':
    globals()['cmd_' + sys.argv[1]](*sys.argv[2:])
EOF
export AXONN_BIN="$BIN"
PY() { python3 "$W/t.py" "$@"; }

# expect_error DESC OUT_DIR NAME CMD...: exit 2, exactly one stderr line starting with
# "axonn: error:" that contains NAME, and neither OUT_DIR nor OUT_DIR.tmp afterwards.
expect_error() {
  local d=$1 out=$2 name=$3; shift 3
  "$@" >cap/out 2>cap/err
  local rc=$? n; n=$(wc -l <cap/err)
  local line; line=$(head -n 1 cap/err)
  if [ $rc -ne 2 ]; then bad "$d: exit $rc (expected 2): $(head -c 300 cap/err)"
  elif [ "$n" -ne 1 ] || [ "$(wc -c <cap/err)" -eq 0 ]; then bad "$d: $n stderr lines: $(head -c 300 cap/err | tr '\n' '|')"
  elif [[ $line != "axonn: error:"* ]]; then bad "$d: stderr is '$line'"
  elif [[ $line != *"$name"* ]]; then bad "$d: error does not name '$name': $line"
  elif [ -n "$out" ] && { [ -e "$out" ] || [ -e "$out.tmp" ]; }; then bad "$d: $out or $out.tmp left behind"
  else ok "$d ($line)"; fi
}

: >in/empty.txt

# ---------------------------------------------------------------- corpus
cat >in/corpus.txt <<'EOF'
The morning light fell across the old harbour, and the fishermen were already
mending their nets. "It's going to be a long day," said Marie, who'd lived in the
village for forty-two years. She smiled at the café owner, a naïve young man from
Zürich, and ordered her usual: a crème brûlée and a strong coffee. ☕

The village had changed since 1984. There were new houses on the hill, a school
with 250 pupils, and a museum about the sea. Tourists came in summer 🌞 and left
in September; the locals didn't mind. They'd seen it all before — the storms, the
good years and the bad ones, the festivals with music until 3 a.m. 🎉🎶

Down at the market, vendors sold apples, pears, cheese from the mountains and
fresh bread. "Señor Núñez, how much for the olives?" asked a tourist from Kraków.
"Three euros, or five for two jars," he replied. The children ran between the
stalls, laughing, chasing a small dog that had stolen a sausage. 🐕

In the evening, the sky turned orange, then purple, then a deep blue. The lights
of the lighthouse swept across the water every twelve seconds. Old Pierre sat on
his bench and told stories: about the whale he'd seen in 1962, about the ship that
sank in the great storm, about his grandmother's recipe for fish soup. 🐋🌊

Some of the stories were true. Most of them weren't. Nobody cared; they listened
anyway, because Pierre was a good storyteller and the evenings were long. "You'll
never believe what happened next," he'd say, and everyone leaned in closer.


The next chapter begins in the city. Trains arrive every ten minutes; the station
is loud and crowded. A woman reads a book about Tōkyō and Kyōto (東京と京都), another
listens to music, a third one sleeps. The café on the corner sells croissants,
pains au chocolat and café au lait. Prices: €2.50, €3.20, €4.00. 🥐☕

Rain began to fall at noon. Umbrellas opened everywhere, red, blue, yellow, black.
The streets shone like mirrors and the buses splashed the pedestrians who walked
too close to the kerb. "What a day!" said Jürgen, shaking the water from his coat.
"Wait until tomorrow," answered Zoë. "They say it'll snow." ❄️

They didn't believe her, but she was right: by morning the whole city was white.
Schools closed, the trains were late, and children built snowmen in every park.
The old men at the café played chess and argued about the weather of 1987, 1991
and 2003, and about which winter had been the worst. Nobody won the argument. ♟️


Numbers, dates and codes: 0, 1, 2, 3, 10, 42, 100, 2024-05-20, 12:30, v1.2.3,
item #7, 50% off, 3.14159, 2^10 = 1024, (a + b) * c, x_y, foo.bar(), [1, 2, 3].
Tabs	and    several   spaces; lines with trailing spaces   
and a final line without one.
EOF

# ---------------------------------------------------------------- tokenizer train
T0=$SECONDS
ax tokenizer train --vocab-size 300 --out tok.json in/corpus.txt >cap/train.out 2>cap/train.err
rc=$?
if [ $rc -eq 0 ] && [ -s tok.json ] && [ ! -s cap/train.err ]; then ok "tokenizer train --vocab-size 300 ($(cat cap/train.out))"
else bad "tokenizer train: exit $rc: $(head -c 300 cap/train.err)"; echo "cli_text: $pass passed, $((fail + 1)) failed (no tokenizer, stopping)"; exit 1; fi
ax tokenizer train --vocab-size 300 --out tok2.json in/corpus.txt >/dev/null 2>&1
check "training twice gives byte-identical tokenizer.json" cmp tok.json tok2.json
OMP_NUM_THREADS=2 ax tokenizer train --vocab-size 300 --out tok3.json in/corpus.txt >/dev/null 2>&1
check "training with 2 threads gives the same bytes" cmp tok.json tok3.json

EOT=$(ax tokenizer encode --tokenizer tok.json --text '<|endoftext|>' 2>cap/err)
if [[ $EOT =~ ^[0-9]+$ ]]; then ok "<|endoftext|> is one id: $EOT"; else bad "encode '<|endoftext|>' gave '$EOT' $(cat cap/err)"; EOT=299; fi
check "tokenizer.json: ids 0..299, 43 merges, <|endoftext|> = $EOT" PY vocab tok.json 300 "$EOT"
check "encode/decode round trips via the CLI" PY roundtrip tok.json 'The quick brown fox.' \
  'Crème brûlée à la café, naïve Zoë' '🎉🚀👩‍👩‍👧 emoji ❄️' '東京と京都 — ¿qué? «ça»' \
  $'  leading, trailing  \n\n\ttabs\r\n' "don't you'll we've I'M 12345 3.14 x_y" 'Paragraph 1 tells of café 7.'
expect_error "tokenizer train --vocab-size 256" "" "--vocab-size" ax tokenizer train --vocab-size 256 --out tok_e.json in/corpus.txt
echo "# tokenizer: $((SECONDS - T0)) s"

# ---------------------------------------------------------------- prepare: three formats
T0=$SECONDS
PY inputs "$W"
IN=(in/plain.txt in/docs.jsonl in/quotes)
run_prepare() {  # run_prepare DIR args...: exit 0, no stderr
  local d=$1; shift
  ax prepare --tokenizer tok.json --out "$d" "$@" >cap/prep.out 2>cap/prep.err
  local rc=$?
  if [ $rc -ne 0 ] || [ -s cap/prep.err ]; then bad "prepare $*: exit $rc: $(head -c 300 cap/prep.err)"; return 1; fi
}
if run_prepare p0 --val-count 0 "${IN[@]}"; then
  check "prepare plain + jsonl + fortune: 8 docs in order, each after EOT, headers consistent" \
    PY prepared p0 tok.json "$EOT" in/expected.json count 0
  grep -q "train 8 docs" cap/prep.out && ok "summary line counts 8 train docs" || bad "summary: $(cat cap/prep.out)"
  PY write_docs in/expected.json in/doc
  check "tokens of each document = tokenizer encode of it" PY same_tokens p0 tok.json in/doc{0..7}
  check "DIR/tokenizer.json loads and encodes like the original" \
    PY same_encoding tok.json p0/tokenizer.json 'Crème brûlée 🎉 and 12345 <|endoftext|> words.'
  check "DIR/tokenizer.json is byte-identical to the input tokenizer.json" cmp tok.json p0/tokenizer.json
fi
if run_prepare p1 --val-count 2 "${IN[@]}"; then
  check "--val-count 2: the first 2 docs in val, the other 6 in train" PY prepared p1 tok.json "$EOT" in/expected.json count 2
fi
if run_prepare p2 --val-frac 0.5 "${IN[@]}"; then
  check "--val-frac 0.5: every second doc in val (4 + 4)" PY prepared p2 tok.json "$EOT" in/expected.json frac 0.5
fi
if run_prepare p3 --val-count 0 --shard-tokens 50 "${IN[@]}"; then
  check "--shard-tokens 50: several shards of <= 50 tokens, same stream" PY shards p3 p0 50
fi
mkdir p4
if run_prepare p4 --val-count 0 "${IN[@]}"; then check "--out an existing empty directory works" PY prepared p4 tok.json "$EOT" in/expected.json count 0; fi
# --out with a trailing slash (as shell completion writes it), new and existing-empty
for d in p7 p8; do
  [ $d = p8 ] && mkdir p8
  if ax prepare --tokenizer tok.json --out $d/ --val-count 0 "${IN[@]}" >/dev/null 2>cap/err; then
    check "--out $d/ (trailing slash$([ $d = p8 ] && echo ', existing empty directory'))" PY prepared $d tok.json "$EOT" in/expected.json count 0
  else bad "--out $d/ (trailing slash$([ $d = p8 ] && echo ', existing empty directory')): $(cat cap/err)$([ -e $d ] && echo "; $d left behind: [$(ls -A $d | tr '\n' ' ')]")"; fi
  rm -rf $d $d.tmp
done
PY files in/eot.txt literal_eot
if run_prepare p5 --val-count 0 in/eot.txt; then
  check "a literal '<|endoftext|>' in the text is plain text (one EOT id)" PY one_doc p5 in/eot.txt "$EOT"
fi
check "vocab.json + merges.txt made from tok.json" PY vocab_merges tok.json vm
if ax prepare --tokenizer vm/good/vocab.json --out p6 --val-count 0 "${IN[@]}" >/dev/null 2>cap/err; then
  check "prepare with vocab.json + merges.txt gives the same shards" cmp p0/train_000000.bin p6/train_000000.bin
else bad "prepare with vocab.json + merges.txt: $(cat cap/err)"; fi
echo "# prepare: $((SECONDS - T0)) s"

# ---------------------------------------------------------------- uint32 shards
T0=$SECONDS
PY big_tiktoken big.tiktoken
printf 'Pairs of bytes: \xc3\xbf\xc3\xbf \xf0\x9f\x8e\x89 zz \xff\xfe end\n' >in/u32.txt
if ax prepare --tokenizer big.tiktoken --out p32 --val-count 0 in/u32.txt >/dev/null 2>cap/err; then
  check "65,793-id tokenizer (.tiktoken): version-7 uint32 shards, EOT 65792, text intact" PY one_doc p32 in/u32.txt 65792 7
  check "65,793-id tokenizer: CLI round trip" PY cli_file_roundtrip p32/tokenizer.json in/u32.txt
else bad "prepare with a 65,793-id tokenizer: $(cat cap/err)"; fi
echo "# uint32: $((SECONDS - T0)) s"

# ---------------------------------------------------------------- GPT-2 (when the fixture is there)
GPT2=${FIX:+$FIX/tokenizer/gpt2.tiktoken}
if [ -n "$GPT2" ] && [ -f "$GPT2" ]; then
  printf 'Hello world' >in/hello.txt
  if ax prepare --tokenizer "$GPT2" --out pg --val-count 0 in/hello.txt >/dev/null 2>cap/err; then
    check "GPT-2: 'Hello world' prepares to 50256,15496,995 (uint16)" python3 -c "
import struct,sys; b=open('pg/train_000000.bin','rb').read(); h=struct.unpack('<256i',b[:1024])
t=list(struct.unpack('<%dH'%h[2],b[1024:])); sys.exit(0 if h[1]==1 and t==[50256,15496,995] else print(h[:3],t) or 1)"
  else bad "prepare with GPT-2: $(cat cap/err)"; fi
else skip "GPT-2 check: no tests/fixtures/tokenizer/gpt2.tiktoken (scripts/fetch_gpt2_vocab.sh)"; fi

# ---------------------------------------------------------------- hard but valid input
T0=$SECONDS
PY files in/huge.txt huge
S0=$SECONDS
if ax prepare --tokenizer tok.json --out ph --val-count 0 --quiet in/huge.txt >/dev/null 2>cap/err; then
  CHECK_NOTE="prepare $((SECONDS - S0)) s" check "a 5 MB line without a newline: one document, bytes intact" PY one_doc ph in/huge.txt "$EOT"
else bad "a 5 MB line without a newline: $(head -c 300 cap/err)"; fi
rm -rf ph
PY files in/bad.txt badutf8
if ax prepare --tokenizer tok.json --out pu --val-count 0 in/bad.txt >/dev/null 2>cap/err; then
  check "invalid UTF-8 bytes: prepare works, bytes intact" PY one_doc pu in/bad.txt "$EOT"
  check "invalid UTF-8 bytes: CLI decode of the shard = the file" python3 -c "
import sys; sys.path.insert(0, '$W'); import t
_, _, toks = t.read_split('pu', 'train')
sys.exit(0 if t.cli_decode('tok.json', toks[1:]) == open('in/bad.txt','rb').read() else 1)"
  check "invalid UTF-8 bytes: tokenizer encode FILE / decode round trip" PY cli_file_roundtrip tok.json in/bad.txt
else bad "invalid UTF-8 bytes: $(head -c 300 cap/err)"; fi
# A plain document > 1 MiB is read in pieces that end at line breaks; its tokens
# must still be those of the whole document. Paragraphs end in 3 newlines, and a
# tokenizer trained on them merges "\n\n": a cut between two of the newlines
# shows (whole text: "\n\n" "\n", cut: "\n" | "\n" "\n").
PY files in/para.txt paragraphs
if ax tokenizer train --vocab-size 300 --out tokpara.json in/para.txt >/dev/null 2>cap/err &&
   ax prepare --tokenizer tokpara.json --out pp --val-count 0 --quiet in/para.txt >/dev/null 2>>cap/err; then
  check "a 1.3 MB plain document: tokens = tokenizer encode of the whole file" PY same_tokens pp tokpara.json in/para.txt
else bad "1.3 MB plain document: $(head -c 300 cap/err)"; fi
rm -rf pp
# The same document with a Llama-3-style tokenizer.json, whose pattern keeps
# line breaks with the punctuation before them (so pieces must not end there),
# documents separated by <|end_of_text|>; the saved tokenizer.json keeps the pattern.
LLAMA=${FIX:+$FIX/llama3/tokenizer.json}
if [ -n "$LLAMA" ] && [ -f "$LLAMA" ]; then
  if ax prepare --tokenizer "$LLAMA" --out pl --val-count 0 --quiet in/para.txt >/dev/null 2>cap/err; then
    EOT_TEXT='<|end_of_text|>' check "Llama-3 tokenizer.json: the 1.3 MB document's tokens = encode of the whole file" \
      PY same_tokens pl "$LLAMA" in/para.txt
    EOT_TEXT='<|end_of_text|>' check "Llama-3 tokenizer.json saved by prepare encodes the same" PY same_tokens pl pl/tokenizer.json in/para.txt
  else bad "prepare with a Llama-3 tokenizer.json: $(head -c 300 cap/err)"; fi
  rm -rf pl
  check "tokenizer encode --add-special / decode with a Llama-3 tokenizer.json = tokenizers" PY hf_ids "$LLAMA" "$FIX"
else skip "Llama-3 checks: no tests/fixtures/llama3/tokenizer.json"; fi
echo "# large/odd input: $((SECONDS - T0)) s"

# ---------------------------------------------------------------- bad input
T0=$SECONDS
printf '%%\n%%\n%%\n' >in/seps.txt
expect_error "empty input file" e1 "in/empty.txt" ax prepare --tokenizer tok.json --out e1 in/empty.txt
[[ $(cat cap/err) == *"no text"* ]] && ok "empty input: the error says 'no text'" || bad "empty input: $(cat cap/err)"
expect_error "only '%' separators" e2 "in/seps.txt" ax prepare --tokenizer tok.json --out e2 in/seps.txt
head -c 2000 tok.json >in/trunc.json
expect_error "truncated tokenizer.json" e3 "in/trunc.json" ax prepare --tokenizer in/trunc.json --out e3 in/plain.txt
PY wordpiece tok.json in/wp.json
expect_error "tokenizer.json of model type WordPiece" e4 "in/wp.json" ax prepare --tokenizer in/wp.json --out e4 in/plain.txt
[[ $(cat cap/err) == *WordPiece* ]] && ok "WordPiece: the error names the model type" || bad "WordPiece: $(cat cap/err)"
expect_error "merges.txt with a one-token line" e5 "vm/bad/merges.txt" ax prepare --tokenizer vm/bad/vocab.json --out e5 in/plain.txt
expect_error "missing input file" e6 "in/nope.txt" ax prepare --tokenizer tok.json --out e6 in/plain.txt in/nope.txt
expect_error "missing tokenizer" e7 "in/nope.json" ax prepare --tokenizer in/nope.json --out e7 in/plain.txt
printf '{"text": "fine"}\n{"text": "broken\n' >in/broken.jsonl
expect_error "invalid JSON Lines (file:line)" e8 "in/broken.jsonl:2" ax prepare --tokenizer tok.json --out e8 in/broken.jsonl
printf '{"text": "fine"}\n{"body": "no text field"}\n' >in/notext.jsonl
expect_error "JSON Lines without \"text\" (file:line)" e9 "in/notext.jsonl:2" ax prepare --tokenizer tok.json --out e9 in/notext.jsonl
printf '{"text": "bad \xff byte"}\n' >in/badutf8.jsonl
expect_error "JSON Lines with invalid UTF-8 (file:line)" e10 "in/badutf8.jsonl:1" ax prepare --tokenizer tok.json --out e10 in/badutf8.jsonl
# failure after shards were written (the good file first, small shards)
expect_error "failure after shards were written" e11 "in/nope.txt" \
  ax prepare --tokenizer tok.json --out e11 --shard-tokens 10 --val-count 0 in/plain.txt in/docs.jsonl in/nope.txt
expect_error "--val-frac 1.5" e12 "--val-frac" ax prepare --tokenizer tok.json --out e12 --val-frac 1.5 in/plain.txt
expect_error "--shard-tokens 1" e13 "--shard-tokens" ax prepare --tokenizer tok.json --out e13 --shard-tokens 1 in/plain.txt
expect_error "--val-count -1" e14 "--val-count" ax prepare --tokenizer tok.json --out e14 --val-count -1 in/plain.txt
# --out a non-empty directory: refused, untouched
mkdir full && echo "keep me" >full/notes.txt && touch -d '2001-01-01' full/notes.txt full
before=$(ls -la --time-style=full-iso full; md5sum full/notes.txt)
expect_error "--out a non-empty directory" "" "full" ax prepare --tokenizer tok.json --out full in/plain.txt
after=$(ls -la --time-style=full-iso full; md5sum full/notes.txt)
[ "$before" = "$after" ] && [ ! -e full.tmp ] && ok "the non-empty directory is untouched, no full.tmp" || bad "non-empty --out changed: $after"
# --out an existing regular file
echo "a file" >afile
expect_error "--out an existing file" "" "afile" ax prepare --tokenizer tok.json --out afile in/plain.txt
[ "$(cat afile)" = "a file" ] && [ ! -e afile.tmp ] && ok "--out file untouched, no afile.tmp" || bad "--out file changed or afile.tmp left"
# --out under a parent that cannot hold directories: a regular file (works as root too)
expect_error "--out parent is a file" "afile/sub" "afile/sub" ax prepare --tokenizer tok.json --out afile/sub in/plain.txt
if [ "$(id -u)" != 0 ]; then
  mkdir ro && chmod 555 ro
  expect_error "--out parent not writable" "ro/sub" "ro/sub" ax prepare --tokenizer tok.json --out ro/sub in/plain.txt
  chmod 755 ro
else skip "--out parent without write permission: running as root (permissions not enforced)"; fi
left=$(ls -d e[0-9]* ./*.tmp 2>/dev/null)
[ -z "$left" ] && ok "no output directories left by the failures" || bad "left behind: $left"
echo "# bad input: $((SECONDS - T0)) s"

finish cli_text