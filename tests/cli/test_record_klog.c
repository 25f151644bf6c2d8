/*
 * record's reading of the kernel log (src/cli/record/record_machine.c): the KiB freed after
 * mem_init's "Memory:" line, which a 6.12 replay takes off a zone's managed pages to find the
 * pcp cap the kernel computed at boot.  The lines are those a 6.12.117 guest printed.
 */
#include "cli/record/record_machine.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

static const char guest[] =
    "<6>[    0.092624] Built 1 zonelists, mobility grouping on.  Total pages: 262011\n"
    "<6>[    0.095110] Freeing early memory: 12K\n" /* before mem_init: not counted */
    "<6>[    0.457161] Freeing SMP alternatives memory: 40K\n"
    "<6>[    0.855967] Memory: 973916K/1048044K available (16384K kernel code, 2499K rwdata, "
    "11716K rodata, 4264K init, 4904K bss, 69952K reserved, 0K cma-reserved)\n"
    "<6>[    2.112756] Freeing initrd memory: 3516K\n"
    "<6>[    3.815886] Freeing unused decrypted memory: 2028K\n"
    "<6>[    4.008551] Freeing unused kernel image (initmem) memory: 4264K\n"
    "<6>[    4.020733] Freeing unused kernel image (rodata/data gap) memory: 572K\n"
    "<6>[    4.100000] Freeing nothing memory: K\n" /* no number: not counted */
    "<6>[    5.000000] virtio_net virtio1 eth0: renamed\n";

static void test_boot_freed(void **state) {
  (void)state;
  /* from mem_init's line on: the initrd, the decrypted and init sections, the rodata gap
   * (the SMP alternatives, printed before it, are not counted: 10 pages, under one page of a
   * 2-CPU cap, which divides the managed pages by 16) */
  assert_int_equal(bh_cli_rec_boot_freed_kb_of(guest, strlen(guest)), 3516 + 2028 + 4264 + 572);
  /* a log that no longer holds the boot's lines says nothing */
  const char *late = strstr(guest, "<6>[    2.112756]");
  assert_int_equal(bh_cli_rec_boot_freed_kb_of(late, strlen(late)), -1);
  assert_int_equal(bh_cli_rec_boot_freed_kb_of("", 0), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_boot_freed)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
