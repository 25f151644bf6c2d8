/*
 * Helpers shared by the allocator core tests: small arenas built from a config, checked
 * allocation and free, zone lookups, counters, dumps captured as strings, and an equality
 * check that prints both values in decimal with the expression that produced them.
 */
#ifndef BH_TESTS_BUDDY_TEST_H
#define BH_TESTS_BUDDY_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <buddyhint.h>

#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)

/* Fails the test with "what = got, expected want" when got != want. */
#define EXPECT_U64(got, want)                                                                      \
  bt_expect_u64((uint64_t)(got), (uint64_t)(want), #got, __FILE__, __LINE__)
void bt_expect_u64(uint64_t got, uint64_t want, const char *what, const char *file, int line);

/* Defaults with every zone absent, one node, pcp off: a blank slate for crafted states. */
bh_config_t bt_cfg_blank(void);
/* One node with a single zone of `bytes`, pcp off. */
bh_config_t bt_cfg_one_zone(int zone_type, uint64_t bytes);
/* min_free_kbytes 1 and watermark_scale_factor 1: every watermark of a small zone is 0. */
void bt_cfg_no_wmarks(bh_config_t *cfg);

/* Creates the arena or fails the test. */
bh_arena_t *bt_create(const bh_config_t *cfg);
/* Allocates or fails the test; returns the pfn. */
uint64_t bt_alloc(bh_arena_t *a, unsigned gfp, unsigned order, int cpu);
/* Frees or fails the test. */
void bt_free(bh_arena_t *a, uint64_t pfn, unsigned order, int cpu);

bh_zone_info_t bt_zone(bh_arena_t *a, int i);
/* Index of the zone holding pfn, or -1. */
int bt_zone_of(bh_arena_t *a, uint64_t pfn);
/* Index of the zone of this node and type, or -1. */
int bt_zone_index(bh_arena_t *a, int node, int type);
uint64_t bt_stat(const bh_arena_t *a, int stat);

/* bh_arena_check() finds nothing (violations are printed). */
void bt_expect_clean(bh_arena_t *a);
/* Every zone is entirely free on its buddy lists, in top-order blocks only. */
void bt_expect_all_free(bh_arena_t *a);

/* Output of a dump function as a malloc'ed string (fails the test on error). */
char *bt_dump(bh_arena_t *a, int (*dump)(bh_arena_t *, FILE *));
/* The file under tests/buddy/golden as a malloc'ed string. */
char *bt_read_golden(const char *name);
/* Fails with the first differing line shown when the strings differ. */
void bt_expect_text(const char *got, const char *want, const char *what);

#endif
