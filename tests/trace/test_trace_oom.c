/*
 * Out of memory while decompressing is reported as out of memory (BH_ENOMEM, "out of memory
 * in the zstd decoder"), not as a corrupt stream: a zstd frame with a 128 MiB window and no
 * content size makes the decoder allocate its 128 MiB window, which is made to fail.
 *
 * The allocation is made to fail with an address-space limit in a child process, or, in an
 * AddressSanitizer build (whose shadow memory rules out such a limit), with ASan's own
 * max_allocation_size_mb.
 */
#include <buddyhint/trace.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#if defined(__SANITIZE_ADDRESS__)
#define BH_TEST_ASAN 1
/* visible to the sanitizer runtime, which looks it up in the executable (built hidden) */
__attribute__((visibility("default"), used)) const char *__asan_default_options(void);
__attribute__((visibility("default"), used)) const char *__asan_default_options(void) {
  return "allocator_may_return_null=1:max_allocation_size_mb=64:detect_leaks=0";
}
#else
#define BH_TEST_ASAN 0
#endif

/*
 * A native text trace as one zstd frame with a 2^27-byte window, written by hand (RFC 8878):
 * the magic, a frame header without content size (FHD 0), the window descriptor (exponent 17:
 * 1 << (10 + 17) bytes), and one raw last block.  A compressor would need that window itself.
 */
static void write_big_window(const char *path) {
  const char text[] = "# buddyhint-trace 1\n1000 A 0x10 0\n2000 F 0x10 0\n";
  const uint32_t len = sizeof(text) - 1, block = len << 3 | 1; /* raw, last */
  const unsigned char head[] = {0x28,
                                0xb5,
                                0x2f,
                                0xfd,
                                0x00,
                                17 << 3,
                                (unsigned char)block,
                                (unsigned char)(block >> 8),
                                (unsigned char)(block >> 16)};
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(head, 1, sizeof(head), f), sizeof(head));
  assert_int_equal(fwrite(text, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

/* Reads the whole trace: the first error code (0 at a clean end), its message in msg. */
static int read_all(const char *path, char *msg, size_t len) {
  bh_trace_t *t;
  int err = bh_trace_open(path, NULL, &t);
  if (err) {
    snprintf(msg, len, "%s", bh_trace_error(NULL));
    return err;
  }
  bh_event_t ev;
  while ((err = bh_trace_next(t, &ev)) == 1)
    ;
  snprintf(msg, len, "%s", bh_trace_error(t));
  bh_trace_close(t);
  return err;
}

static void limit_address_space(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (!f || fscanf(f, "%lu", &pages) != 1)
    _exit(3);
  fclose(f);
  rlim_t cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
  struct rlimit r = {cur + (64u << 20), cur + (64u << 20)};
  if (setrlimit(RLIMIT_AS, &r))
    _exit(3);
}

static void test_zstd_out_of_memory(void **state) {
  (void)state;
  char path[] = "/tmp/bh-oom-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  write_big_window(path);
  char msg[512];
  if (!BH_TEST_ASAN) { /* with memory, it reads */
    assert_int_equal(read_all(path, msg, sizeof(msg)), 0);
  }
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(pfd[0]);
    if (!BH_TEST_ASAN)
      limit_address_space();
    int err = read_all(path, msg, sizeof(msg));
    if (write(pfd[1], msg, strlen(msg) + 1) < 0)
      _exit(4);
    _exit(err == BH_ENOMEM ? 0 : err == BH_EIO ? 1 : 2);
  }
  close(pfd[1]);
  memset(msg, 0, sizeof(msg));
  ssize_t n = read(pfd[0], msg, sizeof(msg) - 1);
  (void)n;
  close(pfd[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  unlink(path);
  printf("with the window allocation failing: exit %d, '%s'\n",
         WIFEXITED(st) ? WEXITSTATUS(st) : -1, msg);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_non_null(strstr(msg, "out of memory"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_zstd_out_of_memory)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
