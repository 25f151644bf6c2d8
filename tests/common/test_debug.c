/*
 * BH_ASSERT and BH_ASSERT_LOCKED (src/common/debug.h): in a build with assertions (Debug, or a
 * sanitizer build) a false condition aborts with the file, line and condition, and the core's
 * lock assertion fires on a caller that does not hold the zone lock; in Release and
 * RelWithDebInfo they compile away, the condition not even evaluated.  Each case runs in a
 * child process, whose end (exit or SIGABRT) and standard error are checked.
 */
#include "common/debug.h"

#include <buddyhint.h>
#include <buddyhint/strategy.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

typedef struct child {
  int status;     /* as waitpid gives it */
  char err[1024]; /* the child's standard error */
} child_t;

/* Runs fn in a child process with its standard error captured. */
static void run_child(void (*fn)(void), child_t *c) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    fn();
    _exit(0);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t r;
  while (n < sizeof(c->err) - 1 && (r = read(fds[0], c->err + n, sizeof(c->err) - 1 - n)) > 0)
    n += (size_t)r;
  c->err[n] = '\0';
  close(fds[0]);
  assert_int_equal(waitpid(pid, &c->status, 0), pid);
}

static void expect_abort(const child_t *c, const char *what) {
  assert_true(WIFSIGNALED(c->status));
  assert_int_equal(WTERMSIG(c->status), SIGABRT);
  if (!strstr(c->err, what))
    fail_msg("stderr \"%s\" does not name \"%s\"", c->err, what);
}

static void expect_exit0(const child_t *c) {
  if (!WIFEXITED(c->status) || WEXITSTATUS(c->status) != 0)
    fail_msg("the child did not exit 0 (status %#x, stderr \"%s\")", c->status, c->err);
}

static int evaluated;
static int count_evaluation(void) { return ++evaluated; }

static void false_assert(void) { BH_ASSERT(1 + 1 == 3); }

static void test_assert(void **state) {
  (void)state;
  child_t c;
  run_child(false_assert, &c);
  if (BH_ASSERTS_ON) {
    expect_abort(&c, "test_debug.c");
    expect_abort(&c, "false_assert: assertion `1 + 1 == 3' failed");
  } else {
    expect_exit0(&c);
  }
  evaluated = 0;
  BH_ASSERT(count_evaluation() > 0);
  assert_int_equal(evaluated, BH_ASSERTS_ON ? 1 : 0); /* compiled away: not evaluated */
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void locked_assert_held(void) {
  pthread_mutex_lock(&m);
  BH_ASSERT_LOCKED(&m);
  pthread_mutex_unlock(&m);
}
static void locked_assert_free(void) { BH_ASSERT_LOCKED(&m); }

static void test_assert_locked(void **state) {
  (void)state;
  child_t c;
  run_child(locked_assert_held, &c);
  expect_exit0(&c);
  run_child(locked_assert_free, &c);
  if (BH_ASSERTS_ON)
    expect_abort(&c, "assertion `bh__mutex_held(&m)' failed");
  else
    expect_exit0(&c);
}

/* A free block of the Normal zone, isolated with or without the zone lock. */
static bool take_lock;

static void isolate_block(void) {
  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.backing = BH_BACKING_SIM;
  cfg.pcp = false;
  bh_arena_t *a;
  if (bh_arena_create(&cfg, &a) != BH_OK)
    _exit(3);
  bh_zone_t *z = bh_arena_zone(a, bh_zone_count(a) - 1);
  unsigned order = bh_arena_max_order(a);
  bh_zone_lock(z);
  uint64_t pfn = bh_free_list_first(z, order, BH_MT_MOVABLE);
  if (!take_lock)
    bh_zone_unlock(z);
  int err = bh_zone_isolate(z, pfn, order);
  if (take_lock)
    bh_zone_unlock(z);
  bh_arena_destroy(a);
  _exit(err == BH_OK ? 0 : 4);
}

static void test_core_zone_lock(void **state) {
  (void)state;
  child_t c;
  take_lock = true;
  run_child(isolate_block, &c);
  expect_exit0(&c);
  take_lock = false;
  run_child(isolate_block, &c);
  if (BH_ASSERTS_ON)
    expect_abort(&c, "bh__isolate_free_page: assertion `bh__mutex_held(&z->lock)' failed");
  else
    expect_exit0(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_assert),
      cmocka_unit_test(test_assert_locked),
      cmocka_unit_test(test_core_zone_lock),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
