/*
 * Bitmap page hinting, after Nitesh Narayan Lal's "mm: page_hinting" series (v11, July 2019;
 * <20190710195158.19640-2-nitesh@redhat.com>).
 *
 * One bitmap and one counter per zone *type* (v11's free_area[MAX_NR_ZONES]): a type's bitmap
 * spans from the lowest start to the highest end of that type's zones over all nodes, one bit
 * per chunk of 2^chunk_order pages (MAX_ORDER - 2 in the series' terms, order 9 with the
 * default max order 10), plus one spare bit as the series allocated.  When a freed block ends
 * its merge at chunk order or above, the post-merge hook (page_hinting_enqueue) sets the bit
 * of the block's first chunk and, if it was clear, counts it.  Then, unless a worker pass is
 * running (page_hinting_active), it wakes the worker at once if the type's count is at least
 * the threshold (16): the count is looked at on every such free, so bits left set at the end
 * of a pass are picked up by the next qualifying free.
 *
 * The worker marks itself active and scans each zone type whose count reached the threshold,
 * from the first bit: for every set bit it takes the lock of the zone holding the chunk,
 * isolates the chunk if it is still the head of a free block of at least chunk order (the
 * kernel's __isolate_free_page, with its watermark check), and clears the bit either way; bits
 * are never cleared on allocation, so a bit only means "was free once" and stale bits cost a
 * lookup.  Every `batch` (16) isolated blocks are reported to the host and then released as
 * v11's release_buddy_pages did, with __free_one_page(..., hint = false): no new bit, and the
 * block goes where a plain free puts it, which for order 9 and 10 is the head of its list
 * (the tail test of __free_one_page only covers orders below MAX_ORDER - 2).  The next
 * allocation of that order takes the block just reported and refaults it.
 *
 * Options that are not in the series, each off by default: `per_zone=1` keeps one bitmap and
 * one counter per zone instead of per zone type (the threshold then counts one node's zone:
 * with several nodes a pass starts later, and a node's frees never start a pass for
 * another's; v11's per-type arrays were criticised on the list as breaking NUMA);
 * `putback_tail=1` releases reported blocks to the list tail as free page reporting does;
 * `clear_on_alloc=1` clears a chunk's bit when its block is allocated; `recheck=1` rescans at
 * the end of a pass when frees during the pass filled a zone type again.
 */
#include "strategies/strategies.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define BM_MAX_AREA_ZONES BH_MAX_NODES

/* One bitmap: a zone type (v11) or a zone (per_zone=1). */
struct bm_area {
  bh_zone_t *zones[BM_MAX_AREA_ZONES]; /* the zones whose chunks it tracks */
  int nzones;
  uint64_t *bits;
  uint64_t nbits, base_pfn;
  _Atomic uint64_t count; /* bits set since the worker last looked (v11's free_pages) */
  /* counters */
  _Atomic uint64_t bits_set, stale_bits, isolated, isolate_fail, cleared_on_alloc;
};

struct bm {
  bh_hint_t *h;
  unsigned chunk_order, threshold, batch;
  bool clear_on_alloc, recheck, per_zone, putback_tail;
  atomic_bool active; /* page_hinting_active: a worker pass is running */
  int nareas;
  struct bm_area *areas;
  int *area_of; /* zone index -> area */
  /* written by the worker, read by bm_stats from any thread */
  _Atomic uint64_t passes, scanned_bits, reported_blocks, reported_pages, putback, report_calls;
};

static inline uint64_t bump(_Atomic uint64_t *c, int64_t n) {
  return atomic_fetch_add_explicit(c, (uint64_t)n, memory_order_relaxed) + (uint64_t)n;
}

static inline uint64_t get(_Atomic uint64_t *c) {
  return atomic_load_explicit(c, memory_order_relaxed);
}

static struct bm_area *area_of(struct bm *bm, const bh_zone_t *z) {
  return &bm->areas[bm->area_of[bh_zone_index(z)]];
}

/* The zone of the area that holds pfn, or NULL (a pfn between two nodes' zones). */
static bh_zone_t *zone_of(const struct bm_area *ba, uint64_t pfn) {
  for (int i = 0; i < ba->nzones; i++) {
    uint64_t start = bh_zone_start_pfn(ba->zones[i]);
    if (pfn >= start && pfn < start + bh_zone_pages(ba->zones[i]))
      return ba->zones[i];
  }
  return NULL;
}

/* page_hinting_enqueue: under the freeing zone's lock. */
static void bm_notify(void *state, bh_zone_t *z, uint64_t pfn, unsigned order) {
  struct bm *bm = state;
  struct bm_area *ba = area_of(bm, z);
  uint64_t bit = (pfn - ba->base_pfn) >> bm->chunk_order;
  uint64_t mask = 1ull << (bit & 63);
  uint64_t count;
  if (!(__atomic_fetch_or(&ba->bits[bit >> 6], mask, __ATOMIC_RELAXED) & mask)) {
    bump(&ba->bits_set, 1);
    count = bump(&ba->count, 1);
  } else {
    count = get(&ba->count);
  }
  if (atomic_load_explicit(&bm->active, memory_order_relaxed))
    return;
  if (count >= bm->threshold)
    bh_hint_request(bm->h, 0); /* queue_work_on: a request already pending is kept */
}

static void bm_del(void *state, bh_zone_t *z, uint64_t pfn, unsigned order, int reason) {
  struct bm *bm = state;
  if (reason != BH_DEL_ALLOC || !bm->clear_on_alloc)
    return;
  struct bm_area *ba = area_of(bm, z);
  uint64_t bit = (pfn - ba->base_pfn) >> bm->chunk_order;
  uint64_t mask = 1ull << (bit & 63);
  if (__atomic_fetch_and(&ba->bits[bit >> 6], ~mask, __ATOMIC_RELAXED) & mask) {
    bump(&ba->count, -1);
    bump(&ba->cleared_on_alloc, 1);
  }
}

/* Reports the isolated blocks, then returns each under its zone's lock, without a new bit. */
static void flush_batch(struct bm *bm, struct bm_area *ba, bh_report_range_t *r, size_t *n) {
  if (!*n)
    return;
  bh_hint_report(bm->h, r, *n);
  bump(&bm->report_calls, 1);
  for (size_t i = 0; i < *n; i++) {
    bh_zone_t *z = zone_of(ba, r[i].pfn);
    bh_zone_lock(z);
    if (bm->putback_tail)
      bh_zone_putback(z, r[i].pfn, r[i].order, NULL);
    else
      bh_zone_release(z, r[i].pfn, r[i].order, NULL);
    bh_zone_unlock(z);
    bump(&bm->reported_blocks, 1);
    bump(&bm->reported_pages, (int64_t)1 << r[i].order);
    bump(&bm->putback, 1);
  }
  *n = 0;
}

/* Examines one set bit under its zone's lock: isolate the chunk if it is still free. */
static bool take_bit(struct bm *bm, struct bm_area *ba, uint64_t bit, bh_report_range_t *out) {
  uint64_t pfn = ba->base_pfn + (bit << bm->chunk_order);
  uint64_t mask = 1ull << (bit & 63);
  bh_zone_t *z = zone_of(ba, pfn);
  if (!z) { /* cannot happen: only a zone's own frees set bits */
    if (__atomic_fetch_and(&ba->bits[bit >> 6], ~mask, __ATOMIC_RELAXED) & mask)
      bump(&ba->count, -1);
    return false;
  }
  unsigned order;
  bool taken = false;
  bh_zone_lock(z);
  if (__atomic_fetch_and(&ba->bits[bit >> 6], ~mask, __ATOMIC_RELAXED) & mask) {
    bump(&ba->count, -1);
    if (bh_zone_free_block(z, pfn, &order, NULL) && order >= bm->chunk_order) {
      if (bh_zone_isolate(z, pfn, order) == BH_OK) {
        out->pfn = pfn;
        out->order = order;
        bump(&ba->isolated, 1);
        taken = true;
      } else {
        bump(&ba->isolate_fail, 1);
      }
    } else {
      bump(&ba->stale_bits, 1);
    }
  }
  bh_zone_unlock(z);
  return taken;
}

/* scan_zone_free_area */
static void scan_area(struct bm *bm, struct bm_area *ba) {
  bh_report_range_t batch[BH_REPORT_CAPACITY];
  size_t n = 0;
  uint64_t words = (ba->nbits + 63) / 64;
  for (uint64_t wi = 0; wi < words; wi++) {
    uint64_t w = __atomic_load_n(&ba->bits[wi], __ATOMIC_RELAXED);
    bump(&bm->scanned_bits, 64);
    while (w) {
      uint64_t bit = wi * 64 + (uint64_t)__builtin_ctzll(w);
      w &= w - 1;
      if (take_bit(bm, ba, bit, &batch[n]) && ++n == bm->batch)
        flush_batch(bm, ba, batch, &n);
    }
  }
  flush_batch(bm, ba, batch, &n);
}

static bool area_ready(struct bm *bm, struct bm_area *ba) {
  return get(&ba->count) >= bm->threshold;
}

/* init_hinting_wq: one pass over the zone types whose count reached the threshold. */
static uint64_t bm_step(void *state, uint64_t now) {
  struct bm *bm = state;
  atomic_store(&bm->active, true);
  bump(&bm->passes, 1);
  for (int i = 0; i < bm->nareas; i++)
    if (area_ready(bm, &bm->areas[i]))
      scan_area(bm, &bm->areas[i]);
  atomic_store(&bm->active, false);
  if (bm->recheck)
    for (int i = 0; i < bm->nareas; i++)
      if (area_ready(bm, &bm->areas[i]))
        return now + 1;
  return BH_HINT_IDLE;
}

static int bm_options(struct bm *bm, const bh_opt_t *opts, size_t nopts, unsigned max_order) {
  for (size_t i = 0; i < nopts; i++) {
    const bh_opt_t *o = &opts[i];
    uint64_t v;
    int err = BH_OK;
    if (!o->key) {
      bh_hint_set_error(bm->h, "bitmap: option without a name");
      return BH_EINVAL;
    } else if (!strcmp(o->key, "order")) {
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
    } else if (!strcmp(o->key, "per_zone")) {
      err = bh_opt_bool(o, &bm->per_zone);
    } else if (!strcmp(o->key, "putback_tail")) {
      err = bh_opt_bool(o, &bm->putback_tail);
    } else {
      bh_hint_set_error(bm->h, "bitmap: unknown option '%s'", o->key);
      return BH_EINVAL;
    }
    if (err) {
      bh_hint_set_error(bm->h, "bitmap: bad value '%s' for %s", o->value ? o->value : "", o->key);
      return BH_EINVAL;
    }
  }
  return BH_OK;
}

static void bm_destroy(void *state) {
  struct bm *bm = state;
  for (int i = 0; bm->areas && i < bm->nareas; i++)
    free(bm->areas[i].bits);
  free(bm->areas);
  free(bm->area_of);
  free(bm);
}

/*
 * Groups the zones into areas (per type, or one per zone) and sizes their bitmaps.  v11's
 * page_hinting_enable spans each bitmap from the lowest zone_start_pfn to the highest
 * zone_start_pfn + spanned_pages, the kernel's span: an x86 DMA zone starts at pfn 1, so its
 * chunk bits count from pfn 1 and the scan probes pfns 1, 513, .., never the head of a free
 * order-9 block: v11 never hinted DMA, and neither does this.
 */
static int bm_areas(struct bm *bm, bh_arena_t *a) {
  int nz = bh_zone_count(a);
  bm->area_of = calloc((size_t)nz, sizeof(*bm->area_of));
  bm->areas = calloc((size_t)nz, sizeof(*bm->areas));
  if (!bm->area_of || !bm->areas)
    return BH_ENOMEM;
  int type_area[BH_NR_ZONE_TYPES];
  for (int t = 0; t < BH_NR_ZONE_TYPES; t++)
    type_area[t] = -1;
  for (int i = 0; i < nz; i++) {
    bh_zone_t *z = bh_arena_zone(a, i);
    int t = bh_zone_type(z), k = bm->per_zone ? -1 : type_area[t];
    if (k < 0) {
      k = bm->nareas++;
      if (!bm->per_zone)
        type_area[t] = k;
    }
    struct bm_area *ba = &bm->areas[k];
    ba->zones[ba->nzones++] = z;
    bm->area_of[i] = k;
  }
  for (int k = 0; k < bm->nareas; k++) {
    struct bm_area *ba = &bm->areas[k];
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < ba->nzones; i++) {
      bh_zone_info_t zi;
      if (bh_zone_info(a, bh_zone_index(ba->zones[i]), &zi))
        return BH_EINVAL;
      uint64_t start = zi.start_pfn, end = start + zi.spanned_pages;
      lo = start < lo ? start : lo;
      hi = end > hi ? end : hi;
    }
    ba->base_pfn = lo;
    ba->nbits = ((hi - lo) >> bm->chunk_order) + 1; /* bitmap_size in page_hinting_enable */
    ba->bits = calloc((size_t)(ba->nbits + 63) / 64, sizeof(uint64_t));
    if (!ba->bits)
      return BH_ENOMEM;
  }
  return BH_OK;
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
  atomic_init(&bm->active, false);
  int err = bm_options(bm, opts, nopts, bh_arena_max_order(a));
  if (!err)
    err = bm_areas(bm, a);
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
  for (int i = 0; i < bm->nareas; i++) {
    struct bm_area *ba = &bm->areas[i];
    set += get(&ba->bits_set);
    stale += get(&ba->stale_bits);
    iso += get(&ba->isolated);
    fail += get(&ba->isolate_fail);
    coa += get(&ba->cleared_on_alloc);
    pending += get(&ba->count);
  }
  emit(ctx, "bits_set", (double)set);
  emit(ctx, "stale_bits", (double)stale);
  emit(ctx, "bits_pending", (double)pending);
  emit(ctx, "cleared_on_alloc", (double)coa);
  emit(ctx, "isolated", (double)iso);
  emit(ctx, "isolate_fail", (double)fail);
  emit(ctx, "reported_blocks", (double)get(&bm->reported_blocks));
  emit(ctx, "reported_pages", (double)get(&bm->reported_pages));
  emit(ctx, "put_back", (double)get(&bm->putback));
  emit(ctx, "report_batches", (double)get(&bm->report_calls));
  emit(ctx, "passes", (double)get(&bm->passes));
  emit(ctx, "scanned_bits", (double)get(&bm->scanned_bits));
}

const bh_strategy_ops_t bh__strategy_bitmap = {
    .name = "bitmap",
    .summary = "bitmap page hinting (Nitesh Narayan Lal's v11 series: bitmaps per zone type)",
    .options = "order=max_order-1  chunk order tracked by one bit\n"
               "threshold=16       set bits of a zone type that wake the worker\n"
               "batch=16           isolated blocks per report (VIRTIO ..._MAX_PAGES)\n"
               "per_zone=0         one bitmap per zone, not per zone type (not in v11)\n"
               "putback_tail=0     reported blocks back to the list tail (not in v11)\n"
               "clear_on_alloc=0   clear a chunk's bit when its block is allocated\n"
               "recheck=0          rescan zone types refilled during a pass\n",
    .create = bm_create,
    .destroy = bm_destroy,
    .notify = bm_notify,
    .del = bm_del,
    .step = bm_step,
    .stats = bm_stats,
};
