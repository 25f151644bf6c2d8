/*
 * Machine descriptions: the text form (named sections of lines), and the parsers of the /proc
 * files a snapshot holds, which the kernel prints in mm/vmstat.c: buddyinfo (frag_show_print),
 * pagetypeinfo (pagetypeinfo_showfree_print, pagetypeinfo_showblockcount_print) and zoneinfo
 * (zoneinfo_show_print).  The parsers take the formats of Linux 5.x to 6.18: zoneinfo's
 * "promo" line (6.0+), the pagesets' high_min/high_max (after 6.12), pagetypeinfo with or without a
 * CMA column, several nodes (pagetypeinfo repeats its header per node).
 */
#include "machine/machine_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *bh__snap_name(int which) { return which == BH_SNAP_START ? "start" : "end"; }

/* ---------------------------------------------------------------------------------------- */
/* Sections                                                                                  */
/* ---------------------------------------------------------------------------------------- */

static bh__section_t *find_section(const bh_machine_t *m, const char *name) {
  for (int i = 0; i < m->nsec; i++)
    if (!strcmp(m->sec[i].name, name))
      return &m->sec[i];
  return NULL;
}

const char *bh_machine_section(const bh_machine_t *m, const char *name) {
  const bh__section_t *s = m && name ? find_section(m, name) : NULL;
  return s ? s->text : NULL;
}

/* Where a section goes: "machine" first, then each snapshot's files in a fixed order, then
 * anything else in the order it came. */
static int section_rank(const char *name) {
  static const char *const files[] = {"zoneinfo", "buddyinfo", "pagetypeinfo", "freemap", "info"};
  if (!strcmp(name, "machine"))
    return 0;
  for (int w = 0; w < BH_NR_SNAPS; w++) {
    size_t n = strlen(bh__snap_name(w));
    if (strncmp(name, bh__snap_name(w), n) || name[n] != '/')
      continue;
    for (int f = 0; f < 5; f++)
      if (!strcmp(name + n + 1, files[f]))
        return 1 + w * 5 + f;
  }
  return 100;
}

int bh__machine_set_section(bh_machine_t *m, const char *name, const char *text, size_t len) {
  bool nl = len && text[len - 1] == '\n';
  char *copy = malloc(len + 2);
  if (!copy)
    return BH_ENOMEM;
  memcpy(copy, text, len);
  if (len && !nl)
    copy[len++] = '\n';
  copy[len] = '\0';
  bh__section_t *s = find_section(m, name);
  if (s) {
    free(s->text);
    s->text = copy;
    s->len = len;
    return 0;
  }
  if (m->nsec == m->sec_cap) {
    int cap = m->sec_cap ? m->sec_cap * 2 : 16;
    bh__section_t *p = realloc(m->sec, (size_t)cap * sizeof(*p));
    if (!p) {
      free(copy);
      return BH_ENOMEM;
    }
    m->sec = p;
    m->sec_cap = cap;
  }
  char *nm = strdup(name);
  if (!nm) {
    free(copy);
    return BH_ENOMEM;
  }
  int at = m->nsec, r = section_rank(name);
  while (at > 0 && section_rank(m->sec[at - 1].name) > r)
    at--;
  memmove(&m->sec[at + 1], &m->sec[at], (size_t)(m->nsec - at) * sizeof(*m->sec));
  m->sec[at] = (bh__section_t){nm, copy, len};
  m->nsec++;
  return 0;
}

int bh_machine_set_section(bh_machine_t *m, const char *name, const char *text) {
  if (!m || !name || !text || !name[0] || section_rank(name) < 100)
    return BH_EINVAL; /* "machine" and a snapshot's files have ranks below 100 */
  for (const char *c = name; *c; c++)
    if (*c <= ' ' || *c > '~')
      return BH_EINVAL;
  return bh__machine_set_section(m, name, text, strlen(text));
}

void bh__machine_drop_section(bh_machine_t *m, const char *name) {
  bh__section_t *s = find_section(m, name);
  if (!s)
    return;
  free(s->name);
  free(s->text);
  int i = (int)(s - m->sec);
  memmove(&m->sec[i], &m->sec[i + 1], (size_t)(m->nsec - i - 1) * sizeof(*m->sec));
  m->nsec--;
}

/* ---------------------------------------------------------------------------------------- */
/* Life cycle and accessors                                                                  */
/* ---------------------------------------------------------------------------------------- */

bh_machine_t *bh_machine_new(void) {
  bh_machine_t *m = calloc(1, sizeof(*m));
  if (m)
    m->info.page_reporting_order = -1;
  return m;
}

void bh__snap_free_map(bh__snap_t *s) {
  free(s->free_runs);
  free(s->pageblock_mt);
  free(s->movable_runs);
  free(s->reported_runs);
  s->reported_runs = NULL;
  free(s->quiet_runs);
  s->quiet_runs = NULL;
  s->nr_quiet_runs = 0;
  s->quiet_known = false;
  s->nr_reported_runs = 0;
  s->reported_known = false;
  s->free_runs = NULL;
  s->pageblock_mt = NULL;
  s->movable_runs = NULL;
  s->pub.free_runs = NULL;
  s->pub.pageblock_mt = NULL;
  s->pub.movable_runs = NULL;
  s->pub.nr_free_runs = s->pub.nr_movable_runs = 0;
  s->pub.nr_pageblocks = 0;
  s->pub.have_freemap = false;
}

/* What snapshot s holds in memory: its free map and its pagesets. */
static void snap_free(bh__snap_t *s) {
  bh__snap_free_map(s);
  free(s->pagesets);
  s->pagesets = NULL;
  s->nr_pagesets = 0;
}

void bh_machine_free(bh_machine_t *m) {
  if (!m)
    return;
  for (int w = 0; w < BH_NR_SNAPS; w++)
    snap_free(&m->snaps[w]);
  for (int i = 0; i < m->nsec; i++) {
    free(m->sec[i].name);
    free(m->sec[i].text);
  }
  free(m->sec);
  free(m->warnings);
  free(m);
}

const bh_machine_info_t *bh_machine_info(const bh_machine_t *m) { return m ? &m->info : NULL; }

const bh_snapshot_t *bh_machine_snapshot(const bh_machine_t *m, int which) {
  if (!m || which < 0 || which >= BH_NR_SNAPS || !m->snaps[which].present)
    return NULL;
  return &m->snaps[which].pub;
}

int bh_machine_zone_of(const bh_machine_t *m, uint64_t pfn) {
  for (int i = 0; m && i < m->info.nr_zones; i++) {
    const bh_machine_zone_t *z = &m->info.zones[i];
    if (pfn >= z->start_pfn && pfn < z->start_pfn + z->spanned_pages)
      return i;
  }
  return -1;
}

void bh_machine_drop_snapshot(bh_machine_t *m, int which) {
  if (!m || which < 0 || which >= BH_NR_SNAPS)
    return;
  static const char *const files[] = {"zoneinfo", "buddyinfo", "pagetypeinfo", "freemap", "info"};
  for (int f = 0; f < 5; f++) {
    char name[64];
    snprintf(name, sizeof(name), "%s/%s", bh__snap_name(which), files[f]);
    bh__machine_drop_section(m, name);
  }
  snap_free(&m->snaps[which]);
  memset(&m->snaps[which], 0, sizeof(m->snaps[which]));
}

/* ---------------------------------------------------------------------------------------- */
/* Small scanners over one line [p, e)                                                       */
/* ---------------------------------------------------------------------------------------- */

static const char *skip_ws(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\r'))
    p++;
  return p;
}

/* An unsigned decimal at p; NULL if there is none or it overflows. */
static const char *get_u64(const char *p, const char *e, uint64_t *v) {
  uint64_t x = 0;
  const char *b = p;
  while (p < e && *p >= '0' && *p <= '9') {
    if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, (uint64_t)(*p - '0'), &x))
      return NULL;
    p++;
  }
  *v = x;
  return p == b ? NULL : p;
}

/* A signed decimal (protection values are printed with %ld). */
static const char *get_i64(const char *p, const char *e, int64_t *v) {
  bool neg = p < e && *p == '-';
  uint64_t x;
  const char *q = get_u64(p + neg, e, &x);
  if (!q || x > INT64_MAX)
    return NULL;
  *v = neg ? -(int64_t)x : (int64_t)x;
  return q;
}

/* Does the line (after leading blanks) start with lit?  Returns what follows, or NULL. */
static const char *starts(const char *p, const char *e, const char *lit) {
  p = skip_ws(p, e);
  size_t n = strlen(lit);
  return (size_t)(e - p) >= n && !memcmp(p, lit, n) ? p + n : NULL;
}

/* The next blank-separated word [*w, *we) from p; returns its end, NULL if none. */
static const char *get_word(const char *p, const char *e, const char **w, const char **we) {
  p = skip_ws(p, e);
  const char *b = p;
  while (p < e && *p != ' ' && *p != '\t' && *p != '\r')
    p++;
  if (p == b)
    return NULL;
  *w = b;
  *we = p;
  return p;
}

static bool word_is(const char *w, const char *we, const char *lit) {
  return (size_t)(we - w) == strlen(lit) && !memcmp(w, lit, (size_t)(we - w));
}

/* enum bh_zone_type of a kernel zone name; -1 for zones the model lacks (HighMem, Device). */
static int zone_type_of(const char *w, const char *we) {
  static const char *const names[BH_NR_ZONE_TYPES] = {"DMA", "DMA32", "Normal", "Movable"};
  for (int t = 0; t < BH_NR_ZONE_TYPES; t++)
    if (word_is(w, we, names[t]))
      return t;
  return -1;
}

/* Index into BH_SNAP_TYPES of a migratetype name; -1 if unknown. */
static int mt_of(const char *w, const char *we) {
  static const char *const names[BH_SNAP_TYPES] = {"Unmovable",  "Movable", "Reclaimable",
                                                   "HighAtomic", "Isolate", "CMA"};
  for (int t = 0; t < BH_SNAP_TYPES; t++)
    if (word_is(w, we, names[t]))
      return t;
  return -1;
}

/* "Node N, zone NAME" at p: the node and the name; returns what follows, NULL if not one. */
static const char *node_zone(const char *p, const char *e, int *node, const char **name,
                             const char **name_end) {
  uint64_t n;
  if (!(p = starts(p, e, "Node")) || !(p = get_u64(skip_ws(p, e), e, &n)) || n >= BH_MAX_NODES ||
      p >= e || *p != ',' || !(p = starts(p + 1, e, "zone")))
    return NULL;
  const char *w, *we;
  if (!(p = get_word(p, e, &w, &we)))
    return NULL;
  if (we > w && we[-1] == ',') /* pagetypeinfo: "zone      DMA, type ..." */
    we--;
  *node = (int)n;
  *name = w;
  *name_end = we;
  return p;
}

static int zone_index(const bh_machine_t *m, int node, int type) {
  for (int i = 0; i < m->info.nr_zones; i++)
    if (m->info.zones[i].node == node && m->info.zones[i].type == type)
      return i;
  return -1;
}

/* ---------------------------------------------------------------------------------------- */
/* zoneinfo                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/* Every zone zoneinfo prints, populated or not, in the kernel's index order per node. */
struct kzone {
  int node, type; /* type -1: not modelled */
  char name[16];
  uint64_t free, min, low, high, spanned, present, managed, start_pfn, pcp_count, pcp_high_sum;
  unsigned pcp_high_cpus;
  int64_t protection[8];
  int nr_protection, cpus;
  unsigned batch, high_min, high_max;
  bool have_start;
  bh__pageset_t *ps; /* its pagesets, as printed (malloc'd) */
  unsigned nps, ps_cap;
};

/* A new pageset of z ("cpu: N"): 0 or BH_ENOMEM. */
static int kzone_pageset(struct kzone *z, uint64_t cpu) {
  if (z->nps == z->ps_cap) {
    unsigned cap = z->ps_cap ? z->ps_cap * 2 : 8;
    bh__pageset_t *q = cap > 65536 ? NULL : realloc(z->ps, cap * sizeof(*q));
    if (!q)
      return BH_ENOMEM;
    z->ps = q;
    z->ps_cap = cap;
  }
  z->ps[z->nps++] = (bh__pageset_t){(unsigned)(cpu > UINT32_MAX ? UINT32_MAX : cpu), 0, 0};
  return 0;
}

#define MAX_KZONES (BH_MAX_NODES * 8)

static int zoneinfo_lines(const char *text, size_t len, struct kzone *kz, int *nkz, char *err,
                          size_t errlen) {
  const char *s = text, *end = text + len, *l, *le;
  int line = 0;
  struct kzone *z = NULL;
  *nkz = 0;
  while (bh__next_line(&s, end, &l, &le)) {
    line++;
    const char *p, *name, *name_end;
    int node;
    uint64_t v;
    int64_t sv;
    if ((p = node_zone(l, le, &node, &name, &name_end))) {
      if (*nkz == MAX_KZONES || (size_t)(name_end - name) >= sizeof(z->name))
        return bh__errf(err, errlen, BH_EFORMAT, "zoneinfo:%d: too many zones", line);
      z = &kz[(*nkz)++];
      memset(z, 0, sizeof(*z));
      z->node = node;
      z->type = zone_type_of(name, name_end);
      memcpy(z->name, name, (size_t)(name_end - name));
      continue;
    }
    if (!z)
      continue;
    const char *w, *we;
    if (!get_word(l, le, &w, &we))
      continue;
    bool colon = we[-1] == ':';
    p = skip_ws(we, le);
#define NUM(field)                                                                                 \
  do {                                                                                             \
    if (!get_u64(p, le, &v))                                                                       \
      return bh__errf(err, errlen, BH_EFORMAT, "zoneinfo:%d: bad number", line);                   \
    z->field = v;                                                                                  \
  } while (0)
    if (word_is(w, we, "pages") && (p = starts(p, le, "free"))) {
      p = skip_ws(p, le);
      NUM(free);
    } else if (!colon && word_is(w, we, "min")) {
      NUM(min);
    } else if (!colon && word_is(w, we, "low")) {
      NUM(low);
    } else if (!colon && word_is(w, we, "high")) {
      NUM(high);
    } else if (word_is(w, we, "spanned")) {
      NUM(spanned);
    } else if (word_is(w, we, "present")) {
      NUM(present);
    } else if (word_is(w, we, "managed")) {
      NUM(managed);
    } else if (word_is(w, we, "start_pfn:")) {
      NUM(start_pfn);
      z->have_start = true;
    } else if (word_is(w, we, "cpu:")) {
      z->cpus++;
      if (!get_u64(p, le, &v))
        return bh__errf(err, errlen, BH_EFORMAT, "zoneinfo:%d: bad number", line);
      if (kzone_pageset(z, v))
        return BH_ENOMEM;
    } else if (word_is(w, we, "count:")) {
      if (!get_u64(p, le, &v))
        return bh__errf(err, errlen, BH_EFORMAT, "zoneinfo:%d: bad number", line);
      z->pcp_count += v;
      if (z->nps)
        z->ps[z->nps - 1].count = v;
    } else if (word_is(w, we, "high:")) { /* a pageset's current high mark */
      if (!get_u64(p, le, &v))
        return bh__errf(err, errlen, BH_EFORMAT, "zoneinfo:%d: bad number", line);
      z->pcp_high_sum += v;
      z->pcp_high_cpus++;
      if (z->nps)
        z->ps[z->nps - 1].high = v;
    } else if (word_is(w, we, "batch:") && z->cpus == 1) {
      NUM(batch);
    } else if (word_is(w, we, "high_min:") && z->cpus == 1) {
      NUM(high_min);
    } else if (word_is(w, we, "high_max:") && z->cpus == 1) {
      NUM(high_max);
    } else if (word_is(w, we, "protection:")) {
      if (p >= le || *p != '(')
        return bh__errf(err, errlen, BH_EFORMAT, "zoneinfo:%d: bad protection", line);
      p++;
      for (;;) {
        if (z->nr_protection == 8 || !(p = get_i64(skip_ws(p, le), le, &sv)))
          return bh__errf(err, errlen, BH_EFORMAT, "zoneinfo:%d: bad protection", line);
        z->protection[z->nr_protection++] = sv;
        p = skip_ws(p, le);
        if (p < le && *p == ',') {
          p++;
          continue;
        }
        if (p < le && *p == ')')
          break;
        return bh__errf(err, errlen, BH_EFORMAT, "zoneinfo:%d: bad protection", line);
      }
    }
#undef NUM
  }
  return 0;
}

/* The populated zones of kz as the machine's layout, node-major and low to high. */
static int layout_from(const struct kzone *kz, int nkz, bh_machine_info_t *info, char *err,
                       size_t errlen) {
  bh_machine_info_t li;
  memset(&li, 0, sizeof(li));
  for (int node = 0; node < BH_MAX_NODES; node++)
    for (int t = 0; t < BH_NR_ZONE_TYPES; t++)
      for (int i = 0; i < nkz; i++) {
        const struct kzone *k = &kz[i];
        if (k->node != node || k->type != t || !k->present)
          continue;
        if (!k->have_start || !k->spanned)
          return bh__errf(err, errlen, BH_EFORMAT,
                          "zoneinfo: zone %s of node %d has no start_pfn or size", k->name, node);
        bh_machine_zone_t *z = &li.zones[li.nr_zones++];
        z->node = node;
        z->type = t;
        z->start_pfn = k->start_pfn;
        z->spanned_pages = k->spanned;
        z->present_pages = k->present;
        z->managed_pages = k->managed;
        z->wmark_min = k->min;
        z->wmark_low = k->low;
        z->wmark_high = k->high;
        z->pcp_batch = k->batch;
        z->pcp_high_min = k->high_min;
        z->pcp_high_max = k->high_max;
        /* protection[j] is against requests whose highest zone is the node's j-th zone */
        int j = 0;
        for (int x = 0; x < nkz; x++) {
          if (kz[x].node != node)
            continue;
          if (kz[x].type >= 0 && j < k->nr_protection)
            z->protection[kz[x].type] = k->protection[j] < 0 ? 0 : (uint64_t)k->protection[j];
          j++;
        }
        if (node + 1 > (int)li.nr_nodes)
          li.nr_nodes = (unsigned)node + 1;
      }
  for (int i = 0; i < nkz; i++)
    if (kz[i].type < 0 && kz[i].present)
      return bh__errf(err, errlen, BH_EFORMAT,
                      "zoneinfo: zone %s (node %d) is populated, and the model has no "
                      "such zone",
                      kz[i].name, kz[i].node);
  if (!li.nr_zones)
    return bh__errf(err, errlen, BH_EFORMAT, "zoneinfo: no populated zone");
  for (int i = 0; i < li.nr_zones; i++)
    for (int j = i + 1; j < li.nr_zones; j++) {
      const bh_machine_zone_t *a = &li.zones[i], *b = &li.zones[j];
      if (a->start_pfn < b->start_pfn + b->spanned_pages &&
          b->start_pfn < a->start_pfn + a->spanned_pages)
        return bh__errf(err, errlen, BH_EFORMAT, "zoneinfo: zones %d and %d overlap", i, j);
    }
  info->nr_zones = li.nr_zones;
  info->nr_nodes = li.nr_nodes;
  memcpy(info->zones, li.zones, sizeof(li.zones));
  return 0;
}

/* Does the layout of kz agree with m's (the same zones where they were)? */
static int layout_agrees(const bh_machine_t *m, const bh_machine_info_t *li, char *err,
                         size_t errlen) {
  if (li->nr_zones != m->info.nr_zones)
    return bh__errf(err, errlen, BH_EFORMAT,
                    "zoneinfo: %d populated zones where the description has %d", li->nr_zones,
                    m->info.nr_zones);
  for (int i = 0; i < li->nr_zones; i++) {
    const bh_machine_zone_t *a = &li->zones[i], *b = &m->info.zones[i];
    if (a->node != b->node || a->type != b->type || a->start_pfn != b->start_pfn ||
        a->spanned_pages != b->spanned_pages)
      return bh__errf(err, errlen, BH_EFORMAT,
                      "zoneinfo: zone %s of node %d lies at %lu+%lu where the "
                      "description has it at %lu+%lu",
                      bh_zone_name(a->type), a->node, (unsigned long)a->start_pfn,
                      (unsigned long)a->spanned_pages, (unsigned long)b->start_pfn,
                      (unsigned long)b->spanned_pages);
  }
  return 0;
}

static int keep_pagesets(bh_machine_t *m, int which, const struct kzone *kz, int nkz);

static int parse_zoneinfo(bh_machine_t *m, int which, const char *text, size_t len, char *err,
                          size_t errlen) {
  struct kzone *kz = calloc(MAX_KZONES, sizeof(*kz));
  if (!kz)
    return BH_ENOMEM;
  int nkz, rc = zoneinfo_lines(text, len, kz, &nkz, err, errlen);
  bh_machine_info_t *li = rc ? NULL : calloc(1, sizeof(*li));
  if (!rc && !li)
    rc = BH_ENOMEM;
  if (!rc)
    rc = layout_from(kz, nkz, li, err, errlen);
  if (!rc && m->layout_set)
    rc = layout_agrees(m, li, err, errlen);
  if (!rc && !m->layout_set) {
    m->info.nr_zones = li->nr_zones;
    m->info.nr_nodes = li->nr_nodes;
    memcpy(m->info.zones, li->zones, sizeof(li->zones));
    m->layout_set = true;
  }
  if (!rc) {
    bh_snapshot_t *s = &m->snaps[which].pub;
    for (int i = 0; i < nkz; i++) {
      int zi = kz[i].type >= 0 ? zone_index(m, kz[i].node, kz[i].type) : -1;
      if (zi < 0)
        continue;
      s->zones[zi].free_pages = kz[i].free;
      s->zones[zi].pcp_pages = kz[i].pcp_count;
      s->zones[zi].pcp_high_sum = kz[i].pcp_high_sum;
      s->zones[zi].pcp_high_cpus = kz[i].pcp_high_cpus;
      if (kz[i].cpus && (!m->info.nr_cpus || which == BH_SNAP_START))
        m->info.nr_cpus = (unsigned)kz[i].cpus;
    }
    s->have_zoneinfo = true;
    rc = keep_pagesets(m, which, kz, nkz);
  }
  free(li);
  for (int i = 0; i < MAX_KZONES; i++)
    free(kz[i].ps);
  free(kz);
  return rc;
}

/* Each populated zone's pagesets in snapshot which (bh__machine_pageset): 0 or BH_ENOMEM. */
static int keep_pagesets(bh_machine_t *m, int which, const struct kzone *kz, int nkz) {
  bh__snap_t *sn = &m->snaps[which];
  free(sn->pagesets);
  sn->pagesets = NULL;
  sn->nr_pagesets = 0;
  unsigned most = 0;
  for (int i = 0; i < nkz; i++)
    if (kz[i].type >= 0 && zone_index(m, kz[i].node, kz[i].type) >= 0 && kz[i].nps > most)
      most = kz[i].nps;
  if (!most)
    return 0;
  bh__pageset_t *ps = calloc((size_t)m->info.nr_zones * most, sizeof(*ps));
  if (!ps)
    return BH_ENOMEM;
  for (size_t j = 0; j < (size_t)m->info.nr_zones * most; j++)
    ps[j].cpu = UINT32_MAX; /* not printed */
  for (int i = 0; i < nkz; i++) {
    int zi = kz[i].type >= 0 ? zone_index(m, kz[i].node, kz[i].type) : -1;
    if (zi >= 0 && kz[i].nps)
      memcpy(ps + (size_t)zi * most, kz[i].ps, kz[i].nps * sizeof(*ps));
  }
  sn->pagesets = ps;
  sn->nr_pagesets = most;
  return 0;
}

const bh__pageset_t *bh__machine_pageset(const bh_machine_t *m, int which, int zi, unsigned k) {
  if (!m || which < 0 || which >= BH_NR_SNAPS || zi < 0 || zi >= m->info.nr_zones)
    return NULL;
  const bh__snap_t *sn = &m->snaps[which];
  if (!sn->pagesets || k >= sn->nr_pagesets)
    return NULL;
  const bh__pageset_t *p = &sn->pagesets[(size_t)zi * sn->nr_pagesets + k];
  return p->cpu == UINT32_MAX ? NULL : p;
}

/* ---------------------------------------------------------------------------------------- */
/* buddyinfo                                                                                 */
/* ---------------------------------------------------------------------------------------- */

static int parse_buddyinfo(bh_machine_t *m, int which, const char *text, size_t len, char *err,
                           size_t errlen) {
  const char *s = text, *end = text + len, *l, *le;
  int line = 0, columns = -1;
  bool seen[BH_MACHINE_MAX_ZONES] = {false};
  bh_snapshot_t *snap = &m->snaps[which].pub;
  while (bh__next_line(&s, end, &l, &le)) {
    line++;
    if (skip_ws(l, le) == le)
      continue;
    const char *p, *name, *name_end;
    int node;
    if (!(p = node_zone(l, le, &node, &name, &name_end)))
      return bh__errf(err, errlen, BH_EFORMAT, "buddyinfo:%d: not 'Node N, zone NAME'", line);
    int type = zone_type_of(name, name_end), zi = type >= 0 ? zone_index(m, node, type) : -1;
    if (zi < 0)
      return bh__errf(err, errlen, BH_EFORMAT,
                      "buddyinfo:%d: zone %.*s of node %d is not in the zoneinfo", line,
                      (int)(name_end - name), name, node);
    if (seen[zi])
      return bh__errf(err, errlen, BH_EFORMAT, "buddyinfo:%d: zone %.*s of node %d a second time",
                      line, (int)(name_end - name), name, node);
    seen[zi] = true;
    int o = 0;
    uint64_t v;
    for (p = skip_ws(p, le); p < le; p = skip_ws(p, le), o++) {
      if (o > BH_ORDER_LIMIT || !(p = get_u64(p, le, &v)))
        return bh__errf(err, errlen, BH_EFORMAT, "buddyinfo:%d: bad count", line);
      snap->zones[zi].nr_free[o] = v;
    }
    if (columns >= 0 && o != columns)
      return bh__errf(err, errlen, BH_EFORMAT, "buddyinfo:%d: %d orders, not %d", line, o, columns);
    columns = o;
  }
  if (columns < 2)
    return bh__errf(err, errlen, BH_EFORMAT, "buddyinfo: no zone");
  m->info.max_order = (unsigned)columns - 1;
  snap->have_buddyinfo = true;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* pagetypeinfo                                                                              */
/* ---------------------------------------------------------------------------------------- */

static int parse_pagetypeinfo(bh_machine_t *m, int which, const char *text, size_t len, char *err,
                              size_t errlen) {
  const char *s = text, *end = text + len, *l, *le;
  int line = 0, header[BH_SNAP_TYPES + 4], nheader = 0;
  enum { NONE, FREE, BLOCKS, MIXED } part = NONE;
  bh_snapshot_t *snap = &m->snaps[which].pub;
  bool any = false, seen_free[BH_MACHINE_MAX_ZONES][BH_SNAP_TYPES] = {{false}},
       seen_blocks[BH_MACHINE_MAX_ZONES] = {false};
  uint64_t per_block = 0;
  int per_block_line = 0;
  while (bh__next_line(&s, end, &l, &le)) {
    line++;
    const char *p, *name, *name_end, *w, *we;
    int node;
    uint64_t v;
    if (skip_ws(l, le) == le)
      continue;
    if ((p = starts(l, le, "Page block order:"))) {
      if (!get_u64(skip_ws(p, le), le, &v) || v < 1 || v > BH_ORDER_LIMIT)
        return bh__errf(err, errlen, BH_EFORMAT, "pagetypeinfo:%d: bad order", line);
      m->info.pageblock_order = (unsigned)v;
      continue;
    }
    if ((p = starts(l, le, "Pages per block:"))) {
      if (!get_u64(skip_ws(p, le), le, &per_block))
        return bh__errf(err, errlen, BH_EFORMAT, "pagetypeinfo:%d: bad pages per block", line);
      per_block_line = line;
      continue;
    }
    if (starts(l, le, "Free pages count per migrate type")) {
      part = FREE;
      continue;
    }
    if (starts(l, le, "Number of mixed blocks")) {
      part = MIXED;
      continue;
    }
    if ((p = starts(l, le, "Number of blocks type"))) {
      part = BLOCKS;
      nheader = 0;
      while ((p = get_word(p, le, &w, &we))) {
        int t = mt_of(w, we);
        if (t < 0 || nheader == BH_SNAP_TYPES + 4)
          return bh__errf(err, errlen, BH_EFORMAT, "pagetypeinfo:%d: unknown migratetype '%.*s'",
                          line, (int)(we - w), w);
        if (t == BH_MT_CMA)
          m->info.has_cma = true;
        header[nheader++] = t;
      }
      continue;
    }
    if (part == MIXED || part == NONE)
      continue;
    if (!(p = node_zone(l, le, &node, &name, &name_end)))
      return bh__errf(err, errlen, BH_EFORMAT, "pagetypeinfo:%d: not 'Node N, zone NAME ...'",
                      line);
    int type = zone_type_of(name, name_end), zi = type >= 0 ? zone_index(m, node, type) : -1;
    if (zi < 0)
      return bh__errf(err, errlen, BH_EFORMAT,
                      "pagetypeinfo:%d: zone %.*s of node %d is not in the zoneinfo", line,
                      (int)(name_end - name), name, node);
    if (part == FREE) {
      if (!(p = starts(p, le, "type")) || !(p = get_word(p, le, &w, &we)))
        return bh__errf(err, errlen, BH_EFORMAT, "pagetypeinfo:%d: no type", line);
      int t = mt_of(w, we);
      if (t < 0)
        return bh__errf(err, errlen, BH_EFORMAT, "pagetypeinfo:%d: unknown migratetype '%.*s'",
                        line, (int)(we - w), w);
      if (t == BH_MT_CMA)
        m->info.has_cma = true;
      if (seen_free[zi][t])
        return bh__errf(err, errlen, BH_EFORMAT,
                        "pagetypeinfo:%d: zone %.*s of node %d, type %.*s a second time", line,
                        (int)(name_end - name), name, node, (int)(we - w), w);
      seen_free[zi][t] = true;
      int o = 0;
      for (p = skip_ws(p, le); p < le; p = skip_ws(p, le), o++) {
        if (*p == '>') /* ">100000": the kernel stops counting there */
          p++;
        if (o > BH_ORDER_LIMIT || !(p = get_u64(p, le, &v)))
          return bh__errf(err, errlen, BH_EFORMAT, "pagetypeinfo:%d: bad count", line);
        snap->zones[zi].nr_free_mt[t][o] = v;
      }
    } else {
      if (seen_blocks[zi])
        return bh__errf(err, errlen, BH_EFORMAT,
                        "pagetypeinfo:%d: zone %.*s of node %d a second time", line,
                        (int)(name_end - name), name, node);
      seen_blocks[zi] = true;
      for (int k = 0; k < nheader; k++) {
        if (!(p = get_u64(skip_ws(p, le), le, &v)))
          return bh__errf(err, errlen, BH_EFORMAT, "pagetypeinfo:%d: bad count", line);
        snap->zones[zi].pageblocks[header[k]] = v;
      }
    }
    any = true;
  }
  if (!any || !m->info.pageblock_order)
    return bh__errf(err, errlen, BH_EFORMAT, "pagetypeinfo: no counts");
  if (per_block_line && per_block != 1ull << m->info.pageblock_order)
    return bh__errf(err, errlen, BH_EFORMAT,
                    "pagetypeinfo:%d: %llu pages per block, but the page block order %u "
                    "makes %llu",
                    per_block_line, (unsigned long long)per_block, m->info.pageblock_order,
                    1ull << m->info.pageblock_order);
  snap->have_pagetypeinfo = true;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* KEY VALUE sections: machine settings, a snapshot's info                                    */
/* ---------------------------------------------------------------------------------------- */

static int parse_settings(bh_machine_t *m, const char *text, size_t len, char *err, size_t errlen) {
  const char *s = text, *end = text + len, *l, *le;
  int line = 0;
  bh_machine_info_t *in = &m->info;
  while (bh__next_line(&s, end, &l, &le)) {
    line++;
    const char *w, *we, *p = get_word(l, le, &w, &we);
    uint64_t v;
    if (!p)
      continue;
    p = skip_ws(p, le);
    if (word_is(w, we, "kernel_release")) {
      size_t n = (size_t)(le - p) < sizeof(in->kernel_release) ? (size_t)(le - p)
                                                               : sizeof(in->kernel_release) - 1;
      memcpy(in->kernel_release, p, n);
      in->kernel_release[n] = '\0';
      continue;
    }
    if (word_is(w, we, "lowmem_reserve_ratio")) {
      for (int t = 0; t < BH_NR_ZONE_TYPES && (p = get_u64(skip_ws(p, le), le, &v)); t++)
        in->lowmem_reserve_ratio[t] = v > UINT32_MAX ? UINT32_MAX : (unsigned)v;
      continue;
    }
    if (word_is(w, we, "page_reporting_order")) {
      int64_t sv;
      if (!get_i64(p, le, &sv) || sv < -1 || sv > 63)
        return bh__errf(err, errlen, BH_EFORMAT, "machine:%d: bad page_reporting_order", line);
      in->page_reporting_order = (int)sv;
      continue;
    }
    if (word_is(w, we, "hz")) {
      if (!get_u64(skip_ws(p, le), le, &v) || !v || v > 100000)
        return bh__errf(err, errlen, BH_EFORMAT, "machine:%d: bad hz", line);
      in->hz = (unsigned)v;
      continue;
    }
    static const char *const keys[] = {
        "max_order",       "pageblock_order",        "nr_cpus",
        "min_free_kbytes", "watermark_scale_factor", "watermark_boost_factor"};
    int k = 0;
    while (k < 6 && !word_is(w, we, keys[k]))
      k++;
    if (k == 6)
      continue; /* a key of a later version */
    if (!get_u64(p, le, &v) || v > UINT32_MAX)
      return bh__errf(err, errlen, BH_EFORMAT, "machine:%d: bad %s", line, keys[k]);
    if ((k == 0 && (v < 1 || v > BH_ORDER_LIMIT)) || (k == 1 && (v < 1 || v > BH_ORDER_LIMIT)) ||
        (k == 2 && (v < 1 || v > 1024)))
      return bh__errf(err, errlen, BH_EFORMAT, "machine:%d: %s %lu out of range", line, keys[k],
                      (unsigned long)v);
    unsigned *u[] = {&in->max_order, &in->pageblock_order,        &in->nr_cpus,
                     NULL,           &in->watermark_scale_factor, &in->watermark_boost_factor};
    if (k == 3)
      in->min_free_kbytes = v;
    else
      *u[k] = (unsigned)v;
  }
  return 0;
}

static int parse_snap_info(bh_machine_t *m, int which, const char *text, size_t len) {
  const char *s = text, *end = text + len, *l, *le;
  bh_snapshot_t *snap = &m->snaps[which].pub;
  while (bh__next_line(&s, end, &l, &le)) {
    const char *w, *we, *p = get_word(l, le, &w, &we);
    uint64_t v;
    if (!p || !get_u64(skip_ws(p, le), le, &v))
      continue;
    if (word_is(w, we, "window_begin_ns"))
      snap->window_begin_ns = v;
    else if (word_is(w, we, "window_end_ns"))
      snap->window_end_ns = v;
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Do the counts fit the zones?                                                              */
/* ---------------------------------------------------------------------------------------- */

/* The pages that blocks per order make, or false if the sum does not fit in 64 bits. */
static bool pages_of(const uint64_t *nr, unsigned max_order, uint64_t *pages) {
  *pages = 0;
  for (unsigned o = 0; o <= max_order; o++) {
    uint64_t p;
    if (nr[o] > (UINT64_MAX >> o) || __builtin_add_overflow(*pages, nr[o] << o, &p))
      return false;
    *pages = p;
  }
  return true;
}

/*
 * The free pages buddyinfo and pagetypeinfo imply, and the pageblocks pagetypeinfo counts, must
 * fit each zone the zoneinfo gives (its present pages; mm/vmstat.c counts no more): counts that
 * wrap, or that belong to another machine's zones, would give nonsense start states and
 * fidelity figures.
 */
static int check_counts(const bh_machine_t *m, int which, char *err, size_t errlen) {
  const bh_snapshot_t *s = &m->snaps[which].pub;
  const char *sn = bh__snap_name(which);
  unsigned mo = m->info.max_order, pbo = m->info.pageblock_order;
  for (int zi = 0; zi < m->info.nr_zones; zi++) {
    const bh_machine_zone_t *z = &m->info.zones[zi];
    const bh_snapshot_zone_t *c = &s->zones[zi];
    uint64_t cap = z->present_pages ? z->present_pages : z->spanned_pages, pages, sum = 0;
    static const char *const names[BH_NR_ZONE_TYPES] = {"DMA", "DMA32", "Normal", "Movable"};
    const char *zn = z->type >= 0 && z->type < BH_NR_ZONE_TYPES ? names[z->type] : "?";
    bool fits = pages_of(c->nr_free, mo, &pages);
    if (s->have_buddyinfo && (!fits || pages > cap)) {
      char n[32] = "2^64 or more";
      if (fits)
        snprintf(n, sizeof(n), "%llu", (unsigned long long)pages);
      return bh__errf(err, errlen, BH_EFORMAT,
                      "%s/buddyinfo: node %d zone %s: the free blocks make %s pages, "
                      "more than the zone's %llu present",
                      sn, z->node, zn, n, (unsigned long long)cap);
    }
    if (!s->have_pagetypeinfo)
      continue;
    for (int t = 0; t < BH_SNAP_TYPES; t++) {
      if (!pages_of(c->nr_free_mt[t], mo, &pages) || __builtin_add_overflow(sum, pages, &sum))
        sum = UINT64_MAX;
    }
    if (sum > cap)
      return bh__errf(err, errlen, BH_EFORMAT,
                      "%s/pagetypeinfo: node %d zone %s: the free blocks make more pages "
                      "than the zone's %llu present",
                      sn, z->node, zn, (unsigned long long)cap);
    uint64_t blocks = 0, most = pbo < 64 ? (z->spanned_pages >> pbo) + 2 : 2;
    for (int t = 0; t < BH_SNAP_TYPES; t++)
      if (__builtin_add_overflow(blocks, c->pageblocks[t], &blocks))
        blocks = UINT64_MAX;
    if (blocks > most)
      return bh__errf(err, errlen, BH_EFORMAT,
                      "%s/pagetypeinfo: node %d zone %s: %s pageblocks, but the zone "
                      "spans %llu pages (%llu blocks of order %u at most)",
                      sn, z->node, zn, blocks == UINT64_MAX ? "2^64 or more" : "more",
                      (unsigned long long)z->spanned_pages, (unsigned long long)most, pbo);
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Interpreting a snapshot's sections                                                        */
/* ---------------------------------------------------------------------------------------- */

int bh__machine_interpret_snapshot(bh_machine_t *m, int which, char *err, size_t errlen) {
  char name[64];
  const bh__section_t *sec;
  bh__snap_t *sn = &m->snaps[which];
  snap_free(sn);
  memset(&sn->pub, 0, sizeof(sn->pub));
  sn->present = false;
  static const char *const files[] = {"zoneinfo", "buddyinfo", "pagetypeinfo", "info", "freemap"};
  for (int f = 0; f < 5; f++) {
    snprintf(name, sizeof(name), "%s/%s", bh__snap_name(which), files[f]);
    if (!(sec = find_section(m, name)))
      continue;
    if (f > 0 && f < 3 && !m->layout_set)
      return bh__errf(err, errlen, BH_EFORMAT, "%s: needs a zoneinfo first", name);
    int rc = 0;
    switch (f) {
    case 0:
      rc = parse_zoneinfo(m, which, sec->text, sec->len, err, errlen);
      break;
    case 1:
      rc = parse_buddyinfo(m, which, sec->text, sec->len, err, errlen);
      break;
    case 2:
      rc = parse_pagetypeinfo(m, which, sec->text, sec->len, err, errlen);
      break;
    case 3:
      rc = parse_snap_info(m, which, sec->text, sec->len);
      break;
    case 4:
      rc = bh__freemap_parse(m, which, sec->text, sec->len, err, errlen);
      break;
    }
    if (rc)
      return rc;
    sn->present = true;
  }
  return sn->present ? check_counts(m, which, err, errlen) : 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The text form                                                                             */
/* ---------------------------------------------------------------------------------------- */

int bh_machine_parse(const char *text, size_t len, bh_machine_t **out, char *err, size_t errlen) {
  if (!out)
    return BH_EINVAL;
  *out = NULL;
  if (!text)
    return bh__errf(err, errlen, BH_EINVAL, "no text");
  bh_machine_t *m = bh_machine_new();
  if (!m)
    return BH_ENOMEM;
  const char *s = text, *end = text + len, *l, *le;
  int line = 0, rc = 0;
  bool ended = false;
  if (!bh__next_line(&s, end, &l, &le) || !starts(l, le, BH__MACHINE_MAGIC)) {
    rc = bh__errf(err, errlen, BH_EFORMAT, "1: not a machine description (no '%s %d')",
                  BH__MACHINE_MAGIC, BH__MACHINE_VERSION);
    goto out;
  }
  uint64_t version;
  const char *p = starts(l, le, BH__MACHINE_MAGIC);
  if (!get_u64(skip_ws(p, le), le, &version) || version != BH__MACHINE_VERSION) {
    rc = bh__errf(err, errlen, BH_EFORMAT, "1: unsupported machine description version");
    goto out;
  }
  line = 1;
  while (!rc && bh__next_line(&s, end, &l, &le)) {
    line++;
    if (skip_ws(l, le) == le)
      continue;
    if (ended || *l != '@') {
      rc = bh__errf(err, errlen, BH_EFORMAT, "%d: %s", line,
                    ended ? "text after @end" : "expected '@SECTION LINES' or '@end'");
      break;
    }
    const char *w, *we;
    if (!(p = get_word(l + 1, le, &w, &we)) || (size_t)(we - w) > 60) {
      rc = bh__errf(err, errlen, BH_EFORMAT, "%d: bad section name", line);
      break;
    }
    if (word_is(w, we, "end")) {
      ended = true;
      continue;
    }
    uint64_t n;
    if (!get_u64(skip_ws(p, le), le, &n)) {
      rc = bh__errf(err, errlen, BH_EFORMAT, "%d: section without a line count", line);
      break;
    }
    const char *body = s;
    for (uint64_t k = 0; k < n; k++, line++)
      if (!bh__next_line(&s, end, &l, &le)) {
        rc = bh__errf(err, errlen, BH_EFORMAT, "%d: section '%.*s' cut short", line, (int)(we - w),
                      w);
        break;
      }
    char name[64];
    snprintf(name, sizeof(name), "%.*s", (int)(we - w), w);
    if (!rc)
      rc = bh__machine_set_section(m, name, body, (size_t)(s - body));
  }
  if (!rc && !ended)
    rc = bh__errf(err, errlen, BH_EFORMAT, "%d: no @end (cut short?)", line);
  const bh__section_t *st;
  if (!rc && (st = find_section(m, "machine")))
    rc = parse_settings(m, st->text, st->len, err, errlen);
  /* the zoneinfos first: either snapshot may set the layout */
  for (int w = 0; !rc && w < BH_NR_SNAPS; w++)
    rc = bh__machine_interpret_snapshot(m, w, err, errlen);
out:
  if (rc) {
    bh_machine_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

/* The settings section from info (what the description says about the machine). */
static int settings_text(const bh_machine_t *m, char *buf, size_t cap) {
  const bh_machine_info_t *in = &m->info;
  int n = 0;
#define PUT(...) n += snprintf(buf + n, cap - (size_t)n, __VA_ARGS__)
  if (in->kernel_release[0])
    PUT("kernel_release %s\n", in->kernel_release);
  if (in->max_order)
    PUT("max_order %u\n", in->max_order);
  if (in->pageblock_order)
    PUT("pageblock_order %u\n", in->pageblock_order);
  if (in->nr_cpus)
    PUT("nr_cpus %u\n", in->nr_cpus);
  if (in->min_free_kbytes)
    PUT("min_free_kbytes %lu\n", (unsigned long)in->min_free_kbytes);
  if (in->watermark_scale_factor)
    PUT("watermark_scale_factor %u\n", in->watermark_scale_factor);
  if (in->watermark_boost_factor || in->min_free_kbytes)
    PUT("watermark_boost_factor %u\n", in->watermark_boost_factor);
  if (in->min_free_kbytes)
    PUT("lowmem_reserve_ratio %u %u %u %u\n", in->lowmem_reserve_ratio[0],
        in->lowmem_reserve_ratio[1], in->lowmem_reserve_ratio[2], in->lowmem_reserve_ratio[3]);
  if (in->page_reporting_order >= 0)
    PUT("page_reporting_order %d\n", in->page_reporting_order);
  if (in->hz)
    PUT("hz %u\n", in->hz);
#undef PUT
  return n;
}

int bh__machine_update_settings(bh_machine_t *m) {
  char buf[1024];
  int n = settings_text(m, buf, sizeof(buf));
  if (n <= 0) {
    bh__machine_drop_section(m, "machine");
    return 0;
  }
  return bh__machine_set_section(m, "machine", buf, (size_t)n);
}

static size_t count_lines(const char *t, size_t len) {
  size_t n = 0;
  for (const char *p = t; (p = memchr(p, '\n', (size_t)(t + len - p))); p++)
    n++;
  return n;
}

int bh_machine_format(const bh_machine_t *m, char **text, size_t *len) {
  if (!m || !text)
    return BH_EINVAL;
  size_t cap = 64;
  for (int i = 0; i < m->nsec; i++)
    cap += m->sec[i].len + strlen(m->sec[i].name) + 32;
  char *b = malloc(cap), *p = b;
  if (!b)
    return BH_ENOMEM;
  p += sprintf(p, "%s %d\n", BH__MACHINE_MAGIC, BH__MACHINE_VERSION);
  for (int i = 0; i < m->nsec; i++) {
    const bh__section_t *s = &m->sec[i];
    p += sprintf(p, "@%s %zu\n", s->name, count_lines(s->text, s->len));
    memcpy(p, s->text, s->len);
    p += s->len;
  }
  p += sprintf(p, "@end\n");
  *text = b;
  if (len)
    *len = (size_t)(p - b);
  return 0;
}

int bh_machine_copy_snapshot(bh_machine_t *dst, const bh_machine_t *src, int which, char *err,
                             size_t errlen) {
  if (!dst || !src || which < 0 || which >= BH_NR_SNAPS)
    return BH_EINVAL;
  bh_machine_drop_snapshot(dst, which);
  size_t n = strlen(bh__snap_name(which));
  for (int i = 0; i < src->nsec; i++) {
    const bh__section_t *s = &src->sec[i];
    if (strncmp(s->name, bh__snap_name(which), n) || s->name[n] != '/')
      continue;
    int rc = bh__machine_set_section(dst, s->name, s->text, s->len);
    if (rc)
      return rc;
  }
  if (!dst->layout_set && src->layout_set) {
    dst->info.pageblock_order = src->info.pageblock_order;
    dst->info.max_order = src->info.max_order;
  }
  return bh__machine_interpret_snapshot(dst, which, err, errlen);
}
