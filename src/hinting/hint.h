/* Internal header of the hinting core: the built-in strategies' ops tables. */
#ifndef BH_HINTING_HINT_H
#define BH_HINTING_HINT_H

#include "common/compiler.h"

#include <buddyhint/strategy.h>

#include <pthread.h>
#include <stdatomic.h>

typedef struct bh__reporter bh__reporter_t;

/* Hinting attached to an arena (internal so the replay can read the due time inline). */
struct bh_hint {
  bh_arena_t *arena;
  const bh_strategy_ops_t *ops;
  void *state;
  bh__reporter_t *reporter;
  bh_clock_mode_t clock;
  bool registered_at_boot;    /* bh_hint_config_t.registered_at_boot */
  _Atomic uint64_t now;       /* virtual time (virtual mode) */
  _Atomic uint64_t wake_at;   /* earliest requested step (BH_HINT_IDLE: none) */
  _Atomic uint64_t step_next; /* the strategy's own next due time */
  _Atomic uint64_t steps;
  /* the recorded kernel's timer wheel (virtual clock; bh__hint_set_wheel): its tick in ns, 0
   * for none, and a time on the clock (maybe before 0) of a tick whose jiffies count is a
   * multiple of 8 */
  uint64_t wheel_tick;
  int64_t wheel_align;
  /* where requests count their delay from (bh__hint_request_from), and request_at's time */
  int request_from;
  int64_t request_at;
  char error[256];
  /* thread mode */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop, thread_started;
  uint64_t sleeping_until;
  /* told every batch the host took, after it took it (the replay's --reports), or NULL */
  void (*on_report)(void *ctx, const bh_report_range_t *ranges, size_t n);
  void *on_report_ctx;
};

/* When the worker is next due, without a call: the replay checks it before every event. */
static inline uint64_t bh__hint_next_due(const struct bh_hint *h) {
  uint64_t w = atomic_load_explicit(&((struct bh_hint *)h)->wake_at, memory_order_relaxed);
  uint64_t s = atomic_load_explicit(&((struct bh_hint *)h)->step_next, memory_order_relaxed);
  return w < s ? w : s;
}

/*
 * The virtual clock moved to t, where no step is due before t (the replay's events between
 * its worker steps): a request made now (a free's notification, bh_hint_request) counts its
 * delay from the event's time, not from the last step's.  Only forward.
 */
static inline void bh__hint_clock(struct bh_hint *h, uint64_t t) {
  if (t > atomic_load_explicit(&h->now, memory_order_relaxed))
    atomic_store_explicit(&h->now, t, memory_order_relaxed);
}

/* Follows a recorded kernel's timer wheel for delayed work (bh_hint_delay_due): ticks of
 * tick_ns, align_ns a time on the virtual clock of a tick whose jiffies are a multiple of 8
 * (the replay's estimate, from the vmstat worker's runs).  tick_ns 0: exact delays. */
static inline void bh__hint_set_wheel(struct bh_hint *h, uint64_t tick_ns, int64_t align_ns) {
  h->wheel_tick = tick_ns;
  h->wheel_align = align_ns;
}

/* Where a request counts its delay from (virtual clock): now, on the wheel if there is one
 * (the default); t (maybe before 0), on the wheel: a request the recorded kernel made before
 * the trace began, at a recorded time; now, exactly: one made at a time nothing records, which
 * no tick can be placed against. */
enum { BH__REQUEST_NOW, BH__REQUEST_AT, BH__REQUEST_UNTIMED };
static inline void bh__hint_request_from(struct bh_hint *h, int from, int64_t t) {
  h->request_from = from;
  h->request_at = t;
}

/* "none", the framework's own; the other built-ins are in strategies/strategies.h. */
BH__INTERNAL extern const bh_strategy_ops_t bh__strategy_none;

#endif
