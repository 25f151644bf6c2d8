/*
 * A program built against an installed libbuddyhint, the way a user builds one: it includes
 * <buddyhint.h> from the install prefix and links through pkg-config or find_package.
 * Exits 0 and prints the library's version if the arena works.
 */
#include <buddyhint.h>

#include <stdio.h>
#include <string.h>

static int fail(const char *what, int err) {
  fprintf(stderr, "consumer: %s: %s\n", what, bh_strerror(err));
  return 1;
}

int main(void) {
  /* The header and the library must come from the same release. */
  if (strcmp(bh_version(), BH_VERSION_STRING) != 0) {
    fprintf(stderr, "consumer: library %s, header %s\n", bh_version(), BH_VERSION_STRING);
    return 1;
  }

  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.zone_bytes[BH_ZONE_DMA] = 0;
  cfg.zone_bytes[BH_ZONE_DMA32] = 0;
  cfg.zone_bytes[BH_ZONE_NORMAL] = 64ull << 20;
  bh_arena_t *arena;
  int err = bh_arena_create(&cfg, &arena);
  if (err)
    return fail("bh_arena_create", err);

  void *blocks[4];
  static const unsigned orders[4] = {0, 3, 9, 10};
  for (int i = 0; i < 4; i++) {
    blocks[i] = bh_alloc_pages(arena, BH_GFP_KERNEL, orders[i], &err);
    if (!blocks[i])
      return fail("bh_alloc_pages", err);
    memset(blocks[i], 0xa5, BH_PAGE_SIZE << orders[i]);
  }
  if (bh_free_pages(arena, blocks[1], orders[1]) != 0)
    return fail("bh_free_pages", BH_EINVAL);
  /* A double free is reported and changes nothing. */
  if ((err = bh_free_pages(arena, blocks[1], orders[1])) != BH_ENOTALLOC)
    return fail("double free not caught", err);
  for (int i = 0; i < 4; i++)
    if (i != 1 && (err = bh_free_pages(arena, blocks[i], orders[i])) != 0)
      return fail("bh_free_pages", err);

  long violations = bh_arena_check(arena, stderr, 10);
  bh_arena_destroy(arena);
  if (violations != 0) {
    fprintf(stderr, "consumer: bh_arena_check: %ld violations\n", violations);
    return 1;
  }
  printf("consumer: libbuddyhint %s OK\n", bh_version());
  return 0;
}
