/*
 * The hinting core: the strategy registry, attaching a strategy and a reporter to an arena,
 * and the worker.  The worker has one body, `run_due`, driven either by a virtual clock that
 * the replay advances (deterministic) or by a background thread on CLOCK_MONOTONIC that
 * sleeps until the strategy's next due time or an earlier request.
 */
#include "buddy/internal.h"
#include "hinting/hint.h"
#include "hinting/reporter.h"
#include "strategies/strategies.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Thread_local char last_error[256];

/* ---- registry ---- */

#define MAX_STRATEGIES 32
static const bh_strategy_ops_t *registry[MAX_STRATEGIES];
static int nr_registered;
static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;

static int register_locked(const bh_strategy_ops_t *ops) {
  for (int i = 0; i < nr_registered; i++)
    if (!strcmp(registry[i]->name, ops->name))
      return BH_EBUSY;
  if (nr_registered == MAX_STRATEGIES)
    return BH_ENOMEM;
  registry[nr_registered++] = ops;
  return BH_OK;
}

static void register_builtins(void) {
  pthread_mutex_lock(&registry_mu);
  register_locked(&bh__strategy_none);
  register_locked(&bh__strategy_bitmap);
  register_locked(&bh__strategy_bubble);
  register_locked(&bh__strategy_adaptive);
  pthread_mutex_unlock(&registry_mu);
}

int bh_strategy_register(const bh_strategy_ops_t *ops) {
  if (!ops || !ops->name || !ops->name[0] || !ops->create || !ops->step)
    return BH_EINVAL;
  pthread_once(&builtins_once, register_builtins);
  pthread_mutex_lock(&registry_mu);
  int err = register_locked(ops);
  pthread_mutex_unlock(&registry_mu);
  return err;
}

const bh_strategy_ops_t *bh_strategy_find(const char *name) {
  pthread_once(&builtins_once, register_builtins);
  const bh_strategy_ops_t *found = NULL;
  pthread_mutex_lock(&registry_mu);
  for (int i = 0; name && i < nr_registered && !found; i++)
    if (!strcmp(registry[i]->name, name))
      found = registry[i];
  pthread_mutex_unlock(&registry_mu);
  return found;
}

const bh_strategy_ops_t *bh_strategy_at(int i) {
  pthread_once(&builtins_once, register_builtins);
  pthread_mutex_lock(&registry_mu);
  const bh_strategy_ops_t *ops = i >= 0 && i < nr_registered ? registry[i] : NULL;
  pthread_mutex_unlock(&registry_mu);
  return ops;
}

/* ---- options ---- */

/*
 * Numbers in options: integers are decimal, or hex after "0x" (a leading zero is not octal:
 * "011" is eleven); sizes and durations are decimal with an optional fraction and exponent
 * ("1.5G", ".5s", "1e-6").  No sign, blank, nan, inf or hex float.
 */
static bool all_digits(const char *s, bool hex) {
  if (!*s)
    return false;
  for (; *s; s++)
    if (!(*s >= '0' && *s <= '9') && !(hex && strchr("abcdefABCDEF", *s)))
      return false;
  return true;
}

static size_t skip_digits(const char **p) {
  size_t n = 0;
  while (**p >= '0' && **p <= '9')
    (*p)++, n++;
  return n;
}

/* A decimal number at s (fraction, exponent); *end is set past it.  false if none. */
static bool decimal(const char *s, double *v, const char **end) {
  const char *p = s;
  size_t digits = skip_digits(&p);
  if (*p == '.') {
    p++;
    digits += skip_digits(&p);
  }
  if (!digits)
    return false;
  if (*p == 'e' || *p == 'E') {
    const char *q = p + 1;
    if (*q == '+' || *q == '-')
      q++;
    if (skip_digits(&q))
      p = q;
  }
  char buf[64];
  if ((size_t)(p - s) >= sizeof(buf))
    return false;
  memcpy(buf, s, (size_t)(p - s));
  buf[p - s] = '\0';
  *v = strtod(buf, NULL);
  *end = p;
  return true;
}

int bh_opt_u64(const bh_opt_t *o, uint64_t min, uint64_t max, uint64_t *out) {
  if (!o || !o->value || !o->value[0] || !out)
    return BH_EINVAL;
  char *end;
  errno = 0;
  bool hex = o->value[0] == '0' && (o->value[1] == 'x' || o->value[1] == 'X');
  if (!all_digits(o->value + (hex ? 2 : 0), hex))
    return BH_EINVAL;
  unsigned long long v = strtoull(o->value, &end, hex ? 16 : 10);
  if (errno || *end || v < min || v > max)
    return BH_EINVAL;
  *out = v;
  return BH_OK;
}

int bh_opt_bool(const bh_opt_t *o, bool *out) {
  if (!out)
    return BH_EINVAL;
  static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no",
                                                                              "off"};
  for (int i = 0; o && o->value && i < 4; i++) {
    if (!strcasecmp(o->value, yes[i]))
      return *out = true, BH_OK;
    if (!strcasecmp(o->value, no[i]))
      return *out = false, BH_OK;
  }
  return BH_EINVAL;
}

int bh_opt_duration(const bh_opt_t *o, uint64_t *ns) {
  double v;
  const char *end;
  if (!o || !o->value || !ns || !decimal(o->value, &v, &end))
    return BH_EINVAL;
  double scale;
  if (!*end || !strcmp(end, "s"))
    scale = 1e9;
  else if (!strcmp(end, "ms"))
    scale = 1e6;
  else if (!strcmp(end, "us"))
    scale = 1e3;
  else if (!strcmp(end, "ns"))
    scale = 1;
  else
    return BH_EINVAL;
  if (v * scale > 1e18)
    return BH_EINVAL;
  *ns = (uint64_t)(v * scale + 0.5);
  return BH_OK;
}

int bh_opt_size(const bh_opt_t *o, uint64_t *bytes) {
  double v;
  const char *end;
  if (!o || !o->value || !bytes || !decimal(o->value, &v, &end))
    return BH_EINVAL;
  double mul = 1;
  switch (*end) {
  case 'k':
  case 'K':
    mul = 1024.0;
    break;
  case 'm':
  case 'M':
    mul = 1024.0 * 1024;
    break;
  case 'g':
  case 'G':
    mul = 1024.0 * 1024 * 1024;
    break;
  case 't':
  case 'T':
    mul = 1024.0 * 1024 * 1024 * 1024;
    break;
  default:
    break;
  }
  if (mul > 1)
    end++;
  if (!strcmp(end, "iB") || !strcmp(end, "B"))
    end += strlen(end);
  if (*end || v * mul > 1.8e19)
    return BH_EINVAL;
  *bytes = (uint64_t)(v * mul);
  return BH_OK;
}

void bh_hint_set_error(bh_hint_t *h, const char *fmt, ...) {
  if (!h || !fmt)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(h->error, sizeof(h->error), fmt, ap);
  va_end(ap);
}

const char *bh_hint_last_error(void) { return last_error; }

/* ---- hooks: trampolines from the allocator into the strategy ---- */

static void hook_notify(void *ctx, bh_zone_t *z, uint64_t pfn, unsigned order) {
  bh_hint_t *h = ctx;
  if (h->ops->notify)
    h->ops->notify(h->state, z, pfn, order);
}

static void hook_del(void *ctx, bh_zone_t *z, uint64_t pfn, unsigned order, int reason) {
  bh_hint_t *h = ctx;
  if (h->ops->del)
    h->ops->del(h->state, z, pfn, order, reason);
}

static void hook_detach(void *ctx) { bh_hint_detach(ctx); }

void bh_hint_set_orders(bh_hint_t *h, unsigned notify_order, unsigned del_order) {
  if (!h)
    return;
  bh_arena_t *a = h->arena;
  for (int i = 0; i < a->nr_zones; i++) {
    bh_zone_t *z = &a->zones[i];
    bh__zone_lock(z);
    z->notify_order = (uint8_t)(notify_order > UINT8_MAX ? UINT8_MAX : notify_order);
    z->del_order = (uint8_t)(del_order > UINT8_MAX ? UINT8_MAX : del_order);
    bh__zone_unlock(z);
  }
}

/* ---- clock and worker ---- */

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * BH_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t bh_hint_now(const bh_hint_t *h) {
  if (!h)
    return 0;
  return h->clock == BH_CLOCK_THREAD ? mono_ns() : atomic_load(&((bh_hint_t *)h)->now);
}

uint64_t bh_hint_next_due(const bh_hint_t *h) { return h ? bh__hint_next_due(h) : BH_HINT_IDLE; }

/* floor(a / b) for b > 0 */
static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0); }

/*
 * The tick a kernel's timer queued at now with delay_ns fires at (kernel/time/timer.c in
 * 6.12): expires = jiffies + delay (in ticks, rounded up as msecs_to_jiffies does); the
 * wheel level of the delay (calc_wheel_index, :584-619: level n holds delays from
 * LVL_START(n) = 63 << 3(n - 1) ticks on, granularity 8^n ticks) rounds the expiry up to the
 * next multiple of its granularity, strictly after (calc_index, :567-582: "a timer does not
 * fire early").  At HZ 250 the 2 s of PAGE_REPORTING_DELAY, 500 ticks, is level 1: it fires
 * 2.000 to 2.032 s after the request, on a tick whose jiffies are a multiple of 8.
 */
static int64_t wheel_due(const bh_hint_t *h, int64_t now, uint64_t delay_ns) {
  int64_t tick = (int64_t)h->wheel_tick;
  uint64_t d = (delay_ns + (uint64_t)tick - 1) / (uint64_t)tick;
  if (d > (1ull << 40))
    return now + (int64_t)delay_ns;
  int64_t jiffies = floor_div(now - h->wheel_align, tick);
  int64_t expires = jiffies + (int64_t)d;
  unsigned lvl = 0;
  while (lvl < 8 && d >= (63ull << (3 * lvl))) /* LVL_START(lvl + 1) */
    lvl++;
  int64_t g = 1ll << (3 * lvl);
  int64_t bucket = (floor_div(expires, g) + 1) * g;
  int64_t at = h->wheel_align + bucket * tick;
  return at > now ? at : now + (int64_t)delay_ns;
}

uint64_t bh_hint_delay_due(const bh_hint_t *h, uint64_t delay_ns) {
  if (!h)
    return 0;
  uint64_t now = bh_hint_now(h);
  if (h->clock != BH_CLOCK_VIRTUAL || h->request_from == BH__REQUEST_UNTIMED ||
      (!h->wheel_tick && h->request_from == BH__REQUEST_NOW) || now > (uint64_t)INT64_MAX / 2 ||
      delay_ns > (uint64_t)INT64_MAX / 2)
    return delay_ns > UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + delay_ns;
  int64_t base = h->request_from == BH__REQUEST_AT ? h->request_at : (int64_t)now;
  int64_t at = h->wheel_tick ? wheel_due(h, base, delay_ns) : base + (int64_t)delay_ns;
  return at > (int64_t)now ? (uint64_t)at : now;
}

void bh_hint_request(bh_hint_t *h, uint64_t delay_ns) {
  if (!h)
    return;
  uint64_t at = bh_hint_delay_due(h, delay_ns);
  uint64_t cur = atomic_load(&h->wake_at);
  while (at < cur && !atomic_compare_exchange_weak(&h->wake_at, &cur, at))
    ;
  if (h->clock == BH_CLOCK_THREAD && at < cur) {
    pthread_mutex_lock(&h->mu);
    if (at < h->sleeping_until)
      pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
  }
}

/* One worker step at time t: consumes the pending request and asks the strategy. */
static void run_step(bh_hint_t *h, uint64_t t) {
  atomic_store(&h->wake_at, BH_HINT_IDLE);
  uint64_t next = h->ops->step(h->state, t);
  h->step_next = next <= t ? t + 1 : next;
  atomic_fetch_add(&h->steps, 1);
}

long bh_hint_advance(bh_hint_t *h, uint64_t now_ns) {
  if (!h || h->clock != BH_CLOCK_VIRTUAL)
    return BH_EINVAL;
  long n = 0;
  for (;;) {
    uint64_t due = bh_hint_next_due(h);
    if (due > now_ns || due == BH_HINT_IDLE)
      break;
    if (due > atomic_load(&h->now))
      atomic_store(&h->now, due);
    run_step(h, atomic_load(&h->now));
    n++;
  }
  if (now_ns > atomic_load(&h->now))
    atomic_store(&h->now, now_ns);
  return n;
}

/*
 * The background worker: runs the strategy's steps when due and, like the kernel's vmstat
 * work, the once-a-second pcp decay (bh_vmstat_tick), so that idle pcp lists give their pages
 * back to the buddy lists where the strategy can see them.
 */
static void *worker_main(void *arg) {
  bh_hint_t *h = arg;
  uint64_t next_tick = mono_ns() + BH_NS_PER_SEC;
  pthread_mutex_lock(&h->mu);
  while (!h->stop) {
    uint64_t due = bh_hint_next_due(h), now = mono_ns();
    uint64_t wake = due < next_tick ? due : next_tick;
    if (wake > now) {
      h->sleeping_until = wake;
      struct timespec ts = {(time_t)(wake / BH_NS_PER_SEC), (long)(wake % BH_NS_PER_SEC)};
      pthread_cond_timedwait(&h->cv, &h->mu, &ts);
      h->sleeping_until = 0;
      continue;
    }
    pthread_mutex_unlock(&h->mu);
    if (now >= next_tick) {
      bh_vmstat_tick(h->arena);
      next_tick = now + BH_NS_PER_SEC;
    }
    if (due <= now)
      run_step(h, now);
    pthread_mutex_lock(&h->mu);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

static int start_thread(bh_hint_t *h) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&h->thread, NULL, worker_main, h) != 0)
    return BH_ESYS;
  pthread_setname_np(h->thread, "bh-hint-worker"); /* as top and /proc show it */
  h->thread_started = true;
  return BH_OK;
}

/* ---- attach / detach ---- */

void bh_hint_config_init(bh_hint_config_t *cfg) {
  if (!cfg)
    return;
  memset(cfg, 0, sizeof(*cfg));
  cfg->strategy = "none";
  cfg->report = BH_REPORT_DONTNEED;
  cfg->clock = BH_CLOCK_VIRTUAL;
}

static int attach_fail(bh_hint_t *h, int err, const char *msg) {
  snprintf(last_error, sizeof(last_error), "%s", h && h->error[0] ? h->error : msg);
  return err;
}

int bh_hint_attach(bh_arena_t *a, const bh_hint_config_t *cfg, bh_hint_t **out) {
  bh_hint_config_t defaults;
  last_error[0] = 0;
  if (!a || !out)
    return attach_fail(NULL, BH_EINVAL, "no arena");
  if (!cfg) {
    bh_hint_config_init(&defaults);
    cfg = &defaults;
  }
  if (cfg->clock != BH_CLOCK_VIRTUAL && cfg->clock != BH_CLOCK_THREAD)
    return attach_fail(NULL, BH_EINVAL, "clock must be BH_CLOCK_VIRTUAL or BH_CLOCK_THREAD");
  if ((unsigned)cfg->report > BH_REPORT_NONE)
    return attach_fail(NULL, BH_EINVAL, "unknown report mode");
  if (cfg->nopts && !cfg->opts)
    return attach_fail(NULL, BH_EINVAL, "nopts > 0 without opts");
  for (size_t i = 0; i < cfg->nopts; i++)
    if (!cfg->opts[i].key || !cfg->opts[i].value)
      return attach_fail(NULL, BH_EINVAL, "an option without a key or a value");
  const bh_strategy_ops_t *ops = bh_strategy_find(cfg->strategy ? cfg->strategy : "none");
  if (!ops)
    return attach_fail(NULL, BH_ENOENT, "unknown strategy");
  if (a->hint.ctx)
    return attach_fail(NULL, BH_EBUSY, "hinting is already attached to this arena");
  if (cfg->clock == BH_CLOCK_THREAD && !a->cfg.smp)
    return attach_fail(NULL, BH_EINVAL,
                       "a worker thread needs an SMP arena (cfg.smp; without it nothing locks)");
  bh_hint_t *h = calloc(1, sizeof(*h));
  if (!h)
    return attach_fail(NULL, BH_ENOMEM, "out of memory");
  h->arena = a;
  h->ops = ops;
  h->clock = cfg->clock;
  h->registered_at_boot = cfg->registered_at_boot;
  h->step_next = BH_HINT_IDLE;
  atomic_init(&h->wake_at, BH_HINT_IDLE);
  pthread_mutex_init(&h->mu, NULL);
  bh_report_mode_t mode = a->cfg.backing == BH_BACKING_SIM ? BH_REPORT_NONE : cfg->report;
  int err = bh__reporter_create(a, mode, &h->reporter);
  if (err) {
    pthread_mutex_destroy(&h->mu);
    free(h);
    return attach_fail(NULL, err, "the report mode does not fit the arena's backing");
  }
  a->hint.notify = hook_notify;
  a->hint.del = hook_del;
  a->hint.detach = hook_detach;
  a->hint.ctx = h;
  err = ops->create(h, cfg->opts, cfg->nopts, &h->state);
  if (err) {
    attach_fail(h, err, "the strategy refused its options");
    h->state = NULL;
    bh_hint_detach(h);
    return err;
  }
  if (h->clock == BH_CLOCK_THREAD && (err = start_thread(h)) != 0) {
    bh_hint_detach(h);
    return attach_fail(NULL, err, "cannot start the worker thread");
  }
  *out = h;
  return BH_OK;
}

void bh_hint_detach(bh_hint_t *h) {
  if (!h)
    return;
  if (h->thread_started) {
    pthread_mutex_lock(&h->mu);
    h->stop = true;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
  }
  bh_hint_set_orders(h, UINT8_MAX, UINT8_MAX);
  if (h->state)
    h->ops->destroy(h->state);
  bh_arena_t *a = h->arena;
  memset(&a->hint, 0, sizeof(a->hint));
  bh__reporter_destroy(h->reporter);
  if (h->thread_started)
    pthread_cond_destroy(&h->cv);
  pthread_mutex_destroy(&h->mu);
  free(h);
}

/* ---- services for strategies ---- */

bh_arena_t *bh_hint_arena(const bh_hint_t *h) { return h ? h->arena : NULL; }
bool bh_hint_registered_at_boot(const bh_hint_t *h) { return h && h->registered_at_boot; }
const bh_strategy_ops_t *bh_hint_strategy(const bh_hint_t *h) { return h ? h->ops : NULL; }
bh_report_mode_t bh_hint_report_mode(const bh_hint_t *h) {
  return h ? bh__reporter_mode(h->reporter) : BH_REPORT_NONE;
}

int bh_hint_report(bh_hint_t *h, const bh_report_range_t *ranges, size_t n) {
  if (!h || (n && !ranges))
    return BH_EINVAL;
  if (!n)
    return BH_OK;
  int err = bh__reporter_report(h->reporter, ranges, n);
  /* BH_ESYS: a discard call failed, the others were made and the blocks count as reported */
  if (h->on_report && (err == BH_OK || err == BH_ESYS))
    h->on_report(h->on_report_ctx, ranges, n);
  return err;
}

void bh_hint_stats(const bh_hint_t *h, bh_hint_stats_t *out) {
  if (!out)
    return;
  memset(out, 0, sizeof(*out));
  if (!h)
    return;
  out->steps = atomic_load(&((bh_hint_t *)h)->steps);
  bh__reporter_stats(h->reporter, &out->report);
  out->refault_pages = atomic_load(&h->arena->refault_pages);
  out->refault_blocks = atomic_load(&h->arena->refault_blocks);
  out->discarded_pages = bh__discarded_pages(h->arena);
}

void bh_hint_strategy_stats(const bh_hint_t *h, bh_stat_emit_fn emit, void *ctx) {
  if (h && emit && h->ops->stats && h->state)
    h->ops->stats(h->state, emit, ctx);
}

/* ---- "none": the strategy that never reports ---- */

static int none_create(bh_hint_t *h, const bh_opt_t *opts, size_t nopts, void **state) {
  if (nopts) {
    bh_hint_set_error(h, "none: takes no options (got '%s')", opts[0].key);
    return BH_EINVAL;
  }
  *state = h;
  return BH_OK;
}
static void none_destroy(void *state) {}
static uint64_t none_step(void *state, uint64_t now) { return BH_HINT_IDLE; }

const bh_strategy_ops_t bh__strategy_none = {
    .name = "none",
    .summary = "never reports: the baseline",
    .options = "",
    .create = none_create,
    .destroy = none_destroy,
    .step = none_step,
};
