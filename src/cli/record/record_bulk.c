/*
 * alloc_pages_bulk (vmalloc's pages, among them every kernel stack a fork makes) takes its
 * pages off the pcp lists through __rmqueue_pcplist with no mm_page_alloc event
 * (mm/page_alloc.c:4764-4790 in 6.12): a trace of the kmem events shows those pages freed
 * without ever being allocated, and a replay cannot know the list lost them.  Two kprobe events
 * show them: one at the function's entry, for its gfp mask (its first argument), and one at the
 * instruction after its call to __rmqueue_pcplist, for the page that call returned (%ax) and
 * vmemmap_base, from which the decoder has the pfn (trace/kmem_decode.c).  __rmqueue_pcplist
 * itself has no ftrace entry and cannot be probed; the offset of the return is found in the
 * function's code as the running kernel has it (/proc/kcore), at the address /proc/kallsyms
 * gives.  x86-64 only.
 */
#include "cli/record/record_bulk.h"

#include "trace/kmem_decode.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long bh_cli_bulk_return_offset(const uint8_t *code, size_t n, uint64_t func, uint64_t callee) {
  long found = -1;
  for (size_t i = 0; i + 5 <= n; i++) {
    if (code[i] != 0xe8)
      continue;
    int32_t rel = (int32_t)((uint32_t)code[i + 1] | (uint32_t)code[i + 2] << 8 |
                            (uint32_t)code[i + 3] << 16 | (uint32_t)code[i + 4] << 24);
    if (func + i + 5 + (uint64_t)(int64_t)rel != callee)
      continue;
    if (found >= 0)
      return -2;
    found = (long)(i + 5);
  }
  return found;
}

int bh_cli_kallsyms(const char *const *names, uint64_t *addr, size_t n) {
  FILE *f = fopen("/proc/kallsyms", "re");
  if (!f)
    return -1;
  memset(addr, 0, n * sizeof(*addr));
  char line[512];
  while (fgets(line, sizeof(line), f)) {
    unsigned long long a;
    char type, name[256];
    if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3)
      continue;
    for (size_t i = 0; i < n; i++)
      if (!addr[i] && !strcmp(name, names[i]))
        addr[i] = a;
  }
  fclose(f);
  return 0;
}

#if BH_HAVE_TRACEFS && defined(__x86_64__)

#include <elf.h>

/* Sets why (why_len bytes) and returns -1. */
__attribute__((format(printf, 3, 4))) static int fail(char *why, size_t why_len, const char *fmt,
                                                      ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, why_len, fmt, ap);
  va_end(ap);
  return -1;
}

/* The symbols we need from /proc/kallsyms, and where the function ends (the next symbol). */
struct syms {
  uint64_t func, end, callee, vmemmap;
  const char *func_name;
};

static int read_syms(struct syms *s, char *why, size_t why_len) {
  /* before 6.10 the function was __alloc_pages_bulk */
  static const char *const names[] = {"alloc_pages_bulk_noprof", "__alloc_pages_bulk",
                                      "__rmqueue_pcplist", "vmemmap_base"};
  uint64_t a[4];
  if (bh_cli_kallsyms(names, a, 4))
    return fail(why, why_len, "/proc/kallsyms: %s", strerror(errno));
  memset(s, 0, sizeof(*s));
  s->func_name = a[0] ? names[0] : names[1];
  s->func = a[0] ? a[0] : a[1];
  s->callee = a[2];
  s->vmemmap = a[3];
  /* the end is the lowest address above the function's: a second pass once it is known */
  FILE *f = s->func ? fopen("/proc/kallsyms", "re") : NULL;
  if (f) {
    char line[512];
    while (fgets(line, sizeof(line), f)) {
      unsigned long long x;
      if (sscanf(line, "%llx", &x) == 1 && x > s->func && (!s->end || x < s->end))
        s->end = x;
    }
    fclose(f);
  }
  if (!s->func || !s->callee || !s->vmemmap)
    return fail(why, why_len,
                "/proc/kallsyms has no %s (or addresses are hidden: kernel.kptr_restrict)",
                !s->func     ? "alloc_pages_bulk_noprof"
                : !s->callee ? "__rmqueue_pcplist"
                             : "vmemmap_base");
  if (!s->end || s->end - s->func > 1 << 16)
    return fail(why, why_len, "cannot tell where %s ends", s->func_name);
  return 0;
}

/* The n bytes of kernel memory at addr from /proc/kcore into buf. */
static int read_kcore(uint64_t addr, uint8_t *buf, size_t n, char *why, size_t why_len) {
  int fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(why, why_len, "/proc/kcore: %s", strerror(errno));
  Elf64_Ehdr eh;
  int rc = -1;
  if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
    fail(why, why_len, "/proc/kcore: not an ELF file");
    goto out;
  }
  for (int i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) !=
        (ssize_t)sizeof(ph))
      break;
    if (ph.p_type != PT_LOAD || addr < ph.p_vaddr || addr + n > ph.p_vaddr + ph.p_memsz)
      continue;
    if (pread(fd, buf, n, (off_t)(ph.p_offset + (addr - ph.p_vaddr))) == (ssize_t)n)
      rc = 0;
    else
      fail(why, why_len, "/proc/kcore: cannot read the kernel's text: %s", strerror(errno));
    goto out;
  }
  fail(why, why_len, "/proc/kcore maps no kernel text at %#llx", (unsigned long long)addr);
out:
  close(fd);
  return rc;
}

/* Appends line to tracefs's kprobe_events; 0 or -1 with errno. */
static int kprobe_write(const char *tracefs, const char *line) {
  char p[512];
  snprintf(p, sizeof(p), "%s/kprobe_events", tracefs);
  int fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t w = write(fd, line, strlen(line));
  int e = errno;
  close(fd);
  errno = e;
  return w == (ssize_t)strlen(line) ? 0 : -1;
}

/* Removes the events of recorders that are gone (their system's pid no longer runs). */
static void reap_stale(const char *tracefs) {
  char p[512], line[512];
  snprintf(p, sizeof(p), "%s/kprobe_events", tracefs);
  FILE *f = fopen(p, "re");
  if (!f)
    return;
  char gone[16][160];
  int n = 0;
  while (n < 16 && fgets(line, sizeof(line), f)) {
    const char *s = strchr(line, ':');
    int pid;
    char event[64];
    if (!s || strncmp(s + 1, BH_CLI_BULK_SYSTEM_PREFIX, strlen(BH_CLI_BULK_SYSTEM_PREFIX)) ||
        sscanf(s + 1 + strlen(BH_CLI_BULK_SYSTEM_PREFIX), "%d/%63s", &pid, event) != 2 ||
        pid <= 0 || !(kill(pid, 0) && errno == ESRCH))
      continue;
    snprintf(gone[n++], sizeof(gone[0]), "-:" BH_CLI_BULK_SYSTEM_PREFIX "%d/%s\n", pid, event);
  }
  fclose(f);
  for (int i = 0; i < n; i++)
    kprobe_write(tracefs, gone[i]);
}

int bh_cli_bulk_probe_add(const char *tracefs, char *system, size_t len, char *why,
                          size_t why_len) {
  struct syms s;
  if (read_syms(&s, why, why_len))
    return -1;
  size_t n = (size_t)(s.end - s.func);
  uint8_t *code = malloc(n);
  if (!code)
    return fail(why, why_len, "out of memory");
  long off = read_kcore(s.func, code, n, why, why_len)
                 ? -3
                 : bh_cli_bulk_return_offset(code, n, s.func, s.callee);
  free(code);
  if (off == -3)
    return -1;
  if (off < 0)
    return fail(why, why_len, "%s calls __rmqueue_pcplist %s", s.func_name,
                off == -1 ? "nowhere directly (inlined?)" : "from more than one place");
  reap_stale(tracefs);
  if (snprintf(system, len, BH_CLI_BULK_SYSTEM_PREFIX "%d", (int)getpid()) >= (int)len)
    return fail(why, why_len, "system name too long");
  char call[256], page[256];
  snprintf(call, sizeof(call), "p:%s/" BH__KMEM_BULK_CALL " %s gfp=$arg1:x32\n", system,
           s.func_name);
  snprintf(page, sizeof(page),
           "p:%s/" BH__KMEM_BULK_PAGE " %s+%ld page=%%ax:x64 base=@vmemmap_base:x64\n", system,
           s.func_name, off);
  if (kprobe_write(tracefs, call))
    return fail(why, why_len, "%s/kprobe_events: %s", tracefs, strerror(errno));
  if (kprobe_write(tracefs, page)) {
    int e = errno;
    bh_cli_bulk_probe_remove(tracefs, system);
    return fail(why, why_len, "%s/kprobe_events: %s", tracefs, strerror(e));
  }
  return 0;
}

int bh_cli_bulk_probe_remove(const char *tracefs, const char *system) {
  char line[160];
  int rc = 0, e = 0;
  snprintf(line, sizeof(line), "-:%s/" BH__KMEM_BULK_PAGE "\n", system);
  if (kprobe_write(tracefs, line) && errno != ENOENT) {
    rc = -1;
    e = errno;
  }
  snprintf(line, sizeof(line), "-:%s/" BH__KMEM_BULK_CALL "\n", system);
  if (kprobe_write(tracefs, line) && errno != ENOENT && !rc) {
    rc = -1;
    e = errno;
  }
  errno = e;
  return rc;
}

#elif BH_HAVE_TRACEFS

int bh_cli_bulk_probe_add(const char *tracefs, char *system, size_t len, char *why,
                          size_t why_len) {
  (void)tracefs, (void)system, (void)len;
  snprintf(why, why_len, "the probes are for x86-64 kernels only");
  return -1;
}

int bh_cli_bulk_probe_remove(const char *tracefs, const char *system) {
  (void)tracefs, (void)system;
  return 0;
}

#endif
