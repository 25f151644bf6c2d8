/*
 * bh_arena_destroy() with hinting still attached on a BH_CLOCK_THREAD worker: the worker is
 * stopped and joined before the arena goes (it used to keep ticking the freed arena, a heap
 * use-after-free).  For each built-in strategy: the worker thread (named bh-hint-worker) is
 * gone right after the destroy, and nothing touches the arena afterwards (AddressSanitizer and
 * ThreadSanitizer watch the wait that follows).
 */
#include <buddyhint.h>
#include <buddyhint/strategy.h>

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

/* How many of the process's threads are called name (/proc/self/task/TID/comm). */
static int threads_named(const char *name) {
  DIR *d = opendir("/proc/self/task");
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char p[300], comm[64] = "";
    snprintf(p, sizeof(p), "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(p, "r");
    if (f && fgets(comm, sizeof(comm), f))
      comm[strcspn(comm, "\n")] = 0;
    if (f)
      fclose(f);
    n += !strcmp(comm, name);
  }
  closedir(d);
  return n;
}

#define WORKER "bh-hint-worker" /* the name the library gives its worker thread */

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

static void destroy_attached(const char *strategy, const char *key, const char *value) {
  assert_int_equal(threads_named(WORKER), 0);
  bh_config_t cfg;
  bh_config_init(&cfg);
  memset(cfg.zone_bytes, 0, sizeof(cfg.zone_bytes));
  cfg.zone_bytes[BH_ZONE_NORMAL] = 64ull << 20;
  bh_arena_t *a = NULL;
  assert_int_equal(bh_arena_create(&cfg, &a), 0);
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = strategy;
  bh_opt_t o = {key, value};
  hc.opts = key ? &o : NULL;
  hc.nopts = key ? 1 : 0;
  hc.clock = BH_CLOCK_THREAD;
  bh_hint_t *h = NULL;
  assert_int_equal(bh_hint_attach(a, &hc, &h), 0);
  assert_int_equal(threads_named(WORKER), 1);
  /* work for the worker: blocks of the reporting order freed */
  uint64_t pfn[16];
  for (int i = 0; i < 16; i++)
    assert_int_equal(bh_alloc_pfn(a, BH_GFP_USER_MOVABLE, 9, 0, &pfn[i]), 0);
  for (int i = 0; i < 16; i++)
    assert_int_equal(bh_free_pfn(a, pfn[i], 9, 0), 0);
  sleep_ms(20);
  bh_arena_destroy(a); /* no bh_hint_detach(h): the destroy does it */
  printf("%s: %d worker thread(s) after the destroy\n", strategy, threads_named(WORKER));
  assert_int_equal(threads_named(WORKER), 0);
  sleep_ms(1200); /* a worker left behind would run its once-a-second tick on the arena */
}

static void test_destroy_with_thread_worker(void **state) {
  (void)state;
  destroy_attached("bubble", "delay", "1ms");
  destroy_attached("bitmap", NULL, NULL);
  destroy_attached("none", NULL, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_destroy_with_thread_worker)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
