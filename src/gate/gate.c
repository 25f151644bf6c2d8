/*
 * Regression gates (include/buddyhint/gate.h): a figure of a run now against the same figure
 * of its baseline, under an allowance in the direction a regression takes.
 *
 * The allowance is relative (PCT % of the baseline's magnitude) or absolute (ABS), whichever
 * is larger.  A zero baseline has no relative allowance, so it needs the absolute one: without
 * it, any move in the regression direction fails.  That is the rule a CI wants for figures
 * that should stay at zero (refaults of a strategy that never reports, allocation failures),
 * where any percentage of zero would let nothing through or everything.
 */
#include <buddyhint.h>
#include <buddyhint/gate.h>
#include <buddyhint/replay.h>

#include "common/errdetail.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A finite decimal number >= 0 from s, up to stop (not included): 0, or -1. */
static int parse_amount(const char *s, const char *stop, double *out) {
  char buf[64];
  size_t n = (size_t)(stop - s);
  if (!n || n >= sizeof(buf) || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
    return -1;
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *e;
  double v = strtod(buf, &e);
  if (*e || !isfinite(v) || v < 0)
    return -1;
  *out = v;
  return 0;
}

static bool metric_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

int bh_gate_parse(const char *spec, bh_gate_t *out, char *err, size_t errlen) {
  if (!spec || !out)
    return BH_EINVAL;
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec)
    return bh__errf(err, errlen, BH_EFORMAT, "'%s' is not METRIC=+PCT%% or METRIC=-PCT%%", spec);
  size_t mlen = (size_t)(eq - spec);
  if (mlen >= sizeof(out->metric))
    return bh__errf(err, errlen, BH_EFORMAT, "'%.*s': a metric name is at most %d characters",
                    (int)mlen, spec, BH_FIGURE_NAME_MAX - 1);
  for (size_t i = 0; i < mlen; i++)
    if (!metric_char(spec[i]))
      return bh__errf(err, errlen, BH_EFORMAT,
                      "'%.*s' is not a metric name (letters, digits, _ . -)", (int)mlen, spec);
  const char *v = eq + 1;
  if (*v != '+' && *v != '-')
    return bh__errf(err, errlen, BH_EFORMAT,
                    "'%s': give the direction a regression takes, +PCT (an increase fails) "
                    "or -PCT (a decrease fails)",
                    spec);
  bh_gate_t g = {.sign = *v == '-' ? -1 : 1};
  memcpy(g.metric, spec, mlen);
  g.metric[mlen] = '\0';
  const char *colon = strchr(v, ':'), *stop = colon ? colon : v + strlen(v);
  if (stop > v + 1 && stop[-1] == '%')
    stop--;
  if (parse_amount(v + 1, stop, &g.pct))
    return bh__errf(err, errlen, BH_EFORMAT, "'%s': '%.*s' is not a percentage (a number >= 0)",
                    spec, (int)(stop - v - 1), v + 1);
  if (colon && parse_amount(colon + 1, colon + 1 + strlen(colon + 1), &g.abs))
    return bh__errf(err, errlen, BH_EFORMAT,
                    "'%s': '%s' after ':' is not an absolute allowance (a "
                    "number >= 0)",
                    spec, colon + 1);
  *out = g;
  return 0;
}

int bh_gate_format(const bh_gate_t *g, char *buf, size_t len) {
  if (!g || (!buf && len))
    return 0;
  if (g->abs > 0)
    return snprintf(buf, len, "%s=%c%.15g%%:%.15g", g->metric, g->sign < 0 ? '-' : '+', g->pct,
                    g->abs);
  return snprintf(buf, len, "%s=%c%.15g%%", g->metric, g->sign < 0 ? '-' : '+', g->pct);
}

static const bh_figure_t *find(const bh_figure_t *f, size_t n, const char *name) {
  for (size_t i = 0; f && i < n; i++)
    if (!strcmp(f[i].name, name))
      return &f[i];
  return NULL;
}

size_t bh_gate_defaults(bh_gate_t *out, size_t max, const bh_figure_t *baseline, size_t nbaseline) {
  if (!out && max)
    return 0;
  static const bh_gate_t always[] = {
      {"rss_final_bytes", +1, 2, 0},
      {"refaults", +1, 10, 0},
      {"madvise_calls", +1, 10, 0},
  };
  static const bh_gate_t returned = {"returned_bytes", -1, 5, 0};
  size_t n = 0;
  if (find(baseline, nbaseline, returned.metric)) {
    if (out && n < max)
      out[n] = returned;
    n++;
  }
  for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++, n++)
    if (out && n < max)
      out[n] = always[i];
  return n;
}

bool bh_gate_deterministic(const char *metric, const char *backing, double speed) {
  if (!metric || !backing || speed != 0)
    return false;
  static const char *const process[] = {"wall_seconds", "cpu_seconds", "minflt"};
  for (size_t i = 0; i < sizeof(process) / sizeof(process[0]); i++)
    if (!strcmp(metric, process[i]))
      return false;
  size_t len = strlen(metric); /* the strategies' time counters (strategy_stats.lock_ns) */
  if (len >= 3 && !strcmp(metric + len - 3, "_ns"))
    return false;
  if (!strcmp(backing, "sim"))
    return true;
  return strncmp(metric, "rss_", 4) != 0; /* mincore on real memory */
}

static void check_one(const bh_gate_t *g, const bh_figure_t *b, const bh_figure_t *n,
                      bh_gate_result_t *r) {
  *r = (bh_gate_result_t){.gate = g, .status = BH_GATE_MISSING, .change_pct = NAN};
  if (!b || !n)
    return;
  r->baseline = b->value;
  r->now = n->value;
  double delta = n->value - b->value;
  if (b->value != 0)
    r->change_pct = 100.0 * delta / fabs(b->value);
  else
    r->change_pct = delta == 0 ? 0 : delta > 0 ? INFINITY : -INFINITY;
  double rel = g->pct / 100.0 * fabs(b->value); /* (the library does not link libm) */
  r->allowed = rel > g->abs ? rel : g->abs;
  /* a move that is allowed exactly passes; rounding of the percentage does not fail it */
  double worse = g->sign < 0 ? -delta : delta;
  r->status = worse > r->allowed * (1 + 1e-12) ? BH_GATE_FAIL : BH_GATE_PASS;
}

int bh_gate_check(const bh_gate_t *gates, size_t ngates, const bh_figure_t *baseline,
                  size_t nbaseline, const bh_figure_t *now, size_t nnow,
                  bh_gate_result_t *results) {
  if (!ngates)
    return 0;
  if (!gates || !results || (!baseline && nbaseline) || (!now && nnow))
    return BH_EINVAL;
  int bad = 0;
  for (size_t i = 0; i < ngates; i++) {
    check_one(&gates[i], find(baseline, nbaseline, gates[i].metric),
              find(now, nnow, gates[i].metric), &results[i]);
    bad += results[i].status != BH_GATE_PASS;
  }
  return bad;
}

/* The figures of a summary, in memory of their own: the count, or a BH_E* error. */
static int figures_of(const bh_replay_summary_t *s, bh_figure_t **out) {
  *out = NULL;
  int n = bh_gate_summary_figures(s, NULL, 0);
  if (n <= 0)
    return n;
  if (!(*out = calloc((size_t)n, sizeof(**out))))
    return BH_ENOMEM;
  return bh_gate_summary_figures(s, *out, (size_t)n);
}

int bh_gate_summaries(const bh_gate_t *gates, size_t ngates, const bh_replay_summary_t *baseline,
                      const bh_replay_summary_t *now, bh_gate_result_t *results) {
  if (!baseline || !now)
    return BH_EINVAL;
  if (!ngates)
    return 0;
  if (!gates || !results)
    return BH_EINVAL;
  bh_figure_t *fb, *fn;
  int nb = figures_of(baseline, &fb), nn = nb < 0 ? 0 : figures_of(now, &fn);
  int r = nb < 0 ? nb : nn < 0 ? nn : 0;
  if (!r)
    r = bh_gate_check(gates, ngates, fb, (size_t)nb, fn, (size_t)nn, results);
  free(fb);
  if (nb >= 0)
    free(fn);
  return r;
}

const char *bh_gate_status_name(enum bh_gate_status status) {
  switch (status) {
  case BH_GATE_PASS:
    return "pass";
  case BH_GATE_FAIL:
    return "FAIL";
  case BH_GATE_MISSING:
    return "missing";
  }
  return "?";
}
