/* gfp_flags text -> BH_GFP_* bits, and back. */
#include "trace_test_util.h"

struct gfp_case {
  const char *text;
  int ret; /* bh_gfp_parse result: unknown names, or an error */
  uint32_t bits;
};

static const struct gfp_case cases[] = {
    {"GFP_KERNEL", 0, 0},
    {"GFP_NOFS", 0, 0},
    {"GFP_NOIO", 0, 0},
    {"GFP_USER", 0, 0},
    {"GFP_KERNEL_ACCOUNT", 0, 0},
    {"none", 0, 0},
    {"GFP_HIGHUSER", 0, BH_GFP_HIGHMEM},
    {"GFP_HIGHUSER_MOVABLE", 0, BH_GFP_MOVABLE | BH_GFP_HIGHMEM},
    {"GFP_HIGHUSER_MOVABLE|__GFP_ZERO", 0, BH_GFP_MOVABLE | BH_GFP_HIGHMEM | BH_GFP_ZERO},
    /* GFP_TRANSHUGE_LIGHT lacks both reclaim bits and has __GFP_NOMEMALLOC; GFP_TRANSHUGE
     * adds __GFP_DIRECT_RECLAIM only (include/linux/gfp_types.h:388-390) */
    {"GFP_TRANSHUGE", 0, BH_GFP_MOVABLE | BH_GFP_HIGHMEM | BH_GFP_NOMEMALLOC | BH_GFP_NO_KSWAPD},
    {"GFP_TRANSHUGE_LIGHT", 0,
     BH_GFP_MOVABLE | BH_GFP_HIGHMEM | BH_GFP_ATOMIC | BH_GFP_NOMEMALLOC | BH_GFP_NO_KSWAPD},
    {"GFP_TRANSHUGE|__GFP_THISNODE", 0, BH_GFP_TRANSHUGE | BH_GFP_THISNODE},
    {"GFP_TRANSHUGE|__GFP_KSWAPD_RECLAIM", 0, BH_GFP_TRANSHUGE & ~BH_GFP_NO_KSWAPD},
    {"GFP_TRANSHUGE_LIGHT|__GFP_RECLAIM", 0,
     BH_GFP_TRANSHUGE_LIGHT & ~(BH_GFP_ATOMIC | BH_GFP_NO_KSWAPD)},
    {"__GFP_KSWAPD_RECLAIM|GFP_TRANSHUGE_LIGHT", 0, BH_GFP_TRANSHUGE_LIGHT & ~BH_GFP_NO_KSWAPD},
    {"GFP_TRANSHUGE_LIGHT|__GFP_DIRECT_RECLAIM", 0, BH_GFP_TRANSHUGE},
    {"__GFP_NO_KSWAPD", 0, BH_GFP_NO_KSWAPD},
    {"GFP_KERNEL|__GFP_NOMEMALLOC", 0, BH_GFP_NOMEMALLOC},
    {"GFP_ATOMIC", 0, BH_GFP_ATOMIC | BH_GFP_HIGH},
    {"GFP_NOWAIT", 0, BH_GFP_ATOMIC},
    {"GFP_NOWAIT|__GFP_NOWARN", 0, BH_GFP_ATOMIC},
    {"__GFP_ATOMIC", 0, BH_GFP_ATOMIC},
    {"GFP_DMA", 0, BH_GFP_DMA},
    {"GFP_DMA32", 0, BH_GFP_DMA32},
    {"GFP_KERNEL|__GFP_DMA", 0, BH_GFP_DMA},
    {"GFP_KERNEL|__GFP_DMA32", 0, BH_GFP_DMA32},
    {"__GFP_HIGHMEM", 0, BH_GFP_HIGHMEM},
    {"__GFP_HIGH", 0, BH_GFP_HIGH},
    {"__GFP_HIGH|__GFP_HIGHMEM", 0, BH_GFP_HIGH | BH_GFP_HIGHMEM},
    {"GFP_KERNEL|__GFP_RECLAIMABLE", 0, BH_GFP_RECLAIMABLE},
    {"GFP_USER|__GFP_MOVABLE", 0, BH_GFP_MOVABLE},
    {"GFP_KERNEL|__GFP_THISNODE", 0, BH_GFP_THISNODE},
    {"GFP_KERNEL|__GFP_COMP|__GFP_NOWARN|__GFP_NORETRY|__GFP_ACCOUNT", 0, 0},
    {"GFP_NOWAIT|__GFP_IO|__GFP_FS|__GFP_HARDWALL|__GFP_SKIP_KASAN", 0, BH_GFP_ATOMIC},
    /* unknown names are ignored and counted */
    {"GFP_KERNEL|__GFP_BOGUS", 1, 0},
    {"__GFP_ZERO|FOO|BAR", 2, BH_GFP_ZERO},
    {"gfp_kernel", 1, 0},
    {"0xZZ", 1, 0},
    /* leftover hex bits (6.12 values) */
    {"GFP_KERNEL|0x100", 0, BH_GFP_ZERO},
    {"GFP_KERNEL|0x200000", 0, BH_GFP_THISNODE},
    {"GFP_KERNEL|0x4000000", 0, 0},
    {"GFP_KERNEL|0x3f", 0,
     BH_GFP_DMA | BH_GFP_HIGHMEM | BH_GFP_DMA32 | BH_GFP_MOVABLE | BH_GFP_RECLAIMABLE |
         BH_GFP_HIGH},
    /* a whole mask in hex: blocking decided from __GFP_DIRECT_RECLAIM (0x400) */
    {"0xcc0", 0, 0},                                  /* GFP_KERNEL */
    {"0x820", 0, BH_GFP_ATOMIC | BH_GFP_HIGH},        /* GFP_ATOMIC */
    {"0x100cca", 0, BH_GFP_MOVABLE | BH_GFP_HIGHMEM}, /* GFP_HIGHUSER_MOVABLE */
    {"0x0", 0, 0},
    {"0x4", 0, BH_GFP_DMA32 | BH_GFP_ATOMIC | BH_GFP_NO_KSWAPD},
    {"0x1c20ca", 0, BH_GFP_TRANSHUGE_LIGHT}, /* GFP_TRANSHUGE_LIGHT in 6.12 */
    {"0x1c24ca", 0, BH_GFP_TRANSHUGE},       /* GFP_TRANSHUGE */
    {"0x1c2cca", 0, BH_GFP_TRANSHUGE & ~BH_GFP_NO_KSWAPD},
    /* errors */
    {"", BH_EFORMAT, 0},
    {"GFP_KERNEL|", BH_EFORMAT, 0},
    {"|GFP_KERNEL", BH_EFORMAT, 0},
    {"GFP_KERNEL||__GFP_ZERO", BH_EFORMAT, 0},
};

static void test_gfp_parse_table(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    uint32_t g = 0xdeadbeef;
    int r = bh_gfp_parse(cases[i].text, strlen(cases[i].text), &g);
    if (r != cases[i].ret || (r >= 0 && g != cases[i].bits))
      fail_msg("'%s': got ret %d bits 0x%x, want ret %d bits 0x%x", cases[i].text, r, g,
               cases[i].ret, cases[i].bits);
  }
}

static void test_gfp_parse_not_terminated(void **state) {
  (void)state;
  uint32_t g;
  const char *s = "__GFP_DMA32|__GFP_ZERO trailing";
  assert_int_equal(bh_gfp_parse(s, 11, &g), 0);
  assert_int_equal(g, BH_GFP_DMA32);
  assert_int_equal(bh_gfp_parse(NULL, 1, &g), BH_EINVAL);
  assert_int_equal(bh_gfp_parse(s, 1, NULL), BH_EINVAL);
}

static void test_gfp_zone_of_parsed(void **state) {
  (void)state;
  uint32_t g;
  assert_int_equal(bh_gfp_parse("GFP_HIGHUSER_MOVABLE", 20, &g), 0);
  assert_int_equal(bh_gfp_zone(g), BH_ZONE_MOVABLE);
  assert_int_equal(bh_gfp_parse("GFP_HIGHUSER", 12, &g), 0);
  assert_int_equal(bh_gfp_zone(g), BH_ZONE_NORMAL);
  assert_int_equal(bh_gfp_parse("GFP_DMA", 7, &g), 0);
  assert_int_equal(bh_gfp_zone(g), BH_ZONE_DMA);
  assert_int_equal(bh_gfp_parse("GFP_KERNEL|__GFP_DMA32", 22, &g), 0);
  assert_int_equal(bh_gfp_zone(g), BH_ZONE_DMA32);
  assert_int_equal(bh_gfp_parse("GFP_KERNEL", 10, &g), 0);
  assert_int_equal(bh_gfp_zone(g), BH_ZONE_NORMAL);
}

static void test_gfp_format(void **state) {
  (void)state;
  char buf[256];
  assert_int_equal(bh_gfp_format(0, buf, sizeof(buf)), 4);
  assert_string_equal(buf, "none");
  assert_int_equal(bh_gfp_format(BH_GFP_MOVABLE | BH_GFP_HIGHMEM, buf, sizeof(buf)), 27);
  assert_string_equal(buf, "__GFP_HIGHMEM|__GFP_MOVABLE");
  assert_int_equal(bh_gfp_format(BH_GFP_NOFALLBACK_WMARK, buf, sizeof(buf)), BH_EINVAL);
  assert_int_equal(bh_gfp_format(BH_GFP_ZERO, buf, 10), BH_ENOSPC);
  assert_int_equal(bh_gfp_format(BH_GFP_ZERO, buf, 11), 10);
  assert_string_equal(buf, "__GFP_ZERO");
  /* every nameable combination reads back to itself */
  for (uint32_t g = 0; g < 0x1000; g++) {
    if (g & BH_GFP_NOFALLBACK_WMARK)
      continue;
    int n = bh_gfp_format(g, buf, sizeof(buf));
    assert_true(n > 0);
    assert_int_equal((size_t)n, strlen(buf));
    uint32_t back = ~0u;
    assert_int_equal(bh_gfp_parse(buf, (size_t)n, &back), 0);
    assert_int_equal(back, g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gfp_parse_table),
      cmocka_unit_test(test_gfp_parse_not_terminated),
      cmocka_unit_test(test_gfp_zone_of_parsed),
      cmocka_unit_test(test_gfp_format),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
