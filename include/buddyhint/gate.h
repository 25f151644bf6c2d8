/*
 * libbuddyhint: regression gates.  Two runs of the same trace and strategy (a baseline and
 * the run now) are compared figure by figure under tolerances, as a CI job does to fail when
 * a change makes a strategy give back less memory, refault more or call madvise more.
 *
 * A figure is a named number of a run summary, named as the summary's JSON names it
 * (bh_replay_summary_json): "refaults", "rss_final_bytes", and the nested ones with a dot,
 * "fidelity.free_order_error", "strategy_stats.reports", "arena_stats.compact_stall".
 *
 * A gate is "METRIC=SIGN PCT%", optionally with ":ABS": the sign says which direction is a
 * regression ("refaults=+10%": refaults may rise by at most 10 %; "returned_bytes=-5%":
 * returned_bytes may fall by at most 5 %), and a move the other way always passes.  The
 * allowance is PCT % of the baseline's magnitude, or ABS in the figure's own unit if that is
 * larger ("refaults=+10%:64": up to 10 % or 64 pages more, whichever is more).
 *
 * A zero baseline has no relative change: its allowance is ABS alone, so without one any
 * move in the regression direction fails (refaults going from 0 to 1 is a regression at any
 * percentage), and staying at 0 passes.
 */
#ifndef BUDDYHINT_GATE_H
#define BUDDYHINT_GATE_H

#include <stdbool.h>
#include <stddef.h>

/* If buddyhint.h is the includer, it may not have defined these yet. */
#ifndef BH_API
#if defined(BH_BUILDING_LIBRARY)
#define BH_API __attribute__((visibility("default")))
#else
#define BH_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The longest figure name, with its NUL. */
#define BH_FIGURE_NAME_MAX 64

/* One named number of a run. */
typedef struct bh_figure {
  char name[BH_FIGURE_NAME_MAX];
  double value;
} bh_figure_t;

typedef struct bh_gate {
  char metric[BH_FIGURE_NAME_MAX];
  int sign;   /* +1: an increase is a regression; -1: a decrease is */
  double pct; /* the change allowed in that direction, in percent of |baseline| (>= 0) */
  double abs; /* the change allowed in that direction in the figure's unit (>= 0; default 0) */
} bh_gate_t;

enum bh_gate_status {
  BH_GATE_PASS,
  BH_GATE_FAIL,   /* moved in the regression direction by more than allowed */
  BH_GATE_MISSING /* the baseline or the run now has no such figure */
};

typedef struct bh_gate_result {
  const bh_gate_t *gate; /* the gate this result is of */
  enum bh_gate_status status;
  double baseline, now; /* the figure's values (0 where missing) */
  /* 100 * (now - baseline) / |baseline|; with a zero baseline 0 if now is 0, else +-INFINITY
   * (the sign of now); NAN where missing */
  double change_pct;
  double allowed; /* the allowance in the figure's unit: max(pct% of |baseline|, abs) */
} bh_gate_result_t;

/*
 * Parses "METRIC=+PCT%", "METRIC=-PCT%" ('%' optional), optionally followed by ":ABS"; the sign
 * is required.  Returns 0 with *out set; BH_EINVAL for NULL; BH_EFORMAT for anything else,
 * with a message in err (errlen bytes, may be NULL) that says what is wrong.
 */
BH_API int bh_gate_parse(const char *spec, bh_gate_t *out, char *err, size_t errlen);
/* Writes the gate as bh_gate_parse reads it ("refaults=+10%", "refaults=+10%:64") into buf;
 * returns the length it needs, as snprintf (0 for NULL arguments). */
BH_API int bh_gate_format(const bh_gate_t *gate, char *buf, size_t len);

/*
 * The default gates: rss_final_bytes=+2%, refaults=+10%, madvise_calls=+10%, and
 * returned_bytes=-5% where the baseline has that figure (baseline NULL: left out).  Writes at
 * most max of them to out and returns how many there are (BH_GATE_MAX_DEFAULTS at most; 0
 * for out NULL with max > 0).
 */
#define BH_GATE_MAX_DEFAULTS 8
BH_API size_t bh_gate_defaults(bh_gate_t *out, size_t max, const bh_figure_t *baseline,
                               size_t nbaseline);

/*
 * Whether a figure is the same from run to run of the same trace, configuration and seed:
 * true in sim backing on the virtual clock (speed 0) for every figure but wall_seconds,
 * cpu_seconds and minflt, which measure this process, and the strategies' time counters
 * (names ending in _ns, such as strategy_stats.lock_ns).  In the mmap and memfd backings the
 * resident figures (rss_*) come from mincore on real memory, which transparent huge pages and
 * the host's reclaim move: not deterministic either.  On a wall clock (speed > 0) the worker
 * runs at real times: no figure is.  backing is "sim", "mmap" or "memfd" (NULL: false).
 */
BH_API bool bh_gate_deterministic(const char *metric, const char *backing, double speed);

/*
 * Compares the figures of a run now with its baseline under ngates gates: results[i] is the
 * result of gates[i].  Returns the number of gates that did not pass (failed or missing), or
 * BH_EINVAL for NULL arguments (ngates 0 is 0).  A figure list may hold a name more than once:
 * the first counts.
 */
BH_API int bh_gate_check(const bh_gate_t *gates, size_t ngates, const bh_figure_t *baseline,
                         size_t nbaseline, const bh_figure_t *now, size_t nnow,
                         bh_gate_result_t *results);

/*
 * The numeric figures of one run's JSON object (a bh_replay_summary_json object, or a run of
 * compare --json): every number, true/false as 1/0, with nested objects' members named
 * PARENT.KEY; strings, arrays, null and the "provenance" object are left out.  Writes at most
 * max figures to out and returns how many there are (more than max: call again with room);
 * BH_EINVAL for NULL text; BH_EFORMAT if text is not one JSON object.
 */
BH_API int bh_gate_figures_json(const char *text, size_t len, bh_figure_t *out, size_t max);

struct bh_replay_summary;
/* The figures of a summary, as bh_gate_figures_json finds them in its JSON (so every figure
 * the JSON has, by its JSON name).  Returns as bh_gate_figures_json, or BH_ENOMEM. */
BH_API int bh_gate_summary_figures(const struct bh_replay_summary *s, bh_figure_t *out, size_t max);

/*
 * bh_gate_check of two summaries: their figures compared under the gates.  Returns as
 * bh_gate_check, or BH_ENOMEM.
 */
BH_API int bh_gate_summaries(const bh_gate_t *gates, size_t ngates,
                             const struct bh_replay_summary *baseline,
                             const struct bh_replay_summary *now, bh_gate_result_t *results);

/* "pass", "FAIL", "missing" ("?" outside the enum). */
BH_API const char *bh_gate_status_name(enum bh_gate_status status);

#ifdef __cplusplus
}
#endif

#endif
