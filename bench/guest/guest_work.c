/*
 * guest_work: the workloads of the real-guest experiment, run inside the guest (a static
 * program in the initramfs, see build-initramfs).
 *
 *   guest_work memhog MIB ROUNDS SLEEP_S    allocate and write MIB of anonymous memory, free
 *                                           it, sleep; ROUNDS times (memhog of the seeds)
 *   guest_work pagefault1 SECONDS TASKS MIB will-it-scale page_fault1: TASKS processes each
 *                                           map MIB, write every page, unmap, for SECONDS;
 *                                           then SLEEP 10 s idle
 *   guest_work tmpfs MIB ROUNDS SLEEP_S     page cache and slab: write MIB of files of mixed
 *                                           sizes (4 KiB .. 1 MiB) under /tmp/bh-files, delete
 *                                           them, sleep; ROUNDS times
 *   guest_work malloc MIB ROUNDS SLEEP_S    malloc-heavy with mixed lifetimes: objects of
 *                                           16 B .. 256 KiB (log-uniform), 2 x MIB allocated
 *                                           per round with at most MIB live (a full pool frees
 *                                           a random object first); the free phase frees the
 *                                           short-lived ones; 1 object in 8 is long-lived and
 *                                           stays until the program exits (after "end")
 *   guest_work fork MIB ROUNDS SLEEP_S [N]  fork-heavy: the parent writes MIB/4 of its own;
 *                                           each round N children (16) each write their share
 *                                           of it (copy-on-write) and MIB/N of their own, wait
 *                                           until all are ready, and exit at the free marker
 *   guest_work thp MIB ROUNDS SLEEP_S       THP-heavy: 8 regions of MIB/8, 2 MiB aligned and
 *                                           madvise(MADV_HUGEPAGE), written, then unmapped
 *   guest_work threads MIB ROUNDS SLEEP_S   two threads, one on each of the first two CPUs, at
 *                                           once: each maps MIB/2 (MADV_NOHUGEPAGE) and writes
 *                                           it page by page, gives back half of each 256 KiB
 *                                           behind it (MADV_DONTNEED) and frees and mallocs a
 *                                           small object (16 B .. 8 KiB) per page; at the free
 *                                           marker both free their objects and unmap
 *
 * Every phase is announced by a marker, written at the same moment to the top-level ftrace
 * buffer (/sys/kernel/tracing/trace_marker, so that it carries the trace clock) and to
 * standard output, which is the serial console (so that the host can stamp it with its own
 * clock on arrival).  The host aligns its clock with the trace clock from these pairs.
 * Marker text: "bh: NAME ROUND" with NAME one of start, alloc, free, idle, end.
 * Any other program run in the guest (run-guest --workload-bin) follows the same protocol.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity */
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096ul
#define MIB (1ul << 20)

static int marker_fd = -1;

/* One marker, to the trace and to the console. */
static void mark(const char *name, int round) {
  char buf[128];
  int n = snprintf(buf, sizeof(buf), "bh: %s %d\n", name, round);
  if (marker_fd >= 0 && write(marker_fd, buf, (size_t)n) < 0)
    perror("guest_work: trace_marker");
  char line[160];
  int m = snprintf(line, sizeof(line), "@@%s", buf);
  if (write(STDOUT_FILENO, line, (size_t)m) < 0)
    _exit(3);
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void touch(unsigned char *p, size_t len) {
  for (size_t i = 0; i < len; i += PAGE)
    p[i] = (unsigned char)(i / PAGE + 1);
}

static int memhog(unsigned long mib, int rounds, double sleep) {
  for (int r = 1; r <= rounds; r++) {
    mark("alloc", r);
    size_t len = mib * MIB;
    unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      perror("guest_work: mmap");
      return 1;
    }
    touch(p, len);
    mark("free", r);
    munmap(p, len);
    mark("idle", r);
    sleep_s(sleep);
  }
  return 0;
}

static int pagefault1(double seconds, int tasks, unsigned long mib) {
  mark("alloc", 1);
  double end = now_s() + seconds;
  for (int t = 0; t < tasks; t++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("guest_work: fork");
      return 1;
    }
    if (pid == 0) {
      size_t len = mib * MIB;
      while (now_s() < end) {
        unsigned char *p =
            mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
          _exit(1);
        touch(p, len);
        munmap(p, len);
      }
      _exit(0);
    }
  }
  int rc = 0, st;
  while (wait(&st) > 0)
    if (!WIFEXITED(st) || WEXITSTATUS(st))
      rc = 1;
  mark("free", 1);
  mark("idle", 1);
  sleep_s(10);
  return rc;
}

static int tmpfs(unsigned long mib, int rounds, double sleep) {
  static unsigned char buf[1 << 20];
  memset(buf, 0x5a, sizeof(buf));
  const char *dir = "/tmp/bh-files";
  unsigned seed = 1;
  for (int r = 1; r <= rounds; r++) {
    mark("alloc", r);
    if (mkdir(dir, 0700) && errno != EEXIST) {
      perror("guest_work: mkdir");
      return 1;
    }
    unsigned long total = 0, n = 0;
    while (total < mib * MIB) {
      seed = seed * 1103515245u + 12345u;
      size_t len = PAGE << ((seed >> 16) % 9); /* 4 KiB .. 1 MiB */
      char path[64];
      snprintf(path, sizeof(path), "%s/f%lu", dir, n++);
      int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
        perror("guest_work: write");
        return 1;
      }
      close(fd);
      total += len;
    }
    mark("free", r);
    for (unsigned long i = 0; i < n; i++) {
      char path[64];
      snprintf(path, sizeof(path), "%s/f%lu", dir, i);
      unlink(path);
    }
    mark("idle", r);
    sleep_s(sleep);
  }
  return 0;
}

/* A random number in [0, n): xorshift, reproducible run to run. */
static unsigned long rnd(unsigned long n) {
  static unsigned long x = 88172645463325252ul;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x % n;
}

/* 16 B .. 256 KiB, log-uniform: a power of two 2^4 .. 2^18 times 1..2 */
static size_t malloc_size(void) {
  size_t base = (size_t)1 << (4 + rnd(15));
  return base + rnd(base);
}

struct obj {
  unsigned char *p;
  size_t len;
};

static int malloc_heavy(unsigned long mib, int rounds, double sleep) {
  size_t cap = 1u << 16; /* pool slots, short-lived */
  struct obj *pool = calloc(cap, sizeof(*pool));
  size_t lcap = 1u << 16, nlong = 0;
  struct obj *longs = calloc(lcap, sizeof(*longs));
  if (!pool || !longs)
    return 1;
  for (int r = 1; r <= rounds; r++) {
    mark("alloc", r);
    size_t live = 0, made = 0, n = 0;
    while (made < 2 * mib * MIB) {
      size_t len = malloc_size();
      unsigned char *p = malloc(len);
      if (!p) {
        perror("guest_work: malloc");
        return 1;
      }
      memset(p, (int)(made >> 12), len);
      made += len;
      if (rnd(8) == 0 && nlong < lcap) { /* long-lived: until exit */
        longs[nlong++] = (struct obj){p, len};
        continue;
      }
      while ((live + len > mib * MIB || n == cap) && n > 0) { /* a random one dies */
        size_t i = rnd(n);
        live -= pool[i].len;
        free(pool[i].p);
        pool[i] = pool[--n];
      }
      pool[n++] = (struct obj){p, len};
      live += len;
    }
    mark("free", r);
    while (n > 0)
      free(pool[--n].p);
    mark("idle", r);
    sleep_s(sleep);
  }
  return 0; /* the long-lived objects go at exit */
}

static int fork_heavy(unsigned long mib, int rounds, double sleep, int children) {
  size_t shared = mib * MIB / 4, own = mib * MIB / (size_t)children;
  unsigned char *p = mmap(NULL, shared, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("guest_work: mmap");
    return 1;
  }
  touch(p, shared);
  for (int r = 1; r <= rounds; r++) {
    mark("alloc", r);
    int ready[2], go[2];
    if (pipe(ready) || pipe(go)) {
      perror("guest_work: pipe");
      return 1;
    }
    for (int c = 0; c < children; c++) {
      pid_t pid = fork();
      if (pid < 0) {
        perror("guest_work: fork");
        return 1;
      }
      if (pid == 0) {
        close(go[1]);
        size_t slice = shared / (size_t)children;
        touch(p + (size_t)c * slice, slice); /* copy-on-write */
        unsigned char *q =
            mmap(NULL, own, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q == MAP_FAILED)
          _exit(1);
        touch(q, own);
        char b = 1, e;
        if (write(ready[1], &b, 1) != 1)
          _exit(1);
        while (read(go[0], &e, 1) < 0 && errno == EINTR) /* EOF: the free marker */
          ;
        _exit(0);
      }
    }
    close(ready[1]);
    close(go[0]);
    char b;
    for (int c = 0; c < children; c++)
      if (read(ready[0], &b, 1) != 1)
        break;
    close(ready[0]);
    mark("free", r);
    close(go[1]);
    int rc = 0, st;
    while (wait(&st) > 0)
      if (!WIFEXITED(st) || WEXITSTATUS(st))
        rc = 1;
    if (rc)
      return 1;
    mark("idle", r);
    sleep_s(sleep);
  }
  return 0; /* the parent's own memory goes at exit */
}

static int thp_heavy(unsigned long mib, int rounds, double sleep) {
  enum { NREG = 8 };
  size_t huge = 2 * MIB, len = (mib * MIB / NREG + huge - 1) & ~(huge - 1);
  for (int r = 1; r <= rounds; r++) {
    mark("alloc", r);
    unsigned char *reg[NREG];
    for (int i = 0; i < NREG; i++) {
      unsigned char *m =
          mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) {
        perror("guest_work: mmap");
        return 1;
      }
      unsigned char *a = (unsigned char *)(((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1));
      if (a > m)
        munmap(m, (size_t)(a - m));
      munmap(a + len, (size_t)(m + huge - a));
      if (madvise(a, len, MADV_HUGEPAGE))
        perror("guest_work: madvise(MADV_HUGEPAGE)");
      touch(a, len);
      reg[i] = a;
    }
    mark("free", r);
    for (int i = 0; i < NREG; i++)
      munmap(reg[i], len);
    mark("idle", r);
    sleep_s(sleep);
  }
  return 0;
}

/* One thread of threads(): its CPU, its half and its objects. */
struct half {
  int cpu;
  size_t len;
  pthread_barrier_t *bar;
  int rc;
};

static void *half_run(void *arg) {
  struct half *h = arg;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(h->cpu, &set);
  sched_setaffinity(0, sizeof(set), &set); /* one CPU has no second: then where it may */
  enum { OBJS = 4096 };
  static __thread void *obj[OBJS];
  unsigned x = 12345u + (unsigned)h->cpu; /* reproducible run to run */
  unsigned char *p = mmap(NULL, h->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("guest_work: mmap");
    h->rc = 1;
  } else {
    madvise(p, h->len, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < h->len / PAGE; i++) {
      p[i * PAGE] = (unsigned char)(i + 1);
      if (i % 64 == 63) /* half of the 256 KiB just written goes back */
        madvise(p + (i - 63) * PAGE, 32 * PAGE, MADV_DONTNEED);
      x = x * 1103515245u + 12345u;
      unsigned k = (x >> 8) % OBJS;
      free(obj[k]);
      obj[k] = malloc(16 + (x >> 20) % 8192);
      if (obj[k])
        memset(obj[k], 2, 16);
    }
  }
  pthread_barrier_wait(h->bar); /* written */
  pthread_barrier_wait(h->bar); /* the free marker */
  for (int k = 0; k < OBJS; k++) {
    free(obj[k]);
    obj[k] = NULL;
  }
  if (p != MAP_FAILED)
    munmap(p, h->len);
  return NULL;
}

static int threads(unsigned long mib, int rounds, double sleep) {
  for (int r = 1; r <= rounds; r++) {
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 3);
    struct half h[2];
    pthread_t t[2];
    mark("alloc", r);
    for (int i = 0; i < 2; i++) {
      h[i] = (struct half){.cpu = i, .len = mib * MIB / 2, .bar = &bar};
      if (pthread_create(&t[i], NULL, half_run, &h[i])) {
        perror("guest_work: pthread_create");
        return 1;
      }
    }
    pthread_barrier_wait(&bar);
    mark("free", r);
    pthread_barrier_wait(&bar);
    for (int i = 0; i < 2; i++)
      pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    mark("idle", r);
    if (h[0].rc || h[1].rc)
      return 1;
    sleep_s(sleep);
  }
  return 0;
}

static void usage(void) {
  fprintf(stderr, "usage: guest_work memhog MIB ROUNDS SLEEP_S\n"
                  "       guest_work pagefault1 SECONDS TASKS MIB\n"
                  "       guest_work tmpfs MIB ROUNDS SLEEP_S\n"
                  "       guest_work malloc MIB ROUNDS SLEEP_S\n"
                  "       guest_work fork MIB ROUNDS SLEEP_S [CHILDREN]\n"
                  "       guest_work thp MIB ROUNDS SLEEP_S\n"
                  "       guest_work threads MIB ROUNDS SLEEP_S\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc != 5 && !(argc == 6 && !strcmp(argv[1], "fork")))
    usage();
  setvbuf(stdout, NULL, _IONBF, 0);
  marker_fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY | O_CLOEXEC);
  if (marker_fd < 0)
    perror("guest_work: /sys/kernel/tracing/trace_marker (markers go to the console only)");
  int rc;
  mark("start", 0);
  if (!strcmp(argv[1], "memhog"))
    rc = memhog(strtoul(argv[2], NULL, 10), atoi(argv[3]), atof(argv[4]));
  else if (!strcmp(argv[1], "pagefault1"))
    rc = pagefault1(atof(argv[2]), atoi(argv[3]), strtoul(argv[4], NULL, 10));
  else if (!strcmp(argv[1], "tmpfs"))
    rc = tmpfs(strtoul(argv[2], NULL, 10), atoi(argv[3]), atof(argv[4]));
  else if (!strcmp(argv[1], "malloc"))
    rc = malloc_heavy(strtoul(argv[2], NULL, 10), atoi(argv[3]), atof(argv[4]));
  else if (!strcmp(argv[1], "fork"))
    rc = fork_heavy(strtoul(argv[2], NULL, 10), atoi(argv[3]), atof(argv[4]),
                    argc == 6 && atoi(argv[5]) > 0 ? atoi(argv[5]) : 16);
  else if (!strcmp(argv[1], "thp"))
    rc = thp_heavy(strtoul(argv[2], NULL, 10), atoi(argv[3]), atof(argv[4]));
  else if (!strcmp(argv[1], "threads"))
    rc = threads(strtoul(argv[2], NULL, 10), atoi(argv[3]), atof(argv[4]));
  else
    usage();
  mark("end", 0);
  return rc;
}
