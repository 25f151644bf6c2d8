/*
 * Event origins: which process (pid, comm) and which call site made an event.
 *
 * A trace names the same few hundred (pid, comm, call site) triples millions of times, so the
 * readers intern them: a triple becomes a 32-bit id carried in bh_event_t.origin, and the
 * strings are stored once.  The table is open addressing over the ids (0 = empty slot), grown
 * at half full; the strings are kept in one arena that only grows.  Nothing is interned unless
 * the trace was opened with origins on, so a reader that is not asked pays one branch.
 *
 * The call site of an event with a call chain (perf record -g) is the first frame outside the
 * page allocator and the tracing code: for an allocation the function that asked for pages
 * (pte_alloc_one, filemap_alloc_folio, ...), for a free the one that gave them back.
 */
#include "trace/foreign.h"
#include "trace/trace_internal.h"

#include <stdlib.h>
#include <string.h>

struct origin_rec {
  int32_t pid;
  uint32_t comm, site; /* offsets into the string arena */
  uint32_t comm_len, site_len;
  uint64_t hash;
};

struct bh__origins {
  struct origin_rec *recs; /* recs[id - 1] */
  uint32_t nr, cap;
  uint32_t *slots; /* ids, 0 = empty */
  uint32_t mask;
  char *str; /* string arena: each string NUL-terminated */
  size_t str_len, str_cap;
  uint32_t last; /* the id interned last: events come in runs of one task */
};

_Static_assert(offsetof(bh_event_t, origin) == 44, "origin lives in bh_event_t's padding");

bh__origins_t *bh__origins_new(void) {
  bh__origins_t *o = calloc(1, sizeof(*o));
  if (!o)
    return NULL;
  o->mask = 255;
  o->slots = calloc(o->mask + 1, sizeof(*o->slots));
  o->str_cap = 4096;
  o->str = malloc(o->str_cap);
  if (!o->slots || !o->str) {
    bh__origins_free(o);
    return NULL;
  }
  o->str[0] = '\0'; /* offset 0: the empty string */
  o->str_len = 1;
  return o;
}

void bh__origins_free(bh__origins_t *o) {
  if (!o)
    return;
  free(o->recs);
  free(o->slots);
  free(o->str);
  free(o);
}

uint32_t bh__origins_count(const bh__origins_t *o) { return o ? o->nr : 0; }

static uint64_t hash_bytes(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull; /* FNV-1a */
  return h;
}

static uint64_t triple_hash(int32_t pid, const char *comm, size_t cl, const char *site, size_t sl) {
  uint64_t h = 0xcbf29ce484222325ull ^ (uint32_t)pid;
  h = hash_bytes(h * 0x100000001b3ull, comm, cl);
  h = hash_bytes(h ^ 0xff, site, sl);
  return h ^ (h >> 29);
}

/* Stores n bytes (and a NUL) in the arena; returns the offset, or 0 when out of memory. */
static uint32_t put_string(bh__origins_t *o, const char *s, size_t n) {
  if (!n)
    return 0;
  if (o->str_len + n + 1 > o->str_cap) {
    size_t cap = o->str_cap * 2;
    while (cap < o->str_len + n + 1)
      cap *= 2;
    if (cap > UINT32_MAX)
      return 0;
    char *p = realloc(o->str, cap);
    if (!p)
      return 0;
    o->str = p;
    o->str_cap = cap;
  }
  uint32_t off = (uint32_t)o->str_len;
  memcpy(o->str + off, s, n);
  o->str[off + n] = '\0';
  o->str_len += n + 1;
  return off;
}

static bool same(const bh__origins_t *o, const struct origin_rec *r, uint64_t h, int32_t pid,
                 const char *comm, size_t cl, const char *site, size_t sl) {
  return r->hash == h && r->pid == pid && r->comm_len == cl && r->site_len == sl &&
         !memcmp(o->str + r->comm, comm, cl) && !memcmp(o->str + r->site, site, sl);
}

static int grow_slots(bh__origins_t *o) {
  uint32_t mask = o->mask * 2 + 1;
  uint32_t *slots = calloc((size_t)mask + 1, sizeof(*slots));
  if (!slots)
    return -1;
  for (uint32_t id = 1; id <= o->nr; id++) {
    uint32_t i = (uint32_t)o->recs[id - 1].hash & mask;
    while (slots[i])
      i = (i + 1) & mask;
    slots[i] = id;
  }
  free(o->slots);
  o->slots = slots;
  o->mask = mask;
  return 0;
}

uint32_t bh__origin_intern(bh__origins_t *o, int32_t pid, const char *comm, size_t cl,
                           const char *site, size_t sl) {
  if (!comm)
    comm = "", cl = 0;
  if (!site)
    site = "", sl = 0;
  if (o->last) {
    const struct origin_rec *r = &o->recs[o->last - 1];
    if (r->pid == pid && r->comm_len == cl && r->site_len == sl &&
        !memcmp(o->str + r->comm, comm, cl) && !memcmp(o->str + r->site, site, sl))
      return o->last;
  }
  uint64_t h = triple_hash(pid, comm, cl, site, sl);
  uint32_t i = (uint32_t)h & o->mask;
  for (uint32_t id; (id = o->slots[i]) != 0; i = (i + 1) & o->mask)
    if (same(o, &o->recs[id - 1], h, pid, comm, cl, site, sl))
      return o->last = id;
  if (o->nr == UINT32_MAX - 1 || cl > UINT32_MAX / 2 || sl > UINT32_MAX / 2)
    return 0;
  if (o->nr == o->cap) {
    uint32_t cap = o->cap ? o->cap * 2 : 64;
    struct origin_rec *p = realloc(o->recs, (size_t)cap * sizeof(*p));
    if (!p)
      return 0;
    o->recs = p;
    o->cap = cap;
  }
  struct origin_rec r = {.pid = pid, .comm_len = (uint32_t)cl, .site_len = (uint32_t)sl, .hash = h};
  r.comm = put_string(o, comm, cl);
  r.site = put_string(o, site, sl);
  if ((cl && !r.comm) || (sl && !r.site))
    return 0;
  o->recs[o->nr++] = r;
  o->slots[i] = o->nr;
  if (o->nr * 2 > o->mask && grow_slots(o)) {
    o->nr--; /* the table is full and cannot grow: forget this one again */
    o->slots[i] = 0;
    return 0;
  }
  return o->last = o->nr;
}

int bh__origin_get(const bh__origins_t *o, uint32_t id, bh_trace_origin_t *out) {
  if (!o || id == 0 || id > o->nr)
    return BH_ENOENT;
  const struct origin_rec *r = &o->recs[id - 1];
  out->pid = r->pid;
  out->comm = o->str + r->comm;
  out->callsite = o->str + r->site;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Task names of kernel text lines                                                          */
/* ---------------------------------------------------------------------------------------- */

static bool blank(char c) { return c == ' ' || c == '\t'; }

/*
 * ftrace: "  TASK-PID  [CPU] ...": the task is what comes before the last '-' before the
 * first " [" (a task name may hold dashes and spaces).  perf script: "  COMM  PID[/TID]  [CPU]
 * ..." (the cpu column may be missing, then the timestamp follows): the comm is what comes
 * before the last blank-separated word before the first " [" or, without one, before the
 * word that ends in ':' (the timestamp).
 */
void bh__kline_task(const char *s, size_t n, bool perf, const char **name, size_t *len) {
  size_t b = 0;
  while (b < n && blank(s[b]))
    b++;
  size_t e = b;
  while (e + 1 < n && !(blank(s[e]) && s[e + 1] == '['))
    e++;
  if (e + 1 >= n) { /* no cpu column: stop at the timestamp's word */
    const char *colon = memchr(s + b, ':', n - b);
    e = colon ? (size_t)(colon - s) : n;
    while (e > b && !blank(s[e - 1]))
      e--;
  }
  while (e > b && blank(s[e - 1]))
    e--;
  if (perf) { /* drop the PID[/TID] word */
    while (e > b && !blank(s[e - 1]))
      e--;
  } else { /* drop "-PID" */
    size_t d = e;
    while (d > b && s[d - 1] != '-')
      d--;
    e = d > b ? d - 1 : e;
  }
  while (e > b && blank(s[e - 1]))
    e--;
  *name = s + b;
  *len = e - b;
}

uint32_t bh__origin_of_kernel_line(bh__origins_t *o, const char *s, size_t n, bool perf,
                                   const bh_event_t *ev) {
  const char *comm;
  size_t len;
  bh__kline_task(s, n, perf, &comm, &len);
  return bh__origin_intern(o, ev->pid, comm, len, NULL, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Call sites                                                                                */
/* ---------------------------------------------------------------------------------------- */

/*
 * Functions of the page allocator (mm/page_alloc.c, the mempolicy and folio wrappers around
 * it) and of the tracing code, by prefix.  The list follows Linux 5.x to 6.x names, with and
 * without the _noprof suffix of memory allocation profiling (6.10).
 */
static const char *const skip_prefixes[] = {
    "__traceiter_",
    "trace_event_raw_event_",
    "perf_trace_",
    "perf_tp_",
    "trace_mm_page",
    /* allocation */
    "__alloc_pages",
    "alloc_pages",
    "__alloc_frozen_pages",
    "alloc_frozen_pages",
    "__folio_alloc",
    "folio_alloc",
    "vma_alloc_folio",
    "alloc_page_interleave",
    "alloc_pages_preferred_many",
    "get_page_from_freelist",
    "rmqueue",
    "__rmqueue",
    "prep_new_page",
    "post_alloc_hook",
    "__get_free_pages",
    "get_free_pages",
    "get_zeroed_page",
    "alloc_pages_exact",
    "__alloc_pages_bulk",
    "alloc_pages_bulk",
    "__alloc_pages_slowpath",
    "__alloc_pages_direct",
    "__alloc_pages_may_oom",
    "alloc_pages_mpol",
    "__alloc_pages_node",
    "__alloc_pages_noprof",
    "__folio_alloc_node",
    /* freeing */
    "free_unref_page",
    "free_unref_folios",
    "free_frozen_pages",
    "__free_frozen_pages",
    "__free_pages",
    "free_pages",
    "__free_pages_ok",
    "free_pages_prepare",
    "free_one_page",
    "__free_one_page",
    "free_pcppages_bulk",
    "free_page_and_swap_cache",
    "__folio_put",
    "folio_put",
    "free_compound_page",
    "destroy_large_folio",
    "free_pages_exact",
};

bool bh__callsite_skip(const char *fn, size_t len) {
  for (size_t i = 0; i < sizeof(skip_prefixes) / sizeof(skip_prefixes[0]); i++) {
    size_t k = strlen(skip_prefixes[i]);
    if (len >= k && !memcmp(fn, skip_prefixes[i], k))
      return true;
  }
  return false;
}
