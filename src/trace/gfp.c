/*
 * gfp_flags text <-> BH_GFP_* bits.
 *
 * The kernel prints an allocation's gfp mask with show_gfp_flags(): the composite names
 * (GFP_HIGHUSER_MOVABLE, GFP_KERNEL, ...) that match first, then single __GFP_* flags,
 * separated by '|', and any bits left without a name as one hex number ("GFP_KERNEL|0x4000000");
 * a mask no name matches at all is printed as hex alone, and 0 as "none".
 *
 * Only the bits that steer the allocator model are kept (zone, mobility, reserves, zeroing,
 * node, whether the request may block or wake kswapd); every other kernel flag name is known
 * and maps to 0.  Names we have never heard of are ignored and counted.
 *
 * The model's bits say what a request lacks (BH_GFP_ATOMIC: no __GFP_DIRECT_RECLAIM,
 * BH_GFP_NO_KSWAPD: no __GFP_KSWAPD_RECLAIM), so single names only add: a composite that
 * lacks reclaim bits carries them (GFP_TRANSHUGE_LIGHT: neither kind of reclaim and
 * __GFP_NOMEMALLOC; GFP_TRANSHUGE: no kswapd), and the names __GFP_RECLAIM,
 * __GFP_DIRECT_RECLAIM and __GFP_KSWAPD_RECLAIM take the matching "lacks" bits away again
 * ("GFP_TRANSHUGE|__GFP_KSWAPD_RECLAIM").  A list of single flags without any composite is
 * read the same way, so a kernel mask printed as single flags only and lacking both reclaim
 * bits reads as blocking with kswapd (the kernel prints such masks rarely).
 *
 * Hex parts are decoded with the bit values of Linux 6.12 (include/linux/gfp_types.h,
 * x86-64): ___GFP_DMA 0x1, HIGHMEM 0x2, DMA32 0x4, MOVABLE 0x8, RECLAIMABLE 0x10, HIGH 0x20,
 * ZERO 0x100, DIRECT_RECLAIM 0x400, KSWAPD_RECLAIM 0x800, NOMEMALLOC 0x80000, THISNODE
 * 0x200000.  A lone hex number is a whole mask, so, as gfpflags_allow_blocking() would say,
 * a nonzero mask without __GFP_DIRECT_RECLAIM is an atomic (non-blocking) request, and one
 * without __GFP_KSWAPD_RECLAIM does not wake kswapd; in "NAMES|0x..." the hex part only holds
 * leftover bits and says nothing about reclaim.  Kernels before 6.3 had ___GFP_ATOMIC at
 * 0x200; that bit is ignored here (it is unused in 6.12), but the name __GFP_ATOMIC is known,
 * as is __GFP_NO_KSWAPD (before 4.4).
 */
#include "trace/trace_internal.h"

#include <string.h>

struct gfp_name {
  const char *name;
  uint8_t len;
  uint32_t bits;
  uint32_t clears; /* "lacks" bits this name takes away */
};

#define N(s, b)                                                                                    \
  { s, sizeof(s) - 1, b, 0 }
#define C(s, c)                                                                                    \
  { s, sizeof(s) - 1, 0, c }
#define GFP_LACKS_RECLAIM (BH_GFP_ATOMIC | BH_GFP_NO_KSWAPD)

static const struct gfp_name gfp_names[] = {
    /* composites, most frequent first */
    N("GFP_HIGHUSER_MOVABLE", BH_GFP_MOVABLE | BH_GFP_HIGHMEM),
    N("GFP_KERNEL", 0),
    N("GFP_KERNEL_ACCOUNT", 0),
    N("GFP_NOWAIT", BH_GFP_ATOMIC),
    N("GFP_ATOMIC", BH_GFP_ATOMIC | BH_GFP_HIGH),
    N("GFP_TRANSHUGE", BH_GFP_TRANSHUGE),
    N("GFP_TRANSHUGE_LIGHT", BH_GFP_TRANSHUGE_LIGHT),
    N("GFP_HIGHUSER", BH_GFP_HIGHMEM),
    N("GFP_USER", 0),
    N("GFP_NOFS", 0),
    N("GFP_NOIO", 0),
    N("GFP_DMA", BH_GFP_DMA),
    N("GFP_DMA32", BH_GFP_DMA32),
    N("none", 0),
    /* single flags that matter */
    N("__GFP_ZERO", BH_GFP_ZERO),
    N("__GFP_DMA", BH_GFP_DMA),
    N("__GFP_DMA32", BH_GFP_DMA32),
    N("__GFP_HIGHMEM", BH_GFP_HIGHMEM),
    N("__GFP_MOVABLE", BH_GFP_MOVABLE),
    N("__GFP_RECLAIMABLE", BH_GFP_RECLAIMABLE),
    N("__GFP_HIGH", BH_GFP_HIGH),
    N("__GFP_ATOMIC", BH_GFP_ATOMIC),
    N("__GFP_THISNODE", BH_GFP_THISNODE),
    N("__GFP_NOMEMALLOC", BH_GFP_NOMEMALLOC),
    N("__GFP_NO_KSWAPD", BH_GFP_NO_KSWAPD),
    C("__GFP_RECLAIM", GFP_LACKS_RECLAIM),
    C("__GFP_DIRECT_RECLAIM", BH_GFP_ATOMIC),
    C("__GFP_KSWAPD_RECLAIM", BH_GFP_NO_KSWAPD),
    /* kernel flags without a model counterpart (6.12 and a few older names) */
    N("__GFP_COMP", 0),
    N("__GFP_NOWARN", 0),
    N("__GFP_ACCOUNT", 0),
    N("__GFP_IO", 0),
    N("__GFP_FS", 0),
    N("__GFP_RETRY_MAYFAIL", 0),
    N("__GFP_NOFAIL", 0),
    N("__GFP_NORETRY", 0),
    N("__GFP_MEMALLOC", 0),
    N("__GFP_HARDWALL", 0),
    N("__GFP_WRITE", 0),
    N("__GFP_ZEROTAGS", 0),
    N("__GFP_SKIP_ZERO", 0),
    N("__GFP_SKIP_KASAN", 0),
    N("__GFP_SKIP_KASAN_POISON", 0),
    N("__GFP_SKIP_KASAN_UNPOISON", 0),
    N("__GFP_NOLOCKDEP", 0),
    N("__GFP_NO_OBJ_EXT", 0),
    N("__GFP_COLD", 0),
    N("__GFP_NOTRACK", 0),
    N("__GFP_OTHER_NODE", 0),
    N("__GFP_REPEAT", 0),
    N("__GFP_WAIT", 0),
    N("__GFP_NOACCOUNT", 0),
};

#undef N
#undef C

/* Linux 6.12 x86-64 bit values (include/linux/gfp_types.h). */
#define K_GFP_DMA 0x1u
#define K_GFP_HIGHMEM 0x2u
#define K_GFP_DMA32 0x4u
#define K_GFP_MOVABLE 0x8u
#define K_GFP_RECLAIMABLE 0x10u
#define K_GFP_HIGH 0x20u
#define K_GFP_ZERO 0x100u
#define K_GFP_DIRECT_RECLAIM 0x400u
#define K_GFP_KSWAPD_RECLAIM 0x800u
#define K_GFP_NOMEMALLOC 0x80000u
#define K_GFP_THISNODE 0x200000u

static uint32_t kernel_bits_to_bh(uint64_t k) {
  uint32_t g = 0;
  if (k & K_GFP_DMA)
    g |= BH_GFP_DMA;
  if (k & K_GFP_HIGHMEM)
    g |= BH_GFP_HIGHMEM;
  if (k & K_GFP_DMA32)
    g |= BH_GFP_DMA32;
  if (k & K_GFP_MOVABLE)
    g |= BH_GFP_MOVABLE;
  if (k & K_GFP_RECLAIMABLE)
    g |= BH_GFP_RECLAIMABLE;
  if (k & K_GFP_HIGH)
    g |= BH_GFP_HIGH;
  if (k & K_GFP_ZERO)
    g |= BH_GFP_ZERO;
  if (k & K_GFP_THISNODE)
    g |= BH_GFP_THISNODE;
  if (k & K_GFP_NOMEMALLOC)
    g |= BH_GFP_NOMEMALLOC;
  return g;
}

/* "0x" followed by 1..16 hex digits.  Returns false if s is not such a number. */
static bool parse_hex_mask(const char *s, size_t n, uint64_t *out) {
  if (n < 3 || n > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
    return false;
  uint64_t v = 0;
  for (size_t i = 2; i < n; i++) {
    char c = s[i];
    unsigned d;
    if (c >= '0' && c <= '9')
      d = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      d = (unsigned)(c - 'A' + 10);
    else
      return false;
    v = v << 4 | d;
  }
  *out = v;
  return true;
}

/* Looks one name up.  Returns true and its bits (and the bits it clears) if known. */
static bool lookup_name(const char *s, size_t n, uint32_t *bits, uint32_t *clears) {
  for (size_t i = 0; i < sizeof(gfp_names) / sizeof(gfp_names[0]); i++) {
    if (gfp_names[i].len == n && memcmp(gfp_names[i].name, s, n) == 0) {
      *bits = gfp_names[i].bits;
      *clears = gfp_names[i].clears;
      return true;
    }
  }
  return false;
}

int bh_gfp_parse(const char *s, size_t len, uint32_t *gfp) {
  if (!s || !gfp)
    return BH_EINVAL;
  if (len == 0)
    return BH_EFORMAT;
  uint32_t g = 0;
  int unknown = 0;
  uint64_t k;
  if (memchr(s, '|', len) == NULL && parse_hex_mask(s, len, &k)) {
    /* a whole mask printed as hex: also decide blocking from __GFP_DIRECT_RECLAIM */
    g = kernel_bits_to_bh(k);
    if (k != 0 && !(k & K_GFP_DIRECT_RECLAIM))
      g |= BH_GFP_ATOMIC;
    if (k != 0 && !(k & K_GFP_KSWAPD_RECLAIM))
      g |= BH_GFP_NO_KSWAPD;
    *gfp = g;
    return 0;
  }
  uint32_t cleared = 0;
  size_t i = 0;
  while (i <= len) {
    const char *bar = memchr(s + i, '|', len - i);
    size_t end = bar ? (size_t)(bar - s) : len;
    if (end == i)
      return BH_EFORMAT; /* empty name */
    uint32_t bits, clears;
    if (lookup_name(s + i, end - i, &bits, &clears)) {
      g |= bits;
      cleared |= clears;
    } else if (parse_hex_mask(s + i, end - i, &k))
      g |= kernel_bits_to_bh(k);
    else
      unknown++;
    i = end + 1;
  }
  *gfp = g & ~cleared;
  return unknown;
}

/* The one name written for each bit, in bit order. */
static const struct gfp_name gfp_bit_names[] = {
    {"__GFP_DMA", 9, BH_GFP_DMA, 0},
    {"__GFP_HIGHMEM", 13, BH_GFP_HIGHMEM, 0},
    {"__GFP_DMA32", 11, BH_GFP_DMA32, 0},
    {"__GFP_MOVABLE", 13, BH_GFP_MOVABLE, 0},
    {"__GFP_RECLAIMABLE", 17, BH_GFP_RECLAIMABLE, 0},
    {"__GFP_HIGH", 10, BH_GFP_HIGH, 0},
    {"__GFP_ATOMIC", 12, BH_GFP_ATOMIC, 0},
    {"__GFP_ZERO", 10, BH_GFP_ZERO, 0},
    {"__GFP_THISNODE", 14, BH_GFP_THISNODE, 0},
    {"__GFP_NO_KSWAPD", 15, BH_GFP_NO_KSWAPD, 0},
    {"__GFP_NOMEMALLOC", 16, BH_GFP_NOMEMALLOC, 0},
};

int bh_gfp_format(uint32_t gfp, char *buf, size_t size) {
  if (!buf && size)
    return BH_EINVAL;
  uint32_t named = 0;
  size_t nb = sizeof(gfp_bit_names) / sizeof(gfp_bit_names[0]);
  for (size_t i = 0; i < nb; i++)
    named |= gfp_bit_names[i].bits;
  if (gfp & ~named)
    return BH_EINVAL;
  if (gfp == 0) {
    if (size < 5)
      return BH_ENOSPC;
    memcpy(buf, "none", 5);
    return 4;
  }
  size_t len = 0;
  for (size_t i = 0; i < nb; i++) {
    if (!(gfp & gfp_bit_names[i].bits))
      continue;
    size_t need = gfp_bit_names[i].len + (len ? 1 : 0);
    if (len + need + 1 > size)
      return BH_ENOSPC;
    if (len)
      buf[len++] = '|';
    memcpy(buf + len, gfp_bit_names[i].name, gfp_bit_names[i].len);
    len += gfp_bit_names[i].len;
  }
  buf[len] = '\0';
  return (int)len;
}

/* The memo slot of a gfp text: its length and its first and last (up to) 8 bytes, mixed. */
static unsigned gfp_memo_slot(const char *s, size_t n) {
  uint64_t a = 0, b = 0;
  size_t k = n < 8 ? n : 8;
  memcpy(&a, s, k);
  memcpy(&b, s + n - k, k);
  uint64_t x = ((a * 0x9e3779b97f4a7c15ull) ^ b ^ n) * 0xff51afd7ed558ccdull;
  return (unsigned)(x >> 56); /* 256 slots */
}

int bh__gfp_parse_cached(bh__tparse_t *p, const char *s, size_t n, uint32_t *gfp) {
  if (n == p->gfp_len && n && memcmp(s, p->gfp_text, n) == 0) {
    *gfp = p->gfp_bits;
    p->gfp_unknown += (uint64_t)p->gfp_unknown_last;
    return p->gfp_unknown_last;
  }
  struct bh__gfp_memo *m = &p->gfp_memo[gfp_memo_slot(s, n)];
  int r;
  if (m->len == n && n && memcmp(s, m->text, n) == 0) { /* len 0 is an empty entry */
    *gfp = m->bits;
    r = m->unknown;
  } else {
    r = bh_gfp_parse(s, n, gfp);
    if (r < 0)
      return r;
    if (n <= sizeof(m->text)) {
      memcpy(m->text, s, n);
      m->len = n;
      m->bits = *gfp;
      m->unknown = r;
    }
  }
  p->gfp_unknown += (uint64_t)r;
  if (n <= sizeof(p->gfp_text)) {
    memcpy(p->gfp_text, s, n);
    p->gfp_len = n;
    p->gfp_bits = *gfp;
    p->gfp_unknown_last = r;
  }
  return r;
}
