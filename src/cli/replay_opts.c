/* The options that replay, compare and check share, mapped onto bh_replay_config_t. */
#include "cli/replay_opts.h"

#include "cli/baseline.h"

#include <stdlib.h>
#include <string.h>

const char bh_cli_table_help[] =
    "the table's columns (the JSON key in brackets; memory in MiB):\n"
    "  rss_peak, rss_final   resident memory of the arena, highest and at the end\n"
    "                        [rss_peak_bytes, rss_final_bytes]: mincore in mmap or memfd\n"
    "                        backing; in sim, the pages written and not discarded since\n"
    "  live_end              memory the trace holds allocated at the end [live_final_bytes]\n"
    "  reported              memory the strategy reported, all of it: resident memory, free\n"
    "                        memory the trace never wrote (a recorded machine's free memory)\n"
    "                        and pages reported again after a refault [reported_bytes]\n"
    "  returned              of it, the resident memory the reports took back: pages\n"
    "                        written and not yet discarded when reported [returned_bytes]\n"
    "  madvises              madvise or fallocate calls made, 0 in sim backing\n"
    "                        [madvise_calls]\n"
    "  refaults              reported pages allocated again, which a host faults back in\n"
    "                        [refaults]\n"
    "  failed                allocations the arena could not serve [alloc_failures]\n"
    "  wall_s, cpu_s         the run's wall-clock and CPU seconds (not deterministic)\n"
    "  check                 invariant violations found [check_violations]\n"
    "  fidelity              against the end snapshot: the share of free memory in the\n"
    "                        wrong order at the end [fidelity.free_order_error]; \"-\"\n"
    "                        without an end snapshot\n"
    "  high_ord              the error in free memory of pageblock order and above,\n"
    "                        predicted against recorded [fidelity.high_order_error]\n";

const char bh_cli_timeline_help[] =
    "the timeline's columns (--timeline), one row per --sample of virtual time:\n"
    "  run                   the run's label (compare only)\n"
    "  time_s                virtual seconds since the trace's first event\n"
    "  live_bytes            memory the trace holds allocated\n"
    "  resident_bytes        resident memory of the arena, measured as rss_*\n"
    "  discarded_bytes       memory reported and not allocated since\n"
    "  free_pages            pages on the free lists, as NR_FREE_PAGES (not those on pcp\n"
    "                        lists or isolated for a report)\n"
    "  free_o0 .. free_oN    free blocks of each order, N the arena's largest order\n";

const char bh_cli_replay_help[] =
    "  --strategy NAME       hinting strategy: none, bitmap, bubble or a registered one;\n"
    "                        NAME:KEY=VALUE[:KEY=VALUE...] with options (bubble:order=3)\n"
    "  --opt KEY=VALUE       strategy option (repeatable), also NAME.KEY=VALUE as compare\n"
    "                        takes it; 'buddyhint info' lists them\n"
    "  --backing KIND        mmap (real memory, default), memfd, or sim (metadata only)\n"
    "  --madvise KIND        how reports discard: dontneed (default), free, punch, none\n"
    "  --memory SIZE         arena size, e.g. 2G (default: peak live memory + 25% + 64M);\n"
    "                        in a machine's shape, at least its size lets a shape whose page\n"
    "                        metadata passes 2 GiB (or half this machine's memory) run\n"
    "  --cpus N              pcp slots (default: the CPUs seen in the trace)\n"
    "  --idle SECONDS        virtual idle time after the last event (default 60)\n"
    "  --touch KIND          page (default), none or full: how allocated pages are written\n"
    "  --speed X             replay against the wall clock, X times faster than recorded\n"
    "  --realtime            the same as --speed 1\n"
    "  --sample SECONDS      timeline sample interval in virtual time (default 1, >= 0.001)\n"
    "  --timeline FILE       write CSV samples over virtual time\n"
    "  --json FILE           write the summary as JSON ('-' for stdout)\n"
    "  --lenient             skip malformed trace lines (counted) instead of failing\n"
    "  --strict              events the trace lost, and every warning (no frees in the\n"
    "                        trace, over 2 % of its events lost, a file of a --start or\n"
    "                        --end folder not read), are an error, exit status 2 (default:\n"
    "                        counted, and the warnings printed and in the JSON)\n"
    "  --no-pcp              disable per-CPU page lists\n"
    "  --no-grouping         disable grouping pages by mobility\n"
    "  --shuffle             shuffle top-order frees (page_alloc.shuffle)\n"
    "  --seed N              seed for the shuffle (default 1)\n"
    "  --min-free-kbytes N   as vm.min_free_kbytes (default: Linux's formula)\n"
    "  --cpu-data-slice SIZE each CPU's share of its last-level cache (default 2M; 0: none):\n"
    "                        above 3 * batch pages a pcp keeps batch pages through a burst\n"
    "                        of order 1..3 frees (PCPF_FREE_HIGH_BATCH, Linux 6.8+)\n"
    "  --max-order N         MAX_PAGE_ORDER (default 10)\n"
    "  --compaction-proactiveness N\n"
    "                        as vm.compaction_proactiveness, 0..100 (default 20, Linux's;\n"
    "                        0: no compaction)\n"
    "  --compact-order0-only compaction moves order-0 pages only, as before Linux 6.9\n"
    "  --compact-skip-unsplit\n"
    "                        a block above order 0 without a compaction target stays and\n"
    "                        the batch goes on (not Linux's: its failed split ends the run)\n"
    "  --check-every N       run the invariant checker every N events\n"
    "  --layout KIND         auto (default: the recorded machine's if the trace has a\n"
    "                        description), trace (the machine's, or an error) or default\n"
    "  --start-state KIND    auto (default: kpageflags, else counts, else empty), kpageflags\n"
    "                        (the start snapshot's free map), counts (matching its buddyinfo\n"
    "                        and pagetypeinfo and the trace), empty (every managed page free)\n"
    "  --placement KIND      allocator (default: the arena chooses) or trace (each allocation\n"
    "                        takes the recorded block itself, if it is free)\n"
    "  --start-order KIND    trace (default: what the trace shows of the start: the pcp and\n"
    "                        buddy lists in the order its first allocations take them, and\n"
    "                        pageblock types where its frees and allocations show them) or\n"
    "                        pfn (lists in pfn order, the free map's types: no inference)\n"
    "  --start-pcp KIND      zoneinfo (default: each CPU's pcp lists hold as many pages as\n"
    "                        the start zoneinfo counts, the trace's and as many more from\n"
    "                        memory no event touches) or trace (only what the trace shows)\n"
    "  --start-reported KIND snapshot (default: the free blocks the start snapshot marks\n"
    "                        reported start reported) or all (every free block at or above\n"
    "                        the reporting order starts reported, as on a machine whose\n"
    "                        reporting ran since boot: a counterfactual from a recording\n"
    "                        made with reporting off)\n"
    "  --untraced-allocs KIND late, ignore, infer or lists: a free of memory the replay\n"
    "                        holds free (alloc_pages_bulk took it without an event) takes\n"
    "                        the block right before the free and frees it (late; a block\n"
    "                        the pcp lists' order shows gone earlier stays allocated from\n"
    "                        its first free), is dropped (ignore), or every block the trace\n"
    "                        frees twice with nothing allocated between stays allocated from\n"
    "                        its first free (infer; the other such frees late); lists: late,\n"
    "                        and pages the lists' order shows taken unseen (a fork's kernel\n"
    "                        stack) are allocated where it shows them gone, for a recording\n"
    "                        made without record's alloc_pages_bulk probes.  Default: lists\n"
    "                        where the recording says it had no probes, else late\n"
    "  --pcp-high KIND       auto (default: the recorded kernel's rule), tuned (Linux 6.7+:\n"
    "                        each pcp's high mark moves between high_min and high_max) or\n"
    "                        fixed (before 6.7: one mark, zone_highsize)\n"
    "  --pcp-free-high KIND  auto (default: the recorded kernel's rule), raised (Linux\n"
    "                        6.16+: a CPU freeing orders 1-3 drains at once from\n"
    "                        free_count batch + high_min / 2) or batch (before 6.16)\n"
    "  --pcp-decay KIND      vmstat (default: where the trace has the vmstat worker's runs,\n"
    "                        record --pcp-events, each CPU's pcp decay at its runs, as the\n"
    "                        kernel's deferrable work, which an idle CPU does not run) or\n"
    "                        tick (every CPU every second)\n"
    "  --pcp-refill KIND     event (default: where the trace has the refill events, record\n"
    "                        --pcp-events, an empty pcp list is refilled there, before the\n"
    "                        allocation's own event, which the kernel traces after zeroing\n"
    "                        the pages) or alloc (at the allocation's event)\n"
    "  --pass-timer KIND     wheel (default where the machine's hz is known and the trace\n"
    "                        has the vmstat worker's runs: delayed work, page reporting's\n"
    "                        2 s, fires on the recorded kernel's timer wheel's ticks) or\n"
    "                        exact (when due)\n"
    "  --kernel-hz N         the recorded kernel's CONFIG_HZ, for a machine description\n"
    "                        without one (recorded before it was kept)\n"
    "  --start DIR           the start snapshot from a directory of /proc files (buddyinfo,\n"
    "                        pagetypeinfo, zoneinfo, optionally kpageflags; each may be\n"
    "                        NAME.txt and gzip or zstd compressed, NAME.gz, NAME.zst; a file\n"
    "                        there that is not read is a warning); the layout is its\n"
    "                        zoneinfo's\n"
    "  --end DIR             the end snapshot from such a directory (for fidelity)\n"
    "  --dump DIR            at the end of the trace, write the arena's buddyinfo,\n"
    "                        pagetypeinfo, zoneinfo and vmstat to DIR (never over a file)\n"
    "  --by pid|comm|callsite\n"
    "                        attribute resident memory and refaults to the trace's\n"
    "                        processes or call sites (perf record -g); a table after the\n"
    "                        summary, \"by\" in the JSON\n"
    "  --by-top N            rows of that table (default 10, at most 32; the rest is one)\n"
    "  --quiet               no progress line\n";

static int set_enum(const char *verb, const char *opt, const char *v, const char *const *names,
                    int n, int *out) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v, names[i]))
      return *out = i, 0;
  bh_cli_usage_error(verb, "--%s: unknown value '%s'", opt, v);
  return -1;
}

static int num(const char *verb, const char *opt, const char *v, uint64_t min, uint64_t max,
               uint64_t *out) {
  if (bh_cli_parse_u64(v, min, max, out)) {
    bh_cli_usage_error(verb, "--%s: '%s' is not a whole number in %llu..%llu", opt, v,
                       (unsigned long long)min, (unsigned long long)max);
    return -1;
  }
  return 0;
}

void bh_cli_replay_init(bh_cli_replay_t *c) {
  memset(c, 0, sizeof(*c));
  bh_replay_config_init(&c->cfg);
  c->cfg.progress = true;
}

static int add_opt(const char *verb, bh_cli_replay_t *c, const char *kv) {
  const char *eq = strchr(kv, '=');
  if (!eq || eq == kv || c->nopts == BH_CLI_MAX_OPTS) {
    bh_cli_usage_error(verb, "--opt wants KEY=VALUE, got '%s'", kv);
    return -1;
  }
  size_t k = (size_t)(eq - kv);
  char *key = malloc(k + 1);
  if (!key)
    return -1;
  memcpy(key, kv, k);
  key[k] = 0;
  c->opts[c->nopts].key = key;
  c->opts[c->nopts].value = eq + 1;
  c->nopts++;
  return 0;
}

/* The flags (options without a value): 1 when argv[*i] is one of them, else 0. */
static int flag_opt(const char *a, bh_replay_config_t *cfg) {
  if (!strcmp(a, "--realtime")) {
    cfg->speed = 1;
  } else if (!strcmp(a, "--lenient")) {
    cfg->lenient = true;
  } else if (!strcmp(a, "--strict")) {
    cfg->strict = true;
  } else if (!strcmp(a, "--no-pcp")) {
    cfg->arena.pcp = false;
  } else if (!strcmp(a, "--compact-order0-only")) {
    cfg->arena.compact_large_blocks = false;
  } else if (!strcmp(a, "--compact-skip-unsplit")) {
    cfg->arena.compact_skip_unsplit = true;
  } else if (!strcmp(a, "--no-grouping")) {
    cfg->arena.mobility_grouping = false;
  } else if (!strcmp(a, "--shuffle")) {
    cfg->arena.shuffle = true;
  } else if (!strcmp(a, "--quiet")) {
    cfg->progress = false;
  } else {
    return 0;
  }
  return 1;
}

/* The options of a run: the strategy and its options, time, outputs, attribution, checks. 1 when
 * argv[*i] is one of them (consumed), 0 when not, -1 after a usage error. */
static int run_opt(int argc, char **argv, int *i, bh_cli_replay_t *c) {
  const char *verb = argv[0], *v;
  bh_replay_config_t *cfg = &c->cfg;
  uint64_t x;
  int r;
#define OPT(name) ((r = bh_cli_opt(argc, argv, i, name, &v)) != 0)
  if (OPT("strategy")) {
    if (r < 0)
      return -1;
    cfg->hint.strategy = v;
    return 1;
  } else if (OPT("opt")) {
    return r < 0 || add_opt(verb, c, v) ? -1 : 1;
  } else if (OPT("idle")) {
    if (r < 0 || bh_cli_parse_seconds(v, &cfg->idle_ns)) {
      if (r >= 0)
        bh_cli_usage_error(verb, "--idle: '%s' is not a duration (seconds, or with s, ms, us, ns)",
                           v);
      return -1;
    }
    if (cfg->idle_ns > BH_REPLAY_MAX_IDLE_NS) {
      bh_cli_usage_error(verb, "--idle: at most %llu seconds",
                         BH_REPLAY_MAX_IDLE_NS / BH_NS_PER_SEC);
      return -1;
    }
    return 1;
  } else if (OPT("sample")) {
    if (r < 0 || bh_cli_parse_seconds(v, &cfg->sample_ns) || cfg->sample_ns < 1000000) {
      if (r >= 0)
        bh_cli_usage_error(verb, "--sample: '%s' is not a duration of at least 1ms", v);
      return -1;
    }
    return 1;
  } else if (OPT("speed")) {
    if (r < 0)
      return -1;
    /* the wall clock's sleeps are virtual time / speed: a tiny factor would overflow them */
    if (bh_cli_parse_double(v, BH_CLI_SPEED_MIN, BH_CLI_SPEED_MAX, &cfg->speed)) {
      bh_cli_usage_error(verb, "--speed: '%s' is not a factor in %g..%g", v, BH_CLI_SPEED_MIN,
                         BH_CLI_SPEED_MAX);
      return -1;
    }
    return 1;
  } else if (OPT("timeline")) {
    if (r < 0)
      return -1;
    c->timeline_path = v;
    return 1;
  } else if (OPT("json")) {
    if (r < 0)
      return -1;
    c->json_path = v;
    return 1;
  } else if (OPT("by")) {
    enum bh_replay_by by;
    if (r < 0)
      return -1;
    if (bh_replay_by_parse(v, &by) || by == BH_BY_NONE) {
      bh_cli_usage_error(verb, "--by: unknown value '%s' (pid, comm or callsite)", v);
      return -1;
    }
    cfg->by = by;
    return 1;
  } else if (OPT("by-top")) {
    if (r < 0 || num(verb, "by-top", v, 1, BH_REPLAY_MAX_BY, &x))
      return -1;
    cfg->by_top = (unsigned)x;
    return 1;
  } else if (OPT("check-every")) {
    if (r < 0 || num(verb, "check-every", v, 0, UINT64_MAX, &cfg->check_every))
      return -1;
    return 1;
  }
#undef OPT
  return 0;
}

/* The arena's options: its backing and size, its CPUs, the allocator's settings. 1 when argv[*i] is
 * one of them (consumed), 0 when not, -1 after a usage error. */
static int arena_opt(int argc, char **argv, int *i, bh_cli_replay_t *c) {
  static const char *const backings[] = {"mmap", "memfd", "sim"};
  static const char *const touches[] = {"page", "none", "full"};
  const char *verb = argv[0], *v;
  bh_replay_config_t *cfg = &c->cfg;
  uint64_t x;
  int r, e;
#define OPT(name) ((r = bh_cli_opt(argc, argv, i, name, &v)) != 0)
  if (OPT("backing")) {
    if (r < 0 || set_enum(verb, "backing", v, backings, 3, &e))
      return -1;
    cfg->arena.backing = (enum bh_backing)e;
    c->backing_set = true;
    return 1;
  } else if (OPT("madvise")) {
    bh_report_mode_t m;
    if (r < 0)
      return -1;
    if (bh_report_mode_parse(v, &m)) {
      bh_cli_usage_error(verb, "--madvise: unknown value '%s'", v);
      return -1;
    }
    cfg->hint.report = m;
    return 1;
  } else if (OPT("memory")) {
    if (r < 0 || bh_cli_parse_size(v, &cfg->memory_bytes) || !cfg->memory_bytes) {
      if (r >= 0)
        bh_cli_usage_error(verb, "--memory: bad size '%s' (bytes, or with K, M, G, T)", v);
      return -1;
    }
    return 1;
  } else if (OPT("cpus")) {
    if (r < 0 || num(verb, "cpus", v, 1, 1024, &x))
      return -1;
    cfg->arena.nr_cpus = (unsigned)x;
    return 1;
  } else if (OPT("touch")) {
    if (r < 0 || set_enum(verb, "touch", v, touches, 3, &e))
      return -1;
    cfg->touch = (enum bh_touch)e;
    return 1;
  } else if (OPT("seed")) {
    if (r < 0 || num(verb, "seed", v, 0, UINT64_MAX, &cfg->arena.seed))
      return -1;
    return 1;
  } else if (OPT("cpu-data-slice")) {
    if (r < 0 || bh_cli_parse_size(v, &cfg->arena.cpu_data_slice_bytes)) {
      if (r >= 0)
        bh_cli_usage_error(verb, "--cpu-data-slice: bad size '%s' (bytes, or with K, M, G)", v);
      return -1;
    }
    return 1;
  } else if (OPT("min-free-kbytes")) {
    if (r < 0 || num(verb, "min-free-kbytes", v, 0, 64ull << 20, &cfg->arena.min_free_kbytes))
      return -1;
    return 1;
  } else if (OPT("compaction-proactiveness")) {
    if (r < 0 || num(verb, "compaction-proactiveness", v, 0, 100, &x))
      return -1;
    cfg->compaction_proactiveness = (unsigned)x;
    return 1;
  } else if (OPT("max-order")) {
    if (r < 0 || num(verb, "max-order", v, 1, BH_ORDER_LIMIT, &x))
      return -1;
    cfg->arena.max_order = (unsigned)x;
    if (cfg->arena.pageblock_order > x)
      cfg->arena.pageblock_order = (unsigned)x;
    return 1;
  }
#undef OPT
  return 0;
}

/* The options of a replay in a recorded machine's shape. 1 when argv[*i] is one of them (consumed),
 * 0 when not, -1 after a usage error. */
static int shape_opt(int argc, char **argv, int *i, bh_cli_replay_t *c) {
  static const char *const layouts[] = {"auto", "trace", "default"};
  static const char *const starts[] = {"auto", "kpageflags", "counts", "empty"};
  static const char *const placements[] = {"allocator", "trace"};
  static const char *const pcp_highs[] = {"fixed", "tuned", "auto"};
  static const char *const free_highs[] = {"batch", "raised", "auto"};
  static const char *const start_orders[] = {"trace", "pfn"};
  const char *verb = argv[0], *v;
  bh_replay_config_t *cfg = &c->cfg;
  int r, e;
  uint64_t x;
#define OPT(name) ((r = bh_cli_opt(argc, argv, i, name, &v)) != 0)
  if (OPT("layout")) {
    if (r < 0 || set_enum(verb, "layout", v, layouts, 3, &e))
      return -1;
    cfg->layout = (enum bh_layout_mode)e;
    return 1;
  } else if (OPT("start-state")) {
    if (r < 0 || set_enum(verb, "start-state", v, starts, 4, &e))
      return -1;
    cfg->start = (enum bh_start_state)e;
    return 1;
  } else if (OPT("placement")) {
    if (r < 0 || set_enum(verb, "placement", v, placements, 2, &e))
      return -1;
    cfg->placement = (enum bh_placement)e;
    return 1;
  } else if (OPT("start-order")) {
    if (r < 0 || set_enum(verb, "start-order", v, start_orders, 2, &e))
      return -1;
    cfg->start_order_pfn = e == 1;
    return 1;
  } else if (OPT("start-pcp")) {
    static const char *const start_pcp[] = {"zoneinfo", "trace"};
    if (r < 0 || set_enum(verb, "start-pcp", v, start_pcp, 2, &e))
      return -1;
    cfg->start_pcp_trace = e == 1;
    return 1;
  } else if (OPT("start-reported")) {
    static const char *const start_reported[] = {"snapshot", "all"};
    if (r < 0 || set_enum(verb, "start-reported", v, start_reported, 2, &e))
      return -1;
    cfg->start_reported_all = e == 1;
    return 1;
  } else if (OPT("untraced-allocs")) {
    static const char *const untraced[] = {"late", "ignore", "infer", "lists"};
    if (r < 0 || set_enum(verb, "untraced-allocs", v, untraced, 4, &e))
      return -1;
    cfg->untraced_infer = e == 2;
    cfg->untraced_ignore = e == 1;
    cfg->untraced_lists = e == 3;
    cfg->untraced_late = e == 0;
    return 1;
  } else if (OPT("pcp-decay")) {
    static const char *const decays[] = {"vmstat", "tick"};
    if (r < 0 || set_enum(verb, "pcp-decay", v, decays, 2, &e))
      return -1;
    cfg->pcp_decay_tick = e == 1;
    return 1;
  } else if (OPT("pcp-refill")) {
    static const char *const refills[] = {"event", "alloc"};
    if (r < 0 || set_enum(verb, "pcp-refill", v, refills, 2, &e))
      return -1;
    cfg->pcp_refill_alloc = e == 1;
    return 1;
  } else if (OPT("pass-timer")) {
    static const char *const timers[] = {"wheel", "exact"};
    if (r < 0 || set_enum(verb, "pass-timer", v, timers, 2, &e))
      return -1;
    cfg->pass_timer_exact = e == 1;
    return 1;
  } else if (OPT("kernel-hz")) {
    if (r < 0 || num(verb, "kernel-hz", v, 1, 100000, &x))
      return -1;
    cfg->kernel_hz = (unsigned)x;
    return 1;
  } else if (OPT("pcp-high")) {
    if (r < 0 || set_enum(verb, "pcp-high", v, pcp_highs, 3, &e))
      return -1;
    cfg->pcp_high_tuning = e == 2 ? -1 : e;
    return 1;
  } else if (OPT("pcp-free-high")) {
    if (r < 0 || set_enum(verb, "pcp-free-high", v, free_highs, 3, &e))
      return -1;
    cfg->pcp_free_high_raised = e == 2 ? -1 : e;
    return 1;
  } else if (OPT("start")) {
    if (r < 0)
      return -1;
    cfg->start_dir = v;
    return 1;
  } else if (OPT("end")) {
    if (r < 0)
      return -1;
    cfg->end_dir = v;
    return 1;
  } else if (OPT("dump")) {
    if (r < 0)
      return -1;
    cfg->dump_dir = v;
    return 1;
  }
#undef OPT
  return 0;
}

/* One option at argv[*i]: 1 consumed, 0 not ours, -1 usage error. */
int bh_cli_replay_opt(int argc, char **argv, int *i, bh_cli_replay_t *c) {
  if (flag_opt(argv[*i], &c->cfg)) {
    (*i)++;
    return 1;
  }
  int r = run_opt(argc, argv, i, c);
  if (!r)
    r = arena_opt(argc, argv, i, c);
  if (!r)
    r = shape_opt(argc, argv, i, c);
  return r;
}

void bh_cli_replay_free(bh_cli_replay_t *c) {
  for (size_t i = 0; i < c->nopts; i++)
    free((void *)c->opts[i].key);
  c->nopts = 0;
  free(c->strategy_buf);
  c->strategy_buf = NULL;
}

/* --opt NAME.KEY=VALUE with NAME the strategy: the key without "NAME."; another strategy's
 * name is an error. */
static int strip_opt_prefix(const char *verb, bh_cli_replay_t *c, const char *name) {
  size_t len = strlen(name);
  for (size_t i = 0; i < c->nopts; i++) {
    char *key = (char *)c->opts[i].key, *dot = strchr(key, '.');
    if (!dot)
      continue;
    if ((size_t)(dot - key) == len && !strncmp(key, name, len)) {
      memmove(key, dot + 1, strlen(dot + 1) + 1);
      continue;
    }
    *dot = '\0';
    bool other = bh_strategy_find(key) != NULL;
    *dot = '.';
    if (other) {
      bh_cli_usage_error(verb, "--opt %s=%s: the strategy is '%s'", key, c->opts[i].value, name);
      return -1;
    }
  }
  return 0;
}

int bh_cli_one_strategy(const char *verb, bh_cli_replay_t *c) {
  const char *given = c->cfg.hint.strategy;
  if (!given || bh_cli_is_baseline(given))
    return strip_opt_prefix(verb, c, given ? given : "none");
  if (!strchr(given, ':'))
    return strip_opt_prefix(verb, c, given);
  char *buf = c->strategy_buf = strdup(given), *save = NULL;
  char *name = buf && buf[0] != ':' ? strtok_r(buf, ":", &save) : NULL;
  if (!name) {
    bh_cli_usage_error(verb, "--strategy: no name in '%s'", given);
    return -1;
  }
  c->cfg.hint.strategy = name;
  if (strip_opt_prefix(verb, c, name))
    return -1;
  for (char *kv = strtok_r(NULL, ":", &save); kv; kv = strtok_r(NULL, ":", &save)) {
    if (!strchr(kv, '=') || kv[0] == '=') {
      bh_cli_usage_error(verb, "--strategy: '%s' in '%s' is not KEY=VALUE", kv, given);
      return -1;
    }
    if (add_opt(verb, c, kv))
      return -1;
  }
  return 0;
}

/* Finishes the config: strategy options, sim's report mode. */
void bh_cli_replay_finish(bh_cli_replay_t *c) {
  c->cfg.hint.opts = c->opts;
  c->cfg.hint.nopts = c->nopts;
  if (c->cfg.arena.backing == BH_BACKING_SIM)
    c->cfg.hint.report = BH_REPORT_NONE;
}

int bh_cli_replay_check(const char *verb, const bh_cli_replay_t *c) {
  const bh_replay_config_t *cfg = &c->cfg;
  if (c->json_path && c->timeline_path && !strcmp(c->json_path, "-") &&
      !strcmp(c->timeline_path, "-")) {
    bh_cli_usage_error(verb, "--json - and --timeline -: only one output can be standard output");
    return -1;
  }
  uint64_t block = BH_PAGE_SIZE << cfg->arena.max_order;
  uint64_t max = ((uint64_t)UINT32_MAX - 1000000) * BH_PAGE_SIZE / block * block;
  if (cfg->memory_bytes && (cfg->memory_bytes < block || cfg->memory_bytes > max)) {
    bh_cli_usage_error(verb,
                       "--memory: %llu bytes is not in %llu KiB..%llu GiB (from one block of "
                       "the largest order, 4 KiB << --max-order, to 2^32 pages)",
                       (unsigned long long)cfg->memory_bytes, (unsigned long long)(block >> 10),
                       (unsigned long long)(max >> 30));
    return -1;
  }
  enum bh_backing b = cfg->arena.backing;
  if (cfg->hint.report == BH_REPORT_PUNCH && b != BH_BACKING_MEMFD && b != BH_BACKING_SIM) {
    bh_cli_usage_error(verb, "--madvise punch needs --backing memfd (holes are punched in a "
                             "file; the mmap backing has none)");
    return -1;
  }
  if (cfg->hint.report == BH_REPORT_FREE && b == BH_BACKING_MEMFD) {
    bh_cli_usage_error(verb, "--madvise free needs --backing mmap (MADV_FREE works on private "
                             "memory only)");
    return -1;
  }
  return 0;
}

int bh_cli_check_strategy(const char *verb, const bh_cli_replay_t *c, const char *label,
                          const char *name, const bh_opt_t *opts, size_t nopts) {
  if (!bh_strategy_find(name)) {
    bh_cli_usage_error(verb, "unknown strategy '%s' ('buddyhint info' lists them)", name);
    return -1;
  }
  bh_config_t ac = c->cfg.arena;
  ac.backing = BH_BACKING_SIM; /* metadata only: the options are what is checked */
  ac.smp = false;
  ac.numa_bind = false;
  if (!ac.nr_cpus)
    ac.nr_cpus = 1;
  bh_replay_zone_layout(&ac, (BH_PAGE_SIZE << ac.max_order) * 4);
  bh_arena_t *a = NULL;
  if (bh_arena_create(&ac, &a))
    return 0; /* the replay itself will say what is wrong with the arena */
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = name;
  hc.opts = opts;
  hc.nopts = nopts;
  hc.report = BH_REPORT_NONE;
  bh_hint_t *h = NULL;
  int err = bh_hint_attach(a, &hc, &h);
  bh_hint_detach(h);
  bh_arena_destroy(a);
  if (err) {
    bh_cli_usage_error(verb, "strategy '%s': %s", label,
                       bh_hint_last_error()[0] ? bh_hint_last_error() : bh_strerror(err));
    return -1;
  }
  return 0;
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

void bh_cli_warn_lost(const char *verb, const bh_replay_summary_t *s) {
  double share = (double)s->lost_events / (double)(s->events + s->lost_events + !s->events);
  if (s->lost_events && share <= BH_REPLAY_LOST_WARN_SHARE) /* above: one of the warnings */
    fprintf(stderr,
            "buddyhint %s: warning: %s lost %lu events while it was recorded; the replay "
            "misses them (--strict makes this an error)\n",
            verb, s->trace, (unsigned long)s->lost_events);
}

void bh_cli_print_warnings(FILE *f, const bh_replay_summary_t *runs, int n) {
  int dropped = 0;
  for (int i = 0; i < n; i++) {
    const bh_replay_summary_t *s = &runs[i];
    if (s->nr_warnings_dropped > dropped)
      dropped = s->nr_warnings_dropped;
    for (int k = 0; k < s->nr_warnings; k++) {
      bool seen = false; /* the trace's warnings are every run's: printed once */
      for (int j = 0; j < i && !seen; j++)
        for (int l = 0; l < runs[j].nr_warnings && !seen; l++)
          seen = !strcmp(runs[j].warnings[l], s->warnings[k]);
      if (!seen)
        fprintf(f, "warning: %s\n", s->warnings[k]);
    }
  }
  if (dropped)
    fprintf(f, "warning: %d more warnings\n", dropped);
}

/* The --by table: one row per process or call site, heaviest resident memory first. */
static void print_by(FILE *f, const bh_replay_summary_t *s) {
  fprintf(f, "by %-27s %8s %11s %10s %12s %9s\n", bh_replay_by_name(s->by), "allocs", "alloc MiB",
          "live MiB", "resident MiB", "refaults");
  for (int i = 0; i < s->nr_by_rows; i++) {
    const bh_replay_by_row_t *r = &s->by_rows[i];
    fprintf(f, "   %-27.27s %8lu %11.1f %10.1f %12.1f %9lu\n", r->key, (unsigned long)r->allocs,
            mib(r->alloc_bytes), mib(r->live_bytes), mib(r->resident_bytes),
            (unsigned long)r->refaults);
  }
}

void bh_cli_print_summary(FILE *f, const bh_replay_summary_t *s) {
  fprintf(f, "trace        %s (%s)\n", s->trace, s->trace_format);
  if (s->trace_command[0])
    fprintf(f, "read through %s\n", s->trace_command);
  fprintf(f, "strategy     %s, %s backing, reports by %s\n", s->strategy, s->backing,
          s->report_mode);
  fprintf(f, "arena        %.0f MiB, %lu cpus\n", mib(s->memory_bytes), (unsigned long)s->nr_cpus);
  fprintf(f, "events       %lu: %lu allocs, %lu frees, %lu alloc failures, %lu unknown frees\n",
          (unsigned long)s->events, (unsigned long)s->allocs, (unsigned long)s->frees,
          (unsigned long)s->alloc_failures, (unsigned long)s->unknown_frees);
  fprintf(f,
          "             %lu other lines, %lu malformed, %lu failed in the trace, %lu split, "
          "%lu too large, %lu lost frees, %lu batched repeats\n",
          (unsigned long)s->skipped_lines, (unsigned long)s->malformed_lines,
          (unsigned long)s->trace_failed_allocs, (unsigned long)s->split_frees,
          (unsigned long)s->orders_too_large, (unsigned long)s->lost_frees,
          (unsigned long)s->batched_dups);
  if (s->lost_events)
    fprintf(f, "             %lu events lost by the recording\n", (unsigned long)s->lost_events);
  fprintf(f, "time         %.3f s virtual, %.3f s wall, %.3f s cpu", s->virtual_seconds,
          s->wall_seconds, s->cpu_seconds);
  if (s->gaps_shortened)
    fprintf(f, "; %lu gaps over %llu s cut to that", (unsigned long)s->gaps_shortened,
            BH_REPLAY_MAX_GAP_NS / BH_NS_PER_SEC);
  if (s->time_reversals)
    fprintf(f, "; %lu events timestamped before an earlier one", (unsigned long)s->time_reversals);
  fprintf(f, "\n");
  fprintf(f, "live         %.1f MiB peak, %.1f MiB at the end\n", mib(s->live_peak_bytes),
          mib(s->live_final_bytes));
  fprintf(f, "resident     %.1f MiB peak, %.1f MiB at the end\n", mib(s->rss_peak_bytes),
          mib(s->rss_final_bytes));
  fprintf(f,
          "reported     %.1f MiB in %lu calls, %.1f MiB of it resident and returned, %lu pages "
          "refaulted\n",
          mib(s->reported_bytes), (unsigned long)s->madvise_calls, mib(s->returned_bytes),
          (unsigned long)s->refaults);
  if (s->arena_stats[BH_STAT_compact_runs])
    fprintf(f, "compaction   %lu zone runs, %.1f MiB moved, %lu pages kept in place\n",
            (unsigned long)s->arena_stats[BH_STAT_compact_runs],
            mib(s->arena_stats[BH_STAT_pgmigrate_success] << BH_PAGE_SHIFT),
            (unsigned long)s->arena_stats[BH_STAT_pgmigrate_fail]);
  if (s->layout[0]) {
    fprintf(f, "machine      %s layout, %s start, %s placement", s->layout, s->start_state,
            s->placement);
    if (!strcmp(s->reporting_order_source, "recorded"))
      fprintf(f, ", reporting at order %d as recorded", s->reporting_order);
    if (s->pretrace_frees || s->start_conflicts || s->placement_conflicts)
      fprintf(f,
              "; %lu frees of memory allocated before the trace, %lu start conflicts, %lu "
              "placement conflicts",
              (unsigned long)s->pretrace_frees, (unsigned long)s->start_conflicts,
              (unsigned long)s->placement_conflicts);
    fprintf(f, "\n");
  }
  if (s->pcp_events_applied || s->pcp_events_missed || s->pcp_events_direct) {
    fprintf(f,
            "pcp events   %lu applied (%lu refills moved from a pcp list, %lu drains of memory "
            "the start held allocated), %lu missed",
            (unsigned long)s->pcp_events_applied, (unsigned long)s->pcp_refills_relisted,
            (unsigned long)s->pcp_drains_adopted, (unsigned long)s->pcp_events_missed);
    const char *sep = ": ";
    for (int c = 0; c < BH_PCP_MISS_CAUSES; c++)
      if (s->pcp_missed_by_cause[c]) {
        fprintf(f, "%s%lu %s", sep, (unsigned long)s->pcp_missed_by_cause[c],
                bh_replay_pcp_cause_name(c));
        sep = ", ";
      }
    fprintf(f, "\n");
  }
  if (s->extfrag_events_applied || s->extfrag_events_missed || s->extfrag_events_ignored)
    fprintf(f,
            "fallbacks    %lu applied (%lu claims retyping %lu pageblocks, %lu blocks to a pcp "
            "list), %lu missed, %lu ignored\n",
            (unsigned long)s->extfrag_events_applied, (unsigned long)s->extfrag_claims_applied,
            (unsigned long)s->extfrag_pageblocks_retyped, (unsigned long)s->extfrag_refills,
            (unsigned long)s->extfrag_events_missed, (unsigned long)s->extfrag_events_ignored);
  if (s->agreement.present)
    fprintf(f, "agreement    %.1f %% of %lu allocations took the kernel's pfn\n",
            s->agreement.allocs ? 100.0 * (double)s->agreement.same / (double)s->agreement.allocs
                                : 0.0,
            (unsigned long)s->agreement.allocs);
  if (s->drains.present) {
    const bh_replay_drains_t *d = &s->drains;
    fprintf(f, "pcp drains   %lu of %lu of the kernel's alike (the replay drained at %lu moments)",
            (unsigned long)d->same, (unsigned long)d->kernel, (unsigned long)d->replay);
    if (d->first_time_s >= 0)
      fprintf(f, "; first apart at %.6f s, cpu %d: %lu pages drained, %lu by the replay",
              d->first_time_s, d->first_cpu, (unsigned long)d->first_kernel_pages,
              (unsigned long)d->first_replay_pages);
    fprintf(f, "\n");
  }
  if (s->fidelity.present)
    fprintf(f,
            "fidelity     %.1f %% of free memory in the wrong order; order >= %u: %.1f MiB "
            "predicted, %.1f MiB recorded (%+.1f %%); pageblocks of the wrong type %.1f %%\n",
            100.0 * s->fidelity.free_order_error, s->fidelity.pageblock_order,
            mib(s->fidelity.predicted_high_order_pages << BH_PAGE_SHIFT),
            mib(s->fidelity.recorded_high_order_pages << BH_PAGE_SHIFT),
            100.0 * s->fidelity.high_order_error, 100.0 * s->fidelity.pageblock_error);
  fprintf(f, "check        %ld violations\n", s->check_violations);
  if (s->by)
    print_by(f, s);
}

/* The outputs bh_cli_open_out opened, by their stream. */
#define MAX_OUTS 8
static struct {
  FILE *f;
  bh_cli_out_t *o;
} outs[MAX_OUTS];

int bh_cli_open_out(const char *verb, const char *path, FILE **f) {
  *f = NULL;
  if (!path)
    return BH_EXIT_OK;
  int slot = 0;
  while (slot < MAX_OUTS && outs[slot].o)
    slot++;
  if (slot == MAX_OUTS)
    return bh_cli_usage_error(verb, "too many output files");
  bh_cli_out_t *o;
  int rc = bh_cli_out_open(verb, path, &o);
  if (rc)
    return rc;
  if (!(*f = bh_cli_out_stream(o))) {
    fprintf(stderr, "buddyhint %s: out of memory\n", verb);
    bh_cli_out_abort(o);
    return BH_EXIT_FAIL;
  }
  outs[slot].f = *f;
  outs[slot].o = o;
  return BH_EXIT_OK;
}

/* Takes the output of stream f out of the table (NULL if f is none of them). */
static bh_cli_out_t *take_out(FILE *f) {
  for (int i = 0; f && i < MAX_OUTS; i++)
    if (outs[i].o && outs[i].f == f) {
      bh_cli_out_t *o = outs[i].o;
      outs[i].o = NULL;
      outs[i].f = NULL;
      return o;
    }
  return NULL;
}

int bh_cli_close_out(FILE *f) { return bh_cli_out_close(take_out(f)); }

void bh_cli_abort_out(FILE *f) { bh_cli_out_abort(take_out(f)); }

int bh_cli_replay_args(int argc, char **argv, bh_cli_replay_t *c, const char **trace,
                       int (*extra)(int argc, char **argv, int *i, void *ctx), void *ctx,
                       void (*help)(FILE *)) {
  const char *verb = argv[0];
  *trace = NULL;
  for (int i = 1; i < argc;) {
    if (bh_cli_is_help(argv[i])) {
      help(stdout);
      return 1;
    }
    int r = extra ? extra(argc, argv, &i, ctx) : 0;
    if (!r)
      r = bh_cli_replay_opt(argc, argv, &i, c);
    if (r < 0)
      return -1;
    if (r)
      continue;
    if (argv[i][0] == '-' && argv[i][1]) {
      bh_cli_usage_error(verb, "unknown option '%s'", argv[i]);
      return -1;
    }
    if (*trace) {
      bh_cli_usage_error(verb, "one trace at a time (got '%s' and '%s')", *trace, argv[i]);
      return -1;
    }
    *trace = argv[i++];
  }
  if (!*trace) {
    bh_cli_usage_error(verb, "no trace given");
    return -1;
  }
  return 0;
}
