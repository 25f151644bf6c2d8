/*
 * exp_memhog: memhog in three guests run one after another (experiment 2 of the published set).
 *
 * Published (15 GB host, three 6 GB guests, memhog in each one after another): unmodified
 * 40 s / 65 s / 6 min 38 s with 3.6 GB swapped; bubble 32 / 58 / 35 s; bitmap 42 / 47 / 32 s,
 * no swap.
 *
 * Here three guest processes (exp_common.c), each with an arena of --guest-size (default
 * 1 GiB) and a strategy attached with the thread clock and real madvise(MADV_DONTNEED), are
 * started and left idle; then guest 1 runs a memhog -- allocate --hog (default 90 % of the
 * guest) as order-0 blocks, write every page, free everything -- and idles while guest 2 runs
 * its memhog, --gap seconds later (default 6 s), then guest 3; then all three idle for --idle
 * seconds.  The gap stands in for the length of the published memhog runs (30 s to minutes
 * each, long against the kernel's 2 s reporting delay), where ours take well under a second:
 * without it the next memhog would start before any strategy could have reported anything.  The
 * host's resident memory is the sum of the guests' Rss (/proc/PID/smaps_rollup), read before each
 * memhog starts, after it finishes and after the final idle, and every --sample seconds (0.25) for
 * the timeline.  A host of --budget (default 2.5 x the guest size, as 15 GB for 6 GB guests) is
 * drawn beside it: `over_budget_mib` is what such a host would have had to swap.  The host
 * here has no such limit (and no swap), so memhog times do not include swapping: they are the
 * allocator's and the page faults' time only, and hinting shows in memory, not in time.
 *
 * The strategies run with their defaults, bubble with the kernel's delay of 2 s, so the
 * timeline shows when memory really comes back; the default --idle (12 s; 4 s with --quick)
 * is long enough for bubble's passes to report a freed guest.  With `--kinds ...,jemalloc`
 * (if built with jemalloc) jemalloc guests run too: mallocx/dallocx of 4 KiB in an arena of
 * their own, dirty_decay_ms=1000, muzzy_decay_ms=0, background_thread on.
 *
 * Every kind runs --reps times, kinds interleaved, their order rotated per repetition.
 *
 * Output: DIR/memhog.csv (per kind and point: host memory and memhog time, medians with
 * p10/p90 over the repetitions), DIR/memhog_timeline.csv (rep, kind, time, host and per-guest
 * Rss) and DIR/memhog.json (everything, with the machine, the options and the load average).
 */
#include "exp_common.c"

#define NG 3
#define MAX_KINDS 8
#define NPOINTS (2 * NG + 1)

typedef struct opts {
  bool quick;
  int reps;
  uint64_t guest_bytes, hog_bytes, budget_bytes;
  double idle_s, gap_s, sample_s, lead_s, settle_max_s;
  const char *out, *kinds;
  const char *opt_specs[16];
  int nopt_specs;
  char args[512];
} opts_t;

typedef struct sample {
  double t, host_mib, g_mib[NG];
  int phase; /* 0 before, k while guest k runs its memhog, NG+1 final idle */
} sample_t;

typedef struct run {
  int kind, rep;
  double point_mib[NPOINTS]; /* before g1, after g1, before g2, ..., after idle */
  double point_t[NPOINTS];
  double alloc_s[NG], free_s[NG], run_s[NG];
  sample_t *s;
  int ns, cap;
  bool failed;
} run_t;

static const char *const point_names[NPOINTS] = {"before_g1", "after_g1", "before_g2", "after_g2",
                                                 "before_g3", "after_g3", "after_idle"};

static const char *default_opts(const char *name) {
  if (!strcmp(name, "jemalloc"))
    return "dirty_decay_ms=1000,muzzy_decay_ms=0";
  return "";
}

static void usage(FILE *f) {
  fprintf(
      f, "usage: exp_memhog [--quick] [--reps N] [--out DIR] [--guest-size SIZE] [--hog SIZE]\n"
         "                  [--budget SIZE] [--idle S] [--sample S] [--kinds LIST]\n"
         "                  [--opt KIND.KEY=VALUE]\n"
         "  --guest-size SIZE  arena of each of the 3 guests (default 1G; --quick 256M)\n"
         "  --hog SIZE         memory each memhog allocates and writes (default 90 %% of a guest)\n"
         "  --budget SIZE      host size drawn beside the results (default 2.5 x guest size)\n"
         "  --gap S            pause between one memhog's end and the next one's start\n"
         "                     (default 6; --quick 2.5)\n"
         "  --idle S           idle after the third memhog (default 12; --quick 4)\n"
         "  --sample S         timeline interval (default 0.25)\n"
         "  --kinds LIST       default none,bitmap,bubble; jemalloc too if built with it\n"
         "  --opt K.KEY=VALUE  strategy option, e.g. bubble.delay=200ms (default: the kernel's)\n"
         "  --reps N           repetitions per kind (default 3; --quick 1)\n"
         "  --out DIR          write DIR/memhog.csv, memhog_timeline.csv, memhog.json\n");
}

static int parse(int argc, char **argv, opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->out = "results";
  o->reps = -1;
  o->idle_s = -1;
  o->gap_s = -1;
  o->sample_s = 0.25;
  o->lead_s = 1.0;
  o->kinds = "none,bitmap,bubble";
  bu_join_args(o->args, sizeof(o->args), argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (bu_common_opt(argc, argv, &i, &o->quick, &o->reps, &o->out))
      continue;
    if (!strcmp(a, "--guest-size") && more) {
      if (bu_parse_size(argv[++i], &o->guest_bytes))
        return fprintf(stderr, "exp_memhog: bad size '%s'\n", argv[i]), 2;
    } else if (!strcmp(a, "--hog") && more) {
      if (bu_parse_size(argv[++i], &o->hog_bytes))
        return fprintf(stderr, "exp_memhog: bad size '%s'\n", argv[i]), 2;
    } else if (!strcmp(a, "--budget") && more) {
      if (bu_parse_size(argv[++i], &o->budget_bytes))
        return fprintf(stderr, "exp_memhog: bad size '%s'\n", argv[i]), 2;
    } else if (!strcmp(a, "--idle") && more) {
      o->idle_s = atof(argv[++i]);
    } else if (!strcmp(a, "--gap") && more) {
      o->gap_s = atof(argv[++i]);
    } else if (!strcmp(a, "--sample") && more) {
      o->sample_s = atof(argv[++i]);
    } else if (!strcmp(a, "--kinds") && more) {
      o->kinds = argv[++i];
    } else if (!strcmp(a, "--opt") && more) {
      if (o->nopt_specs < 16)
        o->opt_specs[o->nopt_specs++] = argv[++i];
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else {
      fprintf(stderr, "exp_memhog: unknown or incomplete argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!o->guest_bytes)
    o->guest_bytes = o->quick ? 256ull << 20 : 1024ull << 20;
  if (!o->hog_bytes)
    o->hog_bytes = o->guest_bytes / 10 * 9 / BH_PAGE_SIZE * BH_PAGE_SIZE;
  if (!o->budget_bytes)
    o->budget_bytes = o->guest_bytes * 5 / 2;
  if (o->reps < 0)
    o->reps = o->quick ? 1 : 3;
  if (o->idle_s < 0)
    o->idle_s = o->quick ? 4 : 12;
  if (o->gap_s < 0)
    o->gap_s = o->quick ? 2.5 : 6;
  o->lead_s = o->quick ? 0.5 : 1.0;
  o->settle_max_s = 1e9;
  if (o->reps < 1 || o->sample_s < 0.01 || exp_check_guest_size(o->guest_bytes) ||
      o->hog_bytes < BH_PAGE_SIZE || o->hog_bytes > o->guest_bytes / 100 * 95)
    return fprintf(stderr, "exp_memhog: bad --reps, --sample, --guest-size or --hog (at most "
                           "95 %% of the guest)\n"),
           2;
  return 0;
}

static void take_sample(run_t *r, const exp_guest_t *g, double t0, int phase) {
  if (r->ns == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 256;
    r->s = realloc(r->s, (size_t)r->cap * sizeof(*r->s));
    if (!r->s)
      exp_die("realloc", 0);
  }
  sample_t *s = &r->s[r->ns++];
  long rss[NG];
  long sum = exp_host_rss_kib(g, NG, rss);
  s->t = bu_now_s() - t0;
  s->host_mib = (double)sum / 1024.0;
  for (int i = 0; i < NG; i++)
    s->g_mib[i] = (double)rss[i] / 1024.0;
  s->phase = phase;
}

/* Waits for a message of `type` from guest g, sampling the timeline meanwhile. */
static int wait_sampling(run_t *r, const exp_guest_t *gs, const exp_guest_t *g, double t0,
                         double *next, double period, int phase, int type, exp_msg_t *m) {
  for (;;) {
    double now = bu_now_s();
    while (now >= *next) {
      take_sample(r, gs, t0, phase);
      *next += period;
      if (*next < now) /* fell behind (a loaded machine): skip, do not burst */
        *next = now + period;
    }
    int timeout = (int)((*next - now) * 1000) + 1;
    int rc = exp_recv(g->fd, m, sizeof(*m), timeout);
    if (rc == 2)
      continue;
    if (rc != 1 || m->type == MSG_ERROR) {
      fprintf(stderr, "\nexp_memhog: guest %d failed: %s\n", g->index,
              rc == 1 ? m->text : "no answer");
      return -1;
    }
    if (m->type == type)
      return 0;
  }
}

/* Sleeps until t0 + until, sampling. */
static void idle_sampling(run_t *r, const exp_guest_t *gs, double t0, double *next, double period,
                          int phase, double until) {
  for (;;) {
    double now = bu_now_s();
    if (now - t0 >= until)
      return;
    while (now >= *next) {
      take_sample(r, gs, t0, phase);
      *next += period;
      if (*next < now)
        *next = now + period;
    }
    double wake = *next < t0 + until ? *next : t0 + until;
    bu_sleep_s(wake - now);
  }
}

static int run_kind(const opts_t *o, const exp_kind_t *kind, run_t *r) {
  exp_guest_cfg_t gc = {.kind = *kind, .bytes = o->guest_bytes, .settle_max_s = 1e9};
  exp_guest_t g[NG];
  memset(g, 0, sizeof(g));
  char label[200];
  exp_kind_label(kind, label, sizeof(label));
  printf("  rep %d  %-44s", r->rep + 1, label);
  fflush(stdout);
  int rc = 0, started = 0;
  for (int k = 0; k < NG; k++) {
    exp_msg_t m;
    if (exp_guest_start(&g[k], k + 1, &gc, &m)) {
      rc = -1;
      break;
    }
    started++;
  }
  uint64_t pages = o->hog_bytes / BH_PAGE_SIZE;
  double t0 = bu_now_s(), next = t0;
  if (!rc)
    idle_sampling(r, g, t0, &next, o->sample_s, 0, o->lead_s);
  for (int k = 0; k < NG && !rc; k++) {
    r->point_mib[2 * k] = (double)exp_host_rss_kib(g, NG, NULL) / 1024.0;
    r->point_t[2 * k] = bu_now_s() - t0;
    exp_guest_cmd(&g[k], CMD_RUN, pages, 0);
    exp_msg_t m;
    if (wait_sampling(r, g, &g[k], t0, &next, o->sample_s, k + 1, MSG_PEAK, &m)) {
      rc = -1;
      break;
    }
    r->alloc_s[k] = m.seconds;
    if (wait_sampling(r, g, &g[k], t0, &next, o->sample_s, k + 1, MSG_DONE, &m)) {
      rc = -1;
      break;
    }
    r->free_s[k] = m.seconds;
    r->run_s[k] = r->alloc_s[k] + r->free_s[k];
    r->point_mib[2 * k + 1] = (double)exp_host_rss_kib(g, NG, NULL) / 1024.0;
    r->point_t[2 * k + 1] = bu_now_s() - t0;
    printf(" g%d %.2fs", k + 1, r->run_s[k]);
    fflush(stdout);
    if (k + 1 < NG)
      idle_sampling(r, g, t0, &next, o->sample_s, k + 1, bu_now_s() - t0 + o->gap_s);
  }
  if (!rc) {
    double end = bu_now_s() - t0 + o->idle_s;
    idle_sampling(r, g, t0, &next, o->sample_s, NG + 1, end);
    take_sample(r, g, t0, NG + 1);
    r->point_mib[NPOINTS - 1] = r->s[r->ns - 1].host_mib;
    r->point_t[NPOINTS - 1] = r->s[r->ns - 1].t;
    printf("  host %.0f -> %.0f MiB\n", r->point_mib[1], r->point_mib[NPOINTS - 1]);
  }
  exp_guest_stop_all(g, started);
  r->failed = rc != 0;
  return rc;
}

int main(int argc, char **argv) {
  exp_prog = "exp_memhog";
  opts_t o;
  int prc = parse(argc, argv, &o);
  if (prc)
    return prc;
  exp_kind_t kinds[MAX_KINDS];
  int nk = exp_parse_kinds(o.kinds, kinds, MAX_KINDS, default_opts);
  if (nk < 1)
    return 2;
  for (int i = 0; i < o.nopt_specs; i++)
    if (exp_apply_opt(kinds, nk, o.opt_specs[i]))
      return 2;
  if (exp_validate_kinds(kinds, nk))
    return 2;
  bu_machine_t mach;
  bu_machine_info(&mach);
  if (!bu_build_is_optimized(&mach))
    fprintf(stderr, "exp_memhog: warning: %s build; results record it\n", mach.build_type);
  uint64_t need = NG * o.hog_bytes + (512ull << 20), avail = exp_mem_available();
  if (avail && avail < need) {
    fprintf(stderr,
            "exp_memhog: the host has %.0f MiB available, the run needs about %.0f MiB; "
            "lower --guest-size or --hog\n",
            (double)avail / BU_MiB, (double)need / BU_MiB);
    return 2;
  }
  char load0[64], load1[64];
  bu_loadavg(load0, sizeof(load0));
  printf("exp_memhog: 3 guests of %.0f MiB, memhog %.0f MiB each, %.1f s apart, idle %.0f s, "
         "%d rep(s); load %s\n",
         (double)o.guest_bytes / BU_MiB, (double)o.hog_bytes / BU_MiB, o.gap_s, o.idle_s, o.reps,
         load0);

  run_t *runs = calloc((size_t)(o.reps * nk), sizeof(*runs));
  if (!runs)
    exp_die("calloc", 0);
  int failed = 0;
  double tstart = bu_now_s();
  for (int rep = 0; rep < o.reps; rep++)
    for (int j = 0; j < nk; j++) {
      int ki = (j + rep) % nk;
      run_t *r = &runs[rep * nk + ki];
      r->kind = ki;
      r->rep = rep;
      if (run_kind(&o, &kinds[ki], r))
        failed = 1;
    }
  double elapsed = bu_now_s() - tstart;
  bu_loadavg(load1, sizeof(load1));
  double budget_mib = (double)o.budget_bytes / BU_MiB;

  /* medians over repetitions */
  bu_stats_t pt[MAX_KINDS][NPOINTS], rs[MAX_KINDS][NG];
  double *v = malloc(sizeof(double) * (size_t)o.reps);
  for (int ki = 0; ki < nk; ki++) {
    for (int p = 0; p < NPOINTS; p++) {
      int n = 0;
      for (int rep = 0; rep < o.reps; rep++)
        if (!runs[rep * nk + ki].failed)
          v[n++] = runs[rep * nk + ki].point_mib[p];
      bu_stats(v, n, &pt[ki][p]);
    }
    for (int k = 0; k < NG; k++) {
      int n = 0;
      for (int rep = 0; rep < o.reps; rep++)
        if (!runs[rep * nk + ki].failed)
          v[n++] = runs[rep * nk + ki].run_s[k];
      bu_stats(v, n, &rs[ki][k]);
    }
  }
  free(v);

  printf("\nhost resident memory (sum of the guests' Rss, MiB; median of %d) and memhog time (s)\n",
         o.reps);
  printf("%-10s %9s %9s %9s %9s %9s %9s %9s %9s\n", "kind", "start", "after g1", "after g2",
         "after g3", "idle end", "g1 s", "g2 s", "g3 s");
  for (int ki = 0; ki < nk; ki++)
    printf("%-10s %9.0f %9.0f %9.0f %9.0f %9.0f %9.3f %9.3f %9.3f\n", kinds[ki].name,
           pt[ki][0].median, pt[ki][1].median, pt[ki][3].median, pt[ki][5].median, pt[ki][6].median,
           rs[ki][0].median, rs[ki][1].median, rs[ki][2].median);
  printf("host budget %.0f MiB; published: unmodified 40 s / 65 s / 6 min 38 s with 3.6 GB swap, "
         "bubble 32/58/35 s, bitmap 42/47/32 s, no swap\n",
         budget_mib);
  printf("elapsed %.0f s; load average %s at the start, %s at the end\n", elapsed, load0, load1);

  char a2[1024];
  snprintf(a2, sizeof(a2),
           "%s [guest_size_mib=%.0f hog_mib=%.0f budget_mib=%.0f gap_s=%.2f "
           "idle_s=%.1f sample_s=%.2f reps=%d load_start=%s load_end=%s]",
           o.args, (double)o.guest_bytes / BU_MiB, (double)o.hog_bytes / BU_MiB, budget_mib,
           o.gap_s, o.idle_s, o.sample_s, o.reps, load0, load1);

  /* ---- memhog.csv ---- */
  FILE *f = bu_open_out(o.out, "memhog.csv");
  if (!f)
    return 2;
  bu_csv_machine(f, &mach, "exp_memhog", a2);
  fprintf(f, "# loadavg: start %s, end %s\n", load0, load1);
  fprintf(f, "kind,options,point,guest,host_rss_mib_median,host_rss_mib_p10,host_rss_mib_p90,"
             "over_budget_mib_median,budget_mib,run_s_median,run_s_p10,run_s_p90,reps\n");
  for (int ki = 0; ki < nk; ki++)
    for (int p = 0; p < NPOINTS; p++) {
      int guest = p < 2 * NG ? p / 2 + 1 : 0;
      double over = pt[ki][p].median - budget_mib;
      char ob[160];
      fprintf(f, "%s,%s,%s,%d,%.1f,%.1f,%.1f,%.1f,%.0f,", kinds[ki].name,
              exp_csv_opts(kinds[ki].opts, ob, sizeof(ob)), point_names[p], guest, pt[ki][p].median,
              pt[ki][p].p10, pt[ki][p].p90, over > 0 ? over : 0, budget_mib);
      if (p % 2 == 1 && p < 2 * NG)
        fprintf(f, "%.3f,%.3f,%.3f,%d\n", rs[ki][guest - 1].median, rs[ki][guest - 1].p10,
                rs[ki][guest - 1].p90, pt[ki][p].n);
      else
        fprintf(f, ",,,%d\n", pt[ki][p].n);
    }
  fclose(f);

  /* ---- memhog_timeline.csv ---- */
  f = bu_open_out(o.out, "memhog_timeline.csv");
  if (!f)
    return 2;
  bu_csv_machine(f, &mach, "exp_memhog", a2);
  fprintf(f, "# loadavg: start %s, end %s\n", load0, load1);
  fprintf(f,
          "# phase: 0 before the first memhog, k from the start of guest k's memhog to the next "
          "one's (gap included), "
          "until the next starts), %d final idle\n",
          NG + 1);
  fprintf(f, "rep,kind,time_s,host_rss_mib,g1_rss_mib,g2_rss_mib,g3_rss_mib,phase,budget_mib\n");
  for (int i = 0; i < o.reps * nk; i++) {
    const run_t *r = &runs[i];
    for (int j = 0; j < r->ns; j++) {
      const sample_t *s = &r->s[j];
      fprintf(f, "%d,%s,%.3f,%.1f,%.1f,%.1f,%.1f,%d,%.0f\n", r->rep + 1, kinds[r->kind].name, s->t,
              s->host_mib, s->g_mib[0], s->g_mib[1], s->g_mib[2], s->phase, budget_mib);
    }
  }
  fclose(f);

  /* ---- memhog.json ---- */
  f = bu_open_out(o.out, "memhog.json");
  if (!f)
    return 2;
  bu_json_head(f, "exp_memhog", o.args, &mach, load0, load1, elapsed);
  fprintf(
      f,
      "  \"options\": {\"guest_size_bytes\": %lu, \"hog_bytes\": %lu, \"budget_bytes\": "
      "%lu, \"gap_s\": %.2f, \"idle_s\": %.1f, \"sample_s\": %.3f, \"reps\": %d, \"quick\": %s, "
      "\"clock\": \"thread\", \"report\": \"dontneed\", \"host_memory\": "
      "\"sum of the guests' Rss from /proc/PID/smaps_rollup\"},\n",
      (unsigned long)o.guest_bytes, (unsigned long)o.hog_bytes, (unsigned long)o.budget_bytes,
      o.gap_s, o.idle_s, o.sample_s, o.reps, o.quick ? "true" : "false");
  fprintf(f, "  \"published\": \"unmodified 40 s / 65 s / 6 min 38 s (swap 3.6 GB); bubble "
             "32/58/35 s; bitmap 42/47/32 s (swap 0); 15 GB host, three 6 GB guests\",\n");
  fprintf(f, "  \"kinds\": [\n");
  for (int ki = 0; ki < nk; ki++) {
    fprintf(f, "    {\"kind\": ");
    bu_json_str(f, kinds[ki].name);
    fprintf(f, ", \"options\": ");
    bu_json_str(f, kinds[ki].opts);
    fprintf(f, ",\n      \"points\": {");
    for (int p = 0; p < NPOINTS; p++) {
      fprintf(f, "%s\n        ", p ? "," : "");
      bu_json_stats(f, point_names[p], &pt[ki][p], 1);
    }
    fprintf(f, "},\n      \"run_s\": [");
    for (int k = 0; k < NG; k++) {
      fprintf(f, "%s{", k ? ", " : "");
      bu_json_stats(f, "g", &rs[ki][k], 1);
      fprintf(f, "}");
    }
    fprintf(f, "],\n      \"runs\": [");
    int first = 1;
    for (int rep = 0; rep < o.reps; rep++) {
      const run_t *r = &runs[rep * nk + ki];
      fprintf(f,
              "%s\n        {\"rep\": %d, \"failed\": %s, \"alloc_s\": [%.3f, %.3f, %.3f], "
              "\"free_s\": [%.3f, %.3f, %.3f], \"host_rss_mib\": [",
              first ? "" : ",", rep + 1, r->failed ? "true" : "false", r->alloc_s[0], r->alloc_s[1],
              r->alloc_s[2], r->free_s[0], r->free_s[1], r->free_s[2]);
      for (int p = 0; p < NPOINTS; p++)
        fprintf(f, "%s%.1f", p ? ", " : "", r->point_mib[p]);
      fprintf(f, "], \"point_time_s\": [");
      for (int p = 0; p < NPOINTS; p++)
        fprintf(f, "%s%.2f", p ? ", " : "", r->point_t[p]);
      fprintf(f, "]}");
      first = 0;
    }
    fprintf(f, "]}%s\n", ki + 1 < nk ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  fclose(f);
  printf("wrote %s/memhog.csv, %s/memhog_timeline.csv and %s/memhog.json\n", o.out, o.out, o.out);
  for (int i = 0; i < o.reps * nk; i++)
    free(runs[i].s);
  free(runs);
  return failed ? 1 : 0;
}
