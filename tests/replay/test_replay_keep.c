/*
 * Two ways of reading a trace must not change a replay.
 *
 * The first pass over a text trace keeps its events for the second pass, in memory up to
 * bh_replay_config_t.keep_max_bytes and past that in a temporary file.  With keeping off, or
 * without room for one event, or when the file cannot be made, the second pass parses the
 * text again.  Binary records are read in place instead of through bh_trace_next_batch.
 *
 * So one generated trace is replayed several ways, each with bubble on the virtual clock:
 *   - as native text, with room for every event;
 *   - with room for part of them in memory (the rest goes to the temporary file);
 *   - the same with no place for the file (TMPDIR a file that is no folder): read again;
 *   - with room for none, and with keeping off;
 *   - from a FIFO, which cannot be read again: its events partly in the file;
 *   - gzip-compressed;
 *   - as native binary.
 * Every summary must be the same.  Only the trace's name and format, the wall-clock keys and
 * the header lines a text file has (skipped_lines) may differ.
 */
#include "trace/trace_test_util.h"

#include <buddyhint/gen.h>
#include <buddyhint/replay.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char dir[256];

static void write_trace(const char *path, int format, int comp) {
  bh_trace_writer_t *w;
  assert_int_equal(bh_trace_writer_open(path, format, comp, &w), 0);
  /* two runs of 128 MiB: 196,608 events, more than the first 65,536 kept events hold */
  const bh_opt_t params[] = {{"size", "128M"}, {"repeat", "2"}, {"duration", "2s"}};
  char err[256];
  assert_int_equal(bh_gen_write("memhog", params, 3, w, err, sizeof(err)), 0);
  assert_int_equal(bh_trace_writer_close(w), 0);
}

static int replay_rc(const char *path, uint64_t keep_max, bh_replay_summary_t *s, char *err,
                     size_t errlen) {
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = path;
  cfg.arena.backing = BH_BACKING_SIM;
  cfg.hint.strategy = "bubble";
  cfg.keep_max_bytes = keep_max;
  cfg.check_every = 50000;
  return bh_replay_run(&cfg, s, err, errlen);
}

/* The trace at src written into the FIFO at fifo by a child, while the parent replays it. */
static int replay_fifo(const char *src, const char *fifo, uint64_t keep_max, bh_replay_summary_t *s,
                       char *err, size_t errlen) {
  unlink(fifo);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int in = open(src, O_RDONLY), out = open(fifo, O_WRONLY);
    char buf[65536];
    ssize_t n;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
      if (write(out, buf, (size_t)n) != n)
        break; /* the reader is gone */
    _exit(0);
  }
  int rc = replay_rc(fifo, keep_max, s, err, errlen);
  int st;
  waitpid(pid, &st, 0);
  unlink(fifo);
  return rc;
}

static void replay(const char *path, uint64_t keep_max, bh_replay_summary_t *s) {
  bh_replay_config_t cfg;
  bh_replay_config_init(&cfg);
  cfg.trace = path;
  cfg.arena.backing = BH_BACKING_SIM;
  cfg.hint.strategy = "bubble";
  cfg.keep_max_bytes = keep_max;
  cfg.check_every = 50000;
  char err[512] = "";
  int rc = bh_replay_run(&cfg, s, err, sizeof(err));
  if (rc)
    fail_msg("replay %s: %s", path, err);
  assert_int_equal(s->check_violations, 0);
}

/* Everything but the wall clock, the trace's name and format, and (text vs binary) the
 * header lines. */
static void assert_same(const bh_replay_summary_t *a, const bh_replay_summary_t *b,
                        bool same_format) {
  assert_int_equal(a->events, b->events);
  assert_int_equal(a->allocs, b->allocs);
  assert_int_equal(a->frees, b->frees);
  assert_int_equal(a->alloc_failures, b->alloc_failures);
  assert_int_equal(a->unknown_frees, b->unknown_frees);
  assert_int_equal(a->batched_dups, b->batched_dups);
  assert_int_equal(a->lost_frees, b->lost_frees);
  assert_int_equal(a->malformed_lines, b->malformed_lines);
  if (same_format)
    assert_int_equal(a->skipped_lines, b->skipped_lines);
  assert_int_equal(a->memory_bytes, b->memory_bytes);
  assert_int_equal(a->nr_cpus, b->nr_cpus);
  assert_true(a->virtual_seconds == b->virtual_seconds);
  assert_int_equal(a->rss_peak_bytes, b->rss_peak_bytes);
  assert_int_equal(a->rss_final_bytes, b->rss_final_bytes);
  assert_int_equal(a->live_peak_bytes, b->live_peak_bytes);
  assert_int_equal(a->live_final_bytes, b->live_final_bytes);
  assert_int_equal(a->reported_bytes, b->reported_bytes);
  assert_int_equal(a->madvise_calls, b->madvise_calls);
  assert_int_equal(a->refaults, b->refaults);
  assert_memory_equal(a->arena_stats, b->arena_stats, sizeof(a->arena_stats));
  assert_int_equal(a->nr_strategy_stats, b->nr_strategy_stats);
  for (int i = 0; i < a->nr_strategy_stats; i++) {
    const char *name = a->strategy_stat_names[i];
    size_t n = strlen(name);
    assert_string_equal(name, b->strategy_stat_names[i]);
    if (n > 3 && !strcmp(name + n - 3, "_ns"))
      continue; /* time measured on the wall clock */
    assert_true(a->strategy_stats[i] == b->strategy_stats[i]);
  }
}

static void test_keep_or_not_same_replay(void **state) {
  (void)state;
  char txt[320], gz[320], bin[320];
  snprintf(txt, sizeof(txt), "%s/memhog.txt", dir);
  snprintf(gz, sizeof(gz), "%s/memhog.txt.gz", dir);
  snprintf(bin, sizeof(bin), "%s/memhog.bht", dir);
  write_trace(txt, BH_TRACE_NATIVE_TEXT, BH_TRACE_COMP_NONE);
  write_trace(gz, BH_TRACE_NATIVE_TEXT, BH_TRACE_COMP_GZIP);
  write_trace(bin, BH_TRACE_NATIVE_BINARY, BH_TRACE_COMP_NONE);

  static bh_replay_summary_t all, part, nofile, none, off, fifo, zipped, binary;
  replay(txt, 128ull << 20, &all);
  assert_int_equal(all.events, 196608);
  assert_true(all.reported_bytes > 0); /* bubble had something to do */
  replay(txt, 3ull << 20, &part);      /* 65,536 events fit, 131,072 go to the file */
  char *tmpdir = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
  setenv("TMPDIR", txt, 1); /* a file: no temporary file can be made in it */
  replay(txt, 3ull << 20, &nofile);
  char fpath[320], err[512] = "";
  snprintf(fpath, sizeof(fpath), "%s/fifo", dir);
  /* a FIFO without a file for its events: cannot be replayed, and says how it could */
  assert_int_equal(replay_fifo(txt, fpath, 3ull << 20, &fifo, err, sizeof(err)), BH_EINVAL);
  assert_non_null(strstr(err, "cannot be read twice"));
  assert_non_null(strstr(err, "give --memory and --cpus"));
  if (tmpdir)
    setenv("TMPDIR", tmpdir, 1);
  else
    unsetenv("TMPDIR");
  free(tmpdir);
  assert_int_equal(replay_fifo(txt, fpath, 3ull << 20, &fifo, err, sizeof(err)), 0);
  replay(txt, 1, &none);
  replay(txt, 0, &off);
  replay(gz, 128ull << 20, &zipped);
  replay(bin, 128ull << 20, &binary);
  assert_same(&all, &part, true);
  assert_same(&all, &nofile, true);
  assert_same(&all, &fifo, true);
  assert_same(&all, &none, true);
  assert_same(&all, &off, true);
  assert_same(&all, &zipped, true);
  assert_same(&all, &binary, false);
  assert_string_equal(all.trace_format, "native-text");
  assert_string_equal(zipped.trace_format, "native-text+gzip");
  assert_string_equal(binary.trace_format, "native-binary");
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof(dir), "/tmp/bh-test-keep-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  const char *names[] = {"memhog.txt", "memhog.txt.gz", "memhog.bht"};
  char p[320];
  for (size_t i = 0; i < 3; i++) {
    snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_keep_or_not_same_replay),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
