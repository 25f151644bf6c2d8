/*
 * Who holds a replay's memory: resident memory and refaults attributed to the processes or
 * call sites of the trace (replay --by pid|comm|callsite).
 *
 * Every allocation the replay makes for an event stamps the arena pages of its block with the
 * event's origin (the reader's interned pid, comm and call site) and adds the refaults it took
 * (reported pages allocated again, which the host must fault back in) to that origin.  A page
 * keeps its stamp after it is freed, until it is allocated again: memory that was freed but is
 * still resident, because no strategy reported it yet, counts against whoever used it last,
 * which is what a hinting strategy is supposed to give back.  At the end the resident pages of
 * the arena (mincore, or the sim backing's written-and-not-discarded pages) are summed per
 * stamp, and the origins are grouped by the key asked for.
 */
#include "replay/attrib.h"
#include "common/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bh__attrib_init(bh__attrib_t *a, enum bh_replay_by by, uint64_t nr_pages) {
  memset(a, 0, sizeof(*a));
  a->by = by;
  a->nr_pages = nr_pages;
  a->page_origin = calloc(nr_pages ? nr_pages : 1, sizeof(*a->page_origin));
  return a->page_origin ? 0 : BH_ENOMEM;
}

void bh__attrib_destroy(bh__attrib_t *a) {
  free(a->page_origin);
  free(a->per);
  memset(a, 0, sizeof(*a));
}

static struct bh__origin_stat *stat_of(bh__attrib_t *a, uint32_t origin) {
  if (origin >= a->nper) {
    uint32_t n = a->nper ? a->nper : 64;
    while (n <= origin)
      n *= 2;
    struct bh__origin_stat *p = realloc(a->per, (size_t)n * sizeof(*p));
    if (!p)
      return NULL;
    memset(p + a->nper, 0, (size_t)(n - a->nper) * sizeof(*p));
    a->per = p;
    a->nper = n;
  }
  return &a->per[origin];
}

int bh__attrib_alloc(bh__attrib_t *a, uint64_t pfn, unsigned order, uint32_t origin,
                     uint64_t refaults) {
  struct bh__origin_stat *st = stat_of(a, origin);
  if (!st)
    return BH_ENOMEM;
  uint64_t n = 1ull << order;
  st->allocs++;
  st->alloc_pages += n;
  st->refaults += refaults;
  for (uint64_t i = 0; i < n && pfn + i < a->nr_pages; i++)
    a->page_origin[pfn + i] = origin;
  return 0;
}

void bh__attrib_move(bh__attrib_t *a, uint64_t old_pfn, uint64_t new_pfn, unsigned order) {
  uint64_t n = 1ull << order;
  if (old_pfn + n > a->nr_pages || new_pfn + n > a->nr_pages)
    return;
  memmove(a->page_origin + new_pfn, a->page_origin + old_pfn, n * sizeof(*a->page_origin));
}

/* ---- rows ---- */

struct keyed {
  char key[sizeof(((bh_replay_by_row_t *)0)->key)];
  bh_replay_by_row_t row;
};

static void key_of(enum bh_replay_by by, const bh__origins_t *o, uint32_t id, char *key,
                   size_t len) {
  bh_trace_origin_t org = {.pid = -1, .comm = "", .callsite = ""};
  bh__origin_get(o, id, &org); /* id 0 or unknown: the defaults */
  switch (by) {
  case BH_BY_PID:
    if (org.pid >= 0)
      snprintf(key, len, "%d", org.pid);
    else
      snprintf(key, len, "(unknown)");
    return;
  case BH_BY_COMM:
    snprintf(key, len, "%s", *org.comm ? org.comm : "(unknown)");
    return;
  default:
    snprintf(key, len, "%s", *org.callsite ? org.callsite : "(unknown)");
    return;
  }
}

static int by_key(const void *x, const void *y) {
  return strcmp(((const struct keyed *)x)->key, ((const struct keyed *)y)->key);
}

/* Largest resident memory first, then refaults, then memory allocated, then the key. */
static int by_weight(const void *x, const void *y) {
  const struct keyed *a = x, *b = y;
  if (a->row.resident_bytes != b->row.resident_bytes)
    return a->row.resident_bytes > b->row.resident_bytes ? -1 : 1;
  if (a->row.refaults != b->row.refaults)
    return a->row.refaults > b->row.refaults ? -1 : 1;
  if (a->row.alloc_bytes != b->row.alloc_bytes)
    return a->row.alloc_bytes > b->row.alloc_bytes ? -1 : 1;
  return strcmp(a->key, b->key);
}

static void add_row(bh_replay_by_row_t *to, const bh_replay_by_row_t *r) {
  to->allocs += r->allocs;
  to->alloc_bytes += r->alloc_bytes;
  to->live_bytes += r->live_bytes;
  to->resident_bytes += r->resident_bytes;
  to->refaults += r->refaults;
}

void bh__attrib_rows(const bh__attrib_t *a, const bh__origins_t *o, const bh__pfnmap_t *map,
                     const uint8_t *resident, unsigned top, bh_replay_summary_t *s) {
  uint32_t n = bh__origins_count(o) + 1; /* id 0 too */
  if (a->nper > n)
    n = a->nper;
  struct keyed *k = calloc(n, sizeof(*k));
  s->by = a->by;
  s->nr_by_rows = 0;
  if (!k)
    return;
  for (uint32_t id = 0; id < n; id++) {
    key_of(a->by, o, id, k[id].key, sizeof(k[id].key));
    if (id < a->nper) {
      k[id].row.allocs = a->per[id].allocs;
      k[id].row.alloc_bytes = a->per[id].alloc_pages << BH_PAGE_SHIFT;
      k[id].row.refaults = a->per[id].refaults;
    }
  }
  for (uint64_t p = 0; resident && p < a->nr_pages; p++)
    if (resident[p] && a->page_origin[p] < n)
      k[a->page_origin[p]].row.resident_bytes += BH_PAGE_SIZE;
  for (uint64_t i = 0, slots = bh__pfnmap_slots(map); i < slots; i++) {
    bh__pfn_ref_t e = bh__pfnmap_slot(map, i);
    if (!bh__pfn_ok(e) || bh__pfn_kind(e) != BH__PFN_LIVE)
      continue;
    uint64_t first = bh__pfn_val(e), pages = 1ull << bh__pfn_order(e);
    if (first < a->nr_pages && a->page_origin[first] < n)
      k[a->page_origin[first]].row.live_bytes += pages << BH_PAGE_SHIFT;
  }
  /* one entry per key, then the heaviest first */
  qsort(k, n, sizeof(*k), by_key);
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (m && !strcmp(k[m - 1].key, k[i].key)) {
      add_row(&k[m - 1].row, &k[i].row);
      continue;
    }
    k[m++] = k[i];
  }
  qsort(k, m, sizeof(*k), by_weight);
  if (top > BH_REPLAY_MAX_BY)
    top = BH_REPLAY_MAX_BY;
  bh_replay_by_row_t other = {0};
  uint32_t rows = 0;
  for (uint32_t i = 0; i < m; i++) {
    const bh_replay_by_row_t *r = &k[i].row;
    if (!r->allocs && !r->resident_bytes && !r->refaults && !r->live_bytes)
      continue;
    if (rows < top) {
      bh_replay_by_row_t *d = &s->by_rows[rows++];
      *d = *r;
      snprintf(d->key, sizeof(d->key), "%s", k[i].key);
    } else {
      add_row(&other, r);
    }
  }
  if (other.allocs || other.resident_bytes || other.refaults || other.live_bytes) {
    snprintf(other.key, sizeof(other.key), "(other)");
    s->by_rows[rows++] = other;
  }
  s->nr_by_rows = (int)rows;
  free(k);
}

/* ---- names and JSON ---- */

static const char *const by_names[] = {"none", "pid", "comm", "callsite"};

const char *bh_replay_by_name(enum bh_replay_by by) {
  return (unsigned)by <= BH_BY_CALLSITE ? by_names[by] : "?";
}

int bh_replay_by_parse(const char *name, enum bh_replay_by *out) {
  if (!out)
    return BH_EINVAL;
  for (int i = 0; name && i <= BH_BY_CALLSITE; i++)
    if (!strcmp(name, by_names[i])) {
      *out = (enum bh_replay_by)i;
      return 0;
    }
  return BH_EINVAL;
}

void bh__attrib_json(const bh_replay_summary_t *s, FILE *f) {
  fprintf(f, "{\"key\": \"%s\", \"rows\": [", bh_replay_by_name(s->by));
  for (int i = 0; i < s->nr_by_rows; i++) {
    const bh_replay_by_row_t *r = &s->by_rows[i];
    fprintf(f, "%s{\"key\": ", i ? ", " : "");
    bh__json_str(f, r->key);
    fprintf(f,
            ", \"allocs\": %lu, \"alloc_bytes\": %lu, \"live_bytes\": %lu, "
            "\"resident_bytes\": %lu, \"refaults\": %lu}",
            (unsigned long)r->allocs, (unsigned long)r->alloc_bytes, (unsigned long)r->live_bytes,
            (unsigned long)r->resident_bytes, (unsigned long)r->refaults);
  }
  fprintf(f, "]}");
}
