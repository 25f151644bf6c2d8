/*
 * Bitmap page hinting, after Nitesh Narayan Lal's "mm: page_hinting" series (v10/v11, 2019).
 *
 * Each zone has a bitmap with one bit per chunk of 2^chunk_order pages (order MAX_ORDER - 2 in
 * the series' terms, i.e. order 9 with the default max order 10).  When a freed block ends its
 * merge at chunk order or above, the post-merge hook sets the bit of the block's first chunk
 * and, if it was clear, counts it; when a zone's count reaches the threshold (16) the worker
 * is woken at once (the series queues work on the current CPU).
 *
 * The worker scans each zone whose count reached the threshold from the first bit: for every
 * set bit it takes the zone lock, isolates the chunk if it is still the head of a free block
 * of at least chunk order (the kernel's __isolate_free_page, with its watermark check), and
 * clears the bit either way; bits are never cleared on allocation, so a bit only means "was
 * free once" and stale bits cost a lookup.  Every `batch` (16) isolated blocks are reported to
 * the host and then returned to the free lists without setting their bits again.
 *
 * Differences from the series, each named: the bitmaps are per zone, not per zone type (the
 * v11 arrays indexed by zone type overwrote each other across NUMA nodes); `clear_on_alloc=1`
 * clears a chunk's bit when its block is allocated (not in the series, for comparison);
 * `recheck=1` rescans at the end of a pass when frees during the pass filled a zone again
 * (the series' page_hinting_active flag left such bits waiting for the next free).
 */
#include "buddy/internal.h"
#include "hinting/hint.h"

#include <stdlib.h>
#include <string.h>

struct bm_zone {
  bh_zone_t *zone;
  uint64_t *bits;
  uint64_t nbits, base_pfn;
  uint64_t count; /* bits set since the worker last looked (the series' free_pages) */
  /* counters, under the zone lock */
  uint64_t bits_set, stale_bits, isolated, isolate_fail, cleared_on_alloc;
};

struct bm {
  bh_hint_t *h;
  unsigned chunk_order, threshold, batch;
  bool clear_on_alloc, recheck;
  int nzones;
  struct bm_zone *zones;
  /* written by the worker, read by bm_stats from any thread */
  _Atomic uint64_t passes, scanned_bits, reported_blocks, reported_pages, putback, report_calls;
};

static struct bm_zone *bm_zone_of(struct bm *bm, bh_zone_t *z) {
  return &bm->zones[bh_zone_index(z)];
}

static void bm_notify(void *state, bh_zone_t *z, uint64_t pfn, unsigned order) {
  struct bm *bm = state;
  struct bm_zone *bz = bm_zone_of(bm, z);
  uint64_t bit = (pfn - bz->base_pfn) >> bm->chunk_order;
  uint64_t mask = 1ull << (bit & 63);
  if (__atomic_fetch_or(&bz->bits[bit >> 6], mask, __ATOMIC_RELAXED) & mask)
    return;
  bz->bits_set++;
  if (++bz->count == bm->threshold)
    bh_hint_request(bm->h, 0);
}

static void bm_del(void *state, bh_zone_t *z, uint64_t pfn, unsigned order, int reason) {
  struct bm *bm = state;
  if (reason != BH_DEL_ALLOC || !bm->clear_on_alloc)
    return;
  struct bm_zone *bz = bm_zone_of(bm, z);
  uint64_t bit = (pfn - bz->base_pfn) >> bm->chunk_order;
  uint64_t mask = 1ull << (bit & 63);
  if (__atomic_fetch_and(&bz->bits[bit >> 6], ~mask, __ATOMIC_RELAXED) & mask) {
    bz->count--;
    bz->cleared_on_alloc++;
  }
}

/* Reports the isolated blocks, then puts them back (tail, no new notification). */
static void flush_batch(struct bm *bm, bh_zone_t *z, bh_report_range_t *r, size_t *n) {
  if (!*n)
    return;
  bh_hint_report(bm->h, r, *n);
  bm->report_calls++;
  bh_zone_lock(z);
  for (size_t i = 0; i < *n; i++) {
    bh_zone_putback(z, r[i].pfn, r[i].order, NULL);
    bm->reported_blocks++;
    bm->reported_pages += (uint64_t)1 << r[i].order;
    bm->putback++;
  }
  bh_zone_unlock(z);
  *n = 0;
}

/* Examines one set bit under the zone lock: isolate the chunk if it is still free. */
static bool take_bit(struct bm *bm, struct bm_zone *bz, uint64_t bit, bh_report_range_t *out) {
  bh_zone_t *z = bz->zone;
  uint64_t pfn = bz->base_pfn + (bit << bm->chunk_order);
  unsigned order;
  bool taken = false;
  bh_zone_lock(z);
  uint64_t mask = 1ull << (bit & 63);
  if (__atomic_fetch_and(&bz->bits[bit >> 6], ~mask, __ATOMIC_RELAXED) & mask) {
    bz->count--;
    if (bh_zone_free_block(z, pfn, &order, NULL) && order >= bm->chunk_order) {
      if (bh_zone_isolate(z, pfn, order) == BH_OK) {
        out->pfn = pfn;
        out->order = order;
        bz->isolated++;
        taken = true;
      } else {
        bz->isolate_fail++;
      }
    } else {
      bz->stale_bits++;
    }
  }
  bh_zone_unlock(z);
  return taken;
}

static void scan_zone(struct bm *bm, struct bm_zone *bz) {
  bh_report_range_t batch[BH_REPORT_CAPACITY];
  size_t n = 0;
  uint64_t words = (bz->nbits + 63) / 64;
  for (uint64_t wi = 0; wi < words; wi++) {
    uint64_t w = __atomic_load_n(&bz->bits[wi], __ATOMIC_RELAXED);
    bm->scanned_bits += 64;
    while (w) {
      uint64_t bit = wi * 64 + (uint64_t)__builtin_ctzll(w);
      w &= w - 1;
      if (take_bit(bm, bz, bit, &batch[n]) && ++n == bm->batch)
        flush_batch(bm, bz->zone, batch, &n);
    }
  }
  flush_batch(bm, bz->zone, batch, &n);
}

static bool zone_ready(struct bm *bm, struct bm_zone *bz) {
  bh_zone_lock(bz->zone);
  bool ready = bz->count >= bm->threshold;
  bh_zone_unlock(bz->zone);
  return ready;
}

static uint64_t bm_step(void *state, uint64_t now) {
  struct bm *bm = state;
  bm->passes++;
  for (int i = 0; i < bm->nzones; i++)
    if (zone_ready(bm, &bm->zones[i]))
      scan_zone(bm, &bm->zones[i]);
  if (bm->recheck)
    for (int i = 0; i < bm->nzones; i++)
      if (zone_ready(bm, &bm->zones[i]))
        return now + 1;
  return BH_HINT_IDLE;
}

static int bm_options(struct bm *bm, const bh_opt_t *opts, size_t nopts, unsigned max_order) {
  for (size_t i = 0; i < nopts; i++) {
    const bh_opt_t *o = &opts[i];
    uint64_t v;
    int err = BH_OK;
    if (!strcmp(o->key, "order")) {
      err = bh_opt_u64(o, 1, max_order, &v);
      bm->chunk_order = (unsigned)v;
    } else if (!strcmp(o->key, "threshold")) {
      err = bh_opt_u64(o, 1, 1u << 20, &v);
      bm->threshold = (unsigned)v;
    } else if (!strcmp(o->key, "batch")) {
      err = bh_opt_u64(o, 1, BH_REPORT_CAPACITY, &v);
      bm->batch = (unsigned)v;
    } else if (!strcmp(o->key, "clear_on_alloc")) {
      err = bh_opt_bool(o, &bm->clear_on_alloc);
    } else if (!strcmp(o->key, "recheck")) {
      err = bh_opt_bool(o, &bm->recheck);
    } else {
      bh_hint_set_error(bm->h, "bitmap: unknown option '%s'", o->key);
      return BH_EINVAL;
    }
    if (err) {
      bh_hint_set_error(bm->h, "bitmap: bad value '%s' for %s", o->value ? o->value : "",
                        o->key);
      return BH_EINVAL;
    }
  }
  return BH_OK;
}

static void bm_destroy(void *state) {
  struct bm *bm = state;
  for (int i = 0; bm->zones && i < bm->nzones; i++)
    free(bm->zones[i].bits);
  free(bm->zones);
  free(bm);
}

static int bm_create(bh_hint_t *h, const bh_opt_t *opts, size_t nopts, void **state) {
  bh_arena_t *a = bh_hint_arena(h);
  struct bm *bm = calloc(1, sizeof(*bm));
  if (!bm)
    return BH_ENOMEM;
  bm->h = h;
  bm->chunk_order = bh_arena_max_order(a) - 1;
  bm->threshold = 16;
  bm->batch = 16;
  int err = bm_options(bm, opts, nopts, bh_arena_max_order(a));
  bm->nzones = bh_arena_zone_count(a);
  bm->zones = err ? NULL : calloc((size_t)bm->nzones, sizeof(*bm->zones));
  for (int i = 0; !err && i < bm->nzones; i++) {
    struct bm_zone *bz = &bm->zones[i];
    bz->zone = bh_arena_zone(a, i);
    bz->base_pfn = bh_zone_start_pfn(bz->zone);
    bz->nbits = (bh_zone_pages(bz->zone) + (1ull << bm->chunk_order) - 1) >> bm->chunk_order;
    bz->bits = calloc((size_t)(bz->nbits + 63) / 64, sizeof(uint64_t));
    if (!bz->bits)
      err = BH_ENOMEM;
  }
  if (!err && !bm->zones)
    err = BH_ENOMEM;
  if (err) {
    bm_destroy(bm);
    return err;
  }
  *state = bm;
  bh_hint_set_orders(h, bm->chunk_order, bm->clear_on_alloc ? bm->chunk_order : UINT8_MAX);
  return BH_OK;
}

static void bm_stats(void *state, bh_stat_emit_fn emit, void *ctx) {
  struct bm *bm = state;
  uint64_t set = 0, stale = 0, iso = 0, fail = 0, coa = 0, pending = 0;
  for (int i = 0; i < bm->nzones; i++) {
    struct bm_zone *bz = &bm->zones[i];
    bh_zone_lock(bz->zone);
    set += bz->bits_set;
    stale += bz->stale_bits;
    iso += bz->isolated;
    fail += bz->isolate_fail;
    coa += bz->cleared_on_alloc;
    pending += bz->count;
    bh_zone_unlock(bz->zone);
  }
  emit(ctx, "bits_set", (double)set);
  emit(ctx, "stale_bits", (double)stale);
  emit(ctx, "bits_pending", (double)pending);
  emit(ctx, "cleared_on_alloc", (double)coa);
  emit(ctx, "isolated", (double)iso);
  emit(ctx, "isolate_fail", (double)fail);
  emit(ctx, "reported_blocks", (double)bm->reported_blocks);
  emit(ctx, "reported_pages", (double)bm->reported_pages);
  emit(ctx, "put_back", (double)bm->putback);
  emit(ctx, "report_batches", (double)bm->report_calls);
  emit(ctx, "passes", (double)bm->passes);
  emit(ctx, "scanned_bits", (double)bm->scanned_bits);
}

const bh_strategy_ops_t bh__strategy_bitmap = {
    .name = "bitmap",
    .summary = "bitmap page hinting (Nitesh Narayan Lal's v10/v11 series, per-zone bitmaps)",
    .options = "order=max_order-1  chunk order tracked by one bit\n"
               "threshold=16       set bits in a zone that wake the worker\n"
               "batch=16           isolated blocks per report (VIRTIO ..._MAX_PAGES)\n"
               "clear_on_alloc=0   clear a chunk's bit when its block is allocated\n"
               "recheck=0          rescan zones refilled during a pass\n",
    .create = bm_create,
    .destroy = bm_destroy,
    .notify = bm_notify,
    .del = bm_del,
    .step = bm_step,
    .stats = bm_stats,
};
