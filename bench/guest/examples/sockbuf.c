/*
 * sockbuf: a workload of a user's own for `run-guest --workload-bin` (an example of the marker
 * protocol, bench/guest/run-guest --help).  A broker's buffers held by the kernel, not by
 * malloc: per round a writer fills Unix stream sockets (their skbs take the kernel's page
 * fragments, blocks of up to order 3) and pipes (a page per buffer) with messages nobody has
 * read yet, half the amount each; then a reader process drains them, in random order, and
 * the pages go back where it runs.  The user program maps almost nothing itself.
 *
 *   cc -O2 -static -o sockbuf sockbuf.c
 *   bench/guest/run-guest --out DIR --workload-bin sockbuf --workload-args MIB,ROUNDS,IDLE_S
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np, pipe2, F_SETPIPE_SZ */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int marker_fd = -1;

/* "bh: NAME R" to trace_marker (the trace's clock) and "@@bh: NAME R" to the console. */
static void mark(const char *name, int round) {
  char buf[96], line[128];
  int n = snprintf(buf, sizeof(buf), "bh: %s %d\n", name, round);
  if (marker_fd >= 0 && write(marker_fd, buf, (size_t)n) < 0)
    perror("sockbuf: trace_marker");
  int m = snprintf(line, sizeof(line), "@@%s", buf);
  if (write(STDOUT_FILENO, line, (size_t)m) < 0)
    _exit(3);
}

static unsigned long long rng = 0xD1B54A32D192ED03ULL;

static unsigned long long next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

enum { MAXCH = 960, MSG = 64 * 1024 };

struct chan {
  int rd, wr;
};

/* Writes to one channel until it would block or `left` bytes are queued; returns bytes. */
static size_t fill(int fd, size_t left, unsigned char *buf) {
  size_t queued = 0;
  while (queued < left) {
    size_t len = 256 + next() % (MSG - 256);
    if (len > left - queued)
      len = left - queued;
    ssize_t n = write(fd, buf, len);
    if (n <= 0)
      break;
    queued += (size_t)n;
  }
  return queued;
}

/* Reads a channel empty (both ends are nonblocking). */
static void drain(int fd, unsigned char *buf) {
  while (read(fd, buf, MSG) > 0)
    ;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 160;
  int rounds = argc > 2 ? atoi(argv[2]) : 3, idle = argc > 3 ? atoi(argv[3]) : 15;
  static unsigned char buf[MSG];
  static struct chan ch[MAXCH];
  if (!mib || rounds < 1 || idle < 0) {
    fprintf(stderr, "usage: sockbuf [MIB [ROUNDS [IDLE_S]]]\n");
    return 2;
  }
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &rl);
  }
  int nch = 0;
  for (; nch < MAXCH; nch++) {
    int fds[2];
    if (nch % 2 == 0) {
      if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
        break;
      int sz = 1 << 20; /* capped by net.core.wmem_max */
      (void)setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
      ch[nch].rd = fds[0];
      ch[nch].wr = fds[1];
    } else {
      if (pipe2(fds, 0))
        break;
      (void)fcntl(fds[1], F_SETPIPE_SZ, 1 << 20); /* fs.pipe-max-size */
      ch[nch].rd = fds[0];
      ch[nch].wr = fds[1];
    }
    (void)fcntl(ch[nch].rd, F_SETFL, O_NONBLOCK);
    (void)fcntl(ch[nch].wr, F_SETFL, O_NONBLOCK);
  }
  if (nch < 2) {
    perror("sockbuf: socketpair/pipe");
    return 1;
  }
  memset(buf, 0x5a, sizeof(buf));
  marker_fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY);
  mark("start", 0);
  for (int r = 1; r <= rounds; r++) {
    mark("alloc", r);
    /* half the amount into the sockets, half into the pipes, a channel at a time */
    size_t want[2] = {(mib << 20) / 2, (mib << 20) / 2};
    for (int i = 0; i < nch && (want[0] || want[1]); i++) {
      size_t *w = &want[i % 2];
      *w -= fill(ch[i].wr, *w, buf);
    }
    fprintf(stderr, "sockbuf: round %d: %zu MiB short of %zu in %d channels\n", r,
            (want[0] + want[1]) >> 20, mib, nch);
    mark("free", r);
    pid_t reader = fork();
    if (reader < 0) {
      perror("sockbuf: fork");
      return 1;
    }
    if (reader == 0) {
      /* the reader drains every channel, in random order; the last round leaves 1 in 8 */
      int order[MAXCH];
      for (int i = 0; i < nch; i++)
        order[i] = i;
      for (int i = nch - 1; i > 0; i--) {
        int j = (int)(next() % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
      }
      for (int i = 0; i < nch; i++)
        if (r < rounds || order[i] % 8)
          drain(ch[order[i]].rd, buf);
      _exit(0);
    }
    int status;
    while (waitpid(reader, &status, 0) < 0 && errno == EINTR)
      ;
    mark("idle", r);
    sleep((unsigned)idle);
  }
  mark("end", 0);
  return 0;
}
