/*
 * Synthetic trace generators (include/buddyhint/gen.h).
 *
 * Every workload is built from three pieces:
 *
 *   - a pfn pool that stands in for the kernel's free lists: blocks come from fresh memory in
 *     ascending order (a bump pointer aligned to the order) or, once freed, last-freed-first
 *     (one LIFO stack per order, like a pcp list).  A pfn goes back to the pool at the last
 *     event of its free, so it is never handed out twice while live;
 *   - actors: a process that runs `cycles` times "allocate n blocks one per fault, hold,
 *     free them all in folio batches (munmap or exit), wait".  memhog, page-fault1 and guests
 *     are actors; their events are merged by time (the actor with the earliest next event
 *     goes next, ties to the lower index);
 *   - frag-stress, which is a single timeline written directly.
 *
 * Randomness (the jitter of event times, frag-stress's choices) comes from one xorshift64*
 * stream per actor seeded through splitmix64 from `seed`, so the output depends only on the
 * parameters.
 */
#include <buddyhint/gen.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096ull
#define THP_ORDER 9
#define FOLIO_BATCH 31           /* FOLIO_BATCH_SIZE: folios freed per free_unref_folios() call */
#define PFN_BASE 0x100000ull     /* 4 GiB: where ZONE_NORMAL starts on x86-64 */
#define GUEST_ALIGN (1ull << 18) /* guests' pfn ranges start on 1 GiB boundaries */
#define MAX_ACTORS 4096

/* GFP masks as the kernel passes them (bits without a BH_GFP_* equivalent dropped). */
#define GFP_ANON (BH_GFP_USER_MOVABLE | BH_GFP_ZERO) /* vma_alloc_zeroed_movable_folio */
/* THP fault: GFP_TRANSHUGE; 6.x alloc_pages_mpol() first tries the local node only (as
 * recorded traces show: __GFP_HIGHMEM|__GFP_MOVABLE|__GFP_THISNODE). */
#define GFP_THP (BH_GFP_TRANSHUGE | BH_GFP_THISNODE)
#define GFP_UNMOVABLE BH_GFP_KERNEL
#define GFP_RECLAIMABLE (BH_GFP_KERNEL | BH_GFP_RECLAIMABLE)
#define GFP_HUGETLB (BH_GFP_USER_MOVABLE | BH_GFP_THISNODE) /* alloc_buddy_hugetlb_folio */

/* ---------------------------------------------------------------------------------------- */
/* PRNG: splitmix64 to seed, xorshift64* to draw                                             */
/* ---------------------------------------------------------------------------------------- */

typedef struct rng {
  uint64_t s;
} rng_t;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The stream-th independent generator of seed. */
static void rng_init(rng_t *r, uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ (stream * 0xd1342543de82ef95ull);
  r->s = splitmix64(&x);
  if (!r->s)
    r->s = 1;
}

static uint64_t rng_next(rng_t *r) {
  uint64_t x = r->s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, n), n > 0 (multiply-shift: no modulo bias worth the name for our n). */
static uint64_t rng_below(rng_t *r, uint64_t n) {
  return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

/* Uniform in [0, 1). */
static double rng_unit(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* mean ± 25 %, at least 1 ns. */
static uint64_t jitter(rng_t *r, uint64_t mean) {
  if (mean < 4)
    return mean ? mean : 1;
  return mean - mean / 4 + rng_below(r, mean / 2 + 1);
}

/* ---------------------------------------------------------------------------------------- */
/* Growable arrays of u64                                                                    */
/* ---------------------------------------------------------------------------------------- */

typedef struct vec {
  uint64_t *v;
  size_t n, cap;
} vec_t;

static int vec_push(vec_t *a, uint64_t x) {
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 1024;
    uint64_t *v = realloc(a->v, cap * sizeof(*v));
    if (!v)
      return BH_ENOMEM;
    a->v = v;
    a->cap = cap;
  }
  a->v[a->n++] = x;
  return 0;
}

static void vec_free(vec_t *a) {
  free(a->v);
  memset(a, 0, sizeof(*a));
}

/* ---------------------------------------------------------------------------------------- */
/* Fake pfn allocator                                                                        */
/* ---------------------------------------------------------------------------------------- */

#define POOL_ORDERS (THP_ORDER + 1)

typedef struct pool {
  uint64_t next;            /* first never-used pfn */
  vec_t freed[POOL_ORDERS]; /* freed blocks per order, reused from the top */
} pool_t;

static void pool_init(pool_t *p, uint64_t base) {
  memset(p, 0, sizeof(*p));
  p->next = base;
}

static uint64_t pool_get(pool_t *p, unsigned order) {
  vec_t *f = &p->freed[order];
  if (f->n)
    return f->v[--f->n];
  uint64_t size = 1ull << order;
  uint64_t pfn = (p->next + size - 1) & ~(size - 1);
  p->next = pfn + size;
  return pfn;
}

static int pool_put(pool_t *p, uint64_t pfn, unsigned order) {
  return vec_push(&p->freed[order], pfn);
}

static void pool_free(pool_t *p) {
  for (int i = 0; i < POOL_ORDERS; i++)
    vec_free(&p->freed[i]);
}

/* ---------------------------------------------------------------------------------------- */
/* Parameters                                                                                */
/* ---------------------------------------------------------------------------------------- */

enum ptype {
  PT_SIZE, /* bytes: 768M, 1G, 4096; rounded down to whole pages */
  PT_DUR,  /* ns: 5s, 500ms, 1.9us, bare number = seconds */
  PT_UINT, /* decimal */
  PT_AUTO, /* decimal or "auto" (stored as UINT64_MAX) */
  PT_FRAC, /* real number in [min/1000, max/1000] */
  PT_BOOL, /* 0/1, yes/no, true/false, on/off */
  PT_FREES /* kernel | single */
};

typedef struct pdef {
  const char *key;
  int type;
  const char *def;
  uint64_t min, max; /* bounds: bytes, ns, count, or thousandths for PT_FRAC */
  const char *help;
} pdef_t;

typedef union pval {
  uint64_t u;
  double f;
} pval_t;

/* Parameters every workload takes; their values follow the workload's own. */
enum { C_SEED, C_FREES, C_FREE_TIME, NR_COMMON };
static const pdef_t common_params[NR_COMMON] = {
    {"seed", PT_UINT, "1", 0, UINT64_MAX, "seed of the random choices and time jitter"},
    {"frees", PT_FREES, "kernel", 0, 0,
     "kernel: a batched free is mm_page_free then mm_page_free_batched, as Linux 6.x "
     "traces it; single: one event per freed block"},
    {"free_time", PT_DUR, "250ns", 1, 1000000000ull, "time to free one block (zap + free)"},
};

#define MAX_PARAMS 24

typedef struct workload workload_t;
typedef struct gen gen_t;

struct workload {
  const char *name;
  const char *summary;
  const char *desc;
  const pdef_t *params;
  size_t nparams;
  int (*check)(gen_t *g, const pval_t *v); /* cross-parameter checks, may be NULL */
  int (*run)(gen_t *g, const pval_t *v);
};

struct gen {
  const workload_t *wl;
  bh_gen_emit_fn emit;
  void *ctx;
  uint64_t seq;
  uint64_t last_t;
  uint64_t seed;
  bool single_frees;
  uint64_t free_ns;
  char *err;
  size_t errlen;
};

static int gen_fail(gen_t *g, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int gen_fail(gen_t *g, int code, const char *fmt, ...) {
  if (g->err && g->errlen) {
    int n = snprintf(g->err, g->errlen, "%s: ", g->wl ? g->wl->name : "gen");
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < g->errlen)
      vsnprintf(g->err + n, g->errlen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* A size through bh_opt_size, in whole pages. */
static bool parse_size(const char *s, uint64_t *bytes) {
  bh_opt_t o = {"size", s};
  if (bh_opt_size(&o, bytes))
    return false;
  *bytes = *bytes / PAGE * PAGE;
  return true;
}

static const char *type_hint(int type) {
  switch (type) {
  case PT_SIZE:
    return "a size such as 768M or 1G";
  case PT_DUR:
    return "a duration such as 5s, 500ms, 2us or 100ns";
  case PT_UINT:
    return "a whole number";
  case PT_AUTO:
    return "a whole number or 'auto'";
  case PT_FRAC:
    return "a number such as 0.5";
  case PT_BOOL:
    return "0 or 1";
  default:
    return "kernel or single";
  }
}

/* Parses one value; false if it is not of the type or out of bounds. */
static bool parse_value(const pdef_t *d, const char *s, pval_t *out) {
  bh_opt_t o = {d->key, s};
  uint64_t u;
  switch (d->type) {
  case PT_SIZE:
    if (!parse_size(s, &u))
      return false;
    break;
  case PT_DUR:
    if (bh_opt_duration(&o, &u))
      return false;
    break;
  case PT_AUTO:
    if (!strcmp(s, "auto")) {
      out->u = UINT64_MAX;
      return true;
    }
    /* fall through */
  case PT_UINT: {
    if (!*s || *s == '-' || *s == '+')
      return false;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end)
      return false;
    u = x;
    break;
  }
  case PT_FRAC: {
    if (!*s)
      return false;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || *end || !(x >= (double)d->min / 1000.0) || !(x <= (double)d->max / 1000.0))
      return false;
    out->f = x;
    return true;
  }
  case PT_BOOL: {
    bool b;
    if (bh_opt_bool(&o, &b))
      return false;
    out->u = b;
    return true;
  }
  case PT_FREES:
    if (!strcmp(s, "kernel"))
      out->u = 0;
    else if (!strcmp(s, "single"))
      out->u = 1;
    else
      return false;
    return true;
  default:
    return false;
  }
  if (u < d->min || u > d->max)
    return false;
  out->u = u;
  return true;
}

/* "0 to 1", "1 to 1024", "4K to 1T": the bounds of a parameter for a message. */
static void bounds_text(const pdef_t *d, char *buf, size_t n) {
  switch (d->type) {
  case PT_FRAC:
    snprintf(buf, n, " between %g and %g", (double)d->min / 1000.0, (double)d->max / 1000.0);
    break;
  case PT_UINT:
  case PT_AUTO:
    if (d->max == UINT64_MAX)
      snprintf(buf, n, " of at least %llu", (unsigned long long)d->min);
    else
      snprintf(buf, n, " from %llu to %llu", (unsigned long long)d->min,
               (unsigned long long)d->max);
    break;
  case PT_SIZE:
    snprintf(buf, n, " from %lluK to %lluG", (unsigned long long)(d->min >> 10),
             (unsigned long long)(d->max >> 30));
    break;
  default:
    buf[0] = '\0';
  }
}

static const pdef_t *param_def(const workload_t *wl, size_t i) {
  return i < wl->nparams ? &wl->params[i] : &common_params[i - wl->nparams];
}

/* Fills v[0 .. nparams+NR_COMMON) from the defaults, then from the given pairs. */
static int parse_params(gen_t *g, const bh_opt_t *params, size_t nparams, pval_t *v) {
  const workload_t *wl = g->wl;
  size_t total = wl->nparams + NR_COMMON;
  for (size_t i = 0; i < total; i++)
    if (!parse_value(param_def(wl, i), param_def(wl, i)->def, &v[i]))
      return gen_fail(g, BH_EINVAL, "bad default for %s (bug)", param_def(wl, i)->key);
  for (size_t k = 0; k < nparams; k++) {
    const char *key = params[k].key, *val = params[k].value ? params[k].value : "";
    size_t i = 0;
    while (i < total && (!key || strcmp(key, param_def(wl, i)->key)))
      i++;
    if (i == total) {
      char known[512];
      size_t n = 0;
      known[0] = '\0';
      for (size_t j = 0; j < total && n < sizeof(known); j++)
        n += (size_t)snprintf(known + n, sizeof(known) - n, "%s%s", j ? ", " : "",
                              param_def(wl, j)->key);
      return gen_fail(g, BH_EINVAL, "unknown parameter '%s' (known: %s)", key ? key : "", known);
    }
    const pdef_t *d = param_def(wl, i);
    if (!parse_value(d, val, &v[i])) {
      char b[96];
      bounds_text(d, b, sizeof(b));
      return gen_fail(g, BH_EINVAL, "bad value '%s' for %s: expected %s%s", val, d->key,
                      type_hint(d->type), b);
    }
  }
  const pval_t *c = v + wl->nparams;
  g->seed = c[C_SEED].u;
  g->single_frees = c[C_FREES].u == 1;
  g->free_ns = c[C_FREE_TIME].u;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Emission                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/* Emits one event at time t (pushed 1 ns past the previous event if needed). */
static int emit(gen_t *g, uint64_t t, int op, uint64_t pfn, unsigned order, uint32_t gfp, int pid,
                int cpu) {
  if (g->seq && t <= g->last_t)
    t = g->last_t + 1;
  g->last_t = t;
  bh_event_t ev;
  memset(&ev, 0, sizeof(ev));
  ev.time_ns = t;
  ev.seq = g->seq++;
  ev.pfn = pfn;
  ev.op = (uint8_t)op;
  ev.order = (uint8_t)order;
  ev.pid = pid;
  ev.cpu = cpu;
  if (op == BH_EV_ALLOC) {
    ev.gfp = gfp;
    ev.migratetype = (int8_t)bh_gfp_migratetype(gfp);
    ev.zone = (uint8_t)bh_gfp_zone(gfp);
  } else {
    ev.migratetype = -1;
  }
  return g->emit(g->ctx, &ev);
}

/*
 * Frees blocks[0..n) of one process as a folio batch: kernel mode writes mm_page_free for
 * each (with its order), then mm_page_free_batched for each (order printed as 0); single mode
 * writes one event each (B for order 0, F above).  Each pfn goes back to the pool at its last
 * event.  *t advances by free_ns per block.
 */
static int free_batch(gen_t *g, rng_t *r, pool_t *pool, uint64_t *t, const uint64_t *blocks,
                      size_t n, unsigned order, int pid, int cpu) {
  int err;
  if (g->single_frees) {
    for (size_t i = 0; i < n; i++) {
      if ((err = emit(g, *t, order ? BH_EV_FREE : BH_EV_FREE_BATCHED, blocks[i], order, 0, pid,
                      cpu)) ||
          (err = pool_put(pool, blocks[i], order)))
        return err;
      *t += jitter(r, g->free_ns);
    }
    return 0;
  }
  uint64_t f_ns = g->free_ns - g->free_ns / 4, b_ns = g->free_ns / 4 ? g->free_ns / 4 : 1;
  for (size_t i = 0; i < n; i++) {
    if ((err = emit(g, *t, BH_EV_FREE, blocks[i], order, 0, pid, cpu)))
      return err;
    *t += jitter(r, f_ns);
  }
  for (size_t i = 0; i < n; i++) {
    if ((err = emit(g, *t, BH_EV_FREE_BATCHED, blocks[i], 0, 0, pid, cpu)) ||
        (err = pool_put(pool, blocks[i], order)))
      return err;
    *t += jitter(r, b_ns);
  }
  return 0;
}

/* A lone mm_page_free (__free_pages of kernel memory), pfn back to the pool. */
static int free_one(gen_t *g, pool_t *pool, uint64_t t, uint64_t pfn, unsigned order, int pid,
                    int cpu) {
  int err = emit(g, t, BH_EV_FREE, pfn, order, 0, pid, cpu);
  return err ? err : pool_put(pool, pfn, order);
}

/* ---------------------------------------------------------------------------------------- */
/* Actors: allocate n blocks, hold, free all in folio batches, wait; `cycles` times           */
/* ---------------------------------------------------------------------------------------- */

enum { A_ALLOC, A_FREE_F, A_FREE_B, A_DONE };

typedef struct actor {
  /* what it does */
  int pid, cpu;
  unsigned order;
  uint32_t gfp;
  uint64_t nblocks;  /* blocks allocated per cycle */
  uint64_t alloc_ns; /* mean time between two allocations (one fault each) */
  uint64_t hold_ns;  /* after the last allocation, before the first free */
  uint64_t gap_ns;   /* after the last free, before the next cycle */
  uint64_t cycles;
  pool_t *pool;
  rng_t rng;
  /* where it is */
  int state;
  uint64_t t; /* time of its next event */
  uint64_t cycle, i;
  vec_t live;                /* blocks of this cycle, in allocation (= address) order */
  size_t bstart, blen, bpos; /* current folio batch live.v[bstart .. bstart+blen) */
} actor_t;

static void actor_init(actor_t *a, gen_t *g, uint64_t stream, uint64_t start_ns) {
  rng_init(&a->rng, g->seed, stream);
  a->state = a->nblocks && a->cycles ? A_ALLOC : A_DONE;
  a->t = start_ns;
}

static void actor_next_batch(actor_t *a) {
  size_t left = a->live.n - a->bstart;
  a->blen = left < FOLIO_BATCH ? left : FOLIO_BATCH;
  a->bpos = 0;
}

/* The last block of the cycle was freed: next cycle or done. */
static void actor_end_cycle(actor_t *a) {
  a->live.n = 0;
  if (++a->cycle == a->cycles) {
    a->state = A_DONE;
    return;
  }
  a->t += a->gap_ns;
  a->i = 0;
  a->state = A_ALLOC;
}

/* Emits the actor's next event (at a->t) and works out when the one after is due. */
static int actor_step(gen_t *g, actor_t *a) {
  int err;
  uint64_t pfn;
  switch (a->state) {
  case A_ALLOC:
    pfn = pool_get(a->pool, a->order);
    if ((err = emit(g, a->t, BH_EV_ALLOC, pfn, a->order, a->gfp, a->pid, a->cpu)) ||
        (err = vec_push(&a->live, pfn)))
      return err;
    if (++a->i < a->nblocks) {
      a->t += jitter(&a->rng, a->alloc_ns);
    } else {
      a->t += jitter(&a->rng, a->alloc_ns) + a->hold_ns;
      a->bstart = 0;
      actor_next_batch(a);
      a->state = A_FREE_F;
    }
    return 0;
  case A_FREE_F:
    /* single mode: the one event per block; kernel mode: the F half of the batch */
    pfn = a->live.v[a->bstart + a->bpos];
    if (g->single_frees) {
      if ((err = emit(g, a->t, a->order ? BH_EV_FREE : BH_EV_FREE_BATCHED, pfn, a->order, 0, a->pid,
                      a->cpu)) ||
          (err = pool_put(a->pool, pfn, a->order)))
        return err;
      a->t += jitter(&a->rng, g->free_ns);
      if (++a->bpos == a->blen) {
        a->bstart += a->blen;
        if (a->bstart == a->live.n)
          actor_end_cycle(a);
        else
          actor_next_batch(a);
      }
      return 0;
    }
    if ((err = emit(g, a->t, BH_EV_FREE, pfn, a->order, 0, a->pid, a->cpu)))
      return err;
    a->t += jitter(&a->rng, g->free_ns - g->free_ns / 4);
    if (++a->bpos == a->blen) {
      a->bpos = 0;
      a->state = A_FREE_B;
    }
    return 0;
  case A_FREE_B:
    pfn = a->live.v[a->bstart + a->bpos];
    if ((err = emit(g, a->t, BH_EV_FREE_BATCHED, pfn, 0, 0, a->pid, a->cpu)) ||
        (err = pool_put(a->pool, pfn, a->order)))
      return err;
    a->t += jitter(&a->rng, g->free_ns / 4 ? g->free_ns / 4 : 1);
    if (++a->bpos == a->blen) {
      a->bstart += a->blen;
      if (a->bstart == a->live.n) {
        actor_end_cycle(a);
      } else {
        actor_next_batch(a);
        a->state = A_FREE_F;
      }
    }
    return 0;
  default:
    return 0;
  }
}

/* Runs actors to the end, merging their events by time. */
static int run_actors(gen_t *g, actor_t *a, size_t n) {
  for (;;) {
    size_t best = n;
    for (size_t i = 0; i < n; i++)
      if (a[i].state != A_DONE && (best == n || a[i].t < a[best].t))
        best = i;
    if (best == n)
      return 0;
    int err = actor_step(g, &a[best]);
    if (err)
      return err;
  }
}

static void actors_free(actor_t *a, size_t n) {
  for (size_t i = 0; a && i < n; i++)
    vec_free(&a[i].live);
  free(a);
}

/* ---------------------------------------------------------------------------------------- */
/* memhog                                                                                    */
/* ---------------------------------------------------------------------------------------- */

enum { MH_SIZE, MH_DURATION, MH_HOLD, MH_REPEAT, MH_GAP, MH_THP, MH_PID, MH_CPU, MH_N };
static const pdef_t memhog_params[MH_N] = {
    {"size", PT_SIZE, "768M", PAGE, 1ull << 40, "memory the process allocates and touches"},
    {"duration", PT_DUR, "5s", 1000, 1000000000000000ull,
     "time to touch all of it (one fault per page, sequentially)"},
    {"hold", PT_DUR, "1s", 0, 1000000000000000ull, "time it keeps the memory before exiting"},
    {"repeat", PT_UINT, "1", 1, 1000000, "runs, one after another"},
    {"gap", PT_DUR, "1s", 0, 1000000000000000ull, "idle time between two runs"},
    {"thp", PT_BOOL, "0", 0, 1, "1: order-9 THP faults (GFP_TRANSHUGE) instead of order-0"},
    {"pid", PT_UINT, "1000", 1, 4194304, "pid of the process"},
    {"cpu", PT_UINT, "0", 0, 32767, "cpu it runs on"},
};

static int memhog_check(gen_t *g, const pval_t *v) {
  if (v[MH_THP].u && v[MH_SIZE].u < (PAGE << THP_ORDER))
    return gen_fail(g, BH_EINVAL, "size must be at least 2M with thp=1");
  return 0;
}

static int memhog_run(gen_t *g, const pval_t *v) {
  actor_t *a = calloc(1, sizeof(*a));
  pool_t pool;
  if (!a)
    return BH_ENOMEM;
  pool_init(&pool, PFN_BASE);
  a->pid = (int)v[MH_PID].u;
  a->cpu = (int)v[MH_CPU].u;
  a->order = v[MH_THP].u ? THP_ORDER : 0;
  a->gfp = v[MH_THP].u ? GFP_THP : GFP_ANON;
  a->nblocks = v[MH_SIZE].u / (PAGE << a->order);
  a->alloc_ns = v[MH_DURATION].u / a->nblocks ? v[MH_DURATION].u / a->nblocks : 1;
  a->hold_ns = v[MH_HOLD].u;
  a->gap_ns = v[MH_GAP].u;
  a->cycles = v[MH_REPEAT].u;
  a->pool = &pool;
  actor_init(a, g, 0, 0);
  int err = run_actors(g, a, 1);
  actors_free(a, 1);
  pool_free(&pool);
  return err;
}

/* ---------------------------------------------------------------------------------------- */
/* page-fault1                                                                               */
/* ---------------------------------------------------------------------------------------- */

enum { PF_TASKS, PF_ITER, PF_SIZE, PF_FAULT, PF_MMAP, PF_THP, PF_N };
static const pdef_t pf_params[PF_N] = {
    {"tasks", PT_UINT, "2", 1, MAX_ACTORS, "tasks, task i on cpu i with pid 1001+i"},
    {"iterations", PT_UINT, "50", 1, 100000000, "mmap/fault/munmap loops per task"},
    {"size", PT_SIZE, "128M", PAGE, 1ull << 40, "memory each task maps per loop"},
    {"fault_time", PT_DUR, "1.9us", 1, 1000000000ull,
     "time of one fault (zeroing included; 2 MiB faults take 512x this with thp=1)"},
    {"mmap_time", PT_DUR, "5us", 0, 1000000000ull, "mmap + munmap syscall time per loop"},
    {"thp", PT_BOOL, "0", 0, 1, "1: order-9 THP faults, as Duyck's THP variant"},
};

static int pf_check(gen_t *g, const pval_t *v) {
  if (v[PF_THP].u && v[PF_SIZE].u < (PAGE << THP_ORDER))
    return gen_fail(g, BH_EINVAL, "size must be at least 2M with thp=1");
  return 0;
}

static int pf_run(gen_t *g, const pval_t *v) {
  size_t n = v[PF_TASKS].u;
  actor_t *a = calloc(n, sizeof(*a));
  pool_t pool;
  if (!a)
    return BH_ENOMEM;
  pool_init(&pool, PFN_BASE);
  unsigned order = v[PF_THP].u ? THP_ORDER : 0;
  for (size_t i = 0; i < n; i++) {
    a[i].pid = 1001 + (int)i;
    a[i].cpu = (int)i;
    a[i].order = order;
    a[i].gfp = order ? GFP_THP : GFP_ANON;
    a[i].nblocks = v[PF_SIZE].u / (PAGE << order);
    a[i].alloc_ns = v[PF_FAULT].u << order;
    a[i].hold_ns = 0;
    a[i].gap_ns = v[PF_MMAP].u;
    a[i].cycles = v[PF_ITER].u;
    a[i].pool = &pool;
    /* the tasks start together, a few microseconds apart (fork + start barrier) */
    actor_init(&a[i], g, i, i * 3000);
  }
  int err = run_actors(g, a, n);
  actors_free(a, n);
  pool_free(&pool);
  return err;
}

/* ---------------------------------------------------------------------------------------- */
/* guests                                                                                    */
/* ---------------------------------------------------------------------------------------- */

enum { GU_GUESTS, GU_INTERVAL, GU_GUEST_SIZE, GU_FRACTION, GU_DURATION, GU_HOLD, GU_CPUS, GU_N };
static const pdef_t guests_params[GU_N] = {
    {"guests", PT_UINT, "3", 1, MAX_ACTORS, "guests, launched one after another; pid = number"},
    {"interval", PT_DUR, "20s", 0, 1000000000000000ull, "time between two launches"},
    {"guest_size", PT_SIZE, "1G", PAGE, 1ull << 40, "memory of one guest"},
    {"fraction", PT_FRAC, "0.8", 1, 1000, "part of its memory a guest allocates and touches"},
    {"duration", PT_DUR, "4s", 1000, 1000000000000000ull, "time to touch it"},
    {"hold", PT_DUR, "5s", 0, 1000000000000000ull, "time a guest keeps it before freeing"},
    {"cpus", PT_UINT, "2", 1, 32768, "guest g runs on cpu (g-1) mod cpus"},
};

static int guests_run(gen_t *g, const pval_t *v) {
  size_t n = v[GU_GUESTS].u;
  uint64_t guest_pages = v[GU_GUEST_SIZE].u / PAGE;
  uint64_t pages = (uint64_t)((double)guest_pages * v[GU_FRACTION].f);
  if (pages == 0)
    return gen_fail(g, BH_EINVAL, "fraction x guest_size is less than one page");
  uint64_t span = (guest_pages + GUEST_ALIGN - 1) / GUEST_ALIGN * GUEST_ALIGN;
  actor_t *a = calloc(n, sizeof(*a));
  pool_t *pools = calloc(n, sizeof(*pools));
  int err = BH_ENOMEM;
  if (!a || !pools)
    goto out;
  for (size_t i = 0; i < n; i++) {
    pool_init(&pools[i], PFN_BASE + i * span); /* distinct pfn range per guest */
    a[i].pid = (int)i + 1;
    a[i].cpu = (int)(i % v[GU_CPUS].u);
    a[i].order = 0;
    a[i].gfp = GFP_ANON;
    a[i].nblocks = pages;
    a[i].alloc_ns = v[GU_DURATION].u / pages ? v[GU_DURATION].u / pages : 1;
    a[i].hold_ns = v[GU_HOLD].u;
    a[i].cycles = 1;
    a[i].pool = &pools[i];
    actor_init(&a[i], g, i, i * v[GU_INTERVAL].u);
  }
  err = run_actors(g, a, n);
out:
  actors_free(a, n);
  for (size_t i = 0; pools && i < n; i++)
    pool_free(&pools[i]);
  free(pools);
  return err;
}

/* ---------------------------------------------------------------------------------------- */
/* frag-stress                                                                               */
/* ---------------------------------------------------------------------------------------- */

enum {
  FS_SIZE,
  FS_KERNEL,
  FS_RECLAIMABLE,
  FS_CHURN,
  FS_JOBS,
  FS_CPUS,
  FS_DURATION,
  FS_HOLD,
  FS_HUGEPAGES,
  FS_HP_BATCH,
  FS_HP_GAP,
  FS_RELEASE,
  FS_N
};
static const pdef_t fs_params[FS_N] = {
    {"size", PT_SIZE, "768M", PAGE, 1ull << 40,
     "memory filled (movable + kernel); live pages never exceed it during the fill"},
    {"kernel", PT_FRAC, "0.1", 0, 900,
     "part of the allocations that are kernel ones (orders 0-3, long-lived)"},
    {"reclaimable", PT_FRAC, "0.5", 0, 1000,
     "part of the kernel allocations that are reclaimable (slab), the rest unmovable"},
    {"churn", PT_FRAC, "0.5", 0, 950,
     "part of the movable pages that are short-lived (freed again during the fill)"},
    {"jobs", PT_UINT, "4", 1, MAX_ACTORS,
     "processes allocating (pids 2001..), job j on cpu j mod cpus"},
    {"cpus", PT_UINT, "2", 1, 32768, "cpus of the machine"},
    {"duration", PT_DUR, "10s", 1000, 1000000000000000ull, "about how long the fill takes"},
    {"hold", PT_DUR, "1s", 0, 1000000000000000ull, "time between the fill and the frees"},
    {"hugepages", PT_AUTO, "auto", 0, 1ull << 32,
     "order-9 attempts afterwards (auto: size / 2M; 0: none)"},
    {"hugepage_batch", PT_UINT, "100", 1, 1ull << 32,
     "attempts per round (the script raises nr_hugepages by this much)"},
    {"round_gap", PT_DUR, "1s", 0, 1000000000000000ull, "time between two rounds"},
    {"release", PT_BOOL, "1", 0, 1,
     "1: free every huge page at the end (nr_hugepages=0), with a lone mm_page_free"},
};

/* Kernel allocation orders 0-3: slab and page tables, order-1 slabs, kernel stacks (order 2
 * on x86-64), order-3 slabs. */
static const unsigned fs_order_pct[4] = {50, 20, 20, 10};
#define FS_SHRINKER_PID 100 /* kswapd0: frees the reclaimable slab pages */
#define FS_SCRIPT_PID 5000  /* the shell raising nr_hugepages */
#define FS_KBLOCK(pfn, order, recl) ((pfn) << 3 | (uint64_t)(order) << 1 | (recl))

typedef struct fs_job {
  int pid, cpu;
  vec_t live; /* long-lived movable pages */
  vec_t tmp;  /* short-lived ones, freed when tmp_target are live */
  uint64_t tmp_target;
} fs_job_t;

static unsigned fs_kernel_order(rng_t *r) {
  uint64_t x = rng_below(r, 100);
  unsigned o = 0;
  while (o < 3 && x >= fs_order_pct[o])
    x -= fs_order_pct[o++];
  return o;
}

static int fs_run(gen_t *g, const pval_t *v) {
  const uint64_t size_pages = v[FS_SIZE].u / PAGE;
  const double kern = v[FS_KERNEL].f, recl = v[FS_RECLAIMABLE].f, churn = v[FS_CHURN].f;
  const size_t njobs = v[FS_JOBS].u;
  uint64_t nhuge =
      v[FS_HUGEPAGES].u == UINT64_MAX ? v[FS_SIZE].u / (PAGE << THP_ORDER) : v[FS_HUGEPAGES].u;
  /* Expected allocations to fill size: each one adds kern*avg_order_pages + (1-kern)*(1-churn)
   * live pages on average; pace them to take about `duration`. */
  double avg_k = 0;
  for (unsigned o = 0; o < 4; o++)
    avg_k += fs_order_pct[o] / 100.0 * (double)(1u << o);
  double growth = kern * avg_k + (1 - kern) * (1 - churn);
  double expected = (double)size_pages / (growth > 0 ? growth : 1);
  uint64_t alloc_ns = (uint64_t)((double)v[FS_DURATION].u / (expected > 1 ? expected : 1));
  if (!alloc_ns)
    alloc_ns = 1;

  rng_t r;
  rng_init(&r, g->seed, 0);
  pool_t pool;
  pool_init(&pool, PFN_BASE);
  vec_t kblocks = {0}, huge = {0};
  fs_job_t *jobs = calloc(njobs, sizeof(*jobs));
  int err = BH_ENOMEM;
  if (!jobs)
    goto out;
  for (size_t j = 0; j < njobs; j++) {
    jobs[j].pid = 2001 + (int)j;
    jobs[j].cpu = (int)(j % v[FS_CPUS].u);
    jobs[j].tmp_target = 8 + rng_below(&r, 57);
  }

  /* 1. Fill: kernel allocations (kept) interleaved with movable ones, of which `churn` are
   *    short-lived and freed in small batches (a short process exiting). */
  uint64_t t = 0, live = 0;
  while (live < size_pages) {
    fs_job_t *jb = &jobs[rng_below(&r, njobs)];
    if (kern > 0 && rng_unit(&r) < kern) {
      unsigned order = fs_kernel_order(&r);
      while (live + (1ull << order) > size_pages)
        order--;
      bool rc = rng_unit(&r) < recl;
      uint64_t pfn = pool_get(&pool, order);
      if ((err = emit(g, t, BH_EV_ALLOC, pfn, order, rc ? GFP_RECLAIMABLE : GFP_UNMOVABLE, jb->pid,
                      jb->cpu)) ||
          (err = vec_push(&kblocks, FS_KBLOCK(pfn, order, rc))))
        goto out;
      live += 1ull << order;
    } else {
      uint64_t pfn = pool_get(&pool, 0);
      bool tmp = rng_unit(&r) < churn;
      if ((err = emit(g, t, BH_EV_ALLOC, pfn, 0, GFP_ANON, jb->pid, jb->cpu)) ||
          (err = vec_push(tmp ? &jb->tmp : &jb->live, pfn)))
        goto out;
      live++;
      if (jb->tmp.n >= jb->tmp_target && live < size_pages) {
        t += jitter(&r, alloc_ns);
        for (size_t k = 0; k < jb->tmp.n; k += FOLIO_BATCH) {
          size_t m = jb->tmp.n - k < FOLIO_BATCH ? jb->tmp.n - k : FOLIO_BATCH;
          if ((err = free_batch(g, &r, &pool, &t, jb->tmp.v + k, m, 0, jb->pid, jb->cpu)))
            goto out;
        }
        live -= jb->tmp.n;
        jb->tmp.n = 0;
        jb->tmp_target = 8 + rng_below(&r, 57);
      }
    }
    t += jitter(&r, alloc_ns);
  }

  /* 2. The jobs exit one after another: all their movable pages go, in folio batches. */
  t += v[FS_HOLD].u;
  for (size_t j = 0; j < njobs; j++) {
    vec_t *sets[2] = {&jobs[j].live, &jobs[j].tmp};
    for (int s = 0; s < 2; s++)
      for (size_t k = 0; k < sets[s]->n; k += FOLIO_BATCH) {
        size_t m = sets[s]->n - k < FOLIO_BATCH ? sets[s]->n - k : FOLIO_BATCH;
        if ((err = free_batch(g, &r, &pool, &t, sets[s]->v + k, m, 0, jobs[j].pid, jobs[j].cpu)))
          goto out;
      }
    t += jitter(&r, 1000000); /* ~1 ms between two exits */
  }

  /* 3. The shrinker frees half of the reclaimable kernel blocks, chosen at random; the
   *    unmovable ones and the other half stay, scattered among the freed memory. */
  size_t nrecl = 0;
  for (size_t i = 0; i < kblocks.n; i++) /* reclaimable blocks to the front, order kept */
    if (kblocks.v[i] & 1) {
      uint64_t x = kblocks.v[i];
      kblocks.v[i] = kblocks.v[nrecl];
      kblocks.v[nrecl++] = x;
    }
  for (size_t i = nrecl; i > 1; i--) { /* Fisher-Yates over the reclaimable prefix */
    size_t j = rng_below(&r, i);
    uint64_t x = kblocks.v[i - 1];
    kblocks.v[i - 1] = kblocks.v[j];
    kblocks.v[j] = x;
  }
  for (size_t i = 0; i < nrecl / 2; i++) {
    uint64_t kb = kblocks.v[i];
    if ((err = free_one(g, &pool, t, kb >> 3, (unsigned)(kb >> 1 & 3), FS_SHRINKER_PID, 0)))
      goto out;
    t += jitter(&r, 2 * g->free_ns);
  }

  /* 4. The script raises nr_hugepages by hugepage_batch per round: order-9 attempts. */
  for (uint64_t done = 0; done < nhuge;) {
    t += v[FS_HP_GAP].u;
    uint64_t m = nhuge - done < v[FS_HP_BATCH].u ? nhuge - done : v[FS_HP_BATCH].u;
    for (uint64_t k = 0; k < m; k++) {
      uint64_t pfn = pool_get(&pool, THP_ORDER);
      if ((err = emit(g, t, BH_EV_ALLOC, pfn, THP_ORDER, GFP_HUGETLB, FS_SCRIPT_PID, 0)) ||
          (err = vec_push(&huge, pfn)))
        goto out;
      t += jitter(&r, 20000); /* ~20 us per attempt (compaction, retries) */
    }
    done += m;
  }
  /* 5. nr_hugepages=0: the pool is released. */
  if (v[FS_RELEASE].u && huge.n) {
    t += v[FS_HP_GAP].u;
    for (size_t i = 0; i < huge.n; i++) {
      if ((err = free_one(g, &pool, t, huge.v[i], THP_ORDER, FS_SCRIPT_PID, 0)))
        goto out;
      t += jitter(&r, 4 * g->free_ns);
    }
  }
  err = 0;
out:
  for (size_t j = 0; jobs && j < njobs; j++) {
    vec_free(&jobs[j].live);
    vec_free(&jobs[j].tmp);
  }
  free(jobs);
  vec_free(&kblocks);
  vec_free(&huge);
  pool_free(&pool);
  return err;
}

/* ---------------------------------------------------------------------------------------- */
/* Registry and help                                                                         */
/* ---------------------------------------------------------------------------------------- */

#define NPARAMS(a) (sizeof(a) / sizeof((a)[0]))

static const workload_t workloads[] = {
    {"memhog", "one process touches SIZE of anonymous memory, holds it, exits",
     "One process (numactl's memhog) allocates `size` of anonymous memory, one order-0\n"
     "GFP_HIGHUSER_MOVABLE|__GFP_ZERO fault per page (order-9 GFP_TRANSHUGE with thp=1),\n"
     "touching it sequentially over `duration`; keeps it for `hold`; exits, which frees\n"
     "everything in folio batches of 31 (mm_page_free + mm_page_free_batched).  `repeat`\n"
     "runs, `gap` apart; the trace ends with the last free.\n",
     memhog_params, MH_N, memhog_check, memhog_run},
    {"page-fault1", "will-it-scale page_fault1: tasks mmap, fault in, munmap SIZE in a loop",
     "will-it-scale page_fault1: `tasks` tasks, each on its own cpu, loop `iterations`\n"
     "times over: mmap `size`, write one byte per page (one order-0 movable fault each,\n"
     "`fault_time` apart), munmap (batched frees).  The tasks' events are interleaved by\n"
     "time; freed pages are reused last-freed-first by whichever task faults next.\n",
     pf_params, PF_N, pf_check, pf_run},
    {"guests", "guests launched one after another; each touches most of its memory, frees it",
     "The 'guests launched without swap' experiment: `guests` guests start `interval`\n"
     "apart; guest g (pid g) allocates `fraction` of `guest_size` over `duration`, holds it\n"
     "for `hold`, frees all of it and then stays idle.  Each guest's pfns lie in their own\n"
     "range (1 GiB aligned), so a replay can tell the guests apart.\n",
     guests_params, GU_N, NULL, guests_run},
    {"frag-stress", "Mel Gorman's fragmentation stress, then order-9 (hugepage) attempts",
     "Mel Gorman's anti-fragmentation stress test: `jobs` processes fill `size` with\n"
     "order-0 movable pages, `churn` of them short-lived (freed in small batches during the\n"
     "fill), interleaved with long-lived kernel allocations of orders 0-3 (`kernel` of the\n"
     "allocations; unmovable GFP_KERNEL or, `reclaimable` of them, GFP_KERNEL|\n"
     "__GFP_RECLAIMABLE).  Then the jobs exit (all movable pages freed) and the shrinker\n"
     "frees half of the reclaimable blocks, leaving pinned pages scattered.  Finally the\n"
     "nr_hugepages script asks for `hugepages` order-9 pages, `hugepage_batch` per round:\n"
     "the trace holds the attempts (as successful allocations with fresh pfns); the replay\n"
     "tells which succeed.  With release=1 they are all freed at the end.  The unmovable and\n"
     "remaining reclaimable kernel blocks are never freed.\n",
     fs_params, FS_N, NULL, fs_run},
};
#define NR_WORKLOADS (sizeof(workloads) / sizeof(workloads[0]))
_Static_assert(MH_N <= MAX_PARAMS && PF_N <= MAX_PARAMS && GU_N <= MAX_PARAMS && FS_N <= MAX_PARAMS,
               "raise MAX_PARAMS");

static const workload_t *find_workload(const char *name) {
  for (size_t i = 0; name && i < NR_WORKLOADS; i++)
    if (!strcmp(name, workloads[i].name))
      return &workloads[i];
  return NULL;
}

const char *bh_gen_workload_at(int i) {
  return i >= 0 && (size_t)i < NR_WORKLOADS ? workloads[i].name : NULL;
}

const char *bh_gen_summary(const char *workload) {
  const workload_t *wl = find_workload(workload);
  return wl ? wl->summary : NULL;
}

#define HELP_INDENT 21
#define HELP_WIDTH 88

/* Appends text to s[n..cap) as words wrapped at width, continuation lines indented; the
 * first line continues where s ends (column indent - 1).  Returns the new length. */
static size_t wrap(char *s, size_t n, size_t cap, const char *text, int indent, int width) {
  int col = indent - 1;
  while (*text && n + 1 < cap) {
    size_t w = strcspn(text, " ");
    if (col + 1 + (int)w > width && col > indent) {
      n += (size_t)snprintf(s + n, cap - n, "\n%*s", indent - 1, "");
      col = indent - 1;
    }
    n += (size_t)snprintf(s + n, cap - n, " %.*s", (int)w, text);
    col += 1 + (int)w;
    text += w;
    while (*text == ' ')
      text++;
  }
  if (n + 1 < cap)
    n += (size_t)snprintf(s + n, cap - n, "\n");
  return n;
}

static char *help_text[NR_WORKLOADS];
static pthread_once_t help_once = PTHREAD_ONCE_INIT;

static void build_help(void) {
  for (size_t w = 0; w < NR_WORKLOADS; w++) {
    const workload_t *wl = &workloads[w];
    size_t cap = strlen(wl->desc) + 64;
    for (size_t i = 0; i < wl->nparams + NR_COMMON; i++)
      cap += 2 * strlen(param_def(wl, i)->help) + 64;
    char *s = malloc(cap);
    if (!s)
      continue;
    size_t n = (size_t)snprintf(s, cap, "%s\nparameters (--param KEY=VALUE):\n", wl->desc);
    for (size_t i = 0; i < wl->nparams + NR_COMMON && n < cap; i++) {
      const pdef_t *d = param_def(wl, i);
      char kv[64];
      snprintf(kv, sizeof(kv), "%s=%s", d->key, d->def);
      n += (size_t)snprintf(s + n, cap - n, "  %-18s", kv);
      n = wrap(s, n, cap, d->help, HELP_INDENT, HELP_WIDTH);
    }
    help_text[w] = s;
  }
}

const char *bh_gen_help(const char *workload) {
  const workload_t *wl = find_workload(workload);
  if (!wl)
    return NULL;
  pthread_once(&help_once, build_help);
  return help_text[wl - workloads] ? help_text[wl - workloads] : wl->desc;
}

/* ---------------------------------------------------------------------------------------- */
/* Entry points                                                                              */
/* ---------------------------------------------------------------------------------------- */

int bh_gen_run(const char *workload, const bh_opt_t *params, size_t nparams, bh_gen_emit_fn fn,
               void *ctx, char *err, size_t errlen) {
  gen_t g;
  memset(&g, 0, sizeof(g));
  g.err = err;
  g.errlen = errlen;
  g.emit = fn;
  g.ctx = ctx;
  if (err && errlen)
    err[0] = '\0';
  if (!workload || !fn || (nparams && !params))
    return gen_fail(&g, BH_EINVAL, "bad arguments");
  g.wl = find_workload(workload);
  if (!g.wl) {
    char known[128];
    size_t n = 0;
    for (size_t i = 0; i < NR_WORKLOADS; i++)
      n += (size_t)snprintf(known + n, sizeof(known) - n, "%s%s", i ? ", " : "", workloads[i].name);
    if (err && errlen)
      snprintf(err, errlen, "unknown workload '%s' (known: %s)", workload, known);
    return BH_ENOENT;
  }
  pval_t v[MAX_PARAMS + NR_COMMON];
  int rc = parse_params(&g, params, nparams, v);
  if (!rc && g.wl->check)
    rc = g.wl->check(&g, v);
  if (!rc)
    rc = g.wl->run(&g, v);
  if (rc == BH_ENOMEM && err && errlen && !err[0])
    gen_fail(&g, rc, "out of memory");
  return rc;
}

typedef struct write_ctx {
  bh_trace_writer_t *w;
} write_ctx_t;

static int write_event(void *ctx, const bh_event_t *ev) {
  return bh_trace_write(((write_ctx_t *)ctx)->w, ev);
}

int bh_gen_write(const char *workload, const bh_opt_t *params, size_t nparams, bh_trace_writer_t *w,
                 char *err, size_t errlen) {
  if (!w) {
    if (err && errlen)
      snprintf(err, errlen, "no writer");
    return BH_EINVAL;
  }
  write_ctx_t c = {w};
  int rc = bh_gen_run(workload, params, nparams, write_event, &c, err, errlen);
  if (rc && rc != BH_ENOENT && err && errlen && !err[0])
    snprintf(err, errlen, "%s", bh_trace_error(NULL));
  return rc;
}
