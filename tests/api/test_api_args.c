/*
 * The argument rule of the public API (stated at the top of include/buddyhint.h), as one
 * table over every entry point: a NULL handle or NULL required pointer is never dereferenced
 * (an error code is BH_EINVAL, a pointer or name NULL, a count 0, a pfn BH_PFN_NONE, a void
 * call does nothing), and out-of-range enums and counts are BH_EINVAL.
 *
 * Each row runs in a child process, so that a call that crashes fails its own row and the
 * table goes on.  The headers are read at the start: an entry point declared with BH_API that
 * has no row fails the test, so a new function gets its row.
 */
#include <buddyhint.h>
#include <buddyhint/gate.h>
#include <buddyhint/gen.h>
#include <buddyhint/machine.h>
#include <buddyhint/replay.h>
#include <buddyhint/report.h>
#include <buddyhint/strategy.h>
#include <buddyhint/trace.h>

#include <ctype.h>
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define MAX_NAMES 256

static const char *covered[MAX_NAMES];
static int ncovered, rows, failed;

static void cover(const char *fn) {
  for (int i = 0; i < ncovered; i++)
    if (!strcmp(covered[i], fn))
      return;
  if (ncovered < MAX_NAMES)
    covered[ncovered++] = fn;
}

static void row_result(const char *fn, const char *what, pid_t pid) {
  int st = 0;
  rows++;
  while (waitpid(pid, &st, 0) < 0)
    ;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
    return;
  failed++;
  if (WIFSIGNALED(st))
    printf("FAIL %s: %s: killed by signal %d (%s)\n", fn, what, WTERMSIG(st),
           strsignal(WTERMSIG(st)));
  else
    printf("FAIL %s: %s: wrong result (exit %d)\n", fn, what, WEXITSTATUS(st));
}

/* A crash in a row is the row's result: the test framework's own handlers are not wanted. */
static void child_signals(void) {
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
  for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
    signal(sigs[i], SIG_DFL);
}

/* ROW(function, what is passed, expression that must be true): evaluated in a child. */
#define ROW(fn, what, expr)                                                                        \
  do {                                                                                             \
    cover(fn);                                                                                     \
    fflush(NULL);                                                                                  \
    pid_t pid_ = fork();                                                                           \
    if (pid_ == 0) {                                                                               \
      child_signals();                                                                             \
      _exit((expr) ? 0 : 1);                                                                       \
    }                                                                                              \
    assert_true(pid_ > 0);                                                                         \
    row_result(fn, what, pid_);                                                                    \
  } while (0)

static void emit_nothing(void *ctx, const char *name, double v) {
  (void)ctx;
  (void)name;
  (void)v;
}
static int gen_emit(void *ctx, const bh_event_t *ev) {
  (void)ctx;
  (void)ev;
  return 0;
}
static int migrate_keep(void *ctx, uint64_t o, uint64_t n, unsigned order) {
  (void)ctx;
  (void)o;
  (void)n;
  (void)order;
  return 1;
}

static bool all_zero(const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    if (c[i])
      return false;
  return true;
}

/* A small arena, a zone of it, virtual-clock hinting, a trace, a writer and a stream. */
struct fixture {
  bh_arena_t *a;
  bh_zone_t *z;
  bh_hint_t *h;
  bh_trace_t *t;
  bh_trace_writer_t *w;
  FILE *f;
  char dir[64], trace[96], out[96];
};

static void setup(struct fixture *x) {
  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.backing = BH_BACKING_SIM;
  memset(cfg.zone_bytes, 0, sizeof(cfg.zone_bytes));
  cfg.zone_bytes[BH_ZONE_NORMAL] = 64ull << 20;
  assert_int_equal(bh_arena_create(&cfg, &x->a), 0);
  x->z = bh_arena_zone(x->a, 0);
  assert_non_null(x->z);
  assert_int_equal(bh_hint_attach(x->a, NULL, &x->h), 0);
  snprintf(x->dir, sizeof(x->dir), "/tmp/bh-api-args-XXXXXX");
  assert_non_null(mkdtemp(x->dir));
  snprintf(x->trace, sizeof(x->trace), "%s/t.txt", x->dir);
  snprintf(x->out, sizeof(x->out), "%s/out.txt", x->dir);
  FILE *f = fopen(x->trace, "w");
  assert_non_null(f);
  fputs("# buddyhint-trace 1\n1000 A 0x10 0\n2000 F 0x10 0\n", f);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(bh_trace_open(x->trace, NULL, &x->t), 0);
  assert_int_equal(bh_trace_writer_open(x->out, BH_TRACE_NATIVE_TEXT, 0, &x->w), 0);
  x->f = tmpfile();
  assert_non_null(x->f);
}

static void teardown(struct fixture *x) {
  bh_trace_writer_close(x->w);
  bh_trace_close(x->t);
  fclose(x->f);
  bh_hint_detach(x->h);
  bh_arena_destroy(x->a);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", x->dir);
  assert_int_equal(system(cmd), 0);
}

/* ---- the table ---- */

static void rows_core(struct fixture *x) {
  bh_arena_t *a = x->a;
  uint64_t pfn = 0, u = 0, stats[BH_NR_STATS];
  int err = 0;
  const char *msg = NULL;
  bh_config_t cfg;
  bh_zone_info_t zi;
  bh_compact_result_t cr;
  uint64_t kc_next;

  ROW("bh_strerror", "unknown code", bh_strerror(12345) != NULL);
  ROW("bh_err_name", "unknown code", !strcmp(bh_err_name(12345), "?"));
  ROW("bh_version", "-", bh_version() != NULL);
  ROW("bh_zone_name", "out of range", !strcmp(bh_zone_name(-1), "?"));
  ROW("bh_migratetype_name", "out of range", !strcmp(bh_migratetype_name(99), "?"));
  ROW("bh_gfp_zone", "any flags", bh_gfp_zone(~0u) >= 0);
  ROW("bh_gfp_migratetype", "any flags", bh_gfp_migratetype(~0u) >= 0);
  ROW("bh_config_init", "NULL", (bh_config_init(NULL), true));
  ROW("bh_config_validate", "NULL", bh_config_validate(NULL, &msg) == BH_EINVAL && msg);
  ROW("bh_config_validate", "zone sizes whose sum overflows", ({
        bh_config_init(&cfg);
        cfg.zone_bytes[0] = 1ull << 63;
        cfg.zone_bytes[1] = 1ull << 63;
        cfg.zone_bytes[2] = 4ull << 20;
        cfg.zone_bytes[3] = 0;
        bh_config_validate(&cfg, &msg) == BH_EINVAL &&msg;
      }));
  ROW("bh_arena_create", "NULL out", bh_arena_create(NULL, NULL) == BH_EINVAL);
  ROW("bh_arena_create", "zone sizes whose sum overflows", ({
        bh_arena_t *b = NULL;
        bh_config_init(&cfg);
        cfg.backing = BH_BACKING_SIM;
        cfg.zone_bytes[0] = 1ull << 63;
        cfg.zone_bytes[1] = 1ull << 63;
        cfg.zone_bytes[2] = 4ull << 20;
        bh_arena_create(&cfg, &b) == BH_EINVAL && !b;
      }));
  ROW("bh_arena_destroy", "NULL", (bh_arena_destroy(NULL), true));
  ROW("bh_arena_config", "NULL", bh_arena_config(NULL) == NULL);
  ROW("bh_arena_pages", "NULL", bh_arena_pages(NULL) == 0);
  ROW("bh_arena_base", "NULL", bh_arena_base(NULL) == NULL);
  ROW("bh_alloc_pfn", "NULL arena", bh_alloc_pfn(NULL, 0, 0, 0, &pfn) == BH_EINVAL);
  ROW("bh_alloc_pfn", "NULL pfn", bh_alloc_pfn(a, 0, 0, 0, NULL) == BH_EINVAL);
  ROW("bh_free_pfn", "NULL arena", bh_free_pfn(NULL, 0, 0, 0) == BH_EINVAL);
  ROW("bh_alloc_pages", "NULL arena", bh_alloc_pages(NULL, 0, 0, &err) == NULL && err == BH_EINVAL);
  ROW("bh_free_pages", "NULL arena", bh_free_pages(NULL, &u, 0) == BH_EINVAL);
  /* an address is a value, not a pointer the call reads: NULL is not in the arena */
  ROW("bh_free_pages", "NULL address", bh_free_pages(a, NULL, 0) == BH_EFAULT);
  ROW("bh_split_pages", "NULL arena", bh_split_pages(NULL, 0, 0) == BH_EINVAL);
  ROW("bh_pfn_to_addr", "NULL arena", bh_pfn_to_addr(NULL, 0) == NULL);
  ROW("bh_addr_to_pfn", "NULL arena", bh_addr_to_pfn(NULL, &u) == -1);
  ROW("bh_drain_pcp", "NULL", (bh_drain_pcp(NULL), true));
  ROW("bh_vmstat_tick", "NULL", (bh_vmstat_tick(NULL), true));
  ROW("bh_fragmentation_score", "NULL", bh_fragmentation_score(NULL, 0) == 0);
  ROW("bh_compact_memory", "NULL arena",
      bh_compact_memory(NULL, migrate_keep, NULL, &cr) == BH_EINVAL);
  ROW("bh_compact_memory", "NULL callback", bh_compact_memory(a, NULL, NULL, &cr) == BH_EINVAL);
  ROW("bh_compact_proactive", "NULL arena",
      bh_compact_proactive(NULL, 20, migrate_keep, NULL, &cr) == BH_EINVAL);
  ROW("bh_compact_proactive", "proactiveness 101",
      bh_compact_proactive(a, 101, migrate_keep, NULL, &cr) == BH_EINVAL);
  ROW("bh_compact_set_split", "NULL arena", bh_compact_set_split(NULL, NULL) == BH_EINVAL);
  ROW("bh_kcompactd_run", "NULL arena",
      bh_kcompactd_run(NULL, 20, 0, migrate_keep, NULL, &cr, &kc_next) == BH_EINVAL);
  ROW("bh_kcompactd_run", "NULL next",
      bh_kcompactd_run(a, 20, 0, migrate_keep, NULL, &cr, NULL) == BH_EINVAL);
  ROW("bh_kcompactd_run", "proactiveness 101",
      bh_kcompactd_run(a, 101, 0, migrate_keep, NULL, &cr, &kc_next) == BH_EINVAL);
  ROW("bh_stats_read", "NULL arena", ({
        memset(stats, 0xff, sizeof(stats));
        bh_stats_read(NULL, stats);
        all_zero(stats, sizeof(stats));
      }));
  ROW("bh_stats_read", "NULL out", (bh_stats_read(a, NULL), true));
  ROW("bh_stat_name", "out of range",
      bh_stat_name(-1) == NULL && bh_stat_name(BH_NR_STATS) == NULL);
  ROW("bh_stat_help", "out of range", bh_stat_help(-1) == NULL);
  ROW("bh_zone_count", "NULL", bh_zone_count(NULL) == 0);
  ROW("bh_zone_info", "NULL arena", bh_zone_info(NULL, 0, &zi) == BH_EINVAL);
  ROW("bh_zone_info", "NULL out", bh_zone_info(a, 0, NULL) == BH_EINVAL);
  ROW("bh_dump_buddyinfo", "NULL arena", bh_dump_buddyinfo(NULL, x->f) == BH_EINVAL);
  ROW("bh_dump_buddyinfo", "NULL stream", bh_dump_buddyinfo(a, NULL) == BH_EINVAL);
  ROW("bh_dump_pagetypeinfo", "NULL arena", bh_dump_pagetypeinfo(NULL, x->f) == BH_EINVAL);
  ROW("bh_dump_pagetypeinfo", "NULL stream", bh_dump_pagetypeinfo(a, NULL) == BH_EINVAL);
  ROW("bh_dump_zoneinfo", "NULL arena", bh_dump_zoneinfo(NULL, x->f) == BH_EINVAL);
  ROW("bh_dump_zoneinfo", "NULL stream", bh_dump_zoneinfo(a, NULL) == BH_EINVAL);
  ROW("bh_dump_vmstat", "NULL arena", bh_dump_vmstat(NULL, x->f) == BH_EINVAL);
  ROW("bh_dump_vmstat", "NULL stream", bh_dump_vmstat(a, NULL) == BH_EINVAL);
  ROW("bh_dump_stats_json", "NULL arena", bh_dump_stats_json(NULL, x->f) == BH_EINVAL);
  ROW("bh_dump_stats_json", "NULL stream", bh_dump_stats_json(a, NULL) == BH_EINVAL);
  ROW("bh_arena_check", "NULL arena", bh_arena_check(NULL, NULL, 0) == BH_EINVAL);
}

static void rows_report(struct fixture *x) {
  bh_report_mode_t m;
  uint64_t u;
  bh_procmem_t pm;
  (void)pm;
  ROW("bh_report_mode_name", "out of range",
      !strcmp(bh_report_mode_name((bh_report_mode_t)99), "?"));
  ROW("bh_report_mode_parse", "NULL name", bh_report_mode_parse(NULL, &m) == BH_EINVAL);
  ROW("bh_report_mode_parse", "NULL out", bh_report_mode_parse("none", NULL) == BH_EINVAL);
  ROW("bh_arena_resident", "NULL arena", bh_arena_resident(NULL, &u) == BH_EINVAL);
  ROW("bh_arena_resident", "NULL out", bh_arena_resident(x->a, NULL) == BH_EINVAL);
  ROW("bh_arena_resident_range", "NULL arena",
      bh_arena_resident_range(NULL, 0, 1, &u) == BH_EINVAL);
  ROW("bh_arena_resident_range", "NULL out",
      bh_arena_resident_range(x->a, 0, 1, NULL) == BH_EINVAL);
  ROW("bh_procmem_read", "NULL", bh_procmem_read(NULL) == BH_EINVAL);
}

static void rows_strategy(struct fixture *x) {
  bh_hint_t *h = x->h, *h2 = NULL;
  bh_zone_t *z = x->z;
  bh_hint_config_t hc;
  bh_hint_stats_t hs;
  bh_strategy_ops_t bad = {0};
  bh_opt_t o = {"k", "1"}, on = {"k", NULL};
  uint64_t u;
  bool b;
  unsigned order;
  int mt;
  bh_report_range_t rr = {0, 0};

  ROW("bh_strategy_register", "NULL", bh_strategy_register(NULL) == BH_EINVAL);
  ROW("bh_strategy_register", "no name", bh_strategy_register(&bad) == BH_EINVAL);
  ROW("bh_strategy_find", "NULL", bh_strategy_find(NULL) == NULL);
  ROW("bh_strategy_at", "out of range", bh_strategy_at(-1) == NULL && bh_strategy_at(9999) == NULL);
  ROW("bh_hint_config_init", "NULL", (bh_hint_config_init(NULL), true));
  ROW("bh_hint_attach", "NULL arena", bh_hint_attach(NULL, NULL, &h2) == BH_EINVAL);
  ROW("bh_hint_attach", "NULL out", ({
        bh_hint_detach(h);
        bh_hint_attach(x->a, NULL, NULL) == BH_EINVAL;
      }));
  ROW("bh_hint_attach", "clock 5", ({
        bh_hint_detach(h);
        bh_hint_config_init(&hc);
        hc.clock = (bh_clock_mode_t)5;
        bh_hint_attach(x->a, &hc, &h2) == BH_EINVAL;
      }));
  ROW("bh_hint_attach", "report mode 99", ({
        bh_hint_detach(h);
        bh_hint_config_init(&hc);
        hc.report = (bh_report_mode_t)99;
        bh_hint_attach(x->a, &hc, &h2) == BH_EINVAL;
      }));
  ROW("bh_hint_attach", "opts NULL, nopts 5", ({
        bh_hint_detach(h);
        bh_hint_config_init(&hc);
        hc.strategy = "bubble";
        hc.nopts = 5;
        bh_hint_attach(x->a, &hc, &h2) == BH_EINVAL;
      }));
  ROW("bh_hint_attach", "an option without a value", ({
        bh_hint_detach(h);
        bh_hint_config_init(&hc);
        hc.strategy = "bubble";
        bh_opt_t ov = {"order", NULL};
        hc.opts = &ov;
        hc.nopts = 1;
        bh_hint_attach(x->a, &hc, &h2) == BH_EINVAL;
      }));
  ROW("bh_hint_detach", "NULL", (bh_hint_detach(NULL), true));
  ROW("bh_hint_last_error", "-", bh_hint_last_error() != NULL);
  ROW("bh_hint_advance", "NULL", bh_hint_advance(NULL, 1) == BH_EINVAL);
  ROW("bh_hint_now", "NULL", bh_hint_now(NULL) == 0);
  ROW("bh_hint_next_due", "NULL", bh_hint_next_due(NULL) == BH_HINT_IDLE);
  ROW("bh_hint_stats", "NULL hint", ({
        memset(&hs, 0xff, sizeof(hs));
        bh_hint_stats(NULL, &hs);
        all_zero(&hs, sizeof(hs));
      }));
  ROW("bh_hint_stats", "NULL out", (bh_hint_stats(h, NULL), true));
  ROW("bh_hint_strategy_stats", "NULL hint",
      (bh_hint_strategy_stats(NULL, emit_nothing, NULL), true));
  ROW("bh_hint_strategy_stats", "NULL emit", (bh_hint_strategy_stats(h, NULL, NULL), true));
  ROW("bh_hint_strategy", "NULL", bh_hint_strategy(NULL) == NULL);
  ROW("bh_hint_report_mode", "NULL", bh_hint_report_mode(NULL) == BH_REPORT_NONE);
  ROW("bh_hint_arena", "NULL", bh_hint_arena(NULL) == NULL);
  ROW("bh_hint_registered_at_boot", "NULL", !bh_hint_registered_at_boot(NULL));
  ROW("bh_hint_set_orders", "NULL", (bh_hint_set_orders(NULL, 0, 0), true));
  ROW("bh_hint_request", "NULL", (bh_hint_request(NULL, 0), true));
  ROW("bh_hint_delay_due", "NULL", bh_hint_delay_due(NULL, 1) == 0);
  ROW("bh_hint_report", "NULL hint", bh_hint_report(NULL, &rr, 1) == BH_EINVAL);
  ROW("bh_hint_report", "NULL ranges", bh_hint_report(h, NULL, 1) == BH_EINVAL);
  ROW("bh_hint_set_error", "NULL", (bh_hint_set_error(NULL, "%s", "x"), true));
  ROW("bh_opt_u64", "NULL option", bh_opt_u64(NULL, 0, 9, &u) == BH_EINVAL);
  ROW("bh_opt_u64", "NULL out", bh_opt_u64(&o, 0, 9, NULL) == BH_EINVAL);
  ROW("bh_opt_u64", "NULL value", bh_opt_u64(&on, 0, 9, &u) == BH_EINVAL);
  ROW("bh_opt_bool", "NULL option", bh_opt_bool(NULL, &b) == BH_EINVAL);
  ROW("bh_opt_bool", "NULL out", bh_opt_bool(&o, NULL) == BH_EINVAL);
  ROW("bh_opt_duration", "NULL option", bh_opt_duration(NULL, &u) == BH_EINVAL);
  ROW("bh_opt_duration", "NULL out", bh_opt_duration(&o, NULL) == BH_EINVAL);
  ROW("bh_opt_size", "NULL option", bh_opt_size(NULL, &u) == BH_EINVAL);
  ROW("bh_opt_size", "NULL out", bh_opt_size(&o, NULL) == BH_EINVAL);
  ROW("bh_arena_zone", "NULL", bh_arena_zone(NULL, 0) == NULL);
  ROW("bh_zone_index", "NULL", bh_zone_index(NULL) == BH_EINVAL);
  ROW("bh_zone_start_pfn", "NULL", bh_zone_start_pfn(NULL) == BH_PFN_NONE);
  ROW("bh_zone_pages", "NULL", bh_zone_pages(NULL) == 0);
  ROW("bh_arena_max_order", "NULL", bh_arena_max_order(NULL) == 0);
  ROW("bh_arena_pageblock_order", "NULL", bh_arena_pageblock_order(NULL) == 0);
  ROW("bh_zone_lock", "NULL", (bh_zone_lock(NULL), true));
  ROW("bh_zone_unlock", "NULL", (bh_zone_unlock(NULL), true));
  ROW("bh_zone_nr_free", "NULL", bh_zone_nr_free(NULL, 0) == 0);
  ROW("bh_zone_free_block", "NULL", !bh_zone_free_block(NULL, 0, &order, &mt));
  ROW("bh_free_list_first", "NULL", bh_free_list_first(NULL, 0, 0) == BH_PFN_NONE);
  ROW("bh_free_list_first", "type out of range", bh_free_list_first(z, 0, 99) == BH_PFN_NONE);
  ROW("bh_free_list_next", "NULL", bh_free_list_next(NULL, 0, 0, 0) == BH_PFN_NONE);
  ROW("bh_free_list_next", "order and type out of range",
      bh_free_list_next(z, 99, 99, 0) == BH_PFN_NONE);
  ROW("bh_free_list_rotate", "NULL", (bh_free_list_rotate(NULL, 0, 0, 0), true));
  ROW("bh_free_list_rotate", "type out of range", (bh_free_list_rotate(z, 0, 99, 0), true));
  ROW("bh_block_reported", "NULL", !bh_block_reported(NULL, 0));
  ROW("bh_block_set_reported", "NULL", (bh_block_set_reported(NULL, 0), true));
  uint32_t mark = 7;
  ROW("bh_block_marked", "NULL zone", !bh_block_marked(NULL, 0, &mark) && mark == 7);
  ROW("bh_block_marked", "NULL value", (bh_block_marked(z, bh_zone_start_pfn(z), NULL), true));
  ROW("bh_block_marked", "pfn outside the zone", !bh_block_marked(z, UINT64_MAX, &mark));
  ROW("bh_block_set_mark", "NULL", bh_block_set_mark(NULL, 0, 1) == BH_EINVAL);
  ROW("bh_block_set_mark", "pfn outside the zone",
      bh_block_set_mark(z, UINT64_MAX, 1) == BH_EINVAL);
  ROW("bh_block_clear_mark", "NULL", (bh_block_clear_mark(NULL, 0), true));
  ROW("bh_block_clear_mark", "pfn outside the zone", (bh_block_clear_mark(z, UINT64_MAX), true));
  ROW("bh_zone_isolate", "NULL", bh_zone_isolate(NULL, 0, 0) == BH_EINVAL);
  ROW("bh_zone_putback", "NULL", bh_zone_putback(NULL, 0, 0, &b) == BH_EINVAL);
  ROW("bh_zone_release", "NULL", bh_zone_release(NULL, 0, 0, &b) == BH_EINVAL);
  ROW("bh_zone_release", "a pfn that is not isolated",
      bh_zone_release(z, bh_zone_start_pfn(z), 0, &b) == BH_EINVAL);
  ROW("bh_zone_type", "NULL", bh_zone_type(NULL) == BH_EINVAL);
  ROW("bh_zone_node", "NULL", bh_zone_node(NULL) == BH_EINVAL);
  ROW("bh_zone_low_wmark_ok", "NULL", !bh_zone_low_wmark_ok(NULL, 0));
}

static void rows_trace(struct fixture *x) {
  bh_trace_t *t = x->t, *t2;
  bh_trace_writer_t *w2;
  bh_event_t ev;
  bh_trace_counts_t c;
  uint32_t gfp;
  ROW("bh_gfp_parse", "NULL text", bh_gfp_parse(NULL, 3, &gfp) == BH_EINVAL);
  ROW("bh_gfp_parse", "NULL out", bh_gfp_parse("none", 4, NULL) == BH_EINVAL);
  ROW("bh_gfp_format", "NULL buffer", bh_gfp_format(0, NULL, 10) == BH_EINVAL);
  ROW("bh_trace_open", "NULL path", bh_trace_open(NULL, NULL, &t2) == BH_EINVAL);
  ROW("bh_trace_open", "NULL out", bh_trace_open(x->trace, NULL, NULL) == BH_EINVAL);
  ROW("bh_trace_next", "NULL trace", bh_trace_next(NULL, &ev) == BH_EINVAL);
  ROW("bh_trace_next", "NULL event", bh_trace_next(t, NULL) == BH_EINVAL);
  ROW("bh_trace_next_batch", "NULL trace", bh_trace_next_batch(NULL, &ev, 1) == BH_EINVAL);
  ROW("bh_trace_next_batch", "max 0", bh_trace_next_batch(t, &ev, 0) == BH_EINVAL);
  ROW("bh_trace_error", "NULL: the last open's message", bh_trace_error(NULL) != NULL);
  ROW("bh_trace_format", "NULL", bh_trace_format(NULL) == 0);
  ROW("bh_trace_format_name", "NULL", !strcmp(bh_trace_format_name(NULL), "unknown"));
  ROW("bh_trace_compression", "NULL", !strcmp(bh_trace_compression(NULL), "unknown"));
  ROW("bh_trace_counts", "NULL trace", ({
        memset(&c, 0xff, sizeof(c));
        bh_trace_counts(NULL, &c);
        all_zero(&c, sizeof(c));
      }));
  ROW("bh_trace_counts", "NULL out", (bh_trace_counts(t, NULL), true));
  ROW("bh_trace_close", "NULL", (bh_trace_close(NULL), true));
  ROW("bh_trace_writer_open", "NULL path",
      bh_trace_writer_open(NULL, BH_TRACE_NATIVE_TEXT, 0, &w2) == BH_EINVAL);
  ROW("bh_trace_writer_open", "NULL out",
      bh_trace_writer_open(x->out, BH_TRACE_NATIVE_TEXT, 0, NULL) == BH_EINVAL);
  ROW("bh_trace_writer_fdopen", "fd -1",
      bh_trace_writer_fdopen(-1, "x", BH_TRACE_NATIVE_TEXT, 0, &w2) == BH_EINVAL);
  ROW("bh_trace_writer_fdopen", "NULL out",
      bh_trace_writer_fdopen(1, "x", BH_TRACE_NATIVE_TEXT, 0, NULL) == BH_EINVAL);
  ROW("bh_trace_write", "NULL writer", bh_trace_write(NULL, &ev) == BH_EINVAL);
  ROW("bh_trace_write", "NULL event", bh_trace_write(x->w, NULL) == BH_EINVAL);
  ROW("bh_trace_writer_close", "NULL", bh_trace_writer_close(NULL) == 0);
  ROW("bh_trace_writer_abort", "NULL", (bh_trace_writer_abort(NULL), true));
  bh_trace_origin_t org;
  ROW("bh_trace_command", "NULL", bh_trace_command(NULL) == NULL);
  ROW("bh_trace_origin", "NULL trace", bh_trace_origin(NULL, 1, &org) == BH_EINVAL);
  ROW("bh_trace_origin", "NULL out", bh_trace_origin(t, 1, NULL) == BH_EINVAL);
  ROW("bh_trace_origin", "an id not given out", bh_trace_origin(t, 0, &org) == BH_ENOENT);
  size_t dlen = 1;
  ROW("bh_trace_version", "NULL", bh_trace_version(NULL) == 0);
  ROW("bh_trace_description", "NULL trace", bh_trace_description(NULL, &dlen) == NULL && !dlen);
  ROW("bh_trace_description", "NULL length", (bh_trace_description(t, NULL), true));
  ROW("bh_trace_writer_open2", "NULL path",
      bh_trace_writer_open2(NULL, BH_TRACE_NATIVE_TEXT, 0, NULL, &w2) == BH_EINVAL);
  ROW("bh_trace_writer_open2", "NULL out",
      bh_trace_writer_open2(x->out, BH_TRACE_NATIVE_TEXT, 0, NULL, NULL) == BH_EINVAL);
  ROW("bh_trace_writer_open2", "format out of range",
      bh_trace_writer_open2(x->out, 99, 0, NULL, &w2) == BH_EINVAL);
  ROW("bh_trace_writer_fdopen2", "fd -1",
      bh_trace_writer_fdopen2(-1, "x", BH_TRACE_NATIVE_TEXT, 0, NULL, &w2) == BH_EINVAL);
  ROW("bh_trace_writer_fdopen2", "NULL out",
      bh_trace_writer_fdopen2(1, NULL, BH_TRACE_NATIVE_TEXT, 0, NULL, NULL) == BH_EINVAL);
  ROW("bh_trace_writer_set_description", "NULL writer",
      bh_trace_writer_set_description(NULL, "x") == BH_EINVAL);
  ROW("bh_trace_writer_set_description", "a version 1 writer",
      bh_trace_writer_set_description(x->w, "x") == BH_EINVAL);
  ROW("bh_trace_writer_pcp_events", "NULL writer", bh_trace_writer_pcp_events(NULL) == BH_EINVAL);
  ROW("bh_trace_writer_pcp_events", "a version 1 writer",
      bh_trace_writer_pcp_events(x->w) == BH_EINVAL);
  ROW("bh_trace_write_lost", "NULL writer", bh_trace_write_lost(NULL, 0, 1, -1) == BH_EINVAL);
  ROW("bh_trace_write_lost", "a version 1 writer",
      bh_trace_write_lost(x->w, 0, 1, -1) == BH_EINVAL);
}

static void rows_machine(struct fixture *x) {
  bh_machine_t *m = bh_machine_new(), *m2;
  char err[128], *text;
  size_t len;
  bh_populate_t pop = {0};
  const char *why = NULL;
  ROW("bh_machine_new", "-", m != NULL);
  ROW("bh_machine_free", "NULL", (bh_machine_free(NULL), true));
  ROW("bh_machine_parse", "NULL text",
      bh_machine_parse(NULL, 0, &m2, err, sizeof(err)) == BH_EINVAL && m2 == NULL);
  ROW("bh_machine_parse", "NULL out",
      bh_machine_parse("x", 1, NULL, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_machine_parse", "NULL err", bh_machine_parse("x", 1, &m2, NULL, 0) != 0);
  ROW("bh_machine_format", "NULL machine", bh_machine_format(NULL, &text, &len) == BH_EINVAL);
  ROW("bh_machine_format", "NULL text", bh_machine_format(m, NULL, &len) == BH_EINVAL);
  ROW("bh_machine_read_snapshot", "NULL machine",
      bh_machine_read_snapshot(NULL, BH_SNAP_START, x->dir, 0, 0, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_machine_read_snapshot", "NULL dir",
      bh_machine_read_snapshot(m, BH_SNAP_START, NULL, 0, 0, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_machine_read_snapshot", "snapshot out of range",
      bh_machine_read_snapshot(m, 99, x->dir, 0, 0, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_machine_read_counts", "NULL machine",
      bh_machine_read_counts(NULL, BH_SNAP_START, x->dir, 0, 0, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_machine_read_counts", "snapshot out of range",
      bh_machine_read_counts(m, -1, x->dir, 0, 0, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_machine_read_counts_marked", "NULL machine",
      bh_machine_read_counts_marked(NULL, BH_SNAP_START, x->dir, 0, 0, NULL, NULL, err,
                                    sizeof(err)) == BH_EINVAL);
  ROW("bh_machine_read_counts_marked", "NULL dir",
      bh_machine_read_counts_marked(m, BH_SNAP_START, NULL, 0, 0, NULL, NULL, err, sizeof(err)) ==
          BH_EINVAL);
  ROW("bh_machine_read_freemap", "NULL machine",
      bh_machine_read_freemap(NULL, BH_SNAP_START, x->dir, NULL, NULL, err, sizeof(err)) ==
          BH_EINVAL);
  ROW("bh_machine_read_freemap", "no such snapshot",
      bh_machine_read_freemap(m, BH_SNAP_END, x->dir, NULL, NULL, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_machine_read_settings", "NULL", bh_machine_read_settings(NULL) == BH_EINVAL);
  ROW("bh_machine_set_window", "NULL", bh_machine_set_window(NULL, 0, 0, 1) == BH_EINVAL);
  ROW("bh_machine_set_window", "no such snapshot",
      bh_machine_set_window(m, BH_SNAP_START, 0, 1) == BH_EINVAL);
  ROW("bh_machine_info", "NULL", bh_machine_info(NULL) == NULL);
  ROW("bh_machine_snapshot", "NULL", bh_machine_snapshot(NULL, BH_SNAP_START) == NULL);
  ROW("bh_machine_snapshot", "out of range", bh_machine_snapshot(m, 99) == NULL);
  ROW("bh_machine_section", "NULL machine", bh_machine_section(NULL, "machine") == NULL);
  ROW("bh_machine_section", "NULL name", bh_machine_section(m, NULL) == NULL);
  ROW("bh_machine_set_section", "NULL machine", bh_machine_set_section(NULL, "x", "") == BH_EINVAL);
  ROW("bh_machine_set_section", "NULL name", bh_machine_set_section(m, NULL, "") == BH_EINVAL);
  ROW("bh_machine_set_section", "NULL text", bh_machine_set_section(m, "x", NULL) == BH_EINVAL);
  ROW("bh_machine_set_section", "a snapshot's file",
      bh_machine_set_section(m, "start/freemap", "") == BH_EINVAL);
  ROW("bh_machine_set_section", "two words", bh_machine_set_section(m, "a b", "") == BH_EINVAL);
  ROW("bh_machine_set_section", "one of one's own",
      bh_machine_set_section(m, "start/mine", "1 2") == 0 &&
          !strcmp(bh_machine_section(m, "start/mine"), "1 2\n"));
  ROW("bh_machine_drop_snapshot", "NULL", (bh_machine_drop_snapshot(NULL, 0), true));
  ROW("bh_machine_drop_snapshot", "out of range", (bh_machine_drop_snapshot(m, 99), true));
  ROW("bh_machine_copy_snapshot", "NULL destination",
      bh_machine_copy_snapshot(NULL, m, BH_SNAP_START, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_machine_copy_snapshot", "NULL source",
      bh_machine_copy_snapshot(m, NULL, BH_SNAP_START, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_machine_zone_of", "NULL", bh_machine_zone_of(NULL, 0) == -1);
  ROW("bh_machine_warnings", "NULL", bh_machine_warnings(NULL) == NULL);
  ROW("bh_arena_populate", "NULL arena", bh_arena_populate(NULL, &pop, &why) == BH_EINVAL && why);
  ROW("bh_arena_populate", "NULL state", bh_arena_populate(x->a, NULL, NULL) == BH_EINVAL);
  ROW("bh_arena_populate", "free blocks without their array", ({
        pop.nr_free = 1;
        bh_arena_populate(x->a, &pop, &why) == BH_EINVAL;
      }));
  ROW("bh_arena_adopt", "NULL", bh_arena_adopt(NULL, 0, 0) == BH_EINVAL);
  ROW("bh_arena_adopt", "order out of range", bh_arena_adopt(x->a, 0, 99) == BH_EINVAL);
  ROW("bh_alloc_pfn_at", "NULL", bh_alloc_pfn_at(NULL, 0, 0, 0, 0) == BH_EINVAL);
  ROW("bh_alloc_pfn_at", "order out of range", bh_alloc_pfn_at(x->a, 0, 99, 0, 0) == BH_EINVAL);
  bh_machine_free(m);
}

static void rows_gen_replay(struct fixture *x) {
  bh_replay_config_t rc;
  bh_replay_summary_t s;
  bh_config_t cfg;
  char err[64];
  memset(&s, 0, sizeof(s));
  ROW("bh_gen_workload_at", "out of range", bh_gen_workload_at(-1) == NULL);
  ROW("bh_gen_summary", "NULL", bh_gen_summary(NULL) == NULL);
  ROW("bh_gen_help", "NULL", bh_gen_help(NULL) == NULL);
  ROW("bh_gen_run", "NULL workload",
      bh_gen_run(NULL, NULL, 0, gen_emit, NULL, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_gen_run", "params NULL, nparams 3",
      bh_gen_run("memhog", NULL, 3, gen_emit, NULL, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_gen_write", "NULL writer",
      bh_gen_write("memhog", NULL, 0, NULL, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_replay_config_init", "NULL", (bh_replay_config_init(NULL), true));
  enum bh_replay_by by = BH_BY_PID;
  ROW("bh_replay_by_name", "out of range", bh_replay_by_name((enum bh_replay_by)99) != NULL);
  ROW("bh_replay_pcp_cause_name", "out of range",
      bh_replay_pcp_cause_name(-1) == NULL &&
          bh_replay_pcp_cause_name(BH_PCP_MISS_CAUSES) == NULL &&
          !strcmp(bh_replay_pcp_cause_name(BH_PCP_MISS_drain_free), "drain_free"));
  ROW("bh_replay_by_parse", "NULL name", bh_replay_by_parse(NULL, &by) == BH_EINVAL);
  ROW("bh_replay_by_parse", "NULL out", bh_replay_by_parse("pid", NULL) == BH_EINVAL);
  ROW("bh_replay_run", "NULL config", bh_replay_run(NULL, &s, err, sizeof(err)) == BH_EINVAL);
  ROW("bh_replay_run", "NULL summary", ({
        bh_replay_config_init(&rc);
        rc.trace = x->trace;
        bh_replay_run(&rc, NULL, err, sizeof(err)) == BH_EINVAL;
      }));
  ROW("bh_replay_run", "strategy options NULL, nopts 2", ({
        bh_replay_config_init(&rc);
        rc.trace = x->trace;
        rc.arena.backing = BH_BACKING_SIM;
        rc.hint.strategy = "bubble";
        rc.hint.nopts = 2;
        bh_replay_run(&rc, &s, err, sizeof(err)) == BH_EINVAL;
      }));
  ROW("bh_replay_zone_layout", "NULL", (bh_replay_zone_layout(NULL, 1ull << 30), true));
  ROW("bh_replay_zone_layout", "max_order out of range", ({
        bh_config_init(&cfg);
        cfg.max_order = 200;
        bh_replay_zone_layout(&cfg, 1ull << 30);
        true;
      }));
  ROW("bh_replay_summary_json", "NULL summary", bh_replay_summary_json(NULL, x->f, 0) == BH_EINVAL);
  ROW("bh_replay_summary_json", "NULL stream", bh_replay_summary_json(&s, NULL, 0) == BH_EINVAL);
}

static void rows_gate(void) {
  bh_gate_t g = {"refaults", 1, 10, 0};
  bh_gate_result_t r;
  bh_figure_t f[2];
  char buf[64];
  ROW("bh_gate_parse", "NULL spec", bh_gate_parse(NULL, &g, NULL, 0) == BH_EINVAL);
  ROW("bh_gate_parse", "NULL out", bh_gate_parse("refaults=+1%", NULL, NULL, 0) == BH_EINVAL);
  ROW("bh_gate_format", "NULL gate", bh_gate_format(NULL, buf, sizeof(buf)) == 0);
  ROW("bh_gate_format", "NULL buffer", bh_gate_format(&g, NULL, 8) == 0);
  ROW("bh_gate_defaults", "NULL out, max 4", bh_gate_defaults(NULL, 4, NULL, 0) == 0);
  ROW("bh_gate_deterministic", "NULL metric", !bh_gate_deterministic(NULL, "sim", 0));
  ROW("bh_gate_deterministic", "NULL backing", !bh_gate_deterministic("refaults", NULL, 0));
  ROW("bh_gate_check", "NULL gates", bh_gate_check(NULL, 1, f, 0, f, 0, &r) == BH_EINVAL);
  ROW("bh_gate_check", "NULL results", bh_gate_check(&g, 1, f, 0, f, 0, NULL) == BH_EINVAL);
  ROW("bh_gate_check", "NULL figures, count 2",
      bh_gate_check(&g, 1, NULL, 2, f, 0, &r) == BH_EINVAL);
  ROW("bh_gate_figures_json", "NULL text", bh_gate_figures_json(NULL, 2, f, 2) == BH_EINVAL);
  ROW("bh_gate_figures_json", "NULL out, max 2",
      bh_gate_figures_json("{}", 2, NULL, 2) == BH_EINVAL);
  ROW("bh_gate_summary_figures", "NULL summary", bh_gate_summary_figures(NULL, f, 2) == BH_EINVAL);
  ROW("bh_gate_summaries", "NULL summaries", bh_gate_summaries(&g, 1, NULL, NULL, &r) == BH_EINVAL);
  ROW("bh_gate_status_name", "out of range",
      !strcmp(bh_gate_status_name((enum bh_gate_status)99), "?"));
}

/* ---- every BH_API function has a row ---- */

static int check_header(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  char line[1024];
  int missing = 0;
  while (fgets(line, sizeof(line), f)) {
    const char *p = strstr(line, "BH_API ");
    if (p != line)
      continue;
    const char *paren = strchr(p, '(');
    if (!paren)
      continue;
    const char *e = paren, *s = e;
    while (s > p && (isalnum((unsigned char)s[-1]) || s[-1] == '_'))
      s--;
    char name[128];
    snprintf(name, sizeof(name), "%.*s", (int)(e - s), s);
    bool found = false;
    for (int i = 0; i < ncovered && !found; i++)
      found = !strcmp(covered[i], name);
    if (!found) {
      printf("FAIL %s (%s): no row in the table\n", name, path);
      missing++;
    }
  }
  fclose(f);
  return missing;
}

static void test_api_argument_rule(void **state) {
  (void)state;
  struct fixture x;
  memset(&x, 0, sizeof(x));
  setup(&x);
  rows_core(&x);
  rows_report(&x);
  rows_strategy(&x);
  rows_trace(&x);
  rows_machine(&x);
  rows_gen_replay(&x);
  rows_gate();
  teardown(&x);
  int missing = check_header(BH_SOURCE_DIR "/include/buddyhint.h");
  DIR *d = opendir(BH_SOURCE_DIR "/include/buddyhint");
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    char p[512];
    if (!strstr(e->d_name, ".h"))
      continue;
    snprintf(p, sizeof(p), "%s/include/buddyhint/%s", BH_SOURCE_DIR, e->d_name);
    missing += check_header(p);
  }
  closedir(d);
  printf("%d rows over %d entry points: %d failed, %d entry points without a row\n", rows, ncovered,
         failed, missing);
  assert_int_equal(failed, 0);
  assert_int_equal(missing, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_api_argument_rule)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
