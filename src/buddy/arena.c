/*
 * Arena creation: the configuration, the memory layout (nodes → zones → pageblocks), the
 * zonelists, watermarks and lowmem reserves as mm/page_alloc.c computes them at boot, the
 * pcp sizes, and the initial free of every page (memblock_free_all).
 */
#include "buddy/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if BH_HAVE_NUMA
#include <numa.h>
#include <numaif.h>
#endif

#define MiB (1024ull * 1024)

void bh_config_init(bh_config_t *cfg) {
  if (!cfg)
    return;
  memset(cfg, 0, sizeof(*cfg));
  cfg->backing = BH_BACKING_MMAP;
  cfg->nr_nodes = 1;
  cfg->zone_bytes[BH_ZONE_DMA] = 16 * MiB;
  cfg->zone_bytes[BH_ZONE_DMA32] = 496 * MiB;
  cfg->zone_bytes[BH_ZONE_NORMAL] = 512 * MiB;
  cfg->zone_bytes[BH_ZONE_MOVABLE] = 0;
  cfg->max_order = 10;
  cfg->pageblock_order = 9;
  cfg->mobility_grouping = true;
  cfg->shuffle = false;
  cfg->seed = 1;
  cfg->min_free_kbytes = 0;
  cfg->watermark_scale_factor = 10;
  cfg->watermark_boost_factor = 15000;
  cfg->lowmem_reserve_ratio[BH_ZONE_DMA] = 256;
  cfg->lowmem_reserve_ratio[BH_ZONE_DMA32] = 256;
  cfg->lowmem_reserve_ratio[BH_ZONE_NORMAL] = 32;
  cfg->lowmem_reserve_ratio[BH_ZONE_MOVABLE] = 0;
  cfg->pcp = true;
  cfg->nr_cpus = 2;
  cfg->pcp_key = BH_PCP_PER_THREAD;
  cfg->pcp_batch = 0;
  cfg->pcp_high = 0;
  cfg->pcp_thp = true;
  cfg->pcp_high_tuning = true;
  cfg->pcp_free_high_raised = false;
  cfg->cpu_data_slice_bytes = 2ull << 20;
  cfg->numa_bind = false;
  cfg->debug_checks = false;
  cfg->compact_large_blocks = true;
  cfg->compact_skip_unsplit = false;
  cfg->reclaim_progress = false;
  cfg->smp = true;
}

static int fail(const char **msg, const char *why) {
  if (msg)
    *msg = why;
  return BH_EINVAL;
}

/* An explicit layout: zones in order, each in max-order blocks no other zone touches. */
static const char *validate_layout(const bh_config_t *c) {
  if (c->nr_layout_zones > BH_MAX_NODES * BH_NR_ZONE_TYPES)
    return "too many layout zones";
  uint64_t bp = 1ull << c->max_order, prev_end = 0;
  for (unsigned i = 0; i < c->nr_layout_zones; i++) {
    const bh_zone_layout_t *z = &c->layout_zones[i];
    if (z->node < 0 || z->node >= BH_MAX_NODES || z->type < 0 || z->type >= BH_NR_ZONE_TYPES)
      return "layout zone with a bad node or type";
    if (!z->spanned_pages || z->present_pages > z->spanned_pages ||
        z->managed_pages > z->present_pages || z->start_pfn > (1ull << 40) ||
        z->spanned_pages > (1ull << 40))
      return "layout zone sizes must be spanned >= present >= managed, spanned > 0";
    if (i && (z->node < c->layout_zones[i - 1].node ||
              (z->node == c->layout_zones[i - 1].node && z->type <= c->layout_zones[i - 1].type)))
      return "layout zones must be in node order, low zones first, each once";
    if (i && (z->start_pfn & ~(bp - 1)) < prev_end)
      return "layout zones overlap or share a max-order block (4 KiB << max_order)";
    if ((z->wmark_min || z->wmark_low || z->wmark_high) &&
        !(z->wmark_min <= z->wmark_low && z->wmark_low <= z->wmark_high))
      return "layout zone watermarks must be min <= low <= high";
    prev_end = (z->start_pfn + z->spanned_pages + bp - 1) & ~(bp - 1);
  }
  return NULL;
}

int bh_config_validate(const bh_config_t *c, const char **msg) {
  if (!c)
    return fail(msg, "no configuration");
  if (c->backing > BH_BACKING_SIM)
    return fail(msg, "backing must be mmap, memfd or sim");
  if (c->nr_nodes < 1 || c->nr_nodes > BH_MAX_NODES)
    return fail(msg, "nr_nodes must be 1..8");
  if (c->max_order < 1 || c->max_order > BH_ORDER_LIMIT)
    return fail(msg, "max_order must be 1..18");
  if (c->pageblock_order < 1 || c->pageblock_order > c->max_order)
    return fail(msg, "pageblock_order must be 1..max_order");
  uint64_t block = BH_PAGE_SIZE << c->max_order, total = 0;
  if (c->nr_layout_zones) {
    const char *why = validate_layout(c);
    if (why)
      return fail(msg, why);
  }
  for (int t = 0; t < BH_NR_ZONE_TYPES && !c->nr_layout_zones; t++) {
    if (c->zone_bytes[t] % block)
      return fail(msg, "zone sizes must be multiples of the largest block (4 KiB << max_order)");
    if (c->zone_bytes[t] > UINT64_MAX - total)
      return fail(msg, "arena too large (the zone sizes overflow when summed)");
    total += c->zone_bytes[t];
  }
  if (!total && !c->nr_layout_zones)
    return fail(msg, "the arena has no memory");
  uint64_t pages = total / BH_PAGE_SIZE * c->nr_nodes;
  if (c->nr_layout_zones) {
    const bh_zone_layout_t *z = &c->layout_zones[c->nr_layout_zones - 1];
    uint64_t bp = 1ull << c->max_order;
    pages = (z->start_pfn + z->spanned_pages + bp - 1) & ~(bp - 1);
  }
  if (pages + 1000000ull > UINT32_MAX)
    return fail(msg, "arena too large (at most about 16 TiB)");
  if (c->watermark_scale_factor < 1 || c->watermark_scale_factor > 3000)
    return fail(msg, "watermark_scale_factor must be 1..3000");
  if (c->min_free_kbytes > 64ull * 1024 * 1024)
    return fail(msg, "min_free_kbytes too large");
  if (c->nr_cpus < 1 || c->nr_cpus > 1024)
    return fail(msg, "nr_cpus must be 1..1024");
  if (c->pcp_batch > 65535)
    return fail(msg, "pcp_batch must be 0 (auto) or 1..65535");
  if (c->pcp_high && c->pcp_high < 4 * (c->pcp_batch ? c->pcp_batch : 1))
    return fail(msg, "pcp_high must be 0 (auto) or at least 4 * pcp_batch");
  if (c->pcp_key > BH_PCP_PER_CPU)
    return fail(msg, "pcp_key must be per-thread or per-cpu");
  if (c->numa_bind && c->backing == BH_BACKING_SIM)
    return fail(msg, "numa_bind needs a real backing");
  if (msg)
    *msg = NULL;
  return BH_OK;
}

const bh_config_t *bh_arena_config(const bh_arena_t *a) { return a ? &a->cfg : NULL; }
uint64_t bh_arena_pages(const bh_arena_t *a) { return a ? a->nr_pages : 0; }
void *bh_arena_base(const bh_arena_t *a) { return a ? a->base : NULL; }

/* ---- memory ---- */

static void *map_anon(size_t bytes) {
  void *p =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* The data mapping, aligned to the largest block as a physical memory map would be. */
static int map_data(bh_arena_t *a) {
  size_t bytes = a->nr_pages << BH_PAGE_SHIFT;
  size_t align = BH_PAGE_SIZE << a->max_order;
  a->memfd = -1;
  a->map_bytes = bytes;
  if (a->cfg.backing == BH_BACKING_SIM)
    return BH_OK;
  /* reserve address space, then place the mapping at an aligned address inside it */
  uint8_t *raw =
      mmap(NULL, bytes + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED)
    return BH_ENOMEM;
  uint8_t *aligned = (uint8_t *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
  if (aligned > raw)
    munmap(raw, (size_t)(aligned - raw));
  munmap(aligned + bytes, (size_t)(raw + bytes + align - (aligned + bytes)));
  void *p;
  if (a->cfg.backing == BH_BACKING_MEMFD) {
    a->memfd = memfd_create("buddyhint-arena", MFD_CLOEXEC);
    if (a->memfd < 0 || ftruncate(a->memfd, (off_t)bytes) != 0) {
      munmap(aligned, bytes);
      return BH_ESYS;
    }
    p = mmap(aligned, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, a->memfd, 0);
  } else {
    p = mmap(aligned, bytes, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  }
  if (p == MAP_FAILED) {
    munmap(aligned, bytes);
    return BH_ENOMEM;
  }
  a->base = p;
  return BH_OK;
}

/* Binds each node's range of the arena to a host NUMA node, round-robin (libnuma). */
static int bind_nodes(bh_arena_t *a) {
  if (!a->cfg.numa_bind)
    return BH_OK;
#if BH_HAVE_NUMA
  if (numa_available() < 0)
    return BH_ENOTSUP;
  int host_nodes = numa_max_node() + 1;
  uint64_t per_node = a->nr_pages / a->cfg.nr_nodes;
  for (unsigned n = 0; n < a->cfg.nr_nodes; n++) {
    unsigned long mask = 1ul << (n % (unsigned)host_nodes);
    if (mbind(a->base + ((n * per_node) << BH_PAGE_SHIFT), per_node << BH_PAGE_SHIFT, MPOL_BIND,
              &mask, sizeof(mask) * 8, 0) != 0)
      return BH_ESYS;
  }
  return BH_OK;
#else
  return BH_ENOTSUP;
#endif
}

/* ---- zones ---- */

static uint64_t isqrt(uint64_t x) {
  uint64_t r = 0, bit = 1ull << 62;
  while (bit > x)
    bit >>= 2;
  while (bit) {
    if (x >= r + bit) {
      x -= r + bit;
      r = (r >> 1) + bit;
    } else {
      r >>= 1;
    }
    bit >>= 2;
  }
  return r;
}

/*
 * setup_per_zone_lowmem_reserve: zone i keeps back, from requests that could have used zone
 * j > i, the managed pages of zones i+1..j divided by zone i's ratio.
 */
static void setup_lowmem_reserve(bh_arena_t *a) {
  for (unsigned n = 0; n < a->cfg.nr_nodes; n++) {
    for (int i = 0; i < BH_NR_ZONE_TYPES; i++) {
      int zi = a->node_zone[n][i];
      if (zi < 0)
        continue;
      bh_zone_t *z = &a->zones[zi];
      unsigned ratio = a->cfg.lowmem_reserve_ratio[i];
      uint64_t managed = 0;
      for (int j = i + 1; j < BH_NR_ZONE_TYPES; j++) {
        int zj = a->node_zone[n][j];
        managed += zj >= 0 ? a->zones[zj].managed_pages : 0;
        z->lowmem_reserve[j] = (!ratio || !z->managed_pages) ? 0 : managed / ratio;
      }
    }
  }
}

/*
 * __setup_per_zone_wmarks: min_free_kbytes is shared among the zones (Movable excluded) in
 * proportion to their size; low and high are min plus one and two times the larger of a
 * quarter of min and watermark_scale_factor/10000 of the zone.
 */
static void setup_watermarks(bh_arena_t *a) {
  uint64_t lowmem_pages = 0;
  for (int i = 0; i < a->nr_zones; i++)
    if (a->zones[i].type != BH_ZONE_MOVABLE)
      lowmem_pages += a->zones[i].managed_pages;
  uint64_t kb = a->cfg.min_free_kbytes;
  if (!kb) {
    kb = isqrt(lowmem_pages * (BH_PAGE_SIZE / 1024) * 16);
    kb = kb < 128 ? 128 : kb > 262144 ? 262144 : kb;
    a->cfg.min_free_kbytes = kb;
  }
  uint64_t pages_min = kb / (BH_PAGE_SIZE / 1024);
  for (int i = 0; i < a->nr_zones; i++) {
    bh_zone_t *z = &a->zones[i];
    const bh_zone_layout_t *lz = a->cfg.nr_layout_zones ? &a->cfg.layout_zones[i] : NULL;
    if (lz && (lz->wmark_min || lz->wmark_low || lz->wmark_high)) {
      /* the recorded machine's own (its boot-time values, and whatever changed them since) */
      z->watermark[BH__WMARK_MIN] = lz->wmark_min;
      z->watermark[BH__WMARK_LOW] = lz->wmark_low;
      z->watermark[BH__WMARK_HIGH] = lz->wmark_high;
      atomic_store(&z->watermark_boost, 0);
      continue;
    }
    uint64_t tmp = lowmem_pages ? pages_min * z->managed_pages / lowmem_pages : 0;
    if (z->type == BH_ZONE_MOVABLE) {
      uint64_t m = z->managed_pages / 1024;
      z->watermark[BH__WMARK_MIN] = m < 32 ? 32 : m > 128 ? 128 : m;
    } else {
      z->watermark[BH__WMARK_MIN] = tmp;
    }
    uint64_t scaled = z->managed_pages * a->cfg.watermark_scale_factor / 10000;
    uint64_t delta = (tmp >> 2) > scaled ? (tmp >> 2) : scaled;
    z->watermark[BH__WMARK_LOW] = z->watermark[BH__WMARK_MIN] + delta;
    z->watermark[BH__WMARK_HIGH] = z->watermark[BH__WMARK_MIN] + 2 * delta;
    atomic_store(&z->watermark_boost, 0);
  }
  setup_lowmem_reserve(a);
  for (int i = 0; a->cfg.nr_layout_zones && i < a->nr_zones; i++) {
    const bh_zone_layout_t *lz = &a->cfg.layout_zones[i];
    if (lz->wmark_min || lz->wmark_low || lz->wmark_high)
      memcpy(a->zones[i].lowmem_reserve, lz->protection, sizeof(lz->protection));
  }
}

static unsigned rounddown_pow2(unsigned x) {
  unsigned r = 1;
  while (r * 2 <= x)
    r *= 2;
  return r;
}

/* zone_highsize's nr_split_cpus: the CPUs local to the zone's node (slot s belongs to node
 * s % nr_nodes) plus cpu_online (0) */
static unsigned zone_cpus(const bh_arena_t *a, const bh_zone_t *z) {
  unsigned cpus = 0;
  for (unsigned c = 0; c < a->cfg.nr_cpus; c++)
    cpus += (int)(c % a->cfg.nr_nodes) == z->node;
  return cpus ? cpus : a->cfg.nr_cpus;
}

void bh__pcp_boot_cap(bh_arena_t *a, uint64_t freed_pages) {
  bh_zone_t *z = NULL;
  for (int t = BH_ZONE_DMA32; !z && t <= BH_ZONE_NORMAL; t++)
    for (int i = 0; !z && i < a->nr_zones; i++)
      if (a->zones[i].node == 0 && a->zones[i].type == t && a->zones[i].pcp)
        z = &a->zones[i];
  if (!a->pcp_cap_unknown || !z || freed_pages >= z->managed_pages)
    return;
  uint64_t cap = (z->managed_pages - freed_pages) / 8 / zone_cpus(a, z);
  if (cap < 4ull * z->pcp_batch)
    cap = 4ull * z->pcp_batch;
  for (unsigned c = 0; c < a->cfg.nr_cpus; c++) /* not below a mark the start shows */
    if (z->pcp[c].high > 0 && (uint64_t)z->pcp[c].high > cap)
      cap = (uint64_t)z->pcp[c].high;
  if (cap < (uint64_t)z->pcp[0].high_max && cap >= z->pcp_high_min)
    bh__zone_cap_lower(z, NULL, (int)cap);
}

/* zone_batchsize, and zone_highsize for high_min (low watermark) and high_max (managed/8). */
static void setup_pcp_sizes(bh_arena_t *a, bh_zone_t *z) {
  unsigned batch = a->cfg.pcp_batch;
  if (!batch) {
    uint64_t b = z->managed_pages >> 10;
    if (b > (1024 * 1024) / BH_PAGE_SIZE)
      b = (1024 * 1024) / BH_PAGE_SIZE;
    b /= 4;
    if (b < 1)
      b = 1;
    batch = rounddown_pow2((unsigned)(b + b / 2)) - 1;
    if (batch < 1)
      batch = 1;
  }
  unsigned cpus = zone_cpus(a, z);
  uint64_t hmin = z->watermark[BH__WMARK_LOW] / cpus, hmax = z->managed_pages / 8 / cpus;
  if (hmin < 4ull * batch)
    hmin = 4ull * batch;
  if (hmax < 4ull * batch)
    hmax = 4ull * batch;
  if (a->cfg.pcp_high)
    hmin = hmax = a->cfg.pcp_high;
  else if (!a->cfg.pcp_high_tuning)
    hmax = hmin; /* before 6.7: zone_highsize() is the one, fixed mark */
  if (hmax > INT32_MAX / 2)
    hmax = INT32_MAX / 2;
  if (hmin > hmax)
    hmin = hmax;
  z->pcp_batch = batch;
  z->pcp_high_min = (unsigned)hmin;
  z->pcp_high_max = (unsigned)hmax;
}

static int setup_pcp(bh_arena_t *a, bh_zone_t *z, uint32_t *next_head) {
  setup_pcp_sizes(a, z);
  if (!a->cfg.pcp)
    return BH_OK;
  /* cache-line aligned; aligned_alloc wants a size that is a multiple of the alignment */
  size_t bytes = (sizeof(bh__pcp_t) * a->cfg.nr_cpus + 63) & ~(size_t)63;
  z->pcp = aligned_alloc(64, bytes);
  if (!z->pcp)
    return BH_ENOMEM;
  memset(z->pcp, 0, bytes);
  for (unsigned c = 0; c < a->cfg.nr_cpus; c++) {
    bh__pcp_t *pcp = &z->pcp[c];
    pcp->batch = (int)z->pcp_batch;
    pcp->high_min = (int)z->pcp_high_min;
    pcp->high_max = (int)z->pcp_high_max;
    pcp->high = pcp->high_min;
    pcp->free_high_from = pcp->batch + (a->cfg.pcp_free_high_raised ? pcp->high_min / 2 : 0);
    /* zone_pcp_update_cacheinfo (mm/page_alloc.c:5854-5875) */
    if ((a->cfg.cpu_data_slice_bytes >> BH_PAGE_SHIFT) > 3ull * (uint64_t)pcp->batch)
      pcp->flags |= BH__PCPF_FREE_HIGH_BATCH;
    pcp->smp = a->cfg.smp;
    pcp->decay_first = -1;
    pcp->decay_check = -1;
    pcp->head = *next_head;
    for (unsigned i = 0; i < BH__NR_PCP_LISTS; i++)
      bh__list_init(a, pcp->head + i);
    *next_head += BH__NR_PCP_LISTS;
  }
  return BH_OK;
}

/* Zonelists: for each node, its own zones highest first, then the other nodes' by distance
 * (here: by increasing node id after the local one). */
static void build_zonelists(bh_arena_t *a) {
  unsigned nn = a->cfg.nr_nodes;
  for (unsigned n = 0; n < nn; n++) {
    int len = 0;
    for (unsigned k = 0; k < nn; k++) {
      unsigned node = (n + k) % nn;
      for (int t = BH_NR_ZONE_TYPES - 1; t >= 0; t--)
        if (a->node_zone[node][t] >= 0)
          a->zonelist[n][len++] = a->node_zone[node][t];
    }
    a->zonelist_len[n] = len;
  }
}

/*
 * The zones' ranges: from zone_bytes, each node's zones one after another; or an explicit
 * layout's, each zone's span widened to whole max-order blocks.
 */
struct zone_spec {
  int node, type;
  uint64_t start, pages;                       /* the arena's range of the zone */
  uint64_t kstart, kspanned, present, managed; /* as a kernel prints them */
};

static int zone_specs(bh_arena_t *a, struct zone_spec *zs) {
  bh_config_t *c = &a->cfg;
  int n = 0;
  if (c->nr_layout_zones) {
    uint64_t bp = 1ull << a->max_order;
    c->nr_nodes = 1;
    for (unsigned i = 0; i < c->nr_layout_zones; i++) {
      const bh_zone_layout_t *z = &c->layout_zones[i];
      uint64_t s = z->start_pfn & ~(bp - 1),
               e = (z->start_pfn + z->spanned_pages + bp - 1) & ~(bp - 1);
      zs[n++] = (struct zone_spec){
          z->node,          z->type,         s, e - s, z->start_pfn, z->spanned_pages,
          z->present_pages, z->managed_pages};
      if ((unsigned)z->node + 1 > c->nr_nodes)
        c->nr_nodes = (unsigned)z->node + 1;
    }
    return n;
  }
  uint64_t pfn = 0;
  for (unsigned node = 0; node < c->nr_nodes; node++)
    for (int t = 0; t < BH_NR_ZONE_TYPES; t++) {
      uint64_t pages = c->zone_bytes[t] / BH_PAGE_SIZE;
      if (!pages)
        continue;
      zs[n++] = (struct zone_spec){(int)node, t, pfn, pages, pfn, pages, pages, pages};
      pfn += pages;
    }
  return n;
}

static int layout(bh_arena_t *a) {
  const bh_config_t *c = &a->cfg;
  struct zone_spec zs[BH_MAX_NODES * BH_NR_ZONE_TYPES];
  int nz = zone_specs(a, zs);
  a->nr_pages = nz ? zs[nz - 1].start + zs[nz - 1].pages : 0;
  a->nr_zones = nz;
  a->zones = calloc((size_t)a->nr_zones, sizeof(bh_zone_t));
  if (!a->zones)
    return BH_ENOMEM;
  uint64_t heads = (uint64_t)a->nr_zones * ((a->max_order + 1) * BH_MT_TYPES +
                                            (c->pcp ? (uint64_t)c->nr_cpus * BH__NR_PCP_LISTS : 0));
  a->nr_links = a->nr_pages + heads;
  a->pages_bytes = a->nr_links * sizeof(bh__page_t);
  a->pages = map_anon(a->pages_bytes); /* zero-filled on first touch */
  if (!a->pages)
    return BH_ENOMEM;
  a->pageblock = calloc((size_t)(a->nr_pages >> a->pb_order) + 1, 1);
  a->block_zone = calloc((size_t)(a->nr_pages >> a->max_order) + 1, 1);
  if (!a->pageblock || !a->block_zone)
    return BH_ENOMEM;
  memset(a->block_zone, 0xff, (size_t)(a->nr_pages >> a->max_order) + 1); /* no zone */

  uint32_t next_head = (uint32_t)a->nr_pages;
  memset(a->node_zone, 0xff, sizeof(a->node_zone));
  for (int id = 0; id < nz; id++) {
    const struct zone_spec *sp = &zs[id];
    bh_zone_t *z = &a->zones[id];
    pthread_mutex_init(&z->lock, NULL);
    z->arena = a;
    z->node = sp->node;
    z->type = sp->type;
    z->id = id;
    z->start_pfn = sp->start;
    z->spanned_pages = sp->pages;
    z->managed_pages = sp->managed;
    z->zone_start_pfn = sp->kstart;
    z->zone_spanned_pages = sp->kspanned;
    z->present_pages = sp->present;
    z->notify_order = z->del_order = UINT8_MAX;
    z->free_head = next_head;
    for (unsigned i = 0; i < (a->max_order + 1) * BH_MT_TYPES; i++)
      bh__list_init(a, next_head + i);
    next_head += (a->max_order + 1) * BH_MT_TYPES;
    a->node_zone[sp->node][sp->type] = id;
    memset(a->block_zone + (sp->start >> a->max_order), id, (size_t)(sp->pages >> a->max_order));
  }
  build_zonelists(a);
  int gerr = bh__build_gfp_ctx(a);
  if (gerr)
    return gerr;
  setup_watermarks(a);
  for (int i = 0; i < a->nr_zones; i++) {
    int err = setup_pcp(a, &a->zones[i], &next_head);
    if (err)
      return err;
  }
  return BH_OK;
}

/* memblock_free_all: every pageblock starts Movable; each max-order block is freed to the
 * tail, as __free_pages_core does; then, with shuffling on, page_alloc_init_late's
 * shuffle_free_memory shuffles each zone's free lists.  With an explicit layout the pages of
 * a zone's max-order blocks outside its span are absent: allocated for good, never merged
 * with. */
static void free_all(bh_arena_t *a) {
  memset(a->pageblock, BH_MT_MOVABLE, (size_t)(a->nr_pages >> a->pb_order));
  for (int i = 0; i < a->nr_zones; i++) {
    bh_zone_t *z = &a->zones[i];
    /* pagetypeinfo counts the pageblocks of zone_start_pfn + k * pageblock_nr_pages below
     * the zone's end: those outside are absent */
    uint64_t first = z->zone_start_pfn >> a->pb_order,
             last = (z->zone_start_pfn +
                     ((z->zone_spanned_pages - 1) & ~((1ull << a->pb_order) - 1))) >>
                    a->pb_order;
    for (uint64_t b = z->start_pfn >> a->pb_order;
         b < (z->start_pfn + z->spanned_pages) >> a->pb_order; b++)
      if (b < first || b > last)
        a->pageblock[b] |= BH__PB_ABSENT;
    uint64_t step = 1ull << a->max_order, s = z->zone_start_pfn,
             e = z->zone_start_pfn + z->zone_spanned_pages;
    for (uint64_t pfn = z->start_pfn; pfn < z->start_pfn + z->spanned_pages; pfn += step) {
      if (pfn >= s && pfn + step <= e) {
        bh__free_one_page(z, pfn, a->max_order, BH_MT_MOVABLE, BH__FPI_TO_TAIL);
        continue;
      }
      for (uint64_t p = pfn; p < pfn + step; p++) {
        if (p >= s && p < e) {
          bh__free_one_page(z, p, 0, BH_MT_MOVABLE, BH__FPI_TO_TAIL);
        } else {
          a->pages[p].mt = BH_MT_UNMOVABLE;
          bh__pg_set(&a->pages[p], BH__PG_ALLOC | BH__PG_PRETRACE | BH__PG_NOPAGE, 0);
        }
      }
    }
  }
  for (int i = 0; a->cfg.shuffle && i < a->nr_zones; i++)
    bh__shuffle_zone(&a->zones[i]);
}

int bh_arena_create(const bh_config_t *cfg, bh_arena_t **out) {
  bh_config_t defaults;
  if (!out)
    return BH_EINVAL;
  *out = NULL;
  if (!cfg) {
    bh_config_init(&defaults);
    cfg = &defaults;
  }
  int err = bh_config_validate(cfg, NULL);
  if (err)
    return err;
  bh_arena_t *a = calloc(1, sizeof(*a));
  if (!a)
    return BH_ENOMEM;
  a->cfg = *cfg;
  a->max_order = cfg->max_order;
  a->pb_order = cfg->pageblock_order;
  a->memfd = -1;
  atomic_init(&a->shuffle_state, cfg->seed ? cfg->seed : 0x9e3779b97f4a7c15ull);
  err = layout(a);
  if (!err)
    err = map_data(a);
  if (!err)
    err = bind_nodes(a);
  if (err) {
    bh_arena_destroy(a);
    return err;
  }
  free_all(a);
  *out = a;
  return BH_OK;
}

void bh_arena_destroy(bh_arena_t *a) {
  if (!a)
    return;
  if (a->hint.ctx && a->hint.detach) /* stops a worker thread before its arena goes */
    a->hint.detach(a->hint.ctx);
  if (a->base)
    munmap(a->base, a->map_bytes);
  if (a->memfd >= 0)
    close(a->memfd);
  if (a->pages)
    munmap(a->pages, a->pages_bytes);
  for (int i = 0; a->zones && i < a->nr_zones; i++) {
    for (unsigned c = 0; a->zones[i].pcp && c < a->cfg.nr_cpus; c++)
      free(a->zones[i].pcp[c].surplus.e);
    free(a->zones[i].pcp);
    if (a->zones[i].arena)
      pthread_mutex_destroy(&a->zones[i].lock);
  }
  free(a->zones);
  free(a->pageblock);
  free(a->block_zone);
  free(a->gfp_ctx);
  free((void *)a->discarded);
  free(a);
}
