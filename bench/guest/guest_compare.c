/*
 * guest_compare: the real guest against the replay's prediction of it (experiment 9).
 *
 *   guest_compare RUN REPORTS TIMELINE OUTDIR [--label NAME] [--arena-pages N]
 *                 [--trace-start S] [--dump DIR]
 *
 * RUN is a run-guest folder; REPORTS and TIMELINE are `buddyhint replay --reports` and
 * `--timeline` (sim backing, --sample 0.1) of RUN/guest/trace.bht.zst; the timeline counts
 * virtual seconds from the trace's first event, whose timestamp is --trace-start S.  Writes
 * OUTDIR/NAME.json and, for the figures, OUTDIR/NAME_rss.csv (time, measured and predicted resident
 * MiB) and OUTDIR/NAME_blocks.csv (every reported block: time, pfn, order, hit|observed_only|
 * predicted_only).
 *
 * Clocks.  The guest's markers are written at one moment to the trace (trace clock) and to the
 * serial console, which the host stamps on arrival; the smallest difference over the markers
 * is the offset from the trace clock to the host's (the console only adds delay), and its
 * spread says how good that is.  Host times (RSS samples, discards) are moved onto the trace
 * clock with it.
 *
 * Windows.  The windows cover the whole run, one after another: "before" from the trace's
 * first event (--trace-start, else the start marker) to the first free (the guest's initial
 * reporting of its boot-time free memory happens there or later); "round" r from the marker
 * "free r" (the workload frees its memory) to the next "alloc" marker, or to "end"; "alloc" r
 * (r >= 2) from "alloc r" to "free r", the allocation phase of a later round (the first one
 * is in "before"); "after" from "end" to the timeline's last sample (the trace's last event
 * plus the replay's --idle): what the workload frees when it exits, and the passes that report
 * it.  Per window: the reported blocks, observed (QEMU's discards) and predicted (the replay's
 * reports), matched as (pfn, order) pairs, each pair counted as often as it occurs in both;
 * recall = matched / observed, precision = matched / predicted; and the memory they make up,
 * observed_mib and predicted_mib.  "all" sums every window.
 *
 * Passes.  Reports less than 0.5 s apart belong to one pass.  Every observed pass is paired
 * with the predicted pass nearest in time; the difference is the timing error.
 *
 * Memory.  Per round, the drop of resident memory from the "free" marker (the largest sample
 * within 0.5 s of it) to the end of the round: measured from the QEMU process's RSS, predicted
 * from the replay's resident model.
 *
 * pcp.  Pages left on the per-cpu lists at the end: observed from the end snapshot's zoneinfo
 * (the "count:" of every pageset); predicted from the zoneinfo of the replay's --dump DIR (the
 * arena at the end of the trace) where it is given, else as the arena's pages that are neither
 * live nor on its free lists in the timeline's last sample before the end (which counts what
 * the replay's start state holds allocated as pcp pages: only right for an empty start).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rep {
  double t;
  unsigned long pfn;
  unsigned order;
  int matched;
} rep_t;

typedef struct vec {
  rep_t *v;
  size_t n, cap;
} vec_t;

typedef struct sample {
  double t, v;
} sample_t;

typedef struct svec {
  sample_t *v;
  size_t n, cap;
} svec_t;

typedef struct marker {
  char name[16];
  int round;
  double t_trace, t_host;
  int have_trace, have_host;
} marker_t;

static marker_t markers[256];
static int nmarkers;

static void die(const char *fmt, const char *a) {
  fprintf(stderr, "guest_compare: ");
  fprintf(stderr, fmt, a);
  fprintf(stderr, "\n");
  exit(1);
}

static void push(vec_t *x, rep_t r) {
  if (x->n == x->cap) {
    x->cap = x->cap ? x->cap * 2 : 1024;
    x->v = realloc(x->v, x->cap * sizeof(*x->v));
    if (!x->v)
      die("%s", "out of memory");
  }
  x->v[x->n++] = r;
}

static void spush(svec_t *x, double t, double v) {
  if (x->n == x->cap) {
    x->cap = x->cap ? x->cap * 2 : 1024;
    x->v = realloc(x->v, x->cap * sizeof(*x->v));
    if (!x->v)
      die("%s", "out of memory");
  }
  x->v[x->n++] = (sample_t){t, v};
}

static FILE *open_in(const char *dir, const char *name) {
  char p[1024];
  if (name)
    snprintf(p, sizeof(p), "%s/%s", dir, name);
  else
    snprintf(p, sizeof(p), "%s", dir);
  FILE *f = fopen(p, "r");
  if (!f)
    die("cannot read %s", p);
  return f;
}

static marker_t *marker(const char *name, int round) {
  for (int i = 0; i < nmarkers; i++)
    if (!strcmp(markers[i].name, name) && markers[i].round == round)
      return &markers[i];
  if (nmarkers == 256)
    return NULL;
  marker_t *m = &markers[nmarkers++];
  memset(m, 0, sizeof(*m));
  snprintf(m->name, sizeof(m->name), "%s", name);
  m->round = round;
  return m;
}

/* Markers from the trace (markers.txt) and from the console (console.log). */
static void read_markers(const char *run) {
  char line[4096], name[16];
  int round;
  FILE *f = open_in(run, "guest/markers.txt");
  while (fgets(line, sizeof(line), f)) {
    char *m = strstr(line, "tracing_mark_write: bh: ");
    if (!m || line[0] == '#')
      continue;
    /* the timestamp is the field before "tracing_mark_write:" and ends in ':' */
    char *colon = m - 2;
    while (colon > line && *colon != ' ')
      colon--;
    double t = strtod(colon, NULL);
    if (sscanf(m, "tracing_mark_write: bh: %15s %d", name, &round) != 2)
      continue;
    marker_t *mk = marker(name, round);
    if (mk && !mk->have_trace) {
      mk->t_trace = t;
      mk->have_trace = 1;
    }
  }
  fclose(f);
  f = open_in(run, "console.log");
  while (fgets(line, sizeof(line), f)) {
    double t;
    if (sscanf(line, "%lf @@bh: %15s %d", &t, name, &round) != 3)
      continue;
    marker_t *mk = marker(name, round);
    if (mk && !mk->have_host) {
      mk->t_host = t;
      mk->have_host = 1;
    }
  }
  fclose(f);
}

static double trace_time(const char *name, int round) {
  for (int i = 0; i < nmarkers; i++)
    if (!strcmp(markers[i].name, name) && markers[i].round == round && markers[i].have_trace)
      return markers[i].t_trace;
  return NAN;
}

static void read_reports(const char *path, vec_t *out, double offset, int host) {
  FILE *f = open_in(path, NULL);
  char line[512];
  while (fgets(line, sizeof(line), f)) {
    rep_t r = {0};
    if (host) { /* time_s,gpa,bytes,pfn,order */
      unsigned long gpa, bytes;
      if (sscanf(line, "%lf,%lu,%lu,%lu,%u", &r.t, &gpa, &bytes, &r.pfn, &r.order) != 5)
        continue;
      r.t -= offset;
    } else if (sscanf(line, "%lf,%lu,%u", &r.t, &r.pfn, &r.order) != 3) {
      continue;
    }
    push(out, r);
  }
  fclose(f);
}

/* Value of the last sample at or before t (the first if t is before all). */
static double at(const svec_t *s, double t) {
  if (!s->n)
    return NAN;
  size_t lo = 0, hi = s->n;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (s->v[mid].t <= t)
      lo = mid;
    else
      hi = mid;
  }
  return s->v[lo].v;
}

/* The largest sample within 0.5 s of t: the memory just before a round's frees, which the
 * samples (every 50 or 100 ms) may miss by a little; frees alone do not lower it. */
static double peak(const svec_t *s, double t) {
  double m = NAN;
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i].t >= t - 0.5 && s->v[i].t <= t + 0.5 && (isnan(m) || s->v[i].v > m))
      m = s->v[i].v;
  return isnan(m) ? at(s, t) : m;
}

typedef struct window {
  const char *name;
  int round;
  double t0, t1;
} window_t;

typedef struct match {
  size_t obs, pred, hits;
  double obs_mib, pred_mib;
} match_t;

static double block_mib(const rep_t *r) { return (double)(4096ul << r->order) / 1048576.0; }

static match_t match_window(vec_t *obs, vec_t *pred, double t0, double t1) {
  match_t m = {0, 0, 0, 0, 0};
  for (size_t i = 0; i < pred->n; i++)
    if (pred->v[i].t >= t0 && pred->v[i].t < t1) {
      m.pred++;
      m.pred_mib += block_mib(&pred->v[i]);
    }
  for (size_t i = 0; i < obs->n; i++) {
    rep_t *o = &obs->v[i];
    if (o->t < t0 || o->t >= t1)
      continue;
    m.obs++;
    m.obs_mib += block_mib(o);
    for (size_t j = 0; j < pred->n; j++) {
      rep_t *p = &pred->v[j];
      if (p->t >= t0 && p->t < t1 && !p->matched && p->pfn == o->pfn && p->order == o->order) {
        p->matched = o->matched = 1;
        m.hits++;
        break;
      }
    }
  }
  return m;
}

typedef struct pass {
  double t;
  size_t n;
} pass_t;

static size_t passes(const vec_t *x, double t0, double t1, pass_t *out, size_t max) {
  size_t k = 0;
  double last = -1e18;
  for (size_t i = 0; i < x->n; i++) {
    if (x->v[i].t < t0 || x->v[i].t >= t1)
      continue;
    if (x->v[i].t - last > 0.5) {
      if (k == max)
        break;
      out[k++] = (pass_t){x->v[i].t, 0};
    }
    out[k - 1].n++;
    last = x->v[i].t;
  }
  return k;
}

static int cmp_rep(const void *a, const void *b) {
  const rep_t *x = a, *y = b;
  return x->t < y->t ? -1 : x->t > y->t;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(size_t a, size_t b) { return b ? 100.0 * (double)a / (double)b : NAN; }

static void jnum(FILE *f, double v) {
  if (isnan(v))
    fprintf(f, "null");
  else
    fprintf(f, "%.6g", v);
}

/* The pages on pcp lists in a zoneinfo: the sum of every pageset's "count:". */
static unsigned long pcp_count(FILE *f) {
  char line[4096];
  unsigned long sum = 0, c;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, " count: %lu", &c) == 1)
      sum += c;
  fclose(f);
  return sum;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: guest_compare RUN REPORTS TIMELINE OUTDIR [--label NAME] "
                    "[--arena-pages N] [--trace-start S] [--dump DIR]\n");
    return 2;
  }
  const char *run = argv[1], *reports = argv[2], *timeline = argv[3], *outdir = argv[4];
  const char *label = "guest";
  unsigned long total_pages = 0; /* the arena's, for the predicted pcp pages */
  double first_event = NAN;      /* the timeline's time 0 on the trace clock */
  const char *dump = NULL;       /* the replay's --dump DIR: its zoneinfo has the arena's pcp */
  for (int i = 5; i + 1 < argc; i++) {
    if (!strcmp(argv[i], "--label"))
      label = argv[++i];
    else if (!strcmp(argv[i], "--trace-start"))
      first_event = strtod(argv[++i], NULL);
    else if (!strcmp(argv[i], "--arena-pages"))
      total_pages = strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--dump"))
      dump = argv[++i];
  }

  read_markers(run);
  double offset = INFINITY, spread_hi = -INFINITY;
  int pairs = 0;
  for (int i = 0; i < nmarkers; i++)
    if (markers[i].have_trace && markers[i].have_host) {
      double d = markers[i].t_host - markers[i].t_trace;
      if (d < offset)
        offset = d;
      if (d > spread_hi)
        spread_hi = d;
      pairs++;
    }
  if (!pairs)
    die("%s: no marker is both in guest/markers.txt and on the console", run);

  vec_t obs = {0}, pred = {0};
  char p[1024];
  snprintf(p, sizeof(p), "%s/discards.csv", run);
  read_reports(p, &obs, offset, 1);
  read_reports(reports, &pred, 0, 0);
  qsort(obs.v, obs.n, sizeof(rep_t), cmp_rep);
  qsort(pred.v, pred.n, sizeof(rep_t), cmp_rep);

  /* host RSS on the trace clock; the prediction's resident memory and pcp */
  svec_t rss = {0}, res = {0}, pcp = {0};
  FILE *f = open_in(run, "rss.csv");
  char line[4096];
  while (fgets(line, sizeof(line), f)) {
    double t, kib;
    if (sscanf(line, "%lf,%lf", &t, &kib) == 2)
      spush(&rss, t - offset, kib / 1024.0);
  }
  fclose(f);
  f = open_in(timeline, NULL);
  while (fgets(line, sizeof(line), f)) {
    double t, live, resident, discarded, free_pages;
    if (sscanf(line, "%lf,%lf,%lf,%lf,%lf", &t, &live, &resident, &discarded, &free_pages) != 5)
      continue;
    double t0 = isnan(first_event) ? 0 : first_event;
    spush(&res, t + t0, resident / 1048576.0);
    spush(&pcp, t + t0, live / 4096.0 + free_pages); /* pcp = total - this */
  }
  fclose(f);

  double t_start = trace_time("start", 0), t_end = trace_time("end", 0);
  if (isnan(t_start) || isnan(t_end))
    die("%s: the trace has no start or end marker", run);

  /* windows, one after another: before the first free, the rounds and the allocation
   * phases between them, after the end marker */
  window_t win[260];
  int nw = 0, rounds = 0;
  while (rounds < 128 && !isnan(trace_time("free", rounds + 1)))
    rounds++;
  if (!rounds)
    die("%s: no round (free marker) in the trace", run);
  double t_first = isnan(first_event) || first_event > t_start ? t_start : first_event;
  double t_stop = res.n ? res.v[res.n - 1].t : t_end;
  if (t_stop < t_end)
    t_stop = t_end;
  win[nw++] = (window_t){"before", 0, t_first, trace_time("free", 1)};
  for (int r = 1; r <= rounds; r++) {
    double ta = trace_time("alloc", r);
    if (r >= 2 && !isnan(ta) && ta < trace_time("free", r))
      win[nw++] = (window_t){"alloc", r, ta, trace_time("free", r)};
    double t1 = trace_time("alloc", r + 1);
    win[nw++] = (window_t){"round", r, trace_time("free", r), isnan(t1) ? t_end : t1};
  }
  win[nw++] = (window_t){"after", 0, t_end, t_stop};

  char out[1024];
  snprintf(out, sizeof(out), "%s/%s.json", outdir, label);
  FILE *j = fopen(out, "w");
  if (!j)
    die("cannot write %s", out);
  fprintf(j, "{\n  \"run\": \"%s\",\n  \"clock_offset_s\": %.6f,\n", run, offset);
  fprintf(j, "  \"clock_offset_spread_s\": %.6f,\n  \"marker_pairs\": %d,\n", spread_hi - offset,
          pairs);
  fprintf(j, "  \"trace_start_s\": %.6f,\n  \"trace_end_s\": %.6f,\n", t_start, t_end);
  fprintf(j, "  \"windows\": [");
  match_t all = {0, 0, 0, 0, 0};
  for (int w = 0; w < nw; w++) {
    match_t m = match_window(&obs, &pred, win[w].t0, win[w].t1);
    all.obs += m.obs;
    all.pred += m.pred;
    all.hits += m.hits;
    double rb = peak(&rss, win[w].t0), ra = at(&rss, win[w].t1 - 0.05);
    double pb = peak(&res, win[w].t0), pa = at(&res, win[w].t1 - 0.05);
    double dm = rb - ra, dp = pb - pa;
    all.obs_mib += m.obs_mib;
    all.pred_mib += m.pred_mib;
    fprintf(j,
            "%s\n    {\"window\": \"%s\", \"round\": %d, \"t0_s\": %.6f, \"t1_s\": %.6f, "
            "\"observed_blocks\": %zu, \"predicted_blocks\": %zu, \"matched\": %zu, "
            "\"observed_mib\": %.3f, \"predicted_mib\": %.3f, \"recall_pct\": ",
            w ? "," : "", win[w].name, win[w].round, win[w].t0, win[w].t1, m.obs, m.pred, m.hits,
            m.obs_mib, m.pred_mib);
    jnum(j, pct(m.hits, m.obs));
    fprintf(j, ", \"precision_pct\": ");
    jnum(j, pct(m.hits, m.pred));
    fprintf(j, ", \"rss_measured_mib\": [");
    jnum(j, rb);
    fprintf(j, ", ");
    jnum(j, ra);
    fprintf(j, "], \"rss_predicted_mib\": [");
    jnum(j, pb);
    fprintf(j, ", ");
    jnum(j, pa);
    fprintf(j, "], \"drop_measured_mib\": ");
    jnum(j, dm);
    fprintf(j, ", \"drop_predicted_mib\": ");
    jnum(j, dp);
    fprintf(j, ", \"drop_error_pct\": ");
    jnum(j, dm != 0 ? 100.0 * (dp - dm) / dm : NAN);
    fprintf(j, "}");
  }
  fprintf(j,
          "\n  ],\n  \"all\": {\"observed_blocks\": %zu, \"predicted_blocks\": %zu, "
          "\"matched\": %zu, \"observed_mib\": %.3f, \"predicted_mib\": %.3f, "
          "\"t0_s\": %.6f, \"t1_s\": %.6f, \"recall_pct\": ",
          all.obs, all.pred, all.hits, all.obs_mib, all.pred_mib, t_first, t_stop);
  jnum(j, pct(all.hits, all.obs));
  fprintf(j, ", \"precision_pct\": ");
  jnum(j, pct(all.hits, all.pred));
  fprintf(j, "},\n");

  /* passes: every observed one against the nearest predicted one */
  static pass_t po[4096], pp[4096];
  size_t npo = passes(&obs, t_first, t_stop, po, 4096),
         npp = passes(&pred, t_first, t_stop, pp, 4096);
  static double dts[4096];
  size_t ndt = 0, within = 0;
  fprintf(j, "  \"passes\": [");
  for (size_t i = 0; i < npo; i++) {
    double best = NAN;
    size_t bn = 0;
    for (size_t k = 0; k < npp; k++)
      if (isnan(best) || fabs(pp[k].t - po[i].t) < fabs(best)) {
        best = pp[k].t - po[i].t;
        bn = pp[k].n;
      }
    fprintf(j, "%s\n    {\"observed_s\": %.6f, \"observed_blocks\": %zu, \"dt_s\": ", i ? "," : "",
            po[i].t, po[i].n);
    jnum(j, best);
    fprintf(j, ", \"predicted_blocks\": %zu}", bn);
    if (!isnan(best)) {
      dts[ndt++] = fabs(best);
      within += fabs(best) <= 0.25;
    }
  }
  qsort(dts, ndt, sizeof(double), cmp_dbl);
  fprintf(j,
          "\n  ],\n  \"pass_timing\": {\"observed_passes\": %zu, \"predicted_passes\": %zu, "
          "\"within_0_25_s\": %zu, \"median_abs_dt_s\": ",
          npo, npp, within);
  jnum(j, ndt ? dts[ndt / 2] : NAN);
  fprintf(j, ", \"max_abs_dt_s\": ");
  jnum(j, ndt ? dts[ndt - 1] : NAN);
  fprintf(j, "},\n");

  /* pcp at the end */
  unsigned long pcp_obs = pcp_count(open_in(run, "guest/end/zoneinfo"));
  double pcp_pred = total_pages ? (double)total_pages - at(&pcp, t_end) : NAN;
  const char *pcp_from = "timeline";
  if (dump) {
    pcp_pred = (double)pcp_count(open_in(dump, "zoneinfo"));
    pcp_from = "dump";
  }
  fprintf(j, "  \"pcp_pages_end\": {\"observed\": %lu, \"predicted\": ", pcp_obs);
  jnum(j, pcp_pred);
  fprintf(j, ", \"predicted_from\": \"%s\"}\n}\n", pcp_from);
  if (fclose(j))
    die("cannot write %s", out);

  /* figure data */
  snprintf(out, sizeof(out), "%s/%s_rss.csv", outdir, label);
  f = fopen(out, "w");
  if (!f)
    die("cannot write %s", out);
  fprintf(f, "time_s,measured_mib,predicted_mib\n");
  for (size_t i = 0; i < rss.n; i++)
    if (rss.v[i].t >= t_first - 1 && rss.v[i].t <= t_stop + 1)
      fprintf(f, "%.3f,%.2f,%.2f\n", rss.v[i].t - t_start, rss.v[i].v, at(&res, rss.v[i].t));
  fclose(f);
  snprintf(out, sizeof(out), "%s/%s_blocks.csv", outdir, label);
  f = fopen(out, "w");
  if (!f)
    die("cannot write %s", out);
  fprintf(f, "time_s,pfn,order,kind\n");
  for (size_t i = 0; i < obs.n; i++)
    if (obs.v[i].t >= t_first && obs.v[i].t < t_stop)
      fprintf(f, "%.3f,%lu,%u,%s\n", obs.v[i].t - t_start, obs.v[i].pfn, obs.v[i].order,
              obs.v[i].matched ? "hit" : "observed_only");
  for (size_t i = 0; i < pred.n; i++)
    if (pred.v[i].t >= t_first && pred.v[i].t < t_stop && !pred.v[i].matched)
      fprintf(f, "%.3f,%lu,%u,predicted_only\n", pred.v[i].t - t_start, pred.v[i].pfn,
              pred.v[i].order);
  fclose(f);
  return 0;
}
