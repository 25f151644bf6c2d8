/*
 * exp_guests: "guests launched without swap" (experiment 1 of the published set).
 *
 * Published (15 GB host, 5 GB guests, a program in each guest allocates 4 GB, memsets it and
 * exits; launch guests until the host swaps): unmodified 2-3 guests, hinting 5-6.
 *
 * Here a guest is a child process with its own arena of --guest-size (default 1 GiB) and a
 * hinting strategy attached with the thread clock and real madvise(MADV_DONTNEED), or a
 * jemalloc guest (mallocx/dallocx of 4 KiB in an arena of its own with dirty_decay_ms=1000,
 * muzzy_decay_ms=0 and background_thread on; 4 KiB is a slab size class in jemalloc, served
 * from 16 KiB slabs, not page-granular extents).  Each guest allocates --fill (80 %) of its
 * arena as order-0 blocks through the allocator (GFP_HIGHUSER_MOVABLE), writes every page,
 * frees everything, then idles, alive, until the run ends.  Guests are launched one after
 * another; the next one starts when the previous has gone idle: its hinting worker has
 * nothing left to do (see exp_common.c), or --settle-max passed.
 *
 * The host is the sum of the guests' Rss (/proc/PID/smaps_rollup), compared with --budget
 * (default 2.5 x guest size: with 80 % fill, the unmodified guests fit 3, i.e. "2-3"; the
 * published host had 3 x the guest size and no guest was ever idle at 0).  The sum is read
 * twice per guest: at its peak (everything allocated and written; the guest waits until the
 * parent has read it) and after it went idle.  A guest fits if the sum at its peak stays
 * within the budget; the first guest that does not fit ends the run for that kind (that is
 * where the published host would start to swap).  At most --max-guests are launched.
 *
 * bubble runs with delay=200ms by default instead of the kernel's 2 s (PAGE_REPORTING_DELAY):
 * a pass reports about a sixteenth of each free list and a fully freed guest needs several
 * passes, so with 2 s a guest takes 10-20 s to go idle and twelve of them would not fit in the
 * time budget.  The delay only changes when memory comes back, not how much: `--opt
 * bubble.delay=2s` runs the kernel's timing (settle times in the CSV grow accordingly).
 *
 * Every kind runs --reps times, the kinds interleaved and their order rotated per repetition;
 * the result is the median guest count with its spread, and per guest the peak and idle Rss.
 * Where a kind reached the cap, `fit_uncapped_estimate` says how many would have fitted:
 * 1 + (budget - median peak Rss) / median idle Rss (an extrapolation, labelled as such).
 *
 * Output: DIR/guests.csv (one row per kind), DIR/guests_detail.csv (one row per guest),
 * DIR/guests.json (both, the machine, the options, the load average).
 */
#include "exp_common.c"

#define MAX_KINDS 8
#define MAX_GUESTS 64

typedef struct opts {
  bool quick;
  int reps, max_guests;
  uint64_t guest_bytes, budget_bytes;
  double fill, settle_max_s, settle_min_s;
  const char *out, *kinds;
  const char *opt_specs[16];
  int nopt_specs;
  char args[512];
} opts_t;

typedef struct guest_row {
  int rep, kind, guest, fits, settle_timeout;
  double peak_rss_mib, idle_rss_mib, sum_peak_mib, sum_idle_mib, res_peak_mib, res_idle_mib;
  double alloc_s, free_s, settle_s, reported_mib;
  uint64_t report_calls;
} guest_row_t;

typedef struct kind_rep {
  int fit, launched;
  bool cap;
  double max_sum_idle_mib;
} kind_rep_t;

static const char *default_opts(const char *name) {
  if (!strcmp(name, "bubble"))
    return "delay=200ms";
  if (!strcmp(name, "jemalloc"))
    return "dirty_decay_ms=1000,muzzy_decay_ms=0";
  return "";
}

static void usage(FILE *f) {
  fprintf(
      f, "usage: exp_guests [--quick] [--reps N] [--out DIR] [--guest-size SIZE] [--budget SIZE]\n"
         "                  [--fill F] [--max-guests N] [--kinds LIST] [--opt KIND.KEY=VALUE]\n"
         "                  [--settle-max S]\n"
         "  --guest-size SIZE  arena of each guest (default 1G; --quick 256M)\n"
         "  --budget SIZE      host memory budget (default 2.5 x guest size)\n"
         "  --fill F           share of the arena each guest allocates and writes (0.8)\n"
         "  --max-guests N     launch at most N guests per kind (12; --quick 8)\n"
         "  --kinds LIST       none,bitmap,bubble[,jemalloc] (jemalloc included if built)\n"
         "  --opt K.KEY=VALUE  strategy option, e.g. bubble.delay=2s (default bubble.delay=200ms;\n"
         "                     jemalloc.dirty_decay_ms=1000)\n"
         "  --settle-max S     longest wait for a guest to go idle (default 30 s)\n"
         "  --reps N           repetitions per kind (default 3; --quick 1)\n"
         "  --out DIR          write DIR/guests.csv, guests_detail.csv, guests.json (results)\n");
}

static int parse(int argc, char **argv, opts_t *o) {
  memset(o, 0, sizeof(*o));
  o->out = "results";
  o->reps = -1;
  o->max_guests = -1;
  o->fill = 0.8;
  o->settle_max_s = 30;
  o->settle_min_s = 0.05;
  o->kinds = exp_have_jemalloc() ? "none,bitmap,bubble,jemalloc" : "none,bitmap,bubble";
  bu_join_args(o->args, sizeof(o->args), argc, argv);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (bu_common_opt(argc, argv, &i, &o->quick, &o->reps, &o->out))
      continue;
    if (!strcmp(a, "--guest-size") && more) {
      if (bu_parse_size(argv[++i], &o->guest_bytes))
        return fprintf(stderr, "exp_guests: bad size '%s'\n", argv[i]), 2;
    } else if (!strcmp(a, "--budget") && more) {
      if (bu_parse_size(argv[++i], &o->budget_bytes))
        return fprintf(stderr, "exp_guests: bad size '%s'\n", argv[i]), 2;
    } else if (!strcmp(a, "--fill") && more) {
      o->fill = atof(argv[++i]);
    } else if (!strcmp(a, "--max-guests") && more) {
      o->max_guests = atoi(argv[++i]);
    } else if (!strcmp(a, "--kinds") && more) {
      o->kinds = argv[++i];
    } else if (!strcmp(a, "--opt") && more) {
      if (o->nopt_specs < 16)
        o->opt_specs[o->nopt_specs++] = argv[++i];
    } else if (!strcmp(a, "--settle-max") && more) {
      o->settle_max_s = atof(argv[++i]);
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    } else {
      fprintf(stderr, "exp_guests: unknown or incomplete argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (!o->guest_bytes)
    o->guest_bytes = o->quick ? 256ull << 20 : 1024ull << 20;
  if (!o->budget_bytes)
    o->budget_bytes = o->guest_bytes * 5 / 2;
  if (o->reps < 0)
    o->reps = o->quick ? 1 : 3;
  if (o->max_guests < 0)
    o->max_guests = o->quick ? 8 : 12;
  if (o->reps < 1 || o->max_guests < 1 || o->max_guests > MAX_GUESTS || o->fill <= 0 ||
      o->fill >= 1 || exp_check_guest_size(o->guest_bytes))
    return fprintf(stderr, "exp_guests: bad --reps, --max-guests, --fill or --guest-size\n"), 2;
  return 0;
}

/*
 * One run of one kind: guests one after another until one does not fit or max_guests.
 * Appends the rows; returns 0, or -1 if a guest failed.
 */
static int run_kind(const opts_t *o, const exp_kind_t *kind, int kind_idx, int rep,
                    guest_row_t *rows, int *nrows, kind_rep_t *kr) {
  exp_guest_cfg_t gc = {.kind = *kind,
                        .bytes = o->guest_bytes,
                        .settle_max_s = o->settle_max_s,
                        .settle_min_s = o->settle_min_s};
  uint64_t pages = (uint64_t)((double)(o->guest_bytes / BH_PAGE_SIZE) * o->fill);
  exp_guest_t g[MAX_GUESTS];
  memset(g, 0, sizeof(g));
  memset(kr, 0, sizeof(*kr));
  int n = 0, rc = 0;
  char label[200];
  exp_kind_label(kind, label, sizeof(label));
  printf("  rep %d  %-40s", rep + 1, label);
  fflush(stdout);
  for (int k = 0; k < o->max_guests; k++) {
    exp_msg_t m;
    if (exp_guest_start(&g[k], k + 1, &gc, &m)) {
      rc = -1;
      break;
    }
    n = k + 1;
    guest_row_t *r = &rows[(*nrows)++];
    memset(r, 0, sizeof(*r));
    r->rep = rep;
    r->kind = kind_idx;
    r->guest = k + 1;
    exp_guest_cmd(&g[k], CMD_RUN, pages, RUN_HOLD | RUN_SETTLE);
    if (exp_recv(g[k].fd, &m, sizeof(m), 600000) != 1 || m.type != MSG_PEAK) {
      fprintf(stderr, "\nexp_guests: guest %d failed: %s\n", k + 1,
              m.type == MSG_ERROR ? m.text : "no PEAK");
      rc = -1;
      break;
    }
    long rss[MAX_GUESTS];
    long sum = exp_host_rss_kib(g, n, rss);
    r->alloc_s = m.seconds;
    r->peak_rss_mib = (double)rss[k] / 1024.0;
    r->sum_peak_mib = (double)sum / 1024.0;
    r->res_peak_mib = (double)m.arena_resident / BU_MiB;
    r->fits = (uint64_t)sum * 1024 <= o->budget_bytes;
    if (!r->fits) {
      printf(" x");
      break; /* this is where the host would swap */
    }
    exp_guest_cmd(&g[k], CMD_ACK, 0, 0);
    if (exp_recv(g[k].fd, &m, sizeof(m), 600000) != 1 || m.type != MSG_DONE) {
      fprintf(stderr, "\nexp_guests: guest %d failed after its peak\n", k + 1);
      rc = -1;
      break;
    }
    r->free_s = m.seconds;
    if (exp_recv(g[k].fd, &m, sizeof(m), (int)(o->settle_max_s * 1000) + 10000) != 1 ||
        m.type != MSG_SETTLED) {
      fprintf(stderr, "\nexp_guests: guest %d did not report going idle\n", k + 1);
      rc = -1;
      break;
    }
    sum = exp_host_rss_kib(g, n, rss);
    r->settle_s = m.seconds;
    r->settle_timeout = m.settle_timeout;
    r->idle_rss_mib = (double)rss[k] / 1024.0;
    r->sum_idle_mib = (double)sum / 1024.0;
    r->res_idle_mib = (double)m.arena_resident / BU_MiB;
    r->reported_mib = (double)m.reported_bytes / BU_MiB;
    r->report_calls = m.report_calls;
    if (r->sum_idle_mib > kr->max_sum_idle_mib)
      kr->max_sum_idle_mib = r->sum_idle_mib;
    kr->fit++;
    printf(" %d", k + 1);
    fflush(stdout);
  }
  kr->launched = n;
  kr->cap = kr->fit == o->max_guests;
  exp_guest_stop_all(g, n);
  printf("  -> %d fit%s\n", kr->fit, kr->cap ? " (cap reached)" : "");
  return rc;
}

int main(int argc, char **argv) {
  exp_prog = "exp_guests";
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
    fprintf(stderr, "exp_guests: warning: %s build; results record it\n", mach.build_type);
  uint64_t need = o.budget_bytes + o.guest_bytes + (256ull << 20);
  uint64_t avail = exp_mem_available();
  if (avail && avail < need) {
    fprintf(stderr,
            "exp_guests: the host has %.0f MiB available, the run needs about %.0f MiB "
            "(budget + one guest); lower --guest-size\n",
            (double)avail / BU_MiB, (double)need / BU_MiB);
    return 2;
  }
  char load0[64], load1[64];
  bu_loadavg(load0, sizeof(load0));
  printf("exp_guests: guests of %.0f MiB, %.0f %% written, host budget %.0f MiB, up to %d "
         "guests, %d rep(s); load %s\n",
         (double)o.guest_bytes / BU_MiB, o.fill * 100, (double)o.budget_bytes / BU_MiB,
         o.max_guests, o.reps, load0);

  int maxrows = o.reps * nk * o.max_guests;
  guest_row_t *rows = calloc((size_t)maxrows, sizeof(*rows));
  kind_rep_t *kr = calloc((size_t)(o.reps * nk), sizeof(*kr));
  if (!rows || !kr)
    exp_die("calloc", 0);
  int nrows = 0, failed = 0;
  double t0 = bu_now_s();
  for (int rep = 0; rep < o.reps; rep++)
    for (int j = 0; j < nk; j++) {
      int ki = (j + rep) % nk; /* rotate the order per repetition */
      if (run_kind(&o, &kinds[ki], ki, rep, rows, &nrows, &kr[rep * nk + ki]))
        failed = 1;
    }
  double elapsed = bu_now_s() - t0;
  bu_loadavg(load1, sizeof(load1));

  /* per kind: guests that fit, per-guest peak/idle Rss, settle time */
  typedef struct ksum {
    bu_stats_t fit, peak, idle, settle, alloc;
    int caps, timeouts;
    double est; /* guests that would fit without the cap, from the median peak and idle Rss */
  } ksum_t;
  ksum_t ks[MAX_KINDS];
  double *v = malloc(sizeof(double) * (size_t)(maxrows + o.reps));
  for (int ki = 0; ki < nk; ki++) {
    int n = 0;
    ks[ki].caps = 0;
    for (int rep = 0; rep < o.reps; rep++) {
      v[n++] = kr[rep * nk + ki].fit;
      ks[ki].caps += kr[rep * nk + ki].cap;
    }
    bu_stats(v, n, &ks[ki].fit);
#define COLLECT(field, dst)                                                                        \
  do {                                                                                             \
    n = 0;                                                                                         \
    for (int i = 0; i < nrows; i++)                                                                \
      if (rows[i].kind == ki && rows[i].fits)                                                      \
        v[n++] = rows[i].field;                                                                    \
    bu_stats(v, n, &ks[ki].dst);                                                                   \
  } while (0)
    COLLECT(peak_rss_mib, peak);
    COLLECT(idle_rss_mib, idle);
    COLLECT(settle_s, settle);
    COLLECT(alloc_s, alloc);
#undef COLLECT
    ks[ki].timeouts = 0;
    for (int i = 0; i < nrows; i++)
      ks[ki].timeouts += rows[i].kind == ki && rows[i].settle_timeout;
    /* k guests fit while (k - 1) idle guests + one at its peak stay within the budget */
    double budget_mib = (double)o.budget_bytes / BU_MiB;
    ks[ki].est = ks[ki].fit.median;
    if (ks[ki].caps && ks[ki].idle.median > 0 && ks[ki].peak.median <= budget_mib)
      ks[ki].est = 1 + floor((budget_mib - ks[ki].peak.median) / ks[ki].idle.median);
  }
  free(v);

  printf("\n%-10s %-38s %6s %8s %8s %10s %10s %9s %9s\n", "kind", "options", "fit", "fit p10",
         "fit p90", "peak MiB", "idle MiB", "settle s", "uncapped");
  for (int ki = 0; ki < nk; ki++)
    printf("%-10s %-38s %6.1f %8.1f %8.1f %10.1f %10.1f %9.2f %9.0f%s\n", kinds[ki].name,
           kinds[ki].opts[0] ? kinds[ki].opts : "-", ks[ki].fit.median, ks[ki].fit.p10,
           ks[ki].fit.p90, ks[ki].peak.median, ks[ki].idle.median, ks[ki].settle.median, ks[ki].est,
           ks[ki].caps ? "  (cap reached)" : "");
  printf("uncapped: an estimate where the cap was reached, 1 + (budget - peak) / idle Rss\n");
  printf(
      "published: unmodified 2-3 guests, hinting 5-6 (bubble v1 4, bitmap 5; v11 letter 2 vs 6)\n");
  printf("elapsed %.0f s; load average %s at the start, %s at the end\n", elapsed, load0, load1);

  /* ---- guests.csv ---- */
  char a2[1024];
  snprintf(a2, sizeof(a2),
           "%s [guest_size_mib=%.0f budget_mib=%.0f fill=%.2f max_guests=%d "
           "reps=%d load_start=%s load_end=%s]",
           o.args, (double)o.guest_bytes / BU_MiB, (double)o.budget_bytes / BU_MiB, o.fill,
           o.max_guests, o.reps, load0, load1);
  FILE *f = bu_open_out(o.out, "guests.csv");
  if (!f)
    return 2;
  bu_csv_machine(f, &mach, "exp_guests", a2);
  fprintf(f, "# loadavg: start %s, end %s\n", load0, load1);
  fprintf(f, "kind,options,guest_size_mib,budget_mib,fill,max_guests,reps,fit_median,fit_p10,"
             "fit_p90,fit_min,fit_max,cap_reached_reps,peak_rss_mib_median,idle_rss_mib_median,"
             "idle_rss_mib_p10,idle_rss_mib_p90,settle_s_median,settle_s_p90,settle_timeouts,"
             "alloc_s_median,fit_uncapped_estimate\n");
  char ob[160];
  for (int ki = 0; ki < nk; ki++)
    fprintf(f,
            "%s,%s,%.0f,%.0f,%.2f,%d,%d,%.1f,%.1f,%.1f,%.0f,%.0f,%d,%.1f,%.1f,%.1f,%.1f,"
            "%.3f,%.3f,%d,%.3f,%.0f\n",
            kinds[ki].name, exp_csv_opts(kinds[ki].opts, ob, sizeof(ob)),
            (double)o.guest_bytes / BU_MiB, (double)o.budget_bytes / BU_MiB, o.fill, o.max_guests,
            o.reps, ks[ki].fit.median, ks[ki].fit.p10, ks[ki].fit.p90, ks[ki].fit.min,
            ks[ki].fit.max, ks[ki].caps, ks[ki].peak.median, ks[ki].idle.median, ks[ki].idle.p10,
            ks[ki].idle.p90, ks[ki].settle.median, ks[ki].settle.p90, ks[ki].timeouts,
            ks[ki].alloc.median, ks[ki].est);
  fclose(f);

  /* ---- guests_detail.csv ---- */
  f = bu_open_out(o.out, "guests_detail.csv");
  if (!f)
    return 2;
  bu_csv_machine(f, &mach, "exp_guests", a2);
  fprintf(f, "rep,kind,guest,fits,peak_rss_mib,sum_peak_mib,idle_rss_mib,sum_idle_mib,"
             "arena_resident_peak_mib,arena_resident_idle_mib,alloc_s,free_s,settle_s,"
             "settle_timeout,reported_mib,report_calls\n");
  for (int i = 0; i < nrows; i++) {
    const guest_row_t *r = &rows[i];
    fprintf(f, "%d,%s,%d,%d,%.1f,%.1f,", r->rep + 1, kinds[r->kind].name, r->guest, r->fits,
            r->peak_rss_mib, r->sum_peak_mib);
    if (r->fits)
      fprintf(f, "%.1f,%.1f,%.1f,%.1f,%.3f,%.3f,%.3f,%d,%.1f,%lu\n", r->idle_rss_mib,
              r->sum_idle_mib, r->res_peak_mib, r->res_idle_mib, r->alloc_s, r->free_s, r->settle_s,
              r->settle_timeout, r->reported_mib, (unsigned long)r->report_calls);
    else
      fprintf(f, ",,%.1f,,%.3f,,,,,\n", r->res_peak_mib, r->alloc_s);
  }
  fclose(f);

  /* ---- guests.json ---- */
  f = bu_open_out(o.out, "guests.json");
  if (!f)
    return 2;
  bu_json_head(f, "exp_guests", o.args, &mach, load0, load1, elapsed);
  fprintf(f,
          "  \"options\": {\"guest_size_bytes\": %lu, \"budget_bytes\": %lu, \"fill\": %.3f, "
          "\"max_guests\": %d, \"reps\": %d, \"settle_max_s\": %.1f, \"quick\": %s, "
          "\"clock\": \"thread\", \"report\": \"dontneed\", \"host_memory\": "
          "\"sum of the guests' Rss from /proc/PID/smaps_rollup\"},\n",
          (unsigned long)o.guest_bytes, (unsigned long)o.budget_bytes, o.fill, o.max_guests, o.reps,
          o.settle_max_s, o.quick ? "true" : "false");
  fprintf(f, "  \"published\": \"unmodified 2-3 guests, hinting 5-6 (15 GB host, 5 GB guests, "
             "4 GB memset)\",\n  \"kinds\": [\n");
  for (int ki = 0; ki < nk; ki++) {
    fprintf(f, "    {\"kind\": ");
    bu_json_str(f, kinds[ki].name);
    fprintf(f, ", \"options\": ");
    bu_json_str(f, kinds[ki].opts);
    fprintf(f, ", \"fit_per_rep\": [");
    for (int rep = 0; rep < o.reps; rep++)
      fprintf(f, "%s%d", rep ? ", " : "", kr[rep * nk + ki].fit);
    fprintf(f,
            "], \"cap_reached_reps\": %d, \"settle_timeouts\": %d, "
            "\"fit_uncapped_estimate\": %.0f,\n      ",
            ks[ki].caps, ks[ki].timeouts, ks[ki].est);
    bu_json_stats(f, "fit", &ks[ki].fit, 1);
    fprintf(f, ",\n      ");
    bu_json_stats(f, "peak_rss_mib", &ks[ki].peak, 1);
    fprintf(f, ",\n      ");
    bu_json_stats(f, "idle_rss_mib", &ks[ki].idle, 1);
    fprintf(f, ",\n      ");
    bu_json_stats(f, "settle_s", &ks[ki].settle, 1);
    fprintf(f, "}%s\n", ki + 1 < nk ? "," : "");
  }
  fprintf(f, "  ],\n  \"guests\": [\n");
  for (int i = 0; i < nrows; i++) {
    const guest_row_t *r = &rows[i];
    fprintf(f,
            "    {\"rep\": %d, \"kind\": \"%s\", \"guest\": %d, \"fits\": %s, "
            "\"peak_rss_mib\": %.1f, \"sum_peak_mib\": %.1f, \"idle_rss_mib\": ",
            r->rep + 1, kinds[r->kind].name, r->guest, r->fits ? "true" : "false", r->peak_rss_mib,
            r->sum_peak_mib);
    bu_json_num(f, r->fits ? r->idle_rss_mib : NAN);
    fprintf(f, ", \"sum_idle_mib\": ");
    bu_json_num(f, r->fits ? r->sum_idle_mib : NAN);
    fprintf(f,
            ", \"alloc_s\": %.3f, \"free_s\": %.3f, \"settle_s\": %.3f, \"settle_timeout\": "
            "%s, \"reported_mib\": %.1f, \"report_calls\": %lu}%s\n",
            r->alloc_s, r->free_s, r->settle_s, r->settle_timeout ? "true" : "false",
            r->reported_mib, (unsigned long)r->report_calls, i + 1 < nrows ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  fclose(f);
  printf("wrote %s/guests.csv, %s/guests_detail.csv and %s/guests.json\n", o.out, o.out, o.out);
  free(rows);
  free(kr);
  return failed ? 1 : 0;
}
