/* The tokenizer's two hash maps (tokenizer_impl.h): byte strings -> int64
 * (vocabulary, word caches, trainer counts) and id pairs -> int64 (merges),
 * open addressing with linear probing at most half full. */
#include "data/tokenizer_impl.h"
#include "util/err.h"
#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t h) {
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

/* Eight bytes at a time: words are short, so the tail dominates. Never 0,
 * which marks an empty slot. */
static uint64_t hash_bytes(const void *key, size_t n) {
    const unsigned char *p = key;
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = mix64(h ^ w);
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = mix64(h ^ w ^ ((uint64_t)n << 56));
    return h ? h : 1;
}

static ax_smap_slot *smap_find(const ax_smap *m, uint64_t h, const void *key, size_t len) {
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        ax_smap_slot *s = &m->slot[i];
        if (!s->hash || (s->hash == h && s->len == len && memcmp(m->keys.p + s->off, key, len) == 0)) return s;
    }
}

static void smap_rehash(ax_smap *m, size_t cap) {
    ax_smap_slot *old = m->slot;
    size_t oldcap = m->cap;
    m->slot = ax_calloc(cap, sizeof *m->slot);
    m->cap = cap;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].hash) continue;
        size_t j = old[i].hash & (cap - 1);
        while (m->slot[j].hash) j = (j + 1) & (cap - 1);
        m->slot[j] = old[i];
    }
    free(old);
}

int64_t *ax_smap_get(const ax_smap *m, const void *key, size_t len) {
    if (!m->n) return NULL;
    ax_smap_slot *s = smap_find(m, hash_bytes(key, len), key, len);
    return s->hash ? &s->val : NULL;
}

int64_t *ax_smap_put(ax_smap *m, const void *key, size_t len, int *added) {
    if (2 * (m->n + 1) > m->cap) smap_rehash(m, m->cap ? 2 * m->cap : 64);
    uint64_t h = hash_bytes(key, len);
    ax_smap_slot *s = smap_find(m, h, key, len);
    if (added) *added = !s->hash;
    if (!s->hash) {
        s->hash = h;
        s->off = m->keys.n;
        s->len = (uint32_t)len;
        s->val = 0;
        ax_bytes_append(&m->keys, key, len);
        m->n++;
    }
    return &s->val;
}

const char *ax_smap_key(const ax_smap *m, const ax_smap_slot *s) { return m->keys.p + s->off; }
void ax_smap_free(ax_smap *m) {
    free(m->slot);
    ax_bytes_free(&m->keys);
    memset(m, 0, sizeof *m);
}

static ax_pmap_slot *pmap_find(const ax_pmap *m, uint64_t key) {
    size_t mask = m->cap - 1;
    for (size_t i = mix64(key) & mask;; i = (i + 1) & mask)
        if (m->slot[i].key == key || m->slot[i].key == AX_PMAP_EMPTY) return &m->slot[i];
}

static void pmap_rehash(ax_pmap *m, size_t cap) {
    ax_pmap_slot *old = m->slot;
    size_t oldcap = m->cap;
    m->slot = ax_malloc(cap * sizeof *m->slot);
    for (size_t i = 0; i < cap; i++) m->slot[i].key = AX_PMAP_EMPTY;
    m->cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].key != AX_PMAP_EMPTY) *pmap_find(m, old[i].key) = old[i];
    free(old);
}

int64_t *ax_pmap_get(const ax_pmap *m, uint64_t key) {
    if (!m->n) return NULL;
    ax_pmap_slot *s = pmap_find(m, key);
    return s->key == key ? &s->val : NULL;
}

int64_t *ax_pmap_put(ax_pmap *m, uint64_t key, int *added) {
    if (2 * (m->n + 1) > m->cap) pmap_rehash(m, m->cap ? 2 * m->cap : 64);
    ax_pmap_slot *s = pmap_find(m, key);
    if (added) *added = s->key != key;
    if (s->key != key) {
        s->key = key;
        s->val = 0;
        m->n++;
    }
    return &s->val;
}

void ax_pmap_free(ax_pmap *m) {
    free(m->slot);
    memset(m, 0, sizeof *m);
}
