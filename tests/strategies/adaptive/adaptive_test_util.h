/* Helpers of the adaptive hinting tests: crafted arenas with free blocks of chosen orders. */
#ifndef BH_TESTS_ADAPTIVE_UTIL_H
#define BH_TESTS_ADAPTIVE_UTIL_H

#include "strategies/bubble/bubble_test_util.h"

/* Attaches strategy `name` with options "k=v k=v" (NULL: none) in the given clock. */
static inline bh_hint_t *at_attach(bh_arena_t *a, const char *name, bh_clock_mode_t clock,
                                   const char *opts) {
  char buf[512];
  bh_opt_t o[16];
  size_t n = 0;
  snprintf(buf, sizeof buf, "%s", opts ? opts : "");
  for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok && n < 16;
       tok = strtok_r(NULL, " ", &save)) {
    char *eq = strchr(tok, '=');
    if (eq)
      *eq = 0;
    o[n].key = tok;
    o[n].value = eq ? eq + 1 : "";
    n++;
  }
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = name;
  hc.opts = o;
  hc.nopts = n;
  hc.clock = clock;
  bh_hint_t *h = NULL;
  int err = bh_hint_attach(a, &hc, &h);
  if (err) {
    fprintf(stderr, "bh_hint_attach(%s %s): %s: %s\n", name, opts ? opts : "", bh_strerror(err),
            bh_hint_last_error());
    return NULL;
  }
  return h;
}

/*
 * A crafted arena: one Normal zone of `bytes` (pcp off), filled with order-9 blocks, of which
 * `room` are freed again (free memory at order >= 9 for the watermark gates, reported by the
 * pageblock-order part), with no free block left between order 3 and order 8.  Then `nreg`
 * order-9 regions are cut into 64 allocated order-3 blocks each, so that a test can free
 * chosen pieces of them: region[i] is the first pfn of region i.
 */
struct at_craft {
  bh_arena_t *a;
  uint64_t region[16];
  int nreg;
};

static inline bool at_craft_init(struct at_craft *c, enum bh_backing backing, uint64_t bytes,
                                 size_t room, int nreg) {
  memset(c, 0, sizeof(*c));
  c->a = bt_arena(backing, bytes, false, 128);
  if (!c->a || nreg > 16)
    return false;
  size_t n;
  uint64_t *p9 = bt_fill(c->a, 9, &n);
  /* free `room` blocks from the top, keeping the regions to cut (from the bottom, each with
   * its buddy allocated, so that it cannot merge when freed) */
  if (n < room + 2 * (size_t)nreg + 2)
    return false;
  for (size_t i = 0; i < room; i++)
    if (bh_free_pfn(c->a, p9[n - 1 - i], 9, 0))
      return false;
  /* the small blocks the fill left below the watermark: take every one of orders 3..8 */
  bh_zone_t *z = bh_arena_zone(c->a, 0);
  for (unsigned k = 3; k < 9; k++) {
    for (int tries = 0; tries < 4096; tries++) {
      bh_zone_lock(z);
      uint64_t nr = bh_zone_nr_free(z, k);
      bh_zone_unlock(z);
      uint64_t pfn;
      if (!nr || bh_alloc_pfn(c->a, BH_GFP_USER_MOVABLE, k, 0, &pfn))
        break;
    }
  }
  for (unsigned k = 3; k < 9; k++) {
    bh_zone_lock(z);
    uint64_t nr = bh_zone_nr_free(z, k);
    bh_zone_unlock(z);
    if (nr)
      return false;
  }
  /* regions from the bottom, each with its buddy allocated so that it cannot merge */
  size_t i = 0;
  while (c->nreg < nreg && i + 1 < n - room) {
    uint64_t R = p9[i];
    if ((R & 512) || p9[i + 1] != (R ^ 512)) {
      i++;
      continue;
    }
    i += 2;
    if (bh_free_pfn(c->a, R, 9, 0))
      return false;
    bool got[64] = {false};
    for (int j = 0; j < 64; j++) {
      uint64_t pfn;
      if (bh_alloc_pfn(c->a, BH_GFP_USER_MOVABLE, 3, 0, &pfn) || pfn < R || pfn >= R + 512 ||
          got[(pfn - R) >> 3])
        return false;
      got[(pfn - R) >> 3] = true;
    }
    c->region[c->nreg++] = R;
  }
  if (c->nreg < nreg)
    return false;
  free(p9);
  return true;
}

/* Frees the order-3 pieces [first, first + count) of region r (piece i = pfn R + 8 i). */
static inline void at_free_pieces(struct at_craft *c, int r, unsigned first, unsigned count) {
  for (unsigned i = first; i < first + count; i++)
    if (bh_free_pfn(c->a, c->region[r] + 8ull * i, 3, 0)) {
      fprintf(stderr, "at_free_pieces: region %d piece %u\n", r, i);
      abort();
    }
}

/* Free pages in blocks of orders [lo, hi), and how many of them are reported. */
static inline void at_free_range(bh_arena_t *a, unsigned lo, unsigned hi, uint64_t *total,
                                 uint64_t *reported) {
  *total = *reported = 0;
  for (int i = 0; i < bh_arena_zone_count(a); i++) {
    bh_zone_t *z = bh_arena_zone(a, i);
    bh_zone_lock(z);
    for (unsigned o = lo; o < hi; o++)
      for (int mt = 0; mt < BH_MT_TYPES; mt++)
        for (uint64_t p = bh_free_list_first(z, o, mt); p != BH_PFN_NONE;
             p = bh_free_list_next(z, o, mt, p)) {
          *total += 1ull << o;
          if (bh_block_reported(z, p))
            *reported += 1ull << o;
        }
    bh_zone_unlock(z);
  }
}

#endif
