/*
 * The host side of free page reporting.
 *
 * In a virtualised Linux guest, mm/page_reporting.c isolates up to 32 free blocks of order >=
 * page_reporting_order, puts them in a scatterlist and calls the virtio-balloon driver, which
 * queues the list on the reporting virtqueue and sleeps until the host hands it back
 * (virtballoon_free_page_report).  On the host, QEMU's virtio_balloon_handle_report walks the
 * entries and calls ram_block_discard_range() on each: for guest RAM backed by a file or memfd
 * that is fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE), for private anonymous RAM
 * madvise(MADV_DONTNEED).  The guest's next touch of such a page faults in a zeroed page.
 *
 * Here the "guest RAM" is the arena's data mapping and the host is the kernel that runs us, so
 * a report is the same system call QEMU would make, on the same kind of memory:
 *
 *   DONTNEED  madvise(MADV_DONTNEED)  private anonymous arena: freed now, refaults read zero.
 *                                     On a memfd (shared) arena it only unmaps: the pages stay
 *                                     in the memfd and keep their data, as shmem does.
 *   FREE      madvise(MADV_FREE)      freed lazily when the host needs memory; a write first
 *                                     keeps the page (private anonymous only).
 *   PUNCH     fallocate(PUNCH_HOLE)   memfd arena, as QEMU for file-backed RAM.
 *   NONE      nothing                 counted only: the host's cost left out (and sim backing).
 *
 * The batch is copied and sorted by pfn, and ranges that touch (end of one == start of the
 * next) are discarded by one call, as a host would merge adjacent scatterlist entries.  The
 * call is synchronous, like the report it models.  Every reported page is marked in the
 * arena's `discarded` bitmap (bh__discard_mark; the core owns it, src/buddy/discard.c), and
 * the allocator counts the refault the guest would take on the host when it hands such a page
 * out again.
 */
#include "hinting/reporter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct bh__reporter {
  bh_arena_t *arena;
  bh_report_mode_t mode;
  bool owns_bitmap;
  _Atomic uint64_t calls, ranges, bytes, ns, errors, returned;
};

/* ---- modes ------------------------------------------------------------------------------- */

static const char *const bh__mode_names[] = {
    [BH_REPORT_DONTNEED] = "dontneed",
    [BH_REPORT_FREE] = "free",
    [BH_REPORT_PUNCH] = "punch",
    [BH_REPORT_NONE] = "none",
};
#define BH__NR_MODES (sizeof bh__mode_names / sizeof bh__mode_names[0])

const char *bh_report_mode_name(bh_report_mode_t mode) {
  return (unsigned)mode < BH__NR_MODES ? bh__mode_names[mode] : "?";
}

int bh_report_mode_parse(const char *s, bh_report_mode_t *out) {
  if (s == NULL || out == NULL)
    return BH_EINVAL;
  for (unsigned m = 0; m < BH__NR_MODES; m++) {
    if (strcasecmp(s, bh__mode_names[m]) == 0) {
      *out = (bh_report_mode_t)m;
      return 0;
    }
  }
  return BH_ENOENT;
}

/* ---- create / destroy -------------------------------------------------------------------- */

/* Whether arena a can be discarded in mode: 0, BH_EINVAL or BH_ENOTSUP. */
static int bh__mode_check(const bh_arena_t *a, bh_report_mode_t mode) {
  if ((unsigned)mode >= BH__NR_MODES)
    return BH_EINVAL;
  if (mode == BH_REPORT_NONE)
    return 0;
  if (a->cfg.backing == BH_BACKING_SIM)
    return BH_ENOTSUP;
  if (a->base == NULL)
    return BH_EINVAL;
  if (sysconf(_SC_PAGESIZE) != (long)BH_PAGE_SIZE)
    return BH_ENOTSUP; /* QEMU, too, ignores ranges smaller than the host page */
  if (mode == BH_REPORT_PUNCH && a->memfd < 0)
    return BH_ENOTSUP;
  if (mode == BH_REPORT_FREE && a->memfd >= 0)
    return BH_ENOTSUP; /* MADV_FREE fails with EINVAL on shared mappings */
  return 0;
}

int bh__reporter_create(bh_arena_t *a, bh_report_mode_t mode, bh__reporter_t **out) {
  if (a == NULL || out == NULL)
    return BH_EINVAL;
  int err = bh__mode_check(a, mode);
  if (err)
    return err;
  bh__reporter_t *r = calloc(1, sizeof *r);
  if (r == NULL)
    return BH_ENOMEM;
  r->arena = a;
  r->mode = mode;
  int made = bh__discard_enable(a);
  if (made < 0) {
    free(r);
    return made;
  }
  r->owns_bitmap = made == 1;
  *out = r;
  return 0;
}

void bh__reporter_destroy(bh__reporter_t *r) {
  if (r == NULL)
    return;
  if (r->owns_bitmap)
    bh__discard_disable(r->arena);
  free(r);
}

bh_report_mode_t bh__reporter_mode(const bh__reporter_t *r) { return r->mode; }

/* ---- report ------------------------------------------------------------------------------ */

static int bh__range_cmp(const void *x, const void *y) {
  const bh_report_range_t *a = x, *b = y;
  return (a->pfn > b->pfn) - (a->pfn < b->pfn);
}

/* Checks one range against the arena: 0, BH_EINVAL, BH_EALIGN or BH_EFAULT. */
static int bh__range_check(const bh_arena_t *a, const bh_report_range_t *rg) {
  if (rg->order > BH_ORDER_LIMIT)
    return BH_EINVAL;
  uint64_t n = 1ULL << rg->order;
  if (rg->pfn & (n - 1))
    return BH_EALIGN;
  if (rg->pfn >= a->nr_pages || n > a->nr_pages - rg->pfn)
    return BH_EFAULT;
  return 0;
}

/* Checks a sorted batch: every range valid, no two overlapping. */
static int bh__batch_check(const bh_arena_t *a, const bh_report_range_t *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int err = bh__range_check(a, &v[i]);
    if (err)
      return err;
    if (i > 0 && v[i - 1].pfn + (1ULL << v[i - 1].order) > v[i].pfn)
      return BH_EINVAL;
  }
  return 0;
}

static uint64_t bh__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The system call of the mode on pages [pfn, pfn + n): 0 or -1 with errno. */
static int bh__discard_call(const bh__reporter_t *r, uint64_t pfn, uint64_t n) {
  const bh_arena_t *a = r->arena;
  size_t off = (size_t)(pfn << BH_PAGE_SHIFT), len = (size_t)(n << BH_PAGE_SHIFT);
  switch (r->mode) {
  case BH_REPORT_DONTNEED:
    return madvise(a->base + off, len, MADV_DONTNEED);
  case BH_REPORT_FREE:
    return madvise(a->base + off, len, MADV_FREE);
  case BH_REPORT_PUNCH:
    return fallocate(a->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len);
  default:
    return 0;
  }
}

/* How many of pages [pfn, pfn + n) of the arena's mapping are resident, by mincore (a page
 * mincore cannot tell counts as not resident). */
static uint64_t bh__mincore_pages(const bh_arena_t *a, uint64_t pfn, uint64_t n) {
  unsigned char v[1024];
  uint64_t resident = 0;
  for (uint64_t done = 0; done < n;) {
    uint64_t k = n - done < sizeof v ? n - done : sizeof v;
    if (mincore(a->base + ((pfn + done) << BH_PAGE_SHIFT), k << BH_PAGE_SHIFT, v) == 0)
      for (uint64_t i = 0; i < k; i++)
        resident += v[i] & 1;
    done += k;
  }
  return resident;
}

/*
 * Discards one coalesced run of `nranges` ranges; returns 0 or the errno of a failed call.
 * The pages the run took back (returned) are, in real memory, those mincore sees resident
 * before the call and gone after it (MADV_FREE leaves them until the host needs them: none;
 * MADV_DONTNEED on a memfd only unmaps: none), and in an owner's model of written pages (the
 * replay's sim backing), those written and not discarded yet: the same meaning of resident,
 * as resident memory is the pages written and not discarded since.
 */
static int bh__discard_run(bh__reporter_t *r, uint64_t pfn, uint64_t n, size_t nranges) {
  const bh_arena_t *a = r->arena;
  bool real = r->mode != BH_REPORT_NONE && a->touched == NULL;
  uint64_t before = real ? bh__mincore_pages(a, pfn, n) : 0;
  if (r->mode != BH_REPORT_NONE) {
    uint64_t t0 = bh__now_ns();
    int rc = bh__discard_call(r, pfn, n);
    int saved = errno;
    atomic_fetch_add_explicit(&r->ns, bh__now_ns() - t0, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->calls, 1, memory_order_relaxed);
    if (rc != 0) {
      atomic_fetch_add_explicit(&r->errors, 1, memory_order_relaxed);
      return saved ? saved : EIO;
    }
  }
  uint64_t modelled = bh__discard_mark(r->arena, pfn, n);
  uint64_t after = before ? bh__mincore_pages(a, pfn, n) : 0;
  uint64_t returned = real ? (before > after ? before - after : 0) : modelled;
  atomic_fetch_add_explicit(&r->returned, returned << BH_PAGE_SHIFT, memory_order_relaxed);
  atomic_fetch_add_explicit(&r->ranges, nranges, memory_order_relaxed);
  atomic_fetch_add_explicit(&r->bytes, n << BH_PAGE_SHIFT, memory_order_relaxed);
  return 0;
}

/* Walks a sorted, checked batch and discards each run of touching ranges. */
static int bh__discard_sorted(bh__reporter_t *r, const bh_report_range_t *v, size_t n) {
  int first_errno = 0;
  size_t i = 0;
  while (i < n) {
    uint64_t start = v[i].pfn, end = start + (1ULL << v[i].order);
    size_t j = i + 1;
    for (; j < n && v[j].pfn == end; j++)
      end += 1ULL << v[j].order;
    int e = bh__discard_run(r, start, end - start, j - i);
    if (e && !first_errno)
      first_errno = e;
    i = j;
  }
  if (first_errno) {
    errno = first_errno;
    return BH_ESYS;
  }
  return 0;
}

int bh__reporter_report(bh__reporter_t *r, const bh_report_range_t *ranges, size_t n) {
  if (r == NULL || (ranges == NULL && n > 0))
    return BH_EINVAL;
  if (n == 0)
    return 0;
  bh_report_range_t local[BH_REPORT_CAPACITY];
  bh_report_range_t *v = local;
  if (n > BH_REPORT_CAPACITY) {
    v = malloc(n * sizeof *v);
    if (v == NULL)
      return BH_ENOMEM;
  }
  memcpy(v, ranges, n * sizeof *v);
  qsort(v, n, sizeof *v, bh__range_cmp);
  int err = bh__batch_check(r->arena, v, n);
  if (err == 0)
    err = bh__discard_sorted(r, v, n);
  if (v != local) {
    int saved = errno;
    free(v);
    errno = saved;
  }
  return err;
}

void bh__reporter_stats(const bh__reporter_t *r, bh_reporter_stats_t *out) {
  out->calls = atomic_load_explicit(&r->calls, memory_order_relaxed);
  out->ranges = atomic_load_explicit(&r->ranges, memory_order_relaxed);
  out->bytes = atomic_load_explicit(&r->bytes, memory_order_relaxed);
  out->ns = atomic_load_explicit(&r->ns, memory_order_relaxed);
  out->errors = atomic_load_explicit(&r->errors, memory_order_relaxed);
  out->returned = atomic_load_explicit(&r->returned, memory_order_relaxed);
}
