/*
 * The sweep unit (src/cli/sweep/sweep.c, sweep_table.c): a spec's expansion into jobs, the
 * stability of job ids, the checks that reject a bad spec with its line, the manifest of a sweep
 * folder, the state of a job, and the merged table.  Traces are the sample traces of traces/.
 */
#include "cli/sweep/sweep.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <buddyhint.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BASE BH_SOURCE_DIR

static char captured[8192];

/* Expands text (traces relative to the source tree); stderr goes to `captured`. */
static int expand(const char *text, bh_sweep_t **s) {
  char path[] = "/tmp/bh-test-sweep-err-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  int r = bh_sweep_from_text(text, strlen(text), "spec.yaml", BASE, s);
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  ssize_t n = pread(fd, captured, sizeof(captured) - 1, 0);
  captured[n > 0 ? n : 0] = 0;
  close(fd);
  unlink(path);
  return r;
}

static const char *coord(const bh_sweep_t *s, const bh_sweep_job_t *j, const char *col) {
  int c = bh_sweep_col(s, col);
  assert_true(c >= 0);
  return j->coords[c];
}

static bool has_arg(const bh_sweep_job_t *j, const char *a) {
  for (size_t i = 0; i < j->nargs; i++)
    if (!strcmp(j->args[i], a))
      return true;
  return false;
}

static const char grid[] =
    "traces: [traces/gen-memhog-256M.bht.zst, \"traces/real-th*-256M.bht.zst\"]\n"
    "strategies: [none, \"bubble:order=3\", bubble: {order: [6, 9], delay: [1s, 2s]}]\n"
    "options:\n"
    "  backing: sim\n"
    "  compaction-proactiveness: [0, 20, 100]\n"
    "  shuffle: [true, false]\n"
    "seeds: [1, 2]\n";

/* 2 traces x (1 + 1 + 2*2) variants x 3 x 2 x 2 seeds, columns in the documented order. */
static void test_expand_grid(void **state) {
  bh_sweep_t *s;
  assert_int_equal(expand(grid, &s), 0);
  assert_int_equal(s->njobs, 2 * 6 * 3 * 2 * 2);
  const char *cols[] = {"trace",
                        "strategy",
                        "strategy_name",
                        "bubble.order",
                        "bubble.delay",
                        "backing",
                        "compaction-proactiveness",
                        "shuffle",
                        "seed"};
  assert_int_equal(s->ncols, 9);
  for (size_t i = 0; i < 9; i++)
    assert_string_equal(s->cols[i], cols[i]);
  /* the first job: first trace, none, first value of every axis, seed 1 */
  const bh_sweep_job_t *j = &s->jobs[0];
  assert_string_equal(coord(s, j, "trace"), "traces/gen-memhog-256M.bht.zst");
  assert_string_equal(coord(s, j, "strategy"), "none");
  assert_null(coord(s, j, "bubble.order"));
  assert_string_equal(coord(s, j, "compaction-proactiveness"), "0");
  assert_string_equal(coord(s, j, "shuffle"), "true");
  assert_string_equal(coord(s, j, "seed"), "1");
  assert_true(has_arg(j, "--strategy=none"));
  assert_true(has_arg(j, "--shuffle"));
  assert_true(has_arg(j, "--backing=sim"));
  assert_true(has_arg(j, "--seed=1"));
  assert_true(j->trace[0] == '/');
  /* the seed varies fastest, then the last option */
  assert_string_equal(coord(s, &s->jobs[1], "seed"), "2");
  assert_string_equal(coord(s, &s->jobs[2], "shuffle"), "false");
  assert_false(has_arg(&s->jobs[2], "--shuffle"));
  /* a grid variant: label in the spec's order, options passed with --opt */
  size_t found = 0;
  for (size_t i = 0; i < s->njobs; i++) {
    j = &s->jobs[i];
    if (!strcmp(coord(s, j, "strategy"), "bubble:order=9:delay=1s")) {
      found++;
      assert_string_equal(coord(s, j, "bubble.order"), "9");
      assert_string_equal(coord(s, j, "bubble.delay"), "1s");
      assert_true(has_arg(j, "--opt=order=9"));
      assert_true(has_arg(j, "--opt=delay=1s"));
      assert_true(has_arg(j, "--strategy=bubble"));
    }
    if (!strcmp(coord(s, j, "strategy"), "bubble:order=3"))
      assert_null(coord(s, j, "bubble.delay"));
  }
  assert_int_equal(found, 2 * 3 * 2 * 2);
  /* ids are distinct */
  for (size_t i = 0; i < s->njobs; i++)
    for (size_t k = 0; k < i; k++)
      assert_string_not_equal(s->jobs[i].id, s->jobs[k].id);
  bh_sweep_free(s);
}

/* The same grid written in another order gives the same ids; one value more keeps them. */
static void test_ids_stable(void **state) {
  static const char reordered[] =
      "seeds: [2, 1]\n"
      "options:\n"
      "  shuffle: [false, true]\n"
      "  compaction-proactiveness: [100, 0, 20]\n"
      "  backing: sim\n"
      "strategies: [bubble: {delay: [2s, 1s], order: [9, 6]}, \"bubble:order=3\", none]\n"
      "traces: [\"traces/real-th*-256M.bht.zst\", traces/gen-memhog-256M.bht.zst]\n";
  static const char grown[] =
      "traces: [traces/gen-memhog-256M.bht.zst, \"traces/real-th*-256M.bht.zst\"]\n"
      "strategies: [none, \"bubble:order=3\", bubble: {order: [6, 9], delay: [1s, 2s]}]\n"
      "options:\n"
      "  backing: sim\n"
      "  compaction-proactiveness: [0, 20, 100]\n"
      "  shuffle: [true, false]\n"
      "seeds: [1, 2, 3]\n";
  bh_sweep_t *a, *b, *c, *d;
  assert_int_equal(expand(grid, &a), 0);
  assert_int_equal(expand(reordered, &b), 0);
  assert_int_equal(expand(grown, &c), 0);
  assert_int_equal(expand(grid, &d), 0);
  assert_int_equal(a->njobs, b->njobs);
  assert_int_equal(c->njobs, a->njobs / 2 * 3);
  for (size_t i = 0; i < a->njobs; i++) {
    assert_string_equal(a->jobs[i].id, d->jobs[i].id); /* the same spec again */
    const bh_sweep_job_t *jb = bh_sweep_find(b, a->jobs[i].id);
    assert_non_null(jb);
    assert_string_equal(jb->coords[0], a->jobs[i].coords[0]);
    assert_non_null(bh_sweep_find(c, a->jobs[i].id));
  }
  bh_sweep_free(a);
  bh_sweep_free(b);
  bh_sweep_free(c);
  bh_sweep_free(d);
  /* a value that differs is another job */
  assert_int_equal(expand("traces: traces/gen-memhog-256M.bht.zst\nstrategies: [bubble]\n"
                          "options: {backing: sim}\n",
                          &a),
                   0);
  assert_int_equal(expand("traces: traces/gen-memhog-256M.bht.zst\nstrategies: [bubble]\n"
                          "options: {backing: mmap}\n",
                          &b),
                   0);
  assert_int_equal(a->njobs, 1);
  assert_string_not_equal(a->jobs[0].id, b->jobs[0].id);
  bh_sweep_free(a);
  bh_sweep_free(b);
}

/* jemalloc takes idle, touch, lenient, max-order and no seed: the rest collapses. */
static void test_jemalloc(void **state) {
  bh_sweep_t *s;
  assert_int_equal(expand("traces: [traces/gen-memhog-256M.bht.zst]\n"
                          "strategies: [none, jemalloc, \"jemalloc:decay=0\"]\n"
                          "options: {backing: sim, compaction-proactiveness: [0, 20],\n"
                          "          idle: [10, 20]}\n"
                          "seeds: [1, 2]\n",
                          &s),
                   0);
  assert_int_equal(s->njobs, 8 + 2 + 2);
  size_t je = 0;
  for (size_t i = 0; i < s->njobs; i++) {
    const bh_sweep_job_t *j = &s->jobs[i];
    if (strcmp(coord(s, j, "strategy_name"), "jemalloc"))
      continue;
    je++;
    assert_null(coord(s, j, "compaction-proactiveness"));
    assert_null(coord(s, j, "backing"));
    assert_null(coord(s, j, "seed"));
    assert_non_null(coord(s, j, "idle"));
    assert_false(has_arg(j, "--backing=sim"));
    assert_true(has_arg(j, "--idle=10") || has_arg(j, "--idle=20"));
    assert_true(has_arg(j, "--strategy=jemalloc") || has_arg(j, "--strategy=jemalloc:decay=0"));
  }
  assert_int_equal(je, 4);
  assert_non_null(strstr(captured, "repeat a job"));
  bh_sweep_free(s);
}

/* Each bad spec is refused with its line and what is wrong. */
static void test_errors(void **state) {
  static const struct {
    const char *text, *message;
  } cases[] = {
      {"traces: [traces/gen-memhog-256M.bht.zst]\nstrategy: [none]\n",
       "spec.yaml:2: unknown key 'strategy'"},
      {"traces: [traces/nosuch-*.bht]\n",
       "spec.yaml:1: trace 'traces/nosuch-*.bht' matches no file"},
      {"strategies: [none]\n", "no traces"},
      {"traces: traces/gen-memhog-256M.bht.zst\nstrategies: [nosuch]\n",
       "spec.yaml:2: unknown strategy 'nosuch'"},
      {"traces: traces/gen-memhog-256M.bht.zst\nstrategies:\n  - bubble: {order: 42}\n",
       "spec.yaml:3: strategy 'bubble:order=42'"},
      {"traces: traces/gen-memhog-256M.bht.zst\nstrategies: [\"bubble:order\"]\n",
       "is not KEY=VALUE"},
      {"traces: traces/gen-memhog-256M.bht.zst\noptions:\n  memory: lots\n",
       "spec.yaml:3: options: memory: 'lots' is not a valid value"},
      {"traces: traces/gen-memhog-256M.bht.zst\noptions:\n  colour: blue\n",
       "spec.yaml:3: options: 'colour' is not a replay option"},
      {"traces: traces/gen-memhog-256M.bht.zst\noptions:\n  seed: 3\n",
       "'seed' is not for a sweep: list seeds under 'seeds'"},
      {"traces: traces/gen-memhog-256M.bht.zst\noptions:\n  compaction-proactiveness: []\n",
       "an empty list"},
      {"traces: traces/gen-memhog-256M.bht.zst\noptions:\n  shuffle: maybe\n", "shuffle is a flag"},
      {"traces: traces/gen-memhog-256M.bht.zst\noptions:\n  idle: [1, 1]\n", "listed twice"},
      {"traces: traces/gen-memhog-256M.bht.zst\nseeds: [1, -2]\n",
       "spec.yaml:2: seeds: '-2' is not a number"},
      {"traces: [traces/gen-memhog-256M.bht.zst\n", "spec.yaml:2:"},
      {"- just\n- a list\n", "a sweep spec is a mapping"},
      {"traces: traces\n", "is not a file"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    bh_sweep_t *s = (bh_sweep_t *)1;
    int r = expand(cases[i].text, &s);
    if (!r || !strstr(captured, cases[i].message))
      fail_msg("case %zu: r=%d, wanted '%s' in:\n%s", i, r, cases[i].message, captured);
    assert_null(s);
  }
}

static char *mkdir_tmp(void) {
  static char dir[64];
  snprintf(dir, sizeof(dir), "/tmp/bh-test-sweep-XXXXXX");
  assert_non_null(mkdtemp(dir));
  return dir;
}

static void rm_rf(const char *dir) {
  char cmd[PATH_MAX];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* The manifest reads back as written; a folder is reused for the same or a grown grid only. */
static void test_manifest(void **state) {
  char *dir = mkdir_tmp(), sub[PATH_MAX], path[PATH_MAX + 32];
  bh_sweep_t *s, *back, *small;
  assert_int_equal(expand(grid, &s), 0);
  snprintf(sub, sizeof(sub), "%s/out", dir);
  assert_int_equal(bh_sweep_prepare(s, sub), 0);
  assert_int_equal(bh_sweep_load(sub, &back), 0);
  assert_int_equal(back->njobs, s->njobs);
  assert_int_equal(back->ncols, s->ncols);
  for (size_t i = 0; i < s->njobs; i++) {
    assert_string_equal(back->jobs[i].id, s->jobs[i].id);
    assert_string_equal(back->jobs[i].trace, s->jobs[i].trace);
    assert_int_equal(back->jobs[i].nargs, s->jobs[i].nargs);
    for (size_t a = 0; a < s->jobs[i].nargs; a++)
      assert_string_equal(back->jobs[i].args[a], s->jobs[i].args[a]);
    for (size_t c = 0; c < s->ncols; c++)
      if (s->jobs[i].coords[c])
        assert_string_equal(back->jobs[i].coords[c], s->jobs[i].coords[c]);
      else
        assert_null(back->jobs[i].coords[c]);
  }
  assert_int_equal(bh_sweep_prepare(s, sub), 0); /* again: resumed */
  /* fewer jobs than the folder holds: refused */
  assert_int_equal(expand("traces: traces/gen-memhog-256M.bht.zst\nstrategies: [none]\n", &small),
                   0);
  assert_int_not_equal(bh_sweep_prepare(small, sub), 0);
  /* a folder with files of its own: refused, and the file is untouched */
  snprintf(path, sizeof(path), "%s/mine.txt", dir);
  put(path, "keep me\n");
  assert_int_not_equal(bh_sweep_prepare(small, dir), 0);
  snprintf(path, sizeof(path), "%s/sweep.json", dir);
  assert_int_not_equal(access(path, F_OK), 0);
  bh_sweep_free(s);
  bh_sweep_free(back);
  bh_sweep_free(small);
  rm_rf(dir);
}

/* Job states and the merged table. */
static void test_state_and_table(void **state) {
  char *dir = mkdir_tmp(), path[PATH_MAX];
  bh_sweep_t *s;
  assert_int_equal(expand("traces: traces/gen-memhog-256M.bht.zst\n"
                          "strategies: [none, bubble: {order: [3, 9]}]\n"
                          "options: {backing: sim, touch: \"page,x\"}\n",
                          &s),
                   BH_EINVAL); /* touch: not a valid value */
  assert_int_equal(expand("traces: traces/gen-memhog-256M.bht.zst\n"
                          "strategies: [none, bubble: {order: [3, 9]}]\n"
                          "options: {backing: sim}\n",
                          &s),
                   0);
  assert_int_equal(s->njobs, 3);
  assert_int_equal(bh_sweep_prepare(s, dir), 0);
  const char *a = s->jobs[0].id, *b = s->jobs[1].id, *c = s->jobs[2].id;
  assert_int_equal(bh_sweep_state(dir, a), BH_SWEEP_MISSING);
  bh_sweep_job_path(path, sizeof(path), dir, a, "json");
  /* a result as a replay writes it: counts, and a provenance naming this job's trace and
   * strategy (merge leaves out one that cannot be its job's) */
  char text[4096];
  snprintf(text, sizeof(text),
           "{\"trace\": \"/x\", \"strategy\": \"none\", \"events\": 7, \"allocs\": 4, "
           "\"frees\": 3, \"rss_final_bytes\": 0, \"wall_seconds\": 0.5,\n \"note\": \"a, "
           "\\\"quoted\\\" value\", \"arena_stats\": {\"pgfree\": 3}, \"provenance\": "
           "{\"label\": \"none\", \"trace\": {\"name\": \"%s\"}}}\n",
           s->jobs[0].trace);
  put(path, text);
  assert_int_equal(bh_sweep_state(dir, a), BH_SWEEP_DONE);
  bh_sweep_job_path(path, sizeof(path), dir, b, "json");
  put(path, "{\"trace\": \"/x\", \"events\": "); /* cut short: not ours to judge or replace */
  assert_int_equal(bh_sweep_state(dir, b), BH_SWEEP_CORRUPT);
  bh_sweep_job_path(path, sizeof(path), dir, c, "err");
  put(path, "it failed\n");
  assert_int_equal(bh_sweep_state(dir, c), BH_SWEEP_FAILED);

  bh_sweep_table_t t;
  assert_int_equal(bh_sweep_table(s, dir, &t), 0);
  assert_int_equal(t.jobs, 3);
  assert_int_equal(t.done, 1);
  assert_int_equal(json_array_size(t.failed), 2);
  assert_int_equal(json_array_size(t.missing), 0);
  char *csv = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&csv, &len);
  assert_int_equal(bh_sweep_table_csv(&t, f), 0);
  fclose(f);
  char want[1024];
  snprintf(want, sizeof(want),
           "id,trace,strategy,strategy_name,bubble.order,backing,events,allocs,frees,"
           "rss_final_bytes,wall_seconds,note,arena_stats.pgfree,provenance.label,"
           "provenance.trace.name\n"
           "%s,traces/gen-memhog-256M.bht.zst,none,none,,sim,7,4,3,0,0.5,\"a, \"\"quoted\"\" "
           "value\",3,none,%s\n",
           a, s->jobs[0].trace);
  assert_string_equal(csv, want);
  free(csv);
  /* the JSON form reads back, with typed coordinates */
  snprintf(path, sizeof(path), "%s/table.json", dir);
  f = fopen(path, "w");
  assert_int_equal(bh_sweep_table_json(&t, f), 0);
  fclose(f);
  bh_sweep_table_t u;
  assert_int_equal(bh_sweep_table_read(path, &u), 0);
  assert_int_equal(json_array_size(u.rows), 1);
  assert_int_equal(u.jobs, 3);
  assert_true(json_equal(u.columns, t.columns));
  json_t *row = json_array_get(u.rows, 0);
  assert_int_equal(json_integer_value(json_object_get(row, "events")), 7);
  assert_true(json_is_null(json_object_get(row, "bubble.order")));
  bh_sweep_table_free(&t);
  bh_sweep_table_free(&u);
  bh_sweep_free(s);
  rm_rf(dir);
}

/* The README's example spec expands to the 72 jobs it promises. */
static void test_example(void **state) {
  bh_sweep_t *s;
  assert_int_equal(bh_sweep_from_spec(BASE "/examples/sweep.yaml", &s), 0);
  assert_int_equal(s->njobs, 72);
  assert_string_equal(s->jobs[0].coords[0], "../traces/real-memhog-300M.bht.zst");
  bh_sweep_free(s);
}

/* Seeds without shuffle change nothing: a warning; with shuffle on some jobs, none. */
static void test_seeds_without_shuffle(void **state) {
  (void)state;
  static const char plain[] = "traces: [traces/gen-memhog-256M.bht.zst]\n"
                              "strategies: [none]\n"
                              "options: {backing: sim}\n"
                              "seeds: [1, 2, 3]\n";
  bh_sweep_t *s;
  assert_int_equal(expand(plain, &s), 0);
  assert_non_null(strstr(captured, "warning: spec.yaml: 3 seeds and no 'shuffle: true'"));
  bh_sweep_free(s);
  assert_int_equal(expand(grid, &s), 0); /* shuffle: [true, false] */
  assert_null(strstr(captured, "seeds and no"));
  bh_sweep_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seeds_without_shuffle),
      cmocka_unit_test(test_expand_grid),
      cmocka_unit_test(test_ids_stable),
      cmocka_unit_test(test_jemalloc),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_manifest),
      cmocka_unit_test(test_state_and_table),
      cmocka_unit_test(test_example),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
