/*
 * Counters and dumps.  The counters are declared once in BH_STAT_FIELDS; the zone keeps the
 * ones counted under its lock, each pcp the ones counted under its own, and a read sums them.
 * The dumps print /proc/buddyinfo, /proc/pagetypeinfo and the watermark part of
 * /proc/zoneinfo in the kernel's exact formats (mm/vmstat.c).
 */
#include "buddy/internal.h"

#include <string.h>

#define X(name, help) #name,
static const char *const stat_names[BH_NR_STATS] = {BH_STAT_FIELDS(X)};
#undef X
#define X(name, help) help,
static const char *const stat_helps[BH_NR_STATS] = {BH_STAT_FIELDS(X)};
#undef X

const char *bh_stat_name(int s) { return s >= 0 && s < BH_NR_STATS ? stat_names[s] : NULL; }
const char *bh_stat_help(int s) { return s >= 0 && s < BH_NR_STATS ? stat_helps[s] : NULL; }

void bh_stats_read(const bh_arena_t *ca, uint64_t out[BH_NR_STATS]) {
  bh_arena_t *a = (bh_arena_t *)ca; /* locks are taken; the counters are not changed */
  if (!out)
    return;
  memset(out, 0, sizeof(uint64_t) * BH_NR_STATS);
  for (int i = 0; a && i < a->nr_zones; i++) {
    bh_zone_t *z = &a->zones[i];
    bh__zone_lock(z);
    for (int s = 0; s < BH_NR_STATS; s++)
      out[s] += z->ev[s];
    bh__zone_unlock(z);
    out[BH_STAT_wmark_fail] += atomic_load_explicit(&z->wmark_fail, memory_order_relaxed);
    for (unsigned c = 0; z->pcp && c < a->cfg.nr_cpus; c++) {
      bh__pcp_t *pcp = &z->pcp[c];
      bh__pcp_lock(pcp);
      for (int s = 0; s < BH_NR_STATS; s++)
        out[s] += pcp->ev[s];
      bh__pcp_unlock(pcp);
    }
  }
  /* Every allocation counts alloc_calls and, served by another node than intended,
   * numa_miss: numa_hit is the rest, derived here rather than counted on the hot path. */
  out[BH_STAT_numa_hit] = out[BH_STAT_alloc_calls] - out[BH_STAT_numa_miss];
}

int bh_zone_count(const bh_arena_t *a) { return a ? a->nr_zones : 0; }

int bh_zone_info(bh_arena_t *a, int i, bh_zone_info_t *o) {
  if (!a || !o || i < 0 || i >= a->nr_zones)
    return BH_EINVAL;
  bh_zone_t *z = &a->zones[i];
  memset(o, 0, sizeof(*o));
  /* every pcp lock of the zone, then its lock (bh_arena_check's order): one snapshot, so that
   * no page a refill or a drain is moving counts both free and on a pcp list */
  for (unsigned c = 0; z->pcp && c < a->cfg.nr_cpus; c++)
    bh__pcp_lock(&z->pcp[c]);
  bh__zone_lock(z);
  o->node = z->node;
  o->type = z->type;
  o->start_pfn = z->zone_start_pfn;
  o->spanned_pages = z->zone_spanned_pages;
  o->present_pages = z->present_pages;
  o->managed_pages = z->managed_pages;
  o->free_pages = (uint64_t)atomic_load(&z->free_pages);
  o->isolated_pages = (uint64_t)z->isolated_pages;
  o->wmark_min = z->watermark[BH__WMARK_MIN];
  o->wmark_low = z->watermark[BH__WMARK_LOW];
  o->wmark_high = z->watermark[BH__WMARK_HIGH];
  o->wmark_boost = atomic_load(&z->watermark_boost);
  memcpy(o->lowmem_reserve, z->lowmem_reserve, sizeof(o->lowmem_reserve));
  o->nr_reserved_highatomic = z->nr_reserved_highatomic;
  o->pcp_batch = z->pcp_batch;
  o->pcp_high = z->pcp_high_min;
  for (unsigned ord = 0; ord <= a->max_order; ord++) {
    o->nr_free[ord] = z->nr_free[ord];
    for (int mt = 0; mt < BH_MT_TYPES; mt++) {
      uint64_t n = 0;
      uint32_t head = bh__free_list(z, ord, mt);
      for (uint32_t x = a->pages[head].next; x != head; x = a->pages[x].next)
        n++;
      o->nr_free_mt[ord][mt] = n;
    }
  }
  uint64_t pb = 1ull << a->pb_order;
  for (uint64_t pfn = z->start_pfn; pfn < z->start_pfn + z->spanned_pages; pfn += pb)
    if (!(a->pageblock[pfn >> a->pb_order] & BH__PB_ABSENT)) /* as pagetypeinfo counts */
      o->pageblocks[bh__pb_mt(a, pfn)]++;
  for (unsigned c = 0; z->pcp && c < a->cfg.nr_cpus; c++)
    o->pcp_pages += (uint64_t)z->pcp[c].count;
  bh__zone_unlock(z);
  for (unsigned c = 0; z->pcp && c < a->cfg.nr_cpus; c++)
    bh__pcp_unlock(&z->pcp[c]);
  return BH_OK;
}

#define OUT(...)                                                                                   \
  do {                                                                                             \
    if (fprintf(out, __VA_ARGS__) < 0)                                                             \
      return BH_EIO;                                                                               \
  } while (0)

int bh_dump_buddyinfo(bh_arena_t *a, FILE *out) {
  bh_zone_info_t zi;
  if (!a || !out)
    return BH_EINVAL;
  for (int i = 0; i < a->nr_zones; i++) {
    bh_zone_info(a, i, &zi);
    OUT("Node %d, zone %8s ", zi.node, bh_zone_name(zi.type));
    for (unsigned o = 0; o <= a->max_order; o++)
      OUT("%6lu ", (unsigned long)zi.nr_free[o]);
    OUT("\n");
  }
  return ferror(out) ? BH_EIO : BH_OK;
}

/* pagetypeinfo_show, once per node as the kernel prints it. */
static int pagetypeinfo_node(bh_arena_t *a, int node, FILE *out) {
  bh_zone_info_t zi;
  OUT("Page block order: %u\n", a->pb_order);
  OUT("Pages per block:  %lu\n\n", 1ul << a->pb_order);
  OUT("%-43s ", "Free pages count per migrate type at order");
  for (unsigned o = 0; o <= a->max_order; o++)
    OUT("%6u ", o);
  OUT("\n");
  for (int i = 0; i < a->nr_zones; i++) {
    if (a->zones[i].node != node)
      continue;
    bh_zone_info(a, i, &zi);
    for (int mt = 0; mt < BH_MT_TYPES; mt++) {
      OUT("Node %4d, zone %8s, type %12s ", zi.node, bh_zone_name(zi.type),
          bh_migratetype_name(mt));
      for (unsigned o = 0; o <= a->max_order; o++) {
        uint64_t n = zi.nr_free_mt[o][mt];
        /* the kernel stops counting at 100000 and then prints ">100000" */
        OUT("%s%6lu ", n >= 100000 ? ">" : "", (unsigned long)(n > 100000 ? 100000 : n));
      }
      OUT("\n");
    }
  }
  OUT("\n%-23s", "Number of blocks type ");
  for (int mt = 0; mt < BH_MT_TYPES; mt++)
    OUT("%12s ", bh_migratetype_name(mt));
  OUT("\n");
  for (int i = 0; i < a->nr_zones; i++) {
    if (a->zones[i].node != node)
      continue;
    bh_zone_info(a, i, &zi);
    OUT("Node %d, zone %8s ", zi.node, bh_zone_name(zi.type));
    for (int mt = 0; mt < BH_MT_TYPES; mt++)
      OUT("%12lu ", (unsigned long)zi.pageblocks[mt]);
    OUT("\n");
  }
  return BH_OK;
}

int bh_dump_pagetypeinfo(bh_arena_t *a, FILE *out) {
  if (!a || !out)
    return BH_EINVAL;
  for (unsigned n = 0; n < a->cfg.nr_nodes; n++) {
    int err = pagetypeinfo_node(a, (int)n, out);
    if (err)
      return err;
  }
  return ferror(out) ? BH_EIO : BH_OK;
}

/* The watermark and pageset part of zoneinfo_show_print (per-zone counters left out). */
int bh_dump_zoneinfo(bh_arena_t *a, FILE *out) {
  bh_zone_info_t zi;
  if (!a || !out)
    return BH_EINVAL;
  for (int i = 0; i < a->nr_zones; i++) {
    bh_zone_info(a, i, &zi);
    OUT("Node %d, zone %8s", zi.node, bh_zone_name(zi.type));
    OUT("\n  pages free     %lu", (unsigned long)zi.free_pages);
    OUT("\n        boost    %lu", (unsigned long)zi.wmark_boost);
    OUT("\n        min      %lu", (unsigned long)zi.wmark_min);
    OUT("\n        low      %lu", (unsigned long)zi.wmark_low);
    OUT("\n        high     %lu", (unsigned long)zi.wmark_high);
    OUT("\n        promo    %lu", (unsigned long)(2 * zi.wmark_high - zi.wmark_low));
    OUT("\n        spanned  %lu", (unsigned long)zi.spanned_pages);
    OUT("\n        present  %lu", (unsigned long)zi.present_pages);
    OUT("\n        managed  %lu", (unsigned long)zi.managed_pages);
    OUT("\n        cma      %lu", 0ul);
    OUT("\n        protection: (%ld", (long)zi.lowmem_reserve[0]);
    for (int t = 1; t < BH_NR_ZONE_TYPES; t++)
      OUT(", %ld", (long)zi.lowmem_reserve[t]);
    OUT(")");
    OUT("\n      %-12s %lu", "nr_free_pages", (unsigned long)zi.free_pages);
    OUT("\n  pagesets");
    for (unsigned c = 0; a->zones[i].pcp && c < a->cfg.nr_cpus; c++) {
      bh__pcp_t *pcp = &a->zones[i].pcp[c];
      bh__pcp_lock(pcp);
      int count = pcp->count, high = pcp->high, batch = pcp->batch;
      bh__pcp_unlock(pcp);
      OUT("\n    cpu: %u", c);
      OUT("\n              count: %d", count);
      OUT("\n              high:  %d", high);
      OUT("\n              batch: %d", batch);
    }
    OUT("\n  start_pfn:           %lu\n", (unsigned long)zi.start_pfn);
  }
  return ferror(out) ? BH_EIO : BH_OK;
}

int bh_dump_vmstat(const bh_arena_t *a, FILE *out) {
  uint64_t v[BH_NR_STATS];
  if (!a || !out)
    return BH_EINVAL;
  bh_stats_read(a, v);
  for (int s = 0; s < BH_NR_STATS; s++)
    OUT("%s %lu\n", stat_names[s], (unsigned long)v[s]);
  return ferror(out) ? BH_EIO : BH_OK;
}

int bh_dump_stats_json(const bh_arena_t *a, FILE *out) {
  uint64_t v[BH_NR_STATS];
  if (!a || !out)
    return BH_EINVAL;
  bh_stats_read(a, v);
  OUT("{");
  for (int s = 0; s < BH_NR_STATS; s++)
    OUT("%s\"%s\": %lu", s ? ", " : "", stat_names[s], (unsigned long)v[s]);
  OUT("}\n");
  return ferror(out) ? BH_EIO : BH_OK;
}
