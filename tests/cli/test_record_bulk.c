/*
 * record's probe of alloc_pages_bulk (src/cli/record/record_bulk.c): where the function's one
 * direct call to __rmqueue_pcplist returns, found in its code.  The bytes around the call in
 * the test are those of Debian's 6.12.117 amd64 kernel, where the call sits at +0x295 and
 * returns at +0x29a (the offset the guest's recordings probe).
 */
#include "cli/record/record_bulk.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#define FUNC 0xffffffff94fc2960ull
#define CALLEE 0xffffffff94fbd7d0ull

/* An e8 call at code + at to target, as the function at FUNC would encode it. */
static void put_call(uint8_t *code, size_t at, uint64_t target) {
  int32_t rel = (int32_t)(int64_t)(target - (FUNC + at + 5));
  code[at] = 0xe8;
  memcpy(code + at + 1, &rel, 4); /* little-endian, as x86-64 */
}

static void test_return_offset(void **state) {
  (void)state;
  uint8_t code[0x650];
  memset(code, 0x90, sizeof(code)); /* nops */
  assert_int_equal(bh_cli_bulk_return_offset(code, sizeof(code), FUNC, CALLEE), -1);
  put_call(code, 0x295, CALLEE);
  assert_int_equal(bh_cli_bulk_return_offset(code, sizeof(code), FUNC, CALLEE), 0x29a);
  /* calls elsewhere do not count */
  put_call(code, 0x100, CALLEE + 0x40);
  put_call(code, 0x300, FUNC);
  assert_int_equal(bh_cli_bulk_return_offset(code, sizeof(code), FUNC, CALLEE), 0x29a);
  /* a call cut off by the end of the code is not read */
  assert_int_equal(bh_cli_bulk_return_offset(code, 0x299, FUNC, CALLEE), -1);
  /* two calls: which one is the page's cannot be told */
  put_call(code, 0x400, CALLEE);
  assert_int_equal(bh_cli_bulk_return_offset(code, sizeof(code), FUNC, CALLEE), -2);
  /* a call backwards (negative rel32) is found as well */
  memset(code, 0x90, sizeof(code));
  uint64_t before = FUNC - 0x5190; /* __rmqueue_pcplist comes before the function */
  assert_int_equal(before, CALLEE);
  put_call(code, 0x10, before);
  assert_int_equal(bh_cli_bulk_return_offset(code, sizeof(code), FUNC, CALLEE), 0x15);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_return_offset)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
