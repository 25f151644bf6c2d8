/*
 * The tracefs side of buddyhint record and buddyhint live: a tracefs instance of our own with
 * the kernel's page allocator events (kmem:mm_page_alloc, mm_page_free, mm_page_free_batched,
 * and with pcp events mm_page_pcpu_drain, mm_page_alloc_zone_locked, mm_page_alloc_extfrag),
 * their formats and decoder, the ring buffers' loss counters, and the command run while
 * tracing, with the stop signals caught around it.  cmd_record.c explains the sequence and why an
 * instance.
 */
#include "cli/record/record_tracer.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#if BH_HAVE_TRACEFS

#define TRACEFS "/sys/kernel/tracing"

/* "buddyhint VERB: " and the message */
__attribute__((format(printf, 2, 3))) static void tmsg(const bh_cli_tracer_t *tr, const char *fmt,
                                                       ...) {
  fprintf(stderr, "buddyhint %s: ", tr->verb);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

/* the page events, then (--pcp-events) the pcp lists' exchanges with the buddy lists and the
 * fallbacks to another migratetype's lists */
const char *const bh_cli_kmem_events[NR_PCP_EVENTS] = {"mm_page_alloc",
                                                       "mm_page_free",
                                                       "mm_page_free_batched",
                                                       "mm_page_pcpu_drain",
                                                       "mm_page_alloc_zone_locked",
                                                       "mm_page_alloc_extfrag"};

/* ---- tracefs, through libtracefs ---- */

/* The vmstat worker's runs: each pcp's decay (decay_pcp_high) happens in them, and they are
 * deferrable work, which an idle CPU does not run (mm/vmstat.c:2003-2015, :2120 in 6.12) */
#define WQ_SYSTEM "workqueue"
#define WQ_EVENT "workqueue_execute_start"

/* vmstat_update's address in /proc/kallsyms, 0 if not there or hidden (kptr_restrict). */
static unsigned long long vmstat_update_addr(void) {
  static const char *const name[] = {"vmstat_update"};
  uint64_t addr;
  return bh_cli_kallsyms(name, &addr, 1) ? 0 : addr;
}

/* Finds or mounts tracefs, removes stale instances and makes ours. */
int bh_cli_tracer_open(bh_cli_tracer_t *tr, const char *verb, bool pcp_events, bool bulk) {
  memset(tr, 0, sizeof(*tr));
  tr->verb = verb;
  tr->nr_events = pcp_events ? NR_PCP_EVENTS : NR_EVENTS;
  tracefs_set_loglevel(TEP_LOG_NONE); /* errors are ours to report */
  int m = tracefs_tracing_dir_is_mounted(false, &tr->root);
  if (m == 0) {
    m = tracefs_tracing_dir_is_mounted(true, &tr->root);
    tr->mounted = m >= 0;
  }
  if (m < 0 || !tr->root) {
    tmsg(tr, "cannot mount tracefs at " TRACEFS ": %s\n", strerror(errno ? errno : ENODEV));
    return -1;
  }
  bh_cli_record_reap_stale(tr->verb, tr->root, bh_cli_kmem_events, NR_PCP_EVENTS);
  char name[64];
  bh_cli_record_instance_name(name, sizeof(name));
  errno = 0;
  tr->inst = tracefs_instance_create(name);
  tr->dir = tr->inst ? tracefs_instance_get_dir(tr->inst) : NULL;
  if (tr->inst && tr->dir && tracefs_instance_is_new(tr->inst)) {
    if (pcp_events && !(tr->vmstat_update = vmstat_update_addr()))
      tmsg(tr, "warning: the vmstat worker's runs are not recorded: no vmstat_update address "
               "in /proc/kallsyms\n");
    char why[256] = "";
    if (bulk && bh_cli_bulk_probe_add(tr->root, tr->bulk_system, sizeof(tr->bulk_system), why,
                                      sizeof(why))) {
      tr->bulk_system[0] = '\0';
      tmsg(tr,
           "warning: the pages alloc_pages_bulk takes are not recorded (a replay infers "
           "them from the pcp lists' order): %s\n",
           why);
    }
    return 0;
  }
  int e = errno ? errno : EEXIST;
  tmsg(tr,
       "cannot make a tracefs instance (%s/instances/%s): %s; the top-level "
       "buffer is not used instead (that would clear other tracers' data)\n",
       tr->root, name, strerror(e));
  if (tr->inst)
    tracefs_instance_free(tr->inst);
  free(tr->dir);
  tr->inst = NULL;
  tr->dir = NULL;
  if (tr->mounted && umount(tr->root))
    tmsg(tr, "warning: cannot unmount %s: %s\n", tr->root, strerror(errno));
  return -1;
}

/* Undoes tracer_open and whatever was changed since. */
void bh_cli_tracer_close(bh_cli_tracer_t *tr) {
  bh__kmem_decoder_free(tr->dec);
  if (tr->tep)
    tep_free(tr->tep);
  tracefs_trace_off(tr->inst);
  for (int i = 0; i < tr->nr_events; i++)
    tracefs_event_disable(tr->inst, "kmem", bh_cli_kmem_events[i]);
  if (tr->bulk_system[0])
    tracefs_event_disable(tr->inst, tr->bulk_system, NULL);
  if (tr->vmstat_update)
    tracefs_event_disable(tr->inst, WQ_SYSTEM, WQ_EVENT);
  if (tracefs_instance_destroy(tr->inst))
    tmsg(tr, "warning: cannot remove the tracefs instance %s: %s\n", tr->dir, strerror(errno));
  if (tr->bulk_system[0] && bh_cli_bulk_probe_remove(tr->root, tr->bulk_system))
    tmsg(tr, "warning: cannot remove the kprobe events %s: %s\n", tr->bulk_system, strerror(errno));
  tracefs_instance_free(tr->inst);
  free(tr->dir);
  if (tr->mounted && umount(tr->root))
    tmsg(tr, "warning: cannot unmount %s: %s\n", tr->root, strerror(errno));
}

/*
 * The instance's sub-buffer header and kmem event formats, parsed into a tep of our own.  This
 * is what tracefs_local_events_system(dir, {"kmem"}) reads, without the /proc/kallsyms,
 * saved_cmdlines and printk_formats it loads as well: the kmem events print none of them, and
 * loading them took 70 % of a short recording under AddressSanitizer.  An event whose format
 * cannot be read or parsed is left out, as there (the checks below say which is missing).
 */
static struct tep_handle *kmem_tep(const bh_cli_tracer_t *tr) {
  struct tep_handle *tep = tep_alloc();
  if (!tep)
    return NULL;
  int size = 0;
  char *buf = tracefs_instance_file_read(tr->inst, "events/header_page", &size);
  if (!buf) {
    int e = errno;
    tep_free(tep);
    errno = e;
    return NULL;
  }
  tep_parse_header_page(tep, buf, size, sizeof(long));
  free(buf);
  /* what the tep of a local trace has: this machine's long size, page size and byte order */
  tep_set_long_size(tep, sizeof(long));
  tep_set_page_size(tep, getpagesize());
  tep_set_file_bigendian(tep, tep_is_local_bigendian(tep) ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
  for (size_t i = 0; i < sizeof(bh_cli_kmem_events) / sizeof(bh_cli_kmem_events[0]); i++) {
    char rel[96];
    snprintf(rel, sizeof(rel), "events/kmem/%s/format", bh_cli_kmem_events[i]);
    if ((buf = tracefs_instance_file_read(tr->inst, rel, &size)) != NULL) {
      tep_parse_event(tep, buf, (unsigned long)size, "kmem");
      free(buf);
    }
  }
  if (tr->vmstat_update &&
      (buf = tracefs_instance_file_read(tr->inst, "events/" WQ_SYSTEM "/" WQ_EVENT "/format",
                                        &size)) != NULL) {
    tep_parse_event(tep, buf, (unsigned long)size, WQ_SYSTEM);
    free(buf);
  }
  static const char *const bulk[] = {BH__KMEM_BULK_CALL, BH__KMEM_BULK_PAGE};
  for (size_t i = 0; tr->bulk_system[0] && i < 2; i++) {
    char rel[128];
    snprintf(rel, sizeof(rel), "events/%s/%s/format", tr->bulk_system, bulk[i]);
    if ((buf = tracefs_instance_file_read(tr->inst, rel, &size)) != NULL) {
      tep_parse_event(tep, buf, (unsigned long)size, tr->bulk_system);
      free(buf);
    }
  }
  return tep;
}

/* The kmem events' formats, as the kernel describes them, and their decoder. */
int bh_cli_tracer_formats(bh_cli_tracer_t *tr) {
  tr->tep = kmem_tep(tr); /* the instance's own */
  char why[160] = "";
  if (!tr->tep)
    snprintf(why, sizeof(why), "cannot read the kmem event formats in %s/events: %s", tr->dir,
             strerror(errno ? errno : ENOENT));
  else if (bh__kmem_decoder_new(tr->tep, &tr->dec, why, sizeof(why)))
    ;
  else if (tr->nr_events > NR_EVENTS && bh__kmem_decoder_add_pcp(tr->dec, why, sizeof(why)))
    ;
  else if (tr->bulk_system[0] &&
           bh__kmem_decoder_add_bulk(tr->dec, tr->bulk_system, why, sizeof(why)))
    ;
  else if (tr->vmstat_update &&
           bh__kmem_decoder_add_vmstat(tr->dec, tr->vmstat_update, why, sizeof(why)))
    ;
  else if (!tep_find_event_by_name(tr->tep, "kmem", bh_cli_kmem_events[0]))
    snprintf(why, sizeof(why), "this kernel has no kmem:%s event", bh_cli_kmem_events[0]);
  if (!why[0])
    return 0;
  tmsg(tr, "%s\n", why);
  return -1;
}

int bh_cli_tracer_setup(bh_cli_tracer_t *tr, unsigned buffer_kb, const char *clock) {
  if (clock && tracefs_instance_file_write(tr->inst, "trace_clock", clock) < 0) {
    tmsg(tr, "cannot set trace_clock '%s' in %s: %s\n", clock, tr->dir, strerror(errno));
    return -1;
  }
  if (tracefs_trace_off(tr->inst) || tracefs_instance_set_buffer_size(tr->inst, buffer_kb, -1)) {
    tmsg(tr, "cannot set a %u KiB buffer per cpu in %s: %s\n", buffer_kb, tr->dir, strerror(errno));
    return -1;
  }
  if (tracefs_option_disable(tr->inst, TRACEFS_OPTION_OVERWRITE))
    tmsg(tr, "warning: cannot set options/overwrite: %s\n", strerror(errno));
  if (tracefs_instance_file_clear(tr->inst, "trace")) {
    tmsg(tr, "cannot clear %s/trace: %s\n", tr->dir, strerror(errno));
    return -1;
  }
  for (int i = 0; i < tr->nr_events; i++) {
    errno = 0;
    if (tracefs_event_enable(tr->inst, "kmem", bh_cli_kmem_events[i])) {
      tmsg(tr, "cannot enable kmem:%s: %s\n", bh_cli_kmem_events[i],
           strerror(errno ? errno : ENOENT));
      return -1;
    }
  }
  if (tr->bulk_system[0] && tracefs_event_enable(tr->inst, tr->bulk_system, NULL)) {
    tmsg(tr, "cannot enable the kprobe events %s: %s\n", tr->bulk_system,
         strerror(errno ? errno : ENOENT));
    return -1;
  }
  if (tr->vmstat_update) { /* filtered in the kernel: only vmstat_update's runs reach us */
    char filter[64];
    snprintf(filter, sizeof(filter), "function == 0x%llx", tr->vmstat_update);
    errno = 0;
    if (tracefs_instance_file_write(tr->inst, "events/" WQ_SYSTEM "/" WQ_EVENT "/filter", filter) <
            0 ||
        tracefs_event_enable(tr->inst, WQ_SYSTEM, WQ_EVENT)) {
      tmsg(tr, "warning: the vmstat worker's runs are not recorded: %s:%s: %s\n", WQ_SYSTEM,
           WQ_EVENT, strerror(errno ? errno : ENOENT));
      tr->vmstat_update = 0;
    }
  }
  return 0;
}

/* Adds per_cpu/cpuN/stats's "overrun" and "dropped events"; false if it cannot be read. */
bool bh_cli_tracer_cpu_lost(const bh_cli_tracer_t *tr, int cpu, unsigned long long *overrun,
                            unsigned long long *dropped) {
  char rel[64];
  snprintf(rel, sizeof(rel), "per_cpu/cpu%d/stats", cpu);
  char *buf = tracefs_instance_file_read(tr->inst, rel, NULL);
  if (!buf)
    return false;
  for (char *save, *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (!strncmp(line, "overrun:", 8))
      *overrun += strtoull(line + 8, NULL, 10);
    else if (!strncmp(line, "dropped events:", 15))
      *dropped += strtoull(line + 15, NULL, 10);
  }
  free(buf);
  return true;
}

/* ---- the command ---- */

volatile sig_atomic_t bh_cli_got_signal;

static void on_signal(int sig) { bh_cli_got_signal = sig; }

/* The signals that stop a recording before its command starts (and are passed on to the
 * command after): caught from before the output's temporary file and the tracefs instance
 * exist, so that none of them can be left behind by a signal's default action. */
const int bh_cli_stop_signals[4] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};

void bh_cli_catch_stop_signals(struct sigaction old[4]) {
  struct sigaction fwd = {.sa_handler = on_signal};
  sigemptyset(&fwd.sa_mask); /* no SA_RESTART: waitpid returns EINTR */
  for (int i = 0; i < 4; i++)
    sigaction(bh_cli_stop_signals[i], &fwd, &old[i]);
}

void bh_cli_restore_stop_signals(const struct sigaction old[4]) {
  for (int i = 0; i < 4; i++)
    sigaction(bh_cli_stop_signals[i], &old[i], NULL);
}

/* Starts argv with tracing on, as user u; returns the child's pid, or -1 with errno of the
 * failed fork, change of user or exec.  With stdout_to_stderr (the trace goes to standard
 * output) the command's standard output is sent to standard error instead, so that it cannot
 * mix with the trace. */
pid_t bh_cli_start_command(char **cmd, bool stdout_to_stderr, const bh_cli_record_user_t *u) {
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC))
    return -1;
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(pfd[0]);
    close(pfd[1]);
    errno = e;
    return -1;
  }
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL); /* live ignores it */
    close(pfd[0]);
    if (stdout_to_stderr)
      dup2(STDERR_FILENO, STDOUT_FILENO);
    /* none of our descriptors (the ring buffers' trace_pipe_raw, the spools, the outputs) go
     * to the command: a reader of the instance it kept open, in a process that outlives us,
     * would keep the instance from being removed */
    close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
    if (bh_cli_record_become(u) == 0)
      execvp(cmd[0], cmd);
    int e = errno;
    if (write(pfd[1], &e, sizeof(e)) < 0)
      _exit(127);
    _exit(127);
  }
  close(pfd[1]);
  int e = 0;
  ssize_t n;
  while ((n = read(pfd[0], &e, sizeof(e))) < 0 && errno == EINTR)
    ;
  close(pfd[0]);
  if (n == (ssize_t)sizeof(e)) { /* exec failed: reap the child */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
      ;
    errno = e;
    return -1;
  }
  return pid;
}

/* Waits for the child; SIGTERM/SIGHUP to us are passed on to it, and so is any signal that
 * came between the last look before the fork and now (a ^C then reached us, not the command,
 * which did not exist yet).  Returns the wait status. */
int bh_cli_wait_command(pid_t pid) {
  int status = 0;
  bool forwarded = false;
  if (bh_cli_got_signal) {
    kill(pid, bh_cli_got_signal);
    forwarded = true;
  }
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return -1;
    if (bh_cli_got_signal && bh_cli_got_signal != SIGINT && bh_cli_got_signal != SIGQUIT &&
        !forwarded) {
      kill(pid,
           bh_cli_got_signal); /* ^C and ^\ reach the command from the terminal, as in system() */
      forwarded = true;
    }
  }
  return status;
}

#endif
