/*
 * The kmem page events of a binary ring buffer record, read with libtraceevent (see
 * kmem_decode.h): the trace.dat reader and `buddyhint record` share it.
 */
#include "trace/kmem_decode.h"

#if BH_HAVE_TRACEEVENT

#include "trace/trace_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_KINDS = 10, PAGE_KINDS = 5, GFP_CACHE = 64, BULK_CPUS = 1024 };

/* struct kind's bulk: the probe at alloc_pages_bulk's entry, or at each page it takes */
enum { BULK_NONE, BULK_CALL, BULK_PAGE };

/* One of the events we read, with its fields as the kernel describes them. */
struct kind {
  int id;
  uint8_t op;
  struct tep_format_field *pfn, *order, *gfp, *mt, *refill;
  struct tep_format_field *forder, *fmt, *own; /* mm_page_alloc_extfrag's fallback fields */
  uint8_t bulk;                                /* BULK_*: one of the bulk probes */
  struct tep_format_field *function;           /* workqueue_execute_start's work function */
  struct tep_format_field *page, *base;        /* BULK_PAGE's struct page and vmemmap_base */
};

struct gfp_entry {
  uint64_t raw;
  uint32_t bits;
  int unknown;  /* names bh_gfp_parse did not know */
  uint8_t zone; /* bh_gfp_zone(bits): a call into the allocator, so once per mask */
  bool used;
};

struct bh__kmem_decoder {
  struct tep_handle *tep;
  uint64_t vmstat_update; /* its address (bh__kmem_decoder_add_vmstat), 0: by name */
  struct kind kinds[MAX_KINDS];
  int nkinds;
  struct trace_seq seq;
  struct gfp_entry gfp_cache[GFP_CACHE];
  /* per CPU, the gfp mask of the alloc_pages_bulk call under way (BULK_CALL; used: known) */
  struct gfp_entry bulk_gfp[BULK_CPUS];
};

void bh__kmem_decoder_free(bh__kmem_decoder_t *d) {
  if (!d)
    return;
  trace_seq_destroy(&d->seq);
  free(d);
}

/* ---- the events and their fields ---- */

/* Finds the event kmem:name and its fields: 0 (found, or absent), or BH_EFORMAT. */
static int add_kind(bh__kmem_decoder_t *d, const char *name, uint8_t op, char *msg, size_t len) {
  struct tep_event *e = tep_find_event_by_name(d->tep, "kmem", name);
  if (!e)
    return 0;
  struct kind *k = &d->kinds[d->nkinds];
  memset(k, 0, sizeof(*k));
  k->id = e->id;
  k->op = op;
  k->pfn = tep_find_field(e, "pfn");
  k->order = tep_find_field(e, "order"); /* mm_page_free_batched has none: order 0 */
  if (op == BH_EV_ALLOC) {
    k->gfp = tep_find_field(e, "gfp_flags");
    k->mt = tep_find_field(e, "migratetype");
  } else if (op == BH_EV_PCPU_DRAIN || op == BH_EV_ALLOC_ZONE_LOCKED) {
    k->mt = tep_find_field(e, "migratetype");
    k->refill = tep_find_field(e, "percpu_refill"); /* mm_page_alloc_zone_locked's */
  } else if (op == BH_EV_EXTFRAG) {
    k->order = tep_find_field(e, "alloc_order");
    k->mt = tep_find_field(e, "alloc_migratetype");
    k->forder = tep_find_field(e, "fallback_order");
    k->fmt = tep_find_field(e, "fallback_migratetype");
    k->own = tep_find_field(e, "change_ownership");
    if (!k->mt || !k->forder || !k->fmt || !k->own) {
      snprintf(msg, len, "kmem:%s lacks one of its 6.12 fields", name);
      return BH_EFORMAT;
    }
  }
  if (!k->pfn) {
    snprintf(msg, len,
             "kmem:%s has no pfn field (a kernel that recorded struct page pointers): "
             "not supported",
             name);
    return BH_EFORMAT;
  }
  if (!k->order && op != BH_EV_FREE_BATCHED) {
    snprintf(msg, len, "kmem:%s has no order field", name);
    return BH_EFORMAT;
  }
  d->nkinds++;
  return 0;
}

int bh__kmem_decoder_new(struct tep_handle *tep, bh__kmem_decoder_t **out, char *msg, size_t len) {
  static const struct {
    const char *name;
    uint8_t op;
  } names[PAGE_KINDS] = {
      {"mm_page_alloc", BH_EV_ALLOC},
      {"mm_page_free", BH_EV_FREE},
      {"mm_page_free_batched", BH_EV_FREE_BATCHED},
      {"mm_page_free_direct", BH_EV_FREE}, /* before Linux 3.3 */
      {"mm_pagevec_free", BH_EV_FREE_BATCHED},
  };
  *out = NULL;
  bh__kmem_decoder_t *d = calloc(1, sizeof(*d));
  if (!d) {
    snprintf(msg, len, "out of memory");
    return BH_ENOMEM;
  }
  d->tep = tep;
  trace_seq_init(&d->seq);
  for (int i = 0; i < PAGE_KINDS; i++) {
    int err = add_kind(d, names[i].name, names[i].op, msg, len);
    if (err) {
      bh__kmem_decoder_free(d);
      return err;
    }
  }
  *out = d;
  return 0;
}

int bh__kmem_decoder_add_pcp(bh__kmem_decoder_t *d, char *msg, size_t len) {
  for (int i = 0; i < d->nkinds; i++)
    if (d->kinds[i].op == BH_EV_PCPU_DRAIN || d->kinds[i].op == BH_EV_ALLOC_ZONE_LOCKED)
      return 0; /* added already */
  int err = add_kind(d, "mm_page_pcpu_drain", BH_EV_PCPU_DRAIN, msg, len);
  err = err ? err : add_kind(d, "mm_page_alloc_zone_locked", BH_EV_ALLOC_ZONE_LOCKED, msg, len);
  return err ? err : add_kind(d, "mm_page_alloc_extfrag", BH_EV_EXTFRAG, msg, len);
}

int bh__kmem_decoder_add_bulk(bh__kmem_decoder_t *d, const char *system, char *msg, size_t len) {
  struct tep_event *call = tep_find_event_by_name(d->tep, system, BH__KMEM_BULK_CALL),
                   *page = tep_find_event_by_name(d->tep, system, BH__KMEM_BULK_PAGE);
  if (!call || !page)
    return 0;
  if (d->nkinds + 2 > MAX_KINDS) {
    snprintf(msg, len, "too many kinds of event");
    return BH_EFORMAT;
  }
  struct kind *k = &d->kinds[d->nkinds];
  memset(k, 0, 2 * sizeof(*k));
  k[0] = (struct kind){.id = call->id, .op = BH_EV_ALLOC, .bulk = BULK_CALL};
  k[0].gfp = tep_find_field(call, "gfp");
  k[1] = (struct kind){.id = page->id, .op = BH_EV_ALLOC, .bulk = BULK_PAGE};
  k[1].page = tep_find_field(page, "page");
  k[1].base = tep_find_field(page, "base");
  if (!k[0].gfp || !k[1].page || !k[1].base) {
    snprintf(msg, len, "%s:bulk_call or bulk_page lacks its gfp, page or base field", system);
    return BH_EFORMAT;
  }
  d->nkinds += 2;
  return 0;
}

int bh__kmem_decoder_add_vmstat(bh__kmem_decoder_t *d, uint64_t addr, char *msg, size_t len) {
  struct tep_event *e = tep_find_event_by_name(d->tep, "workqueue", "workqueue_execute_start");
  if (!e)
    return 0;
  for (int i = 0; i < d->nkinds; i++)
    if (d->kinds[i].op == BH_EV_VMSTAT)
      return 0; /* added already */
  if (d->nkinds + 1 > MAX_KINDS) {
    snprintf(msg, len, "too many kinds of event");
    return BH_EFORMAT;
  }
  struct kind *k = &d->kinds[d->nkinds];
  *k = (struct kind){.id = e->id, .op = BH_EV_VMSTAT};
  if (!(k->function = tep_find_field(e, "function"))) {
    snprintf(msg, len, "workqueue:workqueue_execute_start has no function field");
    return BH_EFORMAT;
  }
  d->vmstat_update = addr;
  d->nkinds++;
  return 0;
}

static const struct kind *kind_of(const bh__kmem_decoder_t *d, int id) {
  for (int i = 0; i < d->nkinds; i++)
    if (d->kinds[i].id == id)
      return &d->kinds[i];
  return NULL;
}

/* ---- decoding a record ---- */

static bool read_field(struct tep_format_field *f, struct tep_record *rec, uint64_t *v) {
  unsigned long long x;
  if (!f || f->offset < 0 || f->size <= 0 || f->offset + f->size > rec->size ||
      tep_read_number_field(f, rec->data, &x))
    return false;
  *v = x;
  return true;
}

/* A field's value sign-extended from its size when the format says it is signed. */
static int64_t signed_value(const struct tep_format_field *f, uint64_t v) {
  if (!(f->flags & TEP_FIELD_IS_SIGNED) || f->size >= 8)
    return f->size >= 8 ? (int64_t)v : (int64_t)(v & ((1ull << (8 * f->size)) - 1));
  uint64_t sign = 1ull << (8 * f->size - 1);
  v &= (sign << 1) - 1;
  return (int64_t)(v ^ sign) - (int64_t)sign;
}

/*
 * The BH_GFP bits (and their zone) of a raw gfp_flags value: the kernel's flag names come from
 * printing the record with the event's own print format ("... gfp_flags=GFP_KERNEL|__GFP_ZERO"),
 * then bh_gfp_parse.  Cached by raw value: a trace has a handful of masks.
 */
static const struct gfp_entry *gfp_of(bh__kmem_decoder_t *d, uint64_t raw, struct tep_record *rec,
                                      uint64_t *gfp_unknown) {
  struct gfp_entry *e = &d->gfp_cache[(raw * 0x9e3779b97f4a7c15ull) >> 58];
  if (!e->used || e->raw != raw) {
    trace_seq_reset(&d->seq);
    tep_print_event(d->tep, &d->seq, rec, "%s", TEP_PRINT_INFO);
    trace_seq_terminate(&d->seq);
    const char *s = d->seq.buffer ? strstr(d->seq.buffer, "gfp_flags=") : NULL;
    uint32_t bits = 0;
    int unknown = -1;
    if (s) {
      s += strlen("gfp_flags=");
      unknown = bh_gfp_parse(s, strcspn(s, " \t\n"), &bits);
    }
    if (unknown < 0) { /* no names printed: the number, read with Linux 6.12's bit values */
      char hex[24];
      int n = snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)raw);
      bits = 0;
      unknown = raw ? bh_gfp_parse(hex, (size_t)n, &bits) : 0;
    }
    *e = (struct gfp_entry){.raw = raw,
                            .bits = bits,
                            .unknown = unknown > 0 ? unknown : 0,
                            .zone = (uint8_t)bh_gfp_zone(bits),
                            .used = true};
  }
  /* unknown names count at every event that has them, as in text traces */
  *gfp_unknown += (uint64_t)e->unknown;
  return e;
}

/* ev, cleared, with rec's time, cpu and task, as an event of op. */
static void event_head(bh__kmem_decoder_t *d, struct tep_record *rec, uint8_t op, bh_event_t *ev) {
  memset(ev, 0, sizeof(*ev));
  ev->time_ns = rec->ts;
  ev->cpu = rec->cpu;
  ev->pid = tep_data_pid(d->tep, rec);
  ev->op = op;
  ev->migratetype = -1;
}

/*
 * A bulk probe's record: at alloc_pages_bulk's entry, its gfp mask kept for its CPU (no
 * event); at each page it takes, an order-0 allocation of that mask.  The pfn is the page's
 * index in the vmemmap (struct page is 64 bytes on x86-64); a null page (the list was empty)
 * is no allocation.
 */
static int decode_bulk(bh__kmem_decoder_t *d, const struct kind *k, struct tep_record *rec,
                       bh_event_t *ev, uint64_t *gfp_unknown, const char **why) {
  uint64_t v, page, base;
  int cpu = rec->cpu;
  *why = NULL;
  if (k->bulk == BULK_CALL) {
    if (!read_field(k->gfp, rec, &v)) {
      *why = "record too short for its gfp field";
      return -1;
    }
    if (cpu >= 0 && cpu < BULK_CPUS)
      d->bulk_gfp[cpu] = *gfp_of(d, v, rec, gfp_unknown);
    return 0;
  }
  if (!read_field(k->page, rec, &page) || !read_field(k->base, rec, &base)) {
    *why = "record too short for its page or base field";
    return -1;
  }
  if (!page)
    return 0;
  if (page < base || (page - base) % 64 || (page - base) / 64 >= 1ull << 52) {
    *why = "bulk_page's page is not a struct page of the vmemmap";
    return -1;
  }
  bool known = cpu >= 0 && cpu < BULK_CPUS && d->bulk_gfp[cpu].used;
  event_head(d, rec, BH_EV_ALLOC, ev);
  ev->pfn = (page - base) / 64;
  ev->gfp = known ? d->bulk_gfp[cpu].bits : 0;
  ev->zone = known ? d->bulk_gfp[cpu].zone : (uint8_t)bh_gfp_zone(0);
  ev->migratetype = (int8_t)(known ? bh_gfp_migratetype(ev->gfp) : -1);
  ev->bulk = 1;
  return 1;
}

int bh__kmem_decode(bh__kmem_decoder_t *d, struct tep_record *rec, bh_event_t *ev,
                    uint64_t *gfp_unknown, const char **why) {
  const struct kind *k = kind_of(d, tep_data_type(d->tep, rec));
  if (!k)
    return 0;
  uint64_t pfn, order = 0, v;
  if (k->bulk)
    return decode_bulk(d, k, rec, ev, gfp_unknown, why);
  if (k->op == BH_EV_VMSTAT) {
    *why = NULL;
    if (!read_field(k->function, rec, &v)) {
      *why = "record too short for its function field";
      return -1;
    }
    const char *name = d->vmstat_update ? NULL : tep_find_function(d->tep, v);
    if (d->vmstat_update ? v != d->vmstat_update : !name || strcmp(name, "vmstat_update"))
      return 0; /* another work function */
    event_head(d, rec, BH_EV_VMSTAT, ev);
    return 1;
  }
  event_head(d, rec, k->op, ev);
  *why = NULL;
  if (!read_field(k->pfn, rec, &pfn))
    *why = "record too short for its pfn field";
  else if (k->order && !read_field(k->order, rec, &order))
    *why = "record too short for its order field";
  else if (order > BH_TRACE_MAX_ORDER)
    *why = "order above 63";
  if (*why)
    return -1;
  ev->order = (uint8_t)order;
  if (k->mt && read_field(k->mt, rec, &v)) {
    int64_t mt = signed_value(k->mt, v);
    ev->migratetype = (int8_t)(mt >= -1 && mt < 127 ? mt : -1);
  }
  if (k->op != BH_EV_ALLOC) {
    ev->pfn = pfn;
    if (k->refill && read_field(k->refill, rec, &v))
      ev->percpu_refill = signed_value(k->refill, v) != 0;
    else if (k->op == BH_EV_ALLOC_ZONE_LOCKED) /* before 5.19 no field: printed "order == 0" */
      ev->percpu_refill = order == 0;
    if (k->op == BH_EV_EXTFRAG) {
      if (!read_field(k->forder, rec, &v) || v > BH_TRACE_MAX_ORDER) {
        *why = "record too short for its fallback_order, or above 63";
        return -1;
      }
      ev->fallback_order = (uint8_t)v;
      int64_t fmt = read_field(k->fmt, rec, &v) ? signed_value(k->fmt, v) : -1;
      ev->fallback_migratetype = (int8_t)(fmt >= -1 && fmt < 127 ? fmt : -1);
      ev->change_ownership = read_field(k->own, rec, &v) && signed_value(k->own, v) != 0;
    }
    return 1;
  }
  ev->failed =
      k->pfn->size >= 8 ? pfn == UINT64_MAX : pfn == (1ull << (8 * (unsigned)k->pfn->size)) - 1;
  ev->pfn = ev->failed ? 0 : pfn;
  if (k->gfp && read_field(k->gfp, rec, &v)) {
    const struct gfp_entry *g = gfp_of(d, v, rec, gfp_unknown);
    ev->gfp = g->bits;
    ev->zone = g->zone;
  } else {
    ev->zone = (uint8_t)bh_gfp_zone(0);
  }
  return 1;
}

#endif
