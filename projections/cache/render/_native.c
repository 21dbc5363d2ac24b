/* Hashing a rendered request's units and chaining their prefix hashes (canonical.py), in C.
 *
 * hash_units takes the units' canonical bytes, serialized as one compact JSON array, and walks it
 * once for each unit's span and code points; it hashes the units four at a time (AVX2, where the
 * processor has it), then chains the prefix hashes, one link a unit. A 6,000-message request has
 * thousands of units, and hashing them one hashlib call at a time costs more in interpreter work
 * than in hashing. chain_units links units whose block digests are known already (a later
 * request's units taken from an earlier one, behind a changed system prompt).
 *
 * Two helpers serve the same loop: shared_prefix counts the leading messages two requests share,
 * compared as their canonical bytes would compare (reuse.py), and rolling_hashes chains Python's
 * hash over a list (the lineage index's message prefixes, lineage.py).
 *
 * Only byte work lives here: which units a request has, and what joins each link of the chain, is
 * decided in Python (rendering.py) and handed over as bytes, so a rendering rule is stated once.
 * Each function has a plain-Python twin (canonical.python_hash_units, canonical.python_chain_units,
 * reuse.python_shared_prefix, and the loop in lineage._message_prefixes), and the tests check they
 * agree. BLAKE2b follows RFC 7693 with a 16-byte digest, no key, no salt and no personalization,
 * so it equals hashlib.blake2b(data, digest_size=16).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define DIGEST_SIZE 16
#define BLOCK_BYTES 128
#define FRAMING_BYTES 3 /* tier, role, message start */

/* ---- BLAKE2b (RFC 7693) ---------------------------------------------------------------------- */

static const uint64_t blake2b_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

static const uint8_t blake2b_sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

static inline uint64_t rotr64(uint64_t x, unsigned n) { return (x >> n) | (x << (64 - n)); }

static inline uint64_t load64_le(const uint8_t *p) {
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) | ((uint64_t)p[3] << 24) |
           ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) | ((uint64_t)p[6] << 48) |
           ((uint64_t)p[7] << 56);
}

#define G(a, b, c, d, x, y)          \
    do {                             \
        a = a + b + (x);             \
        d = rotr64(d ^ a, 32);       \
        c = c + d;                   \
        b = rotr64(b ^ c, 24);       \
        a = a + b + (y);             \
        d = rotr64(d ^ a, 16);       \
        c = c + d;                   \
        b = rotr64(b ^ c, 63);       \
    } while (0)

/* One compression of a 128-byte block; `counter` is the byte count through this block. */
static void blake2b_compress(uint64_t h[8], const uint8_t block[BLOCK_BYTES], uint64_t counter, int last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = load64_le(block + 8 * i);
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = blake2b_iv[i];
    }
    v[12] ^= counter; /* the high word of the 128-bit counter stays 0 below 2^64 bytes */
    if (last) v[14] = ~v[14];
    /* Rounds spelled out with constant indices, so the message schedule resolves at compile time. */
#define ROUND(r)                                                                     \
    do {                                                                             \
        G(v[0], v[4], v[8], v[12], m[blake2b_sigma[r][0]], m[blake2b_sigma[r][1]]);   \
        G(v[1], v[5], v[9], v[13], m[blake2b_sigma[r][2]], m[blake2b_sigma[r][3]]);   \
        G(v[2], v[6], v[10], v[14], m[blake2b_sigma[r][4]], m[blake2b_sigma[r][5]]);  \
        G(v[3], v[7], v[11], v[15], m[blake2b_sigma[r][6]], m[blake2b_sigma[r][7]]);  \
        G(v[0], v[5], v[10], v[15], m[blake2b_sigma[r][8]], m[blake2b_sigma[r][9]]);  \
        G(v[1], v[6], v[11], v[12], m[blake2b_sigma[r][10]], m[blake2b_sigma[r][11]]); \
        G(v[2], v[7], v[8], v[13], m[blake2b_sigma[r][12]], m[blake2b_sigma[r][13]]);  \
        G(v[3], v[4], v[9], v[14], m[blake2b_sigma[r][14]], m[blake2b_sigma[r][15]]);  \
    } while (0)
    ROUND(0);
    ROUND(1);
    ROUND(2);
    ROUND(3);
    ROUND(4);
    ROUND(5);
    ROUND(6);
    ROUND(7);
    ROUND(8);
    ROUND(9);
    ROUND(10);
    ROUND(11);
#undef ROUND
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

static void blake2b_init(uint64_t h[8]) {
    memcpy(h, blake2b_iv, 8 * sizeof h[0]);
    h[0] ^= 0x01010000ULL ^ DIGEST_SIZE; /* depth 1, fanout 1, no key, digest length */
}

static void blake2b_output(const uint64_t h[8], uint8_t out[DIGEST_SIZE]) {
    for (int i = 0; i < DIGEST_SIZE; i++) out[i] = (uint8_t)(h[i / 8] >> (8 * (i % 8)));
}

/* BLAKE2b-128 of a message of `len` <= 128 bytes that `block` holds already padded with zeros. */
static void blake2b_128_padded(const uint8_t block[BLOCK_BYTES], size_t len, uint8_t out[DIGEST_SIZE]) {
    uint64_t h[8];
    blake2b_init(h);
    blake2b_compress(h, block, len, 1);
    blake2b_output(h, out);
}

/* BLAKE2b with a 16-byte digest of `len` bytes at `data`. */
static void blake2b_128(const uint8_t *data, size_t len, uint8_t out[DIGEST_SIZE]) {
    uint64_t h[8];
    blake2b_init(h);
    uint64_t counter = 0;
    while (len > BLOCK_BYTES) {
        counter += BLOCK_BYTES;
        blake2b_compress(h, data, counter, 0);
        data += BLOCK_BYTES;
        len -= BLOCK_BYTES;
    }
    uint8_t last[BLOCK_BYTES] = {0};
    memcpy(last, data, len);
    counter += len;
    blake2b_compress(h, last, counter, 1);
    blake2b_output(h, out);
}

/* Compression blocks of a message: an empty one still takes one (all-padding) block. */
static size_t block_count(size_t len) { return len == 0 ? 1 : (len + BLOCK_BYTES - 1) / BLOCK_BYTES; }

/* ---- BLAKE2b, four messages at once (AVX2) ------------------------------------------------------
 *
 * A request's units are short (a few hundred bytes), so hashing them one after another leaves most
 * of a 256-bit register idle. Here each of the four 64-bit lanes of a vector carries the state of a
 * different unit: the rounds are the scalar ones with every word widened to four, and a lane whose
 * unit has no block left keeps its state (blend by mask) while the others go on. Chosen at run time
 * when the processor has AVX2; the scalar function above serves everywhere else.
 */

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define HAVE_X4 1

#define X4 __attribute__((target("avx2")))

X4 static inline __m256i rotr32_x4(__m256i x) { return _mm256_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)); }
X4 static inline __m256i rotr24_x4(__m256i x) {
    const __m256i mask = _mm256_setr_epi8(3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10, 3, 4, 5, 6, 7, 0,
                                          1, 2, 11, 12, 13, 14, 15, 8, 9, 10);
    return _mm256_shuffle_epi8(x, mask);
}
X4 static inline __m256i rotr16_x4(__m256i x) {
    const __m256i mask = _mm256_setr_epi8(2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9, 2, 3, 4, 5, 6, 7,
                                          0, 1, 10, 11, 12, 13, 14, 15, 8, 9);
    return _mm256_shuffle_epi8(x, mask);
}
X4 static inline __m256i rotr63_x4(__m256i x) {
    return _mm256_or_si256(_mm256_srli_epi64(x, 63), _mm256_add_epi64(x, x));
}

#define G_X4(a, b, c, d, x, y)                                   \
    do {                                                         \
        a = _mm256_add_epi64(_mm256_add_epi64(a, b), (x));       \
        d = rotr32_x4(_mm256_xor_si256(d, a));                   \
        c = _mm256_add_epi64(c, d);                              \
        b = rotr24_x4(_mm256_xor_si256(b, c));                   \
        a = _mm256_add_epi64(_mm256_add_epi64(a, b), (y));       \
        d = rotr16_x4(_mm256_xor_si256(d, a));                   \
        c = _mm256_add_epi64(c, d);                              \
        b = rotr63_x4(_mm256_xor_si256(b, c));                   \
    } while (0)

/* One compression of a block in each lane; `active` is all ones in the lanes that take it. */
X4 static void blake2b_compress_x4(__m256i h[8], const uint8_t *const blocks[4], __m256i counter, __m256i last,
                                   __m256i active) {
    __m256i m[16], v[16];
    for (int i = 0; i < 16; i++)
        m[i] = _mm256_setr_epi64x((long long)load64_le(blocks[0] + 8 * i), (long long)load64_le(blocks[1] + 8 * i),
                                  (long long)load64_le(blocks[2] + 8 * i), (long long)load64_le(blocks[3] + 8 * i));
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = _mm256_set1_epi64x((long long)blake2b_iv[i]);
    }
    v[12] = _mm256_xor_si256(v[12], counter);
    v[14] = _mm256_xor_si256(v[14], last);
#define ROUND_X4(r)                                                                        \
    do {                                                                                   \
        G_X4(v[0], v[4], v[8], v[12], m[blake2b_sigma[r][0]], m[blake2b_sigma[r][1]]);     \
        G_X4(v[1], v[5], v[9], v[13], m[blake2b_sigma[r][2]], m[blake2b_sigma[r][3]]);     \
        G_X4(v[2], v[6], v[10], v[14], m[blake2b_sigma[r][4]], m[blake2b_sigma[r][5]]);    \
        G_X4(v[3], v[7], v[11], v[15], m[blake2b_sigma[r][6]], m[blake2b_sigma[r][7]]);    \
        G_X4(v[0], v[5], v[10], v[15], m[blake2b_sigma[r][8]], m[blake2b_sigma[r][9]]);    \
        G_X4(v[1], v[6], v[11], v[12], m[blake2b_sigma[r][10]], m[blake2b_sigma[r][11]]);  \
        G_X4(v[2], v[7], v[8], v[13], m[blake2b_sigma[r][12]], m[blake2b_sigma[r][13]]);   \
        G_X4(v[3], v[4], v[9], v[14], m[blake2b_sigma[r][14]], m[blake2b_sigma[r][15]]);   \
    } while (0)
    ROUND_X4(0);
    ROUND_X4(1);
    ROUND_X4(2);
    ROUND_X4(3);
    ROUND_X4(4);
    ROUND_X4(5);
    ROUND_X4(6);
    ROUND_X4(7);
    ROUND_X4(8);
    ROUND_X4(9);
    ROUND_X4(10);
    ROUND_X4(11);
#undef ROUND_X4
    for (int i = 0; i < 8; i++) {
        __m256i next = _mm256_xor_si256(h[i], _mm256_xor_si256(v[i], v[i + 8]));
        h[i] = _mm256_blendv_epi8(h[i], next, active);
    }
}

/* BLAKE2b-128 of four messages at once. */
X4 static void blake2b_128_x4(const uint8_t *const data[4], const size_t len[4], uint8_t *const out[4]) {
    static const uint8_t zeros[BLOCK_BYTES] = {0};
    uint8_t tails[4][BLOCK_BYTES];
    size_t blocks[4], most = 0;
    for (int l = 0; l < 4; l++) {
        blocks[l] = block_count(len[l]);
        if (blocks[l] > most) most = blocks[l];
        size_t tail = len[l] - (blocks[l] - 1) * BLOCK_BYTES;
        memcpy(tails[l], data[l] + (blocks[l] - 1) * BLOCK_BYTES, tail);
        memset(tails[l] + tail, 0, BLOCK_BYTES - tail);
    }
    __m256i h[8];
    for (int i = 0; i < 8; i++) h[i] = _mm256_set1_epi64x((long long)blake2b_iv[i]);
    h[0] = _mm256_xor_si256(h[0], _mm256_set1_epi64x(0x01010000LL ^ DIGEST_SIZE));
    for (size_t b = 0; b < most; b++) {
        const uint8_t *block[4];
        long long counter[4], last[4], active[4];
        for (int l = 0; l < 4; l++) {
            active[l] = b < blocks[l] ? -1 : 0;
            last[l] = b + 1 == blocks[l] ? -1 : 0;
            if (!active[l]) {
                block[l] = zeros;
                counter[l] = 0;
            } else if (last[l]) {
                block[l] = tails[l];
                counter[l] = (long long)len[l];
            } else {
                block[l] = data[l] + b * BLOCK_BYTES;
                counter[l] = (long long)((b + 1) * BLOCK_BYTES);
            }
        }
        blake2b_compress_x4(h, block, _mm256_setr_epi64x(counter[0], counter[1], counter[2], counter[3]),
                            _mm256_setr_epi64x(last[0], last[1], last[2], last[3]),
                            _mm256_setr_epi64x(active[0], active[1], active[2], active[3]));
    }
    uint64_t words[2][4];
    _mm256_storeu_si256((__m256i *)words[0], h[0]);
    _mm256_storeu_si256((__m256i *)words[1], h[1]);
    for (int l = 0; l < 4; l++) {
        for (int i = 0; i < DIGEST_SIZE; i++) out[l][i] = (uint8_t)(words[i / 8][l] >> (8 * (i % 8)));
    }
}
#endif

#define SORTED_BLOCKS 64 /* spans of more blocks than this share the last bucket */

/* BLAKE2b-128 of `count` spans of `text`, four at a time where the processor allows. The four
 * lanes advance together, so spans are grouped by their block count first: consecutive units of a
 * conversation alternate short and long, and grouping them as they come leaves lanes idle. */
static int blake2b_128_spans(const uint8_t *text, const Py_ssize_t *starts, const Py_ssize_t *ends,
                             Py_ssize_t count, uint8_t (*out)[DIGEST_SIZE]) {
#ifdef HAVE_X4
    if (count >= 4 && __builtin_cpu_supports("avx2")) {
        Py_ssize_t *order = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)count);
        if (order == NULL) return -1;
        Py_ssize_t next[SORTED_BLOCKS + 1] = {0};
        for (Py_ssize_t i = 0; i < count; i++) {
            size_t blocks = block_count((size_t)(ends[i] - starts[i]));
            next[blocks < SORTED_BLOCKS ? blocks : SORTED_BLOCKS]++;
        }
        for (Py_ssize_t b = 0, at = 0; b <= SORTED_BLOCKS; b++) {
            Py_ssize_t size = next[b];
            next[b] = at;
            at += size;
        }
        for (Py_ssize_t i = 0; i < count; i++) {
            size_t blocks = block_count((size_t)(ends[i] - starts[i]));
            order[next[blocks < SORTED_BLOCKS ? blocks : SORTED_BLOCKS]++] = i;
        }
        Py_ssize_t k = 0;
        for (; k + 4 <= count; k += 4) {
            const uint8_t *data[4];
            size_t len[4];
            uint8_t *digests[4];
            for (int l = 0; l < 4; l++) {
                Py_ssize_t i = order[k + l];
                data[l] = text + starts[i];
                len[l] = (size_t)(ends[i] - starts[i]);
                digests[l] = out[i];
            }
            blake2b_128_x4(data, len, digests);
        }
        for (; k < count; k++) {
            Py_ssize_t i = order[k];
            blake2b_128(text + starts[i], (size_t)(ends[i] - starts[i]), out[i]);
        }
        PyMem_Free(order);
        return 0;
    }
#endif
    for (Py_ssize_t i = 0; i < count; i++) blake2b_128(text + starts[i], (size_t)(ends[i] - starts[i]), out[i]);
    return 0;
}

/* ---- the array walk -------------------------------------------------------------------------- */

static uint16_t hex_pairs[256]; /* each byte's two hex digits, in memory order */

static void fill_hex_pairs(void) {
    static const char hex[] = "0123456789abcdef";
    for (int b = 0; b < 256; b++) {
        char pair[2] = {hex[b >> 4], hex[b & 15]};
        memcpy(&hex_pairs[b], pair, 2);
    }
}

static PyObject *hex_string(const uint8_t digest[DIGEST_SIZE]) {
    PyObject *text = PyUnicode_New(2 * DIGEST_SIZE, 127);
    if (text == NULL) return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(text);
    for (int i = 0; i < DIGEST_SIZE; i++) memcpy(out + 2 * i, &hex_pairs[digest[i]], 2);
    return text;
}

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Index just past the closing quote of the JSON string whose contents start at `i`; -1 if none. */
static Py_ssize_t string_end(const uint8_t *text, Py_ssize_t size, Py_ssize_t i) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
#endif
    for (;;) {
#if defined(__SSE2__)
        /* Sixteen bytes at a time to the next quote or backslash: most of a prompt is plain text. */
        while (i + 16 <= size) {
            __m128i chunk = _mm_loadu_si128((const __m128i *)(text + i));
            int hits = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)));
            if (hits) {
                i += __builtin_ctz((unsigned)hits);
                break;
            }
            i += 16;
        }
#endif
        while (i < size && text[i] != '"' && text[i] != '\\') i++;
        if (i >= size) return -1;
        if (text[i] == '"') return i + 1;
        i += 2; /* an escape: the byte after the backslash is never the closing quote */
    }
}

/* The end of the JSON value that starts at `start`, or -1 when the text is not a compact value
 * followed by ',' or ']'. Only strings and brackets matter: everything else is scanned past. */
static Py_ssize_t value_end(const uint8_t *text, Py_ssize_t size, Py_ssize_t start) {
    Py_ssize_t depth = 0, i = start;
    while (i < size) {
        uint8_t c = text[i];
        if (c == '"') {
            i = string_end(text, size, i + 1);
            if (i < 0) return -1;
            continue;
        }
        if (c == '[' || c == '{') {
            depth++;
        } else if (c == ']' || c == '}') {
            if (depth == 0) break;
            depth--;
        } else if (c == ',' && depth == 0) {
            break;
        }
        i++;
    }
    if (i >= size || depth != 0 || i == start) return -1;
    return i;
}

static inline unsigned bit_count16(unsigned x) {
    x = x - ((x >> 1) & 0x5555u);
    x = (x & 0x3333u) + ((x >> 2) & 0x3333u);
    x = (x + (x >> 4)) & 0x0F0Fu;
    return (x + (x >> 8)) & 0x1Fu;
}

/* Code points of valid UTF-8: every byte but the continuation bytes (10xxxxxx). Sixteen bytes at
 * a time, and an all-ASCII run of sixteen (most of a prompt) costs one test. */
static Py_ssize_t code_points(const uint8_t *data, Py_ssize_t len) {
    Py_ssize_t continuation = 0, j = 0;
#if defined(__SSE2__)
    const __m128i top = _mm_set1_epi8((char)0xC0), follow = _mm_set1_epi8((char)0x80);
    for (; j + 16 <= len; j += 16) {
        __m128i chunk = _mm_loadu_si128((const __m128i *)(data + j));
        if (_mm_movemask_epi8(chunk) == 0) continue;
        continuation += bit_count16((unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(chunk, top), follow)));
    }
#endif
    for (; j < len; j++) continuation += (data[j] & 0xC0) == 0x80;
    return len - continuation;
}

/* The parameter digests that join the chain before given units, from a list of (position, digests). */
typedef struct {
    Py_ssize_t count;
    Py_ssize_t positions[8];
    PyObject *digests[8]; /* borrowed from the list */
} Mixes;

static int read_mixes(PyObject *list, Mixes *mixes) {
    mixes->count = PyList_GET_SIZE(list);
    if (mixes->count > 8) {
        PyErr_SetString(PyExc_ValueError, "mixes: at most 8 entries");
        return -1;
    }
    Py_ssize_t previous = -1;
    for (Py_ssize_t k = 0; k < mixes->count; k++) {
        PyObject *item = PyList_GET_ITEM(list, k);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) goto bad;
        Py_ssize_t position = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0));
        if (position == -1 && PyErr_Occurred()) return -1;
        PyObject *digests = PyTuple_GET_ITEM(item, 1);
        if (position <= previous || !PyBytes_Check(digests) || PyBytes_GET_SIZE(digests) == 0 ||
            PyBytes_GET_SIZE(digests) % DIGEST_SIZE != 0)
            goto bad;
        mixes->positions[k] = previous = position;
        mixes->digests[k] = digests;
    }
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "mixes: a list of (position, run of 16-byte digests), positions ascending");
    return -1;
}

/* The prefix-hash chain over `count` block digests (16 bytes each, end to end), one link a unit, written as hex into the list
 * `prefixes` (of that length): key = the chain so far, then a digest, then the unit's framing. */
static int chain_links(const uint8_t *digests, Py_ssize_t count, const uint8_t *tiers,
                       const uint8_t *roles, const uint8_t *starts, const uint8_t *chain, const Mixes *mixes,
                       PyObject *prefixes) {
    /* One zero-padded block holds each link's input; each link's output is written back over the
     * chain. */
    uint8_t link[BLOCK_BYTES] = {0};
    const Py_ssize_t key_bytes = 2 * DIGEST_SIZE + FRAMING_BYTES;
    memcpy(link, chain, DIGEST_SIZE);
    Py_ssize_t next_mix = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (next_mix < mixes->count && mixes->positions[next_mix] == i) {
            /* Each digest of the run joins the chain in turn: chain = blake2b(chain + digest). */
            PyObject *run = mixes->digests[next_mix++];
            memset(link + 2 * DIGEST_SIZE, 0, FRAMING_BYTES);
            for (Py_ssize_t k = 0; k < PyBytes_GET_SIZE(run); k += DIGEST_SIZE) {
                memcpy(link + DIGEST_SIZE, PyBytes_AS_STRING(run) + k, DIGEST_SIZE);
                blake2b_128_padded(link, 2 * DIGEST_SIZE, link);
            }
        }
        memcpy(link + DIGEST_SIZE, digests + DIGEST_SIZE * i, DIGEST_SIZE);
        link[2 * DIGEST_SIZE] = tiers[i];
        link[2 * DIGEST_SIZE + 1] = roles[i];
        link[2 * DIGEST_SIZE + 2] = starts[i];
        blake2b_128_padded(link, key_bytes, link);
        PyObject *prefix_obj = hex_string(link);
        if (!prefix_obj) return -1;
        PyList_SET_ITEM(prefixes, i, prefix_obj);
    }
    return 0;
}

PyDoc_STRVAR(hash_units_doc,
             "hash_units(array, tiers, roles, starts, chain, mixes) -> (chars, block_hashes, prefix_hashes)\n\n"
             "Walk a compact JSON array of units. For each element: its code points, the\n"
             "BLAKE2b-128 hex of its bytes and the prefix hash chained as\n"
             "blake2b(chain + digest + tiers[i] + roles[i] + starts[i]). `mixes` lists (position,\n"
             "digests): each 16-byte digest joins the chain, as blake2b(chain + digest), before that\n"
             "unit's link.");

static PyObject *hash_units(PyObject *self, PyObject *args) {
    Py_buffer array, tiers, roles, starts, chain_in;
    PyObject *mix_list;
    Mixes mixes;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*O!", &array, &tiers, &roles, &starts, &chain_in, &PyList_Type,
                          &mix_list))
        return NULL;
    PyObject *chars = NULL, *blocks = NULL, *prefixes = NULL, *result = NULL;
    Py_ssize_t *spans = NULL;
    uint8_t(*digests)[DIGEST_SIZE] = NULL;
    const uint8_t *text = array.buf;
    Py_ssize_t size = array.len, count = tiers.len;
    if (roles.len != count || starts.len != count || chain_in.len != DIGEST_SIZE) {
        PyErr_SetString(PyExc_ValueError, "tiers, roles and starts must be one byte a unit and chain 16 bytes");
        goto done;
    }
    if (read_mixes(mix_list, &mixes) < 0) goto done;
    if (size < 2 || text[0] != '[' || text[size - 1] != ']') {
        PyErr_SetString(PyExc_ValueError, "units: expected a JSON array");
        goto done;
    }
    chars = PyList_New(count);
    blocks = PyList_New(count);
    prefixes = PyList_New(count);
    spans = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (size_t)(count ? count : 1));
    digests = PyMem_Malloc(DIGEST_SIZE * (size_t)(count ? count : 1));
    if (!chars || !blocks || !prefixes || !spans || !digests) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t *span_starts = spans, *span_ends = spans + count;

    /* Pass 1: each element's span and code points. */
    Py_ssize_t at = 1;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t end = value_end(text, size, at);
        if (end < 0 || (i + 1 < count && text[end] != ',')) {
            PyErr_Format(PyExc_ValueError, "units: element %zd of %zd is not a compact JSON value", i, count);
            goto done;
        }
        if (i + 1 == count && end != size - 1) {
            PyErr_Format(PyExc_ValueError, "units: the array holds more than %zd elements", count);
            goto done;
        }
        PyObject *chars_obj = PyLong_FromSsize_t(code_points(text + at, end - at));
        if (!chars_obj) goto done;
        PyList_SET_ITEM(chars, i, chars_obj);
        span_starts[i] = at;
        span_ends[i] = end;
        at = end + 1;
    }
    if (count == 0 ? size != 2 : at != size) {
        PyErr_Format(PyExc_ValueError, "units: the array holds more than %zd elements", count);
        goto done;
    }

    /* Pass 2: the block digests, independent of one another. */
    if (blake2b_128_spans(text, span_starts, span_ends, count, digests) < 0) {
        PyErr_NoMemory();
        goto done;
    }

    /* Pass 3: the chain, one link a unit. */
    if (chain_links((const uint8_t *)digests, count, tiers.buf, roles.buf, starts.buf, chain_in.buf, &mixes, prefixes) < 0) goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *block_obj = hex_string(digests[i]);
        if (!block_obj) goto done;
        PyList_SET_ITEM(blocks, i, block_obj);
    }
    result = PyTuple_Pack(3, chars, blocks, prefixes);

done:
    Py_XDECREF(chars);
    Py_XDECREF(blocks);
    Py_XDECREF(prefixes);
    PyMem_Free(spans);
    PyMem_Free(digests);
    PyBuffer_Release(&array);
    PyBuffer_Release(&tiers);
    PyBuffer_Release(&roles);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&chain_in);
    return result;
}

PyDoc_STRVAR(chain_units_doc,
             "chain_units(digests, tiers, roles, starts, chain, mixes) -> prefix_hashes\n\n"
             "The prefix-hash chain of hash_units over block digests already known: `digests` holds\n"
             "one 16-byte BLAKE2b digest a unit, end to end.");

static PyObject *chain_units(PyObject *self, PyObject *args) {
    Py_buffer digests, tiers, roles, starts, chain_in;
    PyObject *mix_list, *prefixes = NULL;
    Mixes mixes;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*O!", &digests, &tiers, &roles, &starts, &chain_in, &PyList_Type,
                          &mix_list))
        return NULL;
    Py_ssize_t count = tiers.len;
    if (digests.len != DIGEST_SIZE * count || roles.len != count || starts.len != count ||
        chain_in.len != DIGEST_SIZE) {
        PyErr_SetString(PyExc_ValueError,
                        "digests must be 16 bytes a unit, tiers, roles and starts one byte a unit, chain 16 bytes");
        goto done;
    }
    if (read_mixes(mix_list, &mixes) < 0) goto done;
    prefixes = PyList_New(count);
    if (!prefixes) goto done;
    if (chain_links(digests.buf, count, tiers.buf, roles.buf, starts.buf, chain_in.buf, &mixes, prefixes) < 0)
        Py_CLEAR(prefixes);

done:
    PyBuffer_Release(&digests);
    PyBuffer_Release(&tiers);
    PyBuffer_Release(&roles);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&chain_in);
    return prefixes;
}

/* ---- Shared leading messages ----------------------------------------------------------------- */

#define MAX_DEPTH 200

/* Whether two parsed JSON values serialize to the same canonical bytes: 1 yes, 0 no, -1 error.
 * Python's == is not enough: 1 == 1.0 == True and 0.0 == -0.0, yet each is written otherwise. So
 * types must match exactly and floats bit for bit; anything but JSON's types, or nesting deeper
 * than MAX_DEPTH, counts as different, which only costs a render. Dict key order does not matter:
 * canonical bytes sort the keys. */
static int same_json(PyObject *a, PyObject *b, int depth) {
    if (a == b) return 1;
    if (Py_TYPE(a) != Py_TYPE(b) || depth > MAX_DEPTH) return 0;
    if (PyUnicode_CheckExact(a)) return PyUnicode_Compare(a, b) == 0 ? 1 : (PyErr_Occurred() ? -1 : 0);
    if (PyLong_CheckExact(a)) return PyObject_RichCompareBool(a, b, Py_EQ);
    if (PyFloat_CheckExact(a)) {
        double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    if (PyList_CheckExact(a)) {
        Py_ssize_t n = PyList_GET_SIZE(a);
        if (PyList_GET_SIZE(b) != n) return 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int same = same_json(PyList_GET_ITEM(a, i), PyList_GET_ITEM(b, i), depth + 1);
            if (same != 1) return same;
        }
        return 1;
    }
    if (PyDict_CheckExact(a)) {
        if (PyDict_GET_SIZE(a) != PyDict_GET_SIZE(b)) return 0;
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(a, &pos, &key, &value)) {
            PyObject *other = PyDict_GetItemWithError(b, key);
            if (!other) return PyErr_Occurred() ? -1 : 0;
            int same = same_json(value, other, depth + 1); /* borrowed: nothing here changes b */
            if (same != 1) return same;
        }
        return 1;
    }
    return 0; /* True/False/None are singletons, equal only when identical */
}

PyDoc_STRVAR(shared_prefix_doc,
             "shared_prefix(old, new) -> count\n\n"
             "How many leading elements two lists of parsed JSON share, each equal in canonical\n"
             "bytes (same types, floats bit for bit, key order aside).");

static PyObject *shared_prefix(PyObject *self, PyObject *args) {
    PyObject *old, *new;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &old, &PyList_Type, &new)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(old) < PyList_GET_SIZE(new) ? PyList_GET_SIZE(old) : PyList_GET_SIZE(new);
    Py_ssize_t i = 0;
    for (; i < n; i++) {
        int same = same_json(PyList_GET_ITEM(old, i), PyList_GET_ITEM(new, i), 0);
        if (same < 0) return NULL;
        if (!same) break;
    }
    return PyLong_FromSsize_t(i);
}

PyDoc_STRVAR(rolling_hashes_doc,
             "rolling_hashes(items) -> links\n\n"
             "A 64-bit hash of every prefix of a list of hashable items: links[i] identifies\n"
             "items[0..i] within one process (built on Python's hash, so never to be stored).");

static PyObject *rolling_hashes(PyObject *self, PyObject *args) {
    PyObject *items;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &items)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items);
    PyObject *links = PyList_New(n);
    if (!links) return NULL;
    uint64_t link = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_hash_t h = PyObject_Hash(PyList_GET_ITEM(items, i));
        if (h == -1 && PyErr_Occurred()) {
            Py_DECREF(links);
            return NULL;
        }
        /* splitmix64's finalizer over the previous link and the item's hash. */
        uint64_t x = (link ^ (uint64_t)h) + 0x9e3779b97f4a7c15ULL + (link << 6);
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        link = x ^ (x >> 31);
        PyObject *value = PyLong_FromUnsignedLongLong(link);
        if (!value) {
            Py_DECREF(links);
            return NULL;
        }
        PyList_SET_ITEM(links, i, value);
    }
    return links;
}

static PyMethodDef native_methods[] = {
    {"hash_units", hash_units, METH_VARARGS, hash_units_doc},
    {"chain_units", chain_units, METH_VARARGS, chain_units_doc},
    {"shared_prefix", shared_prefix, METH_VARARGS, shared_prefix_doc},
    {"rolling_hashes", rolling_hashes, METH_VARARGS, rolling_hashes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "_native",
    "BLAKE2b of request units and their prefix-hash chain, in C (see projections/cache/render/accel.py).", -1,
    native_methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    fill_hex_pairs();
    return PyModule_Create(&native_module);
}
