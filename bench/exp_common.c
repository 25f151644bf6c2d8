/*
 * exp_common.c: what exp_guests and exp_memhog share -- guests as child processes, the host's
 * view of their memory, option parsing.  Not a program and not compiled on its own: the two
 * experiments #include it, which is why everything here is static.
 *
 * A guest is a child process (fork) that owns one arena of --guest-size bytes with a hinting
 * strategy attached in thread-clock mode (a background worker on CLOCK_MONOTONIC reporting with
 * a real madvise(MADV_DONTNEED)), or, for the jemalloc kind, no arena at all but a jemalloc
 * arena of its own that it uses through mallocx/dallocx.  The parent talks to it over a
 * SOCK_SEQPACKET socketpair, one fixed-size message per packet:
 *
 *   child  -> READY                       arena created, strategy attached
 *   parent -> RUN {pages, flags}          allocate `pages` order-0 blocks, write every page
 *   child  -> PEAK {alloc time}           everything allocated and written
 *   parent -> ACK                         (only with RUN_HOLD: the parent measures the peak)
 *   child  -> DONE {free time}            everything freed
 *   child  -> SETTLED {settle time, ...}  (only with RUN_SETTLE) the hinting has nothing left
 *                                          to do: the worker is idle (bh_hint_next_due ==
 *                                          BH_HINT_IDLE with no step and no discard for 3
 *                                          polls 20 ms apart), or jemalloc's arena holds no
 *                                          dirty or muzzy pages; or --settle-max ran out
 *
 * Between commands a guest idles: it waits on the socket and calls bh_vmstat_tick() once a
 * second, as the kernel's vmstat work decays and drains idle pcp lists.  It exits when the
 * parent closes the socket.
 *
 * The host's resident memory is the sum over the live guests of Rss from
 * /proc/PID/smaps_rollup, read by the parent: the arena's resident pages plus the allocator's
 * metadata and whatever else the process holds.
 */
#include "bench_util.h"

#include <buddyhint.h>
#include <buddyhint/report.h>
#include <buddyhint/strategy.h>

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef EXP_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#define EXP_MAX_OPTS 8

/* ---------------------------------------------------------------------------------------- */
/* Small helpers                                                                             */
/* ---------------------------------------------------------------------------------------- */

static const char *exp_prog = "exp";

static void exp_die(const char *what, int err) { bu_die(exp_prog, what, err); }

/* MemAvailable of the host in bytes (0 if unknown). */
static uint64_t exp_mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f)
    return 0;
  char line[256];
  uint64_t kib = 0;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "MemAvailable: %lu kB", (unsigned long *)&kib) == 1)
      break;
  fclose(f);
  return kib * 1024;
}

/* Rss and Pss of a process in KiB from /proc/PID/smaps_rollup; -1 if unreadable (gone). */
static int exp_pid_mem(pid_t pid, long *rss_kib, long *pss_kib) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char line[256];
  long rss = -1, pss = -1, v;
  while (fgets(line, sizeof(line), f)) {
    if (sscanf(line, "Rss: %ld kB", &v) == 1)
      rss = v;
    else if (sscanf(line, "Pss: %ld kB", &v) == 1)
      pss = v;
  }
  fclose(f);
  if (rss < 0)
    return -1;
  if (rss_kib)
    *rss_kib = rss;
  if (pss_kib)
    *pss_kib = pss;
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Guest kinds                                                                               */
/* ---------------------------------------------------------------------------------------- */

/* What a guest runs: a strategy on an arena (with options), or jemalloc. */
typedef struct exp_kind {
  char name[32];  /* "none", "bitmap", "bubble", "jemalloc" */
  char opts[160]; /* "delay=200ms,capacity=32" (strategy options) or "dirty_decay_ms=1000" */
  bool jemalloc;
} exp_kind_t;

static bool exp_have_jemalloc(void) {
#ifdef EXP_HAVE_JEMALLOC
  return true;
#else
  return false;
#endif
}

/*
 * Parses "none,bitmap,bubble,jemalloc" into kinds; `opts_for` gives the default options of a
 * kind name (may return ""), overridable later.  Returns the count, or -1 after a message.
 */
static int exp_parse_kinds(const char *list, exp_kind_t *kinds, int max,
                           const char *(*opts_for)(const char *name)) {
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", list);
  int n = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == max) {
      fprintf(stderr, "%s: too many kinds in '%s'\n", exp_prog, list);
      return -1;
    }
    exp_kind_t *k = &kinds[n];
    memset(k, 0, sizeof(*k));
    snprintf(k->name, sizeof(k->name), "%s", t);
    k->jemalloc = !strcmp(t, "jemalloc");
    if (k->jemalloc && !exp_have_jemalloc()) {
      fprintf(stderr, "%s: built without jemalloc; the jemalloc kind is not available\n", exp_prog);
      return -1;
    }
    if (!k->jemalloc && !bh_strategy_find(t)) {
      fprintf(stderr, "%s: unknown strategy '%s'\n", exp_prog, t);
      return -1;
    }
    snprintf(k->opts, sizeof(k->opts), "%s", opts_for ? opts_for(t) : "");
    n++;
  }
  return n;
}

static int exp_check_guest_size(uint64_t bytes) {
  if (bytes < (64ull << 20) || bytes % (8ull << 20)) {
    fprintf(stderr, "%s: --guest-size must be a multiple of 8 MiB and at least 64 MiB\n", exp_prog);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The protocol                                                                              */
/* ---------------------------------------------------------------------------------------- */

enum { MSG_READY = 1, MSG_PEAK, MSG_DONE, MSG_SETTLED, MSG_ERROR };
enum { CMD_RUN = 1, CMD_ACK };
enum { RUN_HOLD = 1, RUN_SETTLE = 2 };

typedef struct exp_msg {
  int type;
  int settle_timeout;      /* SETTLED: --settle-max ran out */
  double seconds;          /* READY: setup; PEAK: alloc+write; DONE: free; SETTLED: since DONE */
  uint64_t arena_resident; /* bytes (mincore; jemalloc: stats.arenas.<i>.resident) */
  uint64_t reported_bytes; /* cumulative, hinting only */
  uint64_t report_calls;   /* cumulative */
  uint64_t refault_pages;  /* cumulative */
  uint64_t steps;          /* worker steps, cumulative */
  char text[160];          /* ERROR */
} exp_msg_t;

typedef struct exp_cmd {
  int type;
  int flags;
  uint64_t pages;
} exp_cmd_t;

typedef struct exp_guest_cfg {
  exp_kind_t kind;
  uint64_t bytes;      /* arena size */
  double settle_max_s; /* give up waiting for SETTLED after this long */
  double settle_min_s; /* never report SETTLED before this long after DONE */
} exp_guest_cfg_t;

/* A guest as the parent sees it. */
typedef struct exp_guest {
  pid_t pid;
  int fd;
  int index; /* 1.. */
} exp_guest_t;

static int exp_send(int fd, const void *m, size_t len) {
  for (;;) {
    ssize_t n = send(fd, m, len, MSG_NOSIGNAL);
    if (n == (ssize_t)len)
      return 0;
    if (n < 0 && errno == EINTR)
      continue;
    return -1;
  }
}

/* Receives one packet; 1 = got it, 0 = peer closed, -1 = error, 2 = timeout (timeout_ms >= 0). */
static int exp_recv(int fd, void *m, size_t len, int timeout_ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  for (;;) {
    int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0)
      return 2;
    break;
  }
  for (;;) {
    ssize_t n = recv(fd, m, len, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0)
      return 0;
    if (n != (ssize_t)len)
      return -1;
    return 1;
  }
}

/* ---------------------------------------------------------------------------------------- */
/* The child                                                                                 */
/* ---------------------------------------------------------------------------------------- */

typedef struct exp_child {
  const exp_guest_cfg_t *cfg;
  int fd;
  bh_arena_t *arena;
  bh_hint_t *hint;
  void **ptrs;
  uint64_t cap;
#ifdef EXP_HAVE_JEMALLOC
  unsigned je_arena;
  int je_flags;
#endif
} exp_child_t;

static void child_fail(exp_child_t *c, const char *fmt, const char *detail) {
  exp_msg_t m = {.type = MSG_ERROR};
  snprintf(m.text, sizeof(m.text), fmt, detail);
  exp_send(c->fd, &m, sizeof(m));
  _exit(3);
}

static void child_fill(exp_child_t *c, exp_msg_t *m) {
  if (c->arena) {
    bh_arena_resident(c->arena, &m->arena_resident);
    if (c->hint) {
      bh_hint_stats_t st;
      bh_hint_stats(c->hint, &st);
      m->reported_bytes = st.report.bytes;
      m->report_calls = st.report.calls;
      m->refault_pages = st.refault_pages;
      m->steps = st.steps;
    }
  }
#ifdef EXP_HAVE_JEMALLOC
  else {
    uint64_t epoch = 1;
    size_t sz = sizeof(epoch);
    mallctl("epoch", &epoch, &sz, &epoch, sz);
    char name[96];
    size_t v = 0;
    sz = sizeof(v);
    snprintf(name, sizeof(name), "stats.arenas.%u.resident", c->je_arena);
    if (mallctl(name, &v, &sz, NULL, 0) == 0)
      m->arena_resident = v;
    uint64_t purged = 0;
    sz = sizeof(purged);
    snprintf(name, sizeof(name), "stats.arenas.%u.dirty_purged", c->je_arena);
    if (mallctl(name, &purged, &sz, NULL, 0) == 0)
      m->reported_bytes = purged * BH_PAGE_SIZE; /* pages purged */
    sz = sizeof(purged);
    snprintf(name, sizeof(name), "stats.arenas.%u.dirty_nmadvise", c->je_arena);
    if (mallctl(name, &purged, &sz, NULL, 0) == 0)
      m->report_calls = purged;
  }
#endif
}

#ifdef EXP_HAVE_JEMALLOC
static void child_je_setup(exp_child_t *c) {
  size_t sz = sizeof(c->je_arena);
  if (mallctl("arenas.create", &c->je_arena, &sz, NULL, 0) != 0)
    child_fail(c, "jemalloc: %s", "arenas.create failed");
  ssize_t dirty = 1000, muzzy = 0;
  char buf[160];
  snprintf(buf, sizeof(buf), "%s", c->cfg->kind.opts);
  bh_opt_t o[EXP_MAX_OPTS];
  size_t n = bu_split_opts(buf, o, EXP_MAX_OPTS);
  for (size_t i = 0; i < n; i++) {
    if (!strcmp(o[i].key, "dirty_decay_ms"))
      dirty = atol(o[i].value);
    else if (!strcmp(o[i].key, "muzzy_decay_ms"))
      muzzy = atol(o[i].value);
    else
      child_fail(c, "jemalloc: unknown option '%s'", o[i].key);
  }
  char name[96];
  snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", c->je_arena);
  if (mallctl(name, NULL, NULL, &dirty, sizeof(dirty)) != 0)
    child_fail(c, "jemalloc: %s failed", name);
  snprintf(name, sizeof(name), "arena.%u.muzzy_decay_ms", c->je_arena);
  if (mallctl(name, NULL, NULL, &muzzy, sizeof(muzzy)) != 0)
    child_fail(c, "jemalloc: %s failed", name);
  bool on = true;
  if (mallctl("background_thread", NULL, NULL, &on, sizeof(on)) != 0)
    child_fail(c, "jemalloc: %s", "background_thread could not be enabled");
  c->je_flags = MALLOCX_ARENA(c->je_arena) | MALLOCX_TCACHE_NONE;
}

/* Dirty + muzzy pages of the guest's jemalloc arena. */
static uint64_t child_je_unpurged(exp_child_t *c) {
  uint64_t epoch = 1;
  size_t sz = sizeof(epoch);
  mallctl("epoch", &epoch, &sz, &epoch, sz);
  size_t d = 0, mz = 0;
  char name[96];
  sz = sizeof(d);
  snprintf(name, sizeof(name), "stats.arenas.%u.pdirty", c->je_arena);
  mallctl(name, &d, &sz, NULL, 0);
  sz = sizeof(mz);
  snprintf(name, sizeof(name), "stats.arenas.%u.pmuzzy", c->je_arena);
  mallctl(name, &mz, &sz, NULL, 0);
  return (uint64_t)d + mz;
}
#endif

static void child_setup(exp_child_t *c) {
  if (c->cfg->kind.jemalloc) {
#ifdef EXP_HAVE_JEMALLOC
    child_je_setup(c);
#endif
    return;
  }
  bh_config_t cfg;
  bu_arena_config(c->cfg->bytes, &cfg);
  int e = bh_arena_create(&cfg, &c->arena);
  if (e)
    child_fail(c, "bh_arena_create: %s", bh_strerror(e));
  char buf[160];
  snprintf(buf, sizeof(buf), "%s", c->cfg->kind.opts);
  bh_opt_t o[EXP_MAX_OPTS];
  size_t n = bu_split_opts(buf, o, EXP_MAX_OPTS);
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = c->cfg->kind.name;
  hc.opts = o;
  hc.nopts = n;
  hc.clock = BH_CLOCK_THREAD;
  hc.report = BH_REPORT_DONTNEED;
  e = bh_hint_attach(c->arena, &hc, &c->hint);
  if (e)
    child_fail(c, "bh_hint_attach: %s",
               bh_hint_last_error()[0] ? bh_hint_last_error() : bh_strerror(e));
}

/* Allocates and writes `pages` order-0 blocks; returns seconds. */
static double child_alloc(exp_child_t *c, uint64_t pages) {
  if (pages > c->cap) {
    free(c->ptrs);
    c->ptrs = malloc(pages * sizeof(void *));
    if (!c->ptrs)
      child_fail(c, "%s", "out of memory for the block table");
    c->cap = pages;
  }
  uint64_t t0 = bu_now_ns();
  for (uint64_t i = 0; i < pages; i++) {
    void *p;
    if (c->arena) {
      int e;
      p = bh_alloc_pages(c->arena, BH_GFP_USER_MOVABLE, 0, &e);
      if (!p)
        child_fail(c, "bh_alloc_pages: %s (arena too small for --hog?)", bh_strerror(e));
    } else {
#ifdef EXP_HAVE_JEMALLOC
      p = mallocx(BH_PAGE_SIZE, c->je_flags);
#else
      p = NULL;
#endif
      if (!p)
        child_fail(c, "%s", "mallocx failed");
    }
    *(volatile uint64_t *)p = i + 1; /* every page written */
    c->ptrs[i] = p;
  }
  return (double)(bu_now_ns() - t0) / 1e9;
}

static double child_free(exp_child_t *c, uint64_t pages) {
  uint64_t t0 = bu_now_ns();
  for (uint64_t i = 0; i < pages; i++) {
    if (c->arena) {
      int e = bh_free_pages(c->arena, c->ptrs[i], 0);
      if (e)
        child_fail(c, "bh_free_pages: %s", bh_strerror(e));
    } else {
#ifdef EXP_HAVE_JEMALLOC
      dallocx(c->ptrs[i], c->je_flags);
#endif
    }
  }
  return (double)(bu_now_ns() - t0) / 1e9;
}

/* True when the guest's hinting has nothing left to do (see the top of the file). */
static bool child_quiet(exp_child_t *c, uint64_t *last_steps, uint64_t *last_disc) {
  if (!c->arena) {
#ifdef EXP_HAVE_JEMALLOC
    return child_je_unpurged(c) == 0;
#else
    return true;
#endif
  }
  bh_hint_stats_t st;
  bh_hint_stats(c->hint, &st);
  bool idle = bh_hint_next_due(c->hint) == BH_HINT_IDLE && st.steps == *last_steps &&
              st.discarded_pages == *last_disc;
  *last_steps = st.steps;
  *last_disc = st.discarded_pages;
  return idle;
}

/* Idles until a command arrives (vmstat tick every second); also watches for settling. */
static int child_wait(exp_child_t *c, exp_cmd_t *cmd, bool settle, double t_done) {
  double next_tick = bu_now_s() + 1.0;
  int quiet = 0;
  uint64_t ls = UINT64_MAX, ld = UINT64_MAX;
  for (;;) {
    double now = bu_now_s();
    if (now >= next_tick) {
      if (c->arena)
        bh_vmstat_tick(c->arena);
      next_tick = now + 1.0;
    }
    int timeout_ms = settle ? 20 : (int)((next_tick - now) * 1000) + 1;
    int r = exp_recv(c->fd, cmd, sizeof(*cmd), timeout_ms);
    if (r == 1)
      return 1;
    if (r == 0 || r < 0)
      return 0;
    if (!settle)
      continue;
    now = bu_now_s();
    quiet = child_quiet(c, &ls, &ld) ? quiet + 1 : 0;
    bool timeout = now - t_done >= c->cfg->settle_max_s;
    if ((quiet >= 3 && now - t_done >= c->cfg->settle_min_s) || timeout) {
      exp_msg_t m = {.type = MSG_SETTLED, .settle_timeout = timeout, .seconds = now - t_done};
      child_fill(c, &m);
      if (exp_send(c->fd, &m, sizeof(m)))
        return 0;
      settle = false;
    }
  }
}

static void exp_child_main(int fd, const exp_guest_cfg_t *cfg) {
  exp_child_t c = {.cfg = cfg, .fd = fd};
  double t0 = bu_now_s();
  child_setup(&c);
  exp_msg_t m = {.type = MSG_READY, .seconds = bu_now_s() - t0};
  child_fill(&c, &m);
  if (exp_send(fd, &m, sizeof(m)))
    _exit(0);
  exp_cmd_t cmd;
  bool settle = false;
  double t_done = 0;
  while (child_wait(&c, &cmd, settle, t_done)) {
    if (cmd.type != CMD_RUN)
      continue;
    exp_msg_t pk = {.type = MSG_PEAK, .seconds = child_alloc(&c, cmd.pages)};
    child_fill(&c, &pk);
    if (exp_send(fd, &pk, sizeof(pk)))
      break;
    if (cmd.flags & RUN_HOLD) {
      exp_cmd_t ack;
      if (exp_recv(fd, &ack, sizeof(ack), -1) != 1)
        break;
    }
    exp_msg_t dn = {.type = MSG_DONE, .seconds = child_free(&c, cmd.pages)};
    t_done = bu_now_s();
    child_fill(&c, &dn);
    if (exp_send(fd, &dn, sizeof(dn)))
      break;
    settle = (cmd.flags & RUN_SETTLE) != 0;
  }
  _exit(0);
}

/* ---------------------------------------------------------------------------------------- */
/* The parent's side                                                                         */
/* ---------------------------------------------------------------------------------------- */

/* Forks a guest and waits for READY (or an error).  Returns 0, or -1 after a message. */
static int exp_guest_start(exp_guest_t *g, int index, const exp_guest_cfg_t *cfg,
                           exp_msg_t *ready) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    exp_die("socketpair", 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0)
    exp_die("fork", 0);
  if (pid == 0) {
    /* drop every other descriptor, the other guests' sockets included: a guest must see
     * EOF when the parent closes its socket */
    for (int fd = 3; fd < 1024; fd++)
      if (fd != sv[1])
        close(fd);
    exp_child_main(sv[1], cfg);
  }
  close(sv[1]);
  g->pid = pid;
  g->fd = sv[0];
  g->index = index;
  int r = exp_recv(g->fd, ready, sizeof(*ready), 60000);
  if (r != 1 || ready->type != MSG_READY) {
    fprintf(stderr, "%s: guest %d (%s) did not start: %s\n", exp_prog, index, cfg->kind.name,
            r == 1 && ready->type == MSG_ERROR ? ready->text : "no answer");
    close(g->fd);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    g->pid = 0;
    return -1;
  }
  return 0;
}

/* Closes the sockets of n guests (they exit) and reaps them. */
static void exp_guest_stop_all(exp_guest_t *g, int n) {
  for (int i = 0; i < n; i++)
    if (g[i].pid > 0 && g[i].fd >= 0) {
      close(g[i].fd);
      g[i].fd = -1;
    }
  for (int i = 0; i < n; i++) {
    if (g[i].pid <= 0)
      continue;
    int st;
    for (int t = 0; t < 500; t++) { /* up to 5 s, then SIGKILL */
      pid_t r = waitpid(g[i].pid, &st, WNOHANG);
      if (r == g[i].pid || (r < 0 && errno != EINTR))
        break;
      if (t == 499) {
        fprintf(stderr, "%s: guest %d did not exit, killed\n", exp_prog, g[i].index);
        kill(g[i].pid, SIGKILL);
        waitpid(g[i].pid, &st, 0);
        break;
      }
      bu_sleep_s(0.01);
    }
    g[i].pid = 0;
  }
}

static int exp_guest_cmd(exp_guest_t *g, int type, uint64_t pages, int flags) {
  exp_cmd_t c = {.type = type, .flags = flags, .pages = pages};
  return exp_send(g->fd, &c, sizeof(c));
}

/* Sum of the guests' Rss in KiB (guests that are gone count 0); per guest into rss[] if given. */
static long exp_host_rss_kib(const exp_guest_t *g, int n, long *rss) {
  long sum = 0;
  for (int i = 0; i < n; i++) {
    long r = 0;
    if (g[i].pid <= 0 || exp_pid_mem(g[i].pid, &r, NULL) != 0)
      r = 0;
    if (rss)
      rss[i] = r;
    sum += r;
  }
  return sum;
}

/* Options given as "--opt KIND.KEY=VALUE" (or "KEY=VALUE" for every kind) override defaults. */
static int exp_apply_opt(exp_kind_t *kinds, int n, const char *spec) {
  const char *dot = strchr(spec, '.'), *eq = strchr(spec, '=');
  if (!eq) {
    fprintf(stderr, "%s: --opt wants KIND.KEY=VALUE, got '%s'\n", exp_prog, spec);
    return -1;
  }
  bool any = dot && dot < eq;
  int hits = 0;
  for (int i = 0; i < n; i++) {
    if (any &&
        (strncmp(spec, kinds[i].name, (size_t)(dot - spec)) || kinds[i].name[dot - spec] != 0))
      continue;
    const char *kv = any ? dot + 1 : spec;
    size_t klen = (size_t)(eq - kv);
    /* drop an existing setting of the same key */
    char out[160] = "", buf[160];
    snprintf(buf, sizeof(buf), "%s", kinds[i].opts);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (!strncmp(t, kv, klen) && t[klen] == '=')
        continue;
      size_t l = strlen(out);
      snprintf(out + l, sizeof(out) - l, "%s%s", l ? "," : "", t);
    }
    size_t l = strlen(out);
    snprintf(out + l, sizeof(out) - l, "%s%s", l ? "," : "", kv);
    snprintf(kinds[i].opts, sizeof(kinds[i].opts), "%s", out);
    hits++;
  }
  if (!hits) {
    fprintf(stderr, "%s: --opt '%s' matches no kind\n", exp_prog, spec);
    return -1;
  }
  return 0;
}

/* Attaches every strategy kind, with its options, to a small sim arena: a bad option is a
 * usage error before any guest starts.  Returns 0, or -1 after a message. */
static int exp_validate_kinds(const exp_kind_t *kinds, int n) {
  for (int i = 0; i < n; i++) {
    if (kinds[i].jemalloc)
      continue;
    bh_config_t cfg;
    bu_arena_config(64ull << 20, &cfg);
    cfg.backing = BH_BACKING_SIM;
    bh_arena_t *a;
    int e = bh_arena_create(&cfg, &a);
    if (e)
      exp_die("bh_arena_create (sim)", e);
    char buf[160];
    snprintf(buf, sizeof(buf), "%s", kinds[i].opts);
    bh_opt_t o[EXP_MAX_OPTS];
    bh_hint_config_t hc;
    bh_hint_config_init(&hc);
    hc.strategy = kinds[i].name;
    hc.opts = o;
    hc.nopts = bu_split_opts(buf, o, EXP_MAX_OPTS);
    bh_hint_t *h;
    e = bh_hint_attach(a, &hc, &h);
    if (e) {
      fprintf(stderr, "%s: %s (%s)\n", exp_prog,
              bh_hint_last_error()[0] ? bh_hint_last_error() : bh_strerror(e), kinds[i].name);
      bh_arena_destroy(a);
      return -1;
    }
    bh_hint_detach(h);
    bh_arena_destroy(a);
  }
  return 0;
}

/* "none" or "bubble(delay=200ms)" */
static void exp_kind_label(const exp_kind_t *k, char *buf, size_t len) {
  if (k->opts[0])
    snprintf(buf, len, "%s(%s)", k->name, k->opts);
  else
    snprintf(buf, len, "%s", k->name);
}

/* Options for a CSV field: ',' -> ';' (gnuplot does not parse quoted commas), "" -> "-". */
static const char *exp_csv_opts(const char *opts, char *buf, size_t len) {
  snprintf(buf, len, "%s", opts && *opts ? opts : "-");
  for (char *p = buf; *p; p++)
    if (*p == ',')
      *p = ';';
  return buf;
}
