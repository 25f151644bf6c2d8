/* Helpers shared by the allocator core tests (see buddy_test.h). */
#include "buddy_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bt_expect_u64(uint64_t got, uint64_t want, const char *what, const char *file, int line) {
  if (got == want)
    return;
  print_error("%s:%d: %s = %llu, expected %llu\n", file, line, what, (unsigned long long)got,
              (unsigned long long)want);
  _fail(file, line);
}

bh_config_t bt_cfg_blank(void) {
  bh_config_t cfg;
  bh_config_init(&cfg);
  for (int t = 0; t < BH_NR_ZONE_TYPES; t++)
    cfg.zone_bytes[t] = 0;
  cfg.pcp = false;
  return cfg;
}

bh_config_t bt_cfg_one_zone(int zone_type, uint64_t bytes) {
  bh_config_t cfg = bt_cfg_blank();
  cfg.zone_bytes[zone_type] = bytes;
  return cfg;
}

void bt_cfg_no_wmarks(bh_config_t *cfg) {
  cfg->min_free_kbytes = 1; /* pages_min = 1 KiB / 4 KiB = 0 */
  cfg->watermark_scale_factor = 1;
}

bh_arena_t *bt_create(const bh_config_t *cfg) {
  bh_arena_t *a = NULL;
  int err = bh_arena_create(cfg, &a);
  if (err)
    print_error("bh_arena_create: %s (%s)\n", bh_err_name(err), bh_strerror(err));
  assert_int_equal(err, BH_OK);
  assert_non_null(a);
  return a;
}

uint64_t bt_alloc(bh_arena_t *a, unsigned gfp, unsigned order, int cpu) {
  uint64_t pfn = UINT64_MAX;
  int err = bh_alloc_pfn(a, gfp, order, cpu, &pfn);
  if (err)
    print_error("bh_alloc_pfn(gfp %#x, order %u, cpu %d): %s\n", gfp, order, cpu, bh_err_name(err));
  assert_int_equal(err, BH_OK);
  return pfn;
}

void bt_free(bh_arena_t *a, uint64_t pfn, unsigned order, int cpu) {
  int err = bh_free_pfn(a, pfn, order, cpu);
  if (err)
    print_error("bh_free_pfn(pfn %llu, order %u): %s\n", (unsigned long long)pfn, order,
                bh_err_name(err));
  assert_int_equal(err, BH_OK);
}

bh_zone_info_t bt_zone(bh_arena_t *a, int i) {
  bh_zone_info_t zi;
  assert_int_equal(bh_zone_info(a, i, &zi), BH_OK);
  return zi;
}

int bt_zone_of(bh_arena_t *a, uint64_t pfn) {
  for (int i = 0; i < bh_zone_count(a); i++) {
    bh_zone_info_t zi = bt_zone(a, i);
    if (pfn >= zi.start_pfn && pfn < zi.start_pfn + zi.spanned_pages)
      return i;
  }
  return -1;
}

int bt_zone_index(bh_arena_t *a, int node, int type) {
  for (int i = 0; i < bh_zone_count(a); i++) {
    bh_zone_info_t zi = bt_zone(a, i);
    if (zi.node == node && zi.type == type)
      return i;
  }
  return -1;
}

uint64_t bt_stat(const bh_arena_t *a, int stat) {
  uint64_t v[BH_NR_STATS];
  bh_stats_read(a, v);
  return v[stat];
}

void bt_expect_clean(bh_arena_t *a) {
  long v = bh_arena_check(a, stderr, 20);
  EXPECT_U64(v, 0);
}

void bt_expect_all_free(bh_arena_t *a) {
  unsigned max_order = bh_arena_config(a)->max_order;
  for (int i = 0; i < bh_zone_count(a); i++) {
    bh_zone_info_t zi = bt_zone(a, i);
    EXPECT_U64(zi.free_pages, zi.managed_pages);
    EXPECT_U64(zi.pcp_pages, 0);
    for (unsigned o = 0; o < max_order; o++)
      EXPECT_U64(zi.nr_free[o], 0);
    EXPECT_U64(zi.nr_free[max_order], zi.managed_pages >> max_order);
  }
}

char *bt_dump(bh_arena_t *a, int (*dump)(bh_arena_t *, FILE *)) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(dump(a, f), BH_OK);
  assert_int_equal(fclose(f), 0);
  return buf;
}

char *bt_read_golden(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/buddy/golden/%s", BH_SOURCE_DIR, name);
  FILE *f = fopen(path, "rb");
  if (!f)
    print_error("cannot open %s\n", path);
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  assert_true(n >= 0);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

void bt_expect_text(const char *got, const char *want, const char *what) {
  if (strcmp(got, want) == 0)
    return;
  int line = 1;
  const char *g = got, *w = want;
  while (*g && *g == *w) {
    line += *g == '\n';
    g++, w++;
  }
  while (g > got && g[-1] != '\n')
    g--, w--;
  print_error("%s differs at line %d:\n  got:  \"%.*s\"\n  want: \"%.*s\"\n", what, line,
              (int)strcspn(g, "\n"), g, (int)strcspn(w, "\n"), w);
  fail();
}
