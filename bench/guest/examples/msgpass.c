/*
 * msgpass: a workload of a user's own for `run-guest --workload-bin` (an example of the
 * marker protocol, bench/guest/run-guest --help).  A message queue between two threads on two
 * CPUs: per round a producer pinned to CPU 0 mallocs messages of 64 B to 512 KiB (glibc
 * malloc: the producer's arena, the largest mmapped), fills them and passes them through a
 * ring to a consumer pinned to CPU 1, which reads each, keeps 1 in 4 in a backlog and frees
 * the rest (so pages faulted on one CPU are freed on the other); then the consumer frees the
 * backlog and malloc_trim gives the heaps back.
 *
 *   cc -O2 -static -pthread -o msgpass msgpass.c
 *   bench/guest/run-guest --out DIR --workload-bin msgpass --workload-args MIB,ROUNDS,IDLE_S
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np, pipe2, F_SETPIPE_SZ */
#endif
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int marker_fd = -1;

/* "bh: NAME R" to trace_marker (the trace's clock) and "@@bh: NAME R" to the console. */
static void mark(const char *name, int round) {
  char buf[96], line[128];
  int n = snprintf(buf, sizeof(buf), "bh: %s %d\n", name, round);
  if (marker_fd >= 0 && write(marker_fd, buf, (size_t)n) < 0)
    perror("msgpass: trace_marker");
  int m = snprintf(line, sizeof(line), "@@%s", buf);
  if (write(STDOUT_FILENO, line, (size_t)m) < 0)
    _exit(3);
}

enum { RING = 1024 };

struct msg {
  size_t len;
  unsigned char body[];
};

static struct msg *ring[RING];
static size_t head, tail; /* producer writes head, consumer tail; under lock */
static int done;          /* the producer has sent its last message of the round */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static struct msg **backlog;
static size_t nbacklog, capbacklog;
static size_t round_bytes;

/* Pins the calling thread to one CPU; a guest with one CPU keeps both threads on it. */
static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static unsigned long long next(unsigned long long *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* 70 % of 64 B-2 KiB, 25 % of 2-64 KiB, 5 % of 64-512 KiB */
static size_t msg_size(unsigned long long *s) {
  unsigned long long r = next(s) % 100;
  if (r < 70)
    return 64 + next(s) % 1984;
  if (r < 95)
    return 2048 + next(s) % (62 * 1024);
  return 65536 + next(s) % (448 * 1024);
}

static void *producer(void *arg) {
  unsigned long long s = 0x2545F4914F6CDD1DULL + (size_t)arg;
  pin(0);
  size_t sent = 0;
  while (sent < round_bytes) {
    size_t len = msg_size(&s);
    struct msg *m = malloc(sizeof(*m) + len);
    if (!m)
      break;
    m->len = len;
    memset(m->body, (int)(sent & 0xff), len);
    sent += len;
    pthread_mutex_lock(&lock);
    while (head - tail == RING)
      pthread_cond_wait(&cv, &lock);
    ring[head++ % RING] = m;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&lock);
  }
  pthread_mutex_lock(&lock);
  done = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&lock);
  return NULL;
}

static void *consumer(void *arg) {
  unsigned long long s = 0x9E3779B97F4A7C15ULL + (size_t)arg, sum = 0;
  pin(1);
  for (;;) {
    pthread_mutex_lock(&lock);
    while (head == tail && !done)
      pthread_cond_wait(&cv, &lock);
    if (head == tail && done) {
      pthread_mutex_unlock(&lock);
      break;
    }
    struct msg *m = ring[tail++ % RING];
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < m->len; i += 4096)
      sum += m->body[i];
    if (next(&s) % 4 == 0 && nbacklog < capbacklog)
      backlog[nbacklog++] = m;
    else
      free(m);
  }
  return (void *)(size_t)(sum & 1);
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 160;
  int rounds = argc > 2 ? atoi(argv[2]) : 3, idle = argc > 3 ? atoi(argv[3]) : 15;
  capbacklog = 1 << 20;
  backlog = calloc(capbacklog, sizeof(*backlog));
  if (!backlog || !mib || rounds < 1 || idle < 0) {
    fprintf(stderr, "usage: msgpass [MIB [ROUNDS [IDLE_S]]]\n");
    return 2;
  }
  round_bytes = mib << 20;
  marker_fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY);
  mark("start", 0);
  for (int r = 1; r <= rounds; r++) {
    pthread_t p, c;
    mark("alloc", r);
    done = 0;
    if (pthread_create(&c, NULL, consumer, (void *)(size_t)r) ||
        pthread_create(&p, NULL, producer, (void *)(size_t)r)) {
      perror("msgpass: pthread_create");
      return 1;
    }
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    mark("free", r);
    /* the last round keeps 1 in 8 of the backlog until exit */
    size_t kept = 0;
    for (size_t i = 0; i < nbacklog; i++)
      if (r < rounds || i % 8)
        free(backlog[i]);
      else
        backlog[kept++] = backlog[i];
    nbacklog = kept;
    malloc_trim(0);
    mark("idle", r);
    sleep((unsigned)idle);
  }
  mark("end", 0);
  return 0;
}
