/*
 * The kprobe events `buddyhint record` makes for the pages alloc_pages_bulk takes
 * (src/cli/record/record_bulk.c), decoded by src/trace/kmem_decode.c: the gfp mask at the
 * call's entry kept per CPU, each page an order-0 allocation of that mask at the page's index
 * in the vmemmap (64-byte struct page), a null page nothing, a pointer off the vmemmap's grid
 * an error.  The formats are those the kernel writes for such events (6.12's kprobe events).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "trace/kmem_decode.h"

#include <buddyhint.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#if BH_HAVE_TRACEEVENT

#define SYS "buddyhint_42"
#define BASE 0xffd2daf3c0000000ull

#define COMMON                                                                                     \
  "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"                           \
  "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"                           \
  "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"                   \
  "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"                                     \
  "\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n"

static const char call_fmt[] = "name: bulk_call\nID: 2001\nformat:\n" COMMON
                               "\tfield:u32 gfp;\toffset:16;\tsize:4;\tsigned:0;\n\n"
                               "print fmt: \"(%lx) gfp=0x%x\", REC->__probe_ip, REC->gfp\n";
static const char page_fmt[] = "name: bulk_page\nID: 2002\nformat:\n" COMMON
                               "\tfield:u64 page;\toffset:16;\tsize:8;\tsigned:0;\n"
                               "\tfield:u64 base;\toffset:24;\tsize:8;\tsigned:0;\n\n"
                               "print fmt: \"(%lx) page=0x%Lx base=0x%Lx\", REC->__probe_ip, "
                               "REC->page, REC->base\n";

/* A record of event id on cpu with the u64 fields after the probe's ip. */
static struct tep_record record(uint8_t *buf, uint16_t id, int cpu, uint64_t a, uint64_t b,
                                int size) {
  memset(buf, 0, 32);
  memcpy(buf, &id, 2);
  int32_t pid = 77;
  memcpy(buf + 4, &pid, 4);
  memcpy(buf + 16, &a, 8);
  memcpy(buf + 24, &b, 8);
  return (struct tep_record){.ts = 1000, .cpu = cpu, .data = buf, .size = size};
}

/* A decoder of a tep that has bulk_call, and bulk_page too if with_page. */
static bh__kmem_decoder_t *bulk_decoder(bool with_page, struct tep_handle **tep_out) {
  struct tep_handle *tep = tep_alloc();
  assert_non_null(tep);
  tep_set_long_size(tep, 8);
  assert_int_equal(tep_parse_event(tep, call_fmt, sizeof(call_fmt) - 1, SYS), 0);
  if (with_page)
    assert_int_equal(tep_parse_event(tep, page_fmt, sizeof(page_fmt) - 1, SYS), 0);
  bh__kmem_decoder_t *d;
  char msg[160] = "";
  assert_int_equal(bh__kmem_decoder_new(tep, &d, msg, sizeof(msg)), 0);
  assert_int_equal(bh__kmem_decoder_add_bulk(d, SYS, msg, sizeof(msg)), 0);
  *tep_out = tep;
  return d;
}

static void test_bulk_decode(void **state) {
  (void)state;
  struct tep_handle *tep;
  bh__kmem_decoder_t *d = bulk_decoder(true, &tep);
  uint8_t buf[32];
  bh_event_t ev;
  uint64_t unknown = 0;
  const char *why;
  /* a page before any call on its CPU: an allocation of an unknown mask */
  struct tep_record r = record(buf, 2002, 0, BASE + 0x1604a * 64, BASE, 32);
  assert_int_equal(bh__kmem_decode(d, &r, &ev, &unknown, &why), 1);
  assert_int_equal(ev.op, BH_EV_ALLOC);
  assert_int_equal(ev.pfn, 0x1604a);
  assert_int_equal(ev.order, 0);
  assert_int_equal(ev.migratetype, -1);
  assert_int_equal(ev.pid, 77);
  assert_int_equal(ev.bulk, 1); /* no mm_page_alloc: no free_count halving either */
  /* the call's mask, GFP_KERNEL | __GFP_MOVABLE in 6.12's bits (0xcc0 | 0x8:
   * include/linux/gfp_types.h:30, :68, :378), is no event; the pages taken on its CPU are
   * allocations of it, Movable (gfp_migratetype) */
  r = record(buf, 2001, 1, 0xcc8, 0, 32);
  assert_int_equal(bh__kmem_decode(d, &r, &ev, &unknown, &why), 0);
  r = record(buf, 2002, 1, BASE + 0x12345ull * 64, BASE, 32);
  assert_int_equal(bh__kmem_decode(d, &r, &ev, &unknown, &why), 1);
  assert_int_equal(ev.pfn, 0x12345);
  assert_int_equal(ev.migratetype, BH_MT_MOVABLE);
  assert_true(ev.gfp & BH_GFP_MOVABLE);
  assert_int_equal(ev.cpu, 1);
  /* ... not another CPU's */
  r = record(buf, 2002, 0, BASE + 64, BASE, 32);
  assert_int_equal(bh__kmem_decode(d, &r, &ev, &unknown, &why), 1);
  assert_int_equal(ev.migratetype, -1);
  /* an empty list's null page is no allocation */
  r = record(buf, 2002, 1, 0, BASE, 32);
  assert_int_equal(bh__kmem_decode(d, &r, &ev, &unknown, &why), 0);
  /* a pointer off the vmemmap's 64-byte grid, or below it, is an error; so is a short record */
  r = record(buf, 2002, 1, BASE + 100, BASE, 32);
  assert_int_equal(bh__kmem_decode(d, &r, &ev, &unknown, &why), -1);
  assert_non_null(why);
  r = record(buf, 2002, 1, BASE - 64, BASE, 32);
  assert_int_equal(bh__kmem_decode(d, &r, &ev, &unknown, &why), -1);
  r = record(buf, 2002, 1, BASE + 64, BASE, 24);
  assert_int_equal(bh__kmem_decode(d, &r, &ev, &unknown, &why), -1);
  assert_int_equal(unknown, 0);
  bh__kmem_decoder_free(d);
  tep_free(tep);
  /* without both events in tep, adding them is no error, and a call is nothing to decode */
  d = bulk_decoder(false, &tep);
  r = record(buf, 2001, 0, 0xcc0, 0, 32);
  assert_int_equal(bh__kmem_decode(d, &r, &ev, &unknown, &why), 0);
  bh__kmem_decoder_free(d);
  tep_free(tep);
}

/*
 * The vmstat worker's runs as `buddyhint record --pcp-events` records them:
 * workqueue:workqueue_execute_start (Linux 6.12 include/trace/events/workqueue.h: fields work
 * and function), a BH_EV_VMSTAT where the function is vmstat_update's address, not ours for
 * another work function (the kernel's filter lets none through; a decoder still tells them
 * apart), an error for a record too short for its function.
 */
static const char wq_fmt[] =
    "name: workqueue_execute_start\nID: 2003\nformat:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    "\tfield:void * work;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n\n"
    "print fmt: \"work struct %p: function %ps\", REC->work, REC->function\n";

static void test_vmstat_decode(void **state) {
  (void)state;
  static const uint64_t VMSTAT_UPDATE = 0xffffffff8a2b1c40ull;
  struct tep_handle *tep = tep_alloc();
  assert_non_null(tep);
  tep_set_long_size(tep, 8);
  assert_int_equal(tep_parse_event(tep, wq_fmt, sizeof(wq_fmt) - 1, "workqueue"), 0);
  bh__kmem_decoder_t *d;
  char msg[160] = "";
  assert_int_equal(bh__kmem_decoder_new(tep, &d, msg, sizeof(msg)), 0);
  assert_int_equal(bh__kmem_decoder_add_vmstat(d, VMSTAT_UPDATE, msg, sizeof(msg)), 0);
  uint8_t buf[32];
  bh_event_t ev;
  uint64_t unknown = 0;
  const char *why;
  struct tep_record r = record(buf, 2003, 1, VMSTAT_UPDATE, 0, 24);
  memcpy(buf + 8, &(uint64_t){0xffff8880012345a0ull}, 8); /* work, then function */
  memcpy(buf + 16, &(uint64_t){VMSTAT_UPDATE}, 8);
  assert_int_equal(bh__kmem_decode(d, &r, &ev, &unknown, &why), 1);
  assert_int_equal(ev.op, BH_EV_VMSTAT);
  assert_int_equal(ev.cpu, 1);
  assert_int_equal(ev.pid, 77);
  assert_int_equal(ev.time_ns, 1000);
  assert_int_equal(ev.pfn, 0);
  assert_int_equal(ev.order, 0);
  assert_int_equal(ev.migratetype, -1);
  memcpy(buf + 16, &(uint64_t){VMSTAT_UPDATE + 0x40}, 8); /* another work function */
  assert_int_equal(bh__kmem_decode(d, &r, &ev, &unknown, &why), 0);
  r.size = 20; /* ends inside the function field */
  assert_int_equal(bh__kmem_decode(d, &r, &ev, &unknown, &why), -1);
  assert_non_null(why);
  bh__kmem_decoder_free(d);
  tep_free(tep);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_bulk_decode),
                                     cmocka_unit_test(test_vmstat_decode)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

int main(void) {
  printf("built without libtraceevent: nothing to decode\n");
  return 0;
}

#endif
