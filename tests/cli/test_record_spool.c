/*
 * buddyhint record's spool (src/cli/record/record_spool.c): sub-buffers in, the same
 * sub-buffers out (zero-padded where a read gave fewer bytes), in order, after compression;
 * a reserve taken up front on tmpfs and the file's size still what was written.
 */
#include "cli/record/record_spool.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#define SUBBUF 4096
#define PAGES 300
#define TMPFS_MAGIC_NUMBER 0x01021994 /* linux/magic.h TMPFS_MAGIC */

/* Sub-buffer i: a header-like count, then text that repeats from page to page (as events
 * do), its first n(i) bytes given. */
static size_t fill(unsigned i, unsigned char *p) {
  size_t n = i % 7 == 3 ? 100 + i : SUBBUF;
  memset(p, 0, SUBBUF);
  static const char text[] = "mm_page_alloc pfn order gfp ";
  for (size_t k = 0; k < n; k++)
    p[k] = k < 8 ? (unsigned char)(i >> (k % 4 * 8))
                 : (unsigned char)text[(k + i) % (sizeof(text) - 1)];
  return n;
}

/* Puts PAGES sub-buffers through a spool in dir with reserve bytes; checks them back. */
static void roundtrip(const char *dir, uint64_t reserve) {
  setenv("TMPDIR", dir, 1);
  bh_cli_spool_t *s = NULL;
  const char *what = "";
  int e = bh_cli_spool_open(&s, SUBBUF, reserve, &what);
  if (e)
    fail_msg("spool in %s (reserve %lu): %s: %s", dir, (unsigned long)reserve, what, strerror(e));
  unsigned char in[SUBBUF], want[SUBBUF], out[SUBBUF];
  for (unsigned i = 0; i < PAGES; i++) {
    size_t n = fill(i, in);
    assert_int_equal(bh_cli_spool_put(s, in, n), 0);
  }
  assert_int_equal(bh_cli_spool_finish(s), 0);
  assert_int_equal(bh_cli_spool_pages(s), PAGES);
  /* compressed: far less than the raw sub-buffers */
  assert_true(bh_cli_spool_bytes(s) > 0 && bh_cli_spool_bytes(s) < PAGES * SUBBUF / 4);
  for (unsigned i = 0; i < PAGES; i++) {
    fill(i, want);
    assert_int_equal(bh_cli_spool_get(s, out), 1);
    if (memcmp(out, want, SUBBUF))
      fail_msg("sub-buffer %u differs after the spool", i);
  }
  assert_int_equal(bh_cli_spool_get(s, out), 0);
  assert_int_equal(bh_cli_spool_get(s, out), 0);
  /* read again from the first, after a partial read too (record's look at the first events) */
  for (int pass = 0; pass < 2; pass++) {
    bh_cli_spool_rewind(s);
    for (unsigned i = 0; i < (pass ? PAGES : 3); i++) {
      fill(i, want);
      assert_int_equal(bh_cli_spool_get(s, out), 1);
      if (memcmp(out, want, SUBBUF))
        fail_msg("sub-buffer %u differs after a rewind", i);
    }
  }
  assert_int_equal(bh_cli_spool_get(s, out), 0);
  bh_cli_spool_close(s);
}

static void test_spool_roundtrip(void **state) {
  (void)state;
  char dir[] = "/tmp/bh-test-spool-XXXXXX";
  assert_non_null(mkdtemp(dir));
  roundtrip(dir, 0);
  rmdir(dir);
}

/* A reserve where fallocate holds memory: /dev/shm, where it is a tmpfs (else not run). */
static void test_spool_reserve(void **state) {
  (void)state;
  struct statfs fs;
  if (statfs("/dev/shm", &fs) || (unsigned long)fs.f_type != TMPFS_MAGIC_NUMBER ||
      access("/dev/shm", W_OK)) {
    print_message("no writable tmpfs at /dev/shm: the reserve is checked by tests/cli/record.sh\n");
    return;
  }
  struct statvfs before, during;
  assert_int_equal(statvfs("/dev/shm", &before), 0);
  setenv("TMPDIR", "/dev/shm", 1);
  bh_cli_spool_t *s = NULL;
  const char *what = "";
  assert_int_equal(bh_cli_spool_open(&s, SUBBUF, 8 << 20, &what), 0);
  assert_int_equal(statvfs("/dev/shm", &during), 0);
  uint64_t taken = (uint64_t)(before.f_bfree - during.f_bfree) * during.f_frsize;
  if (taken < (7u << 20)) /* others may free meanwhile; 8 MiB taken, give or take */
    fail_msg("a spool with an 8 MiB reserve took %lu bytes of /dev/shm", (unsigned long)taken);
  unsigned char in[SUBBUF];
  size_t n = fill(1, in);
  assert_int_equal(bh_cli_spool_put(s, in, n), 0);
  assert_int_equal(bh_cli_spool_finish(s), 0);
  unsigned char out[SUBBUF];
  assert_int_equal(bh_cli_spool_get(s, out), 1); /* the size is what was written */
  assert_int_equal(bh_cli_spool_get(s, out), 0);
  bh_cli_spool_close(s);
  roundtrip("/dev/shm", 1 << 20);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spool_roundtrip),
      cmocka_unit_test(test_spool_reserve),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
