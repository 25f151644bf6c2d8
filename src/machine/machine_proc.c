/*
 * Reading a snapshot from /proc (or from a directory of its files copied out of another
 * machine, a guest for instance) and the running machine's allocator settings.
 *
 * A folder a user keeps holds the files as they were copied: under their /proc names, with a
 * .txt suffix, or compressed (gzip or zstd, .gz or .zst, recognised by their magic), as
 * `zstd kpageflags` leaves them.  Each of zoneinfo, buddyinfo, pagetypeinfo and kpageflags is
 * looked for under those names in that order and the first one there is read; every other
 * file of the folder is not used, and bh_machine_read_snapshot says so in the machine's
 * warnings (bh_machine_warnings), so that a snapshot is never half-read in silence.
 */
#include "machine/machine_internal.h"
#include "common/bytesrc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/utsname.h>
#include <unistd.h>

/* The most a /proc text file may hold (zoneinfo of a large machine is some 100 KiB). */
#define MAX_TEXT (64u << 20)

/* Reads the whole file at path into a malloc'd buffer (NUL-terminated).  Returns 0, or
 * BH_ESYS with errno (ENOENT: no such file), BH_EFORMAT if it is too large, BH_ENOMEM. */
static int slurp(const char *path, size_t max, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return BH_ESYS;
  size_t cap = 65536, n = 0;
  char *b = malloc(cap + 1);
  int rc = b ? 0 : BH_ENOMEM;
  if (b)
    memset(b, 0, cap); /* every page now: a read into it allocates none (see read_text) */
  while (!rc) {
    if (n == cap) {
      if (cap >= max) {
        rc = BH_EFORMAT;
        break;
      }
      cap = cap * 2 > max ? max : cap * 2;
      char *q = realloc(b, cap + 1);
      if (!q) {
        rc = BH_ENOMEM;
        break;
      }
      b = q;
      memset(b + n, 0, cap - n);
    }
    ssize_t r = read(fd, b + n, cap - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      close(fd);
      free(b);
      errno = e;
      return BH_ESYS;
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  if (rc) {
    free(b);
    return rc;
  }
  b[n] = '\0';
  *out = b;
  *len = n;
  return 0;
}

/* The names a snapshot file may have in a folder, in the order they are looked for. */
static const char *const bh__snap_suffixes[] = {"", ".txt", ".zst", ".gz", ".txt.zst", ".txt.gz"};
#define BH__NR_SUFFIXES (sizeof bh__snap_suffixes / sizeof bh__snap_suffixes[0])

/* The snapshot files a folder is read for; kpagecount is accepted and not read (see below). */
static const char *const bh__snap_files[] = {"zoneinfo", "buddyinfo", "pagetypeinfo", "kpageflags"};

/* Finds name in dir under one of its suffixes: path gets the first that exists (or, with none,
 * the plain name) and the result says whether one did. */
static bool find_file(const char *dir, const char *name, char *path, size_t len) {
  for (size_t i = 0; i < BH__NR_SUFFIXES; i++) {
    snprintf(path, len, "%s/%s%s", dir, name, bh__snap_suffixes[i]);
    if (access(path, F_OK) == 0)
      return true;
  }
  snprintf(path, len, "%s/%s", dir, name);
  return false;
}

/* Whether path names a compressed file (by its suffix). */
static bool compressed_name(const char *path) {
  size_t n = strlen(path);
  return (n > 4 && !strcmp(path + n - 4, ".zst")) || (n > 3 && !strcmp(path + n - 3, ".gz"));
}

/*
 * Reads up to max bytes of path through the trace module's decompressing source (gzip and
 * zstd by their magic, anything else as it is) into a malloc'd buffer, NUL-terminated.
 * Returns 0; BH_ESYS with errno (cannot be opened), BH_EFORMAT (larger than max, or a corrupt
 * compressed stream: msg says what), BH_ENOMEM.
 */
static int read_decompressed(const char *path, size_t max, char **out, size_t *len, char *msg) {
  *out = NULL;
  *len = 0;
  bh__src_t src;
  int rc = bh__src_open(&src, path, path, msg);
  if (rc) {
    int e = errno;
    bh__src_close(&src);
    errno = e;
    return rc == BH_ESYS ? BH_ESYS : rc == BH_ENOMEM ? BH_ENOMEM : BH_EFORMAT;
  }
  size_t cap = 65536, n = 0;
  char *b = malloc(cap + 1);
  rc = b ? 0 : BH_ENOMEM;
  while (!rc) {
    if (n == cap) {
      if (cap >= max) {
        snprintf(msg, BH__TRACE_MSG_SIZE, "%.400s: larger than %zu bytes", path, max);
        rc = BH_EFORMAT;
        break;
      }
      cap = cap * 2 > max ? max : cap * 2;
      char *q = realloc(b, cap + 1);
      if (!q) {
        rc = BH_ENOMEM;
        break;
      }
      b = q;
    }
    long r = bh__src_read(&src, (unsigned char *)b + n, cap - n);
    if (r < 0)
      rc = r == BH_ENOMEM ? BH_ENOMEM : BH_EFORMAT;
    else if (r == 0)
      break;
    else
      n += (size_t)r;
  }
  bh__src_close(&src);
  if (rc) {
    free(b);
    return rc;
  }
  b[n] = '\0';
  *out = b;
  *len = n;
  return 0;
}

/* The error of a snapshot file that is there and cannot be read: bad input, BH_EFORMAT (or
 * BH_ENOMEM), with msg (the source's message, naming path) or errno's. */
static int read_fail(const char *path, int rc, const char *msg, char *err, size_t errlen) {
  if (rc == BH_ESYS)
    return bh__errf(err, errlen, BH_EFORMAT, "%s: %s", path, strerror(errno));
  if (msg[0])
    return bh__errf(err, errlen, rc, "%s", msg);
  return bh__errf(err, errlen, rc, "%s: out of memory", path);
}

/* Adds a line to the machine's warnings. */
__attribute__((format(printf, 2, 3))) static void warn(bh_machine_t *m, const char *fmt, ...) {
  char line[600];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(line, sizeof(line) - 1, fmt, ap);
  va_end(ap);
  if (k < 0)
    return;
  if ((size_t)k > sizeof(line) - 2)
    k = (int)sizeof(line) - 2;
  line[k++] = '\n';
  char *w = realloc(m->warnings, m->warnings_len + (size_t)k + 1);
  if (!w)
    return;
  memcpy(w + m->warnings_len, line, (size_t)k);
  m->warnings_len += (size_t)k;
  w[m->warnings_len] = '\0';
  m->warnings = w;
}

const char *bh_machine_warnings(const bh_machine_t *m) {
  return !m ? NULL : m->warnings ? m->warnings : "";
}

/* A text file of dir into section "which/name"; *found tells whether it was there.  done
 * (NULL: none) is called right after the file's reading. */
static int read_text(bh_machine_t *m, int which, const char *dir, const char *name, bool *found,
                     void (*done)(void *ctx), void *ctx, char *err, size_t errlen) {
  char path[4096], sec[64], msg[BH__TRACE_MSG_SIZE] = "";
  *found = find_file(dir, name, path, sizeof(path));
  snprintf(sec, sizeof(sec), "%s/%s", bh__snap_name(which), name);
  if (!*found)
    return 0;
  char *t;
  size_t n;
  /* With done, a live file read plainly into memory touched before the read: no page is
   * allocated or freed between the kernel's printing it and done (bh_machine_read_counts_marked) */
  int rc = done ? slurp(path, MAX_TEXT, &t, &n) : read_decompressed(path, MAX_TEXT, &t, &n, msg);
  if (done)
    done(ctx);
  if (done && rc == BH_EFORMAT)
    snprintf(msg, sizeof(msg), "%.400s: larger than %u bytes", path, (unsigned)MAX_TEXT);
  if (rc == BH_ESYS && (errno == EACCES || errno == EPERM)) {
    *found = false;
    if (strcmp(dir, "/proc"))
      warn(m, "%s: %s: left out", path, strerror(errno));
    return 0; /* not readable (/proc/pagetypeinfo needs root) */
  }
  if (rc)
    return read_fail(path, rc, msg, err, errlen);
  if (memchr(t, '\0', n)) {
    free(t);
    return bh__errf(err, errlen, BH_EFORMAT, "%s: not a text file", path);
  }
  rc = bh__machine_set_section(m, sec, t, n);
  free(t);
  return rc;
}

/*
 * kpageflags (and kpagecount) of dir: u64 per pfn from pfn 0, as far as the machine's layout
 * reaches.  Reading /proc/kpageflags needs root; without it there is no free map.
 */
static int read_flags(const char *path, uint64_t npfn, uint64_t **out, uint64_t *n) {
  *out = NULL;
  *n = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return BH_ESYS;
  uint64_t *v = malloc(npfn * sizeof(*v) + 8);
  if (!v) {
    close(fd);
    return BH_ENOMEM;
  }
  size_t want = npfn * sizeof(*v), got = 0;
  while (got < want) {
    /* /proc/kpageflags wants reads of whole entries; 1 MiB at a time */
    size_t chunk = want - got < (1u << 20) ? want - got : (1u << 20);
    ssize_t r = read(fd, (char *)v + got, chunk);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      close(fd);
      free(v);
      errno = e;
      return BH_ESYS;
    }
    if (r == 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  *out = v;
  *n = got / sizeof(*v);
  return 0;
}

/*
 * A kpageflags copied into a snapshot folder must hold one u64 for every page frame the
 * layout reaches: an empty, cut or padded copy would otherwise become a start state with no
 * free page in what is missing.  Only a regular file outside procfs is checked
 * (/proc/kpageflags itself has a size of 0, and ends where the kernel's max_pfn does).
 */
static int check_flags_file(const char *path, uint64_t npfn, char *err, size_t errlen) {
  struct stat st;
  struct statfs fs;
  if (stat(path, &st) || !S_ISREG(st.st_mode) || statfs(path, &fs) || fs.f_type == PROC_SUPER_MAGIC)
    return 0; /* read_flags says why it cannot be read, if it cannot; /proc's has no size */
  uint64_t size = (uint64_t)st.st_size;
  if (size % 8)
    return bh__errf(err, errlen, BH_EFORMAT,
                    "%s: %llu bytes, not a whole number of 8-byte page entries "
                    "(damaged?); remove it to start from the counts",
                    path, (unsigned long long)size);
  if (size / 8 < npfn)
    return bh__errf(err, errlen, BH_EFORMAT,
                    "%s: %llu page entries, but the zones reach pfn %llu (truncated "
                    "copy?); remove it to start from the counts",
                    path, (unsigned long long)(size / 8), (unsigned long long)npfn);
  return 0;
}

/* read_flags for a compressed copy of kpageflags (gzip or zstd): at most npfn entries, as
 * read_flags reads no further than the layout reaches.  msg gets a corrupt stream's error. */
static int read_flags_compressed(const char *path, uint64_t npfn, uint64_t **out, uint64_t *n,
                                 char *msg) {
  *out = NULL;
  *n = 0;
  bh__src_t src;
  int rc = bh__src_open(&src, path, path, msg);
  if (rc) {
    int e = errno;
    bh__src_close(&src);
    errno = e;
    return rc == BH_ESYS || rc == BH_ENOMEM ? rc : BH_EFORMAT;
  }
  uint64_t *v = malloc(npfn * sizeof(*v) + 8);
  size_t want = npfn * sizeof(*v), got = 0;
  rc = v ? 0 : BH_ENOMEM;
  while (!rc && got < want) {
    long r = bh__src_read(&src, (unsigned char *)v + got, want - got);
    if (r < 0)
      rc = r == BH_ENOMEM ? BH_ENOMEM : BH_EFORMAT;
    else if (r == 0)
      break;
    else
      got += (size_t)r;
  }
  bh__src_close(&src);
  if (rc) {
    free(v);
    return rc;
  }
  *out = v;
  *n = got / sizeof(*v);
  return 0;
}

/* The free map from dir's kpageflags, if it has one and it can be read; read_done (if given)
 * is called once the file is read, before the map is derived from it. */
static int read_freemap(bh_machine_t *m, int which, const char *dir, void (*read_done)(void *),
                        void *ctx, char *err, size_t errlen) {
  uint64_t end = 0;
  for (int i = 0; i < m->info.nr_zones; i++) {
    const bh_machine_zone_t *z = &m->info.zones[i];
    if (z->start_pfn + z->spanned_pages > end)
      end = z->start_pfn + z->spanned_pages;
  }
  char path[4096], msg[BH__TRACE_MSG_SIZE] = "";
  bool found = find_file(dir, "kpageflags", path, sizeof(path));
  uint64_t *flags = NULL, *count = NULL, n = 0, nc = 0;
  int rc = found && !compressed_name(path) ? check_flags_file(path, end, err, errlen) : 0;
  if (rc) {
    if (read_done)
      read_done(ctx);
    return rc;
  }
  rc = !found                  ? 0
       : compressed_name(path) ? read_flags_compressed(path, end, &flags, &n, msg)
                               : read_flags(path, end, &flags, &n);
  if (read_done)
    read_done(ctx);
  if (!found)
    return 0;
  if (rc == BH_ESYS && (errno == ENOENT || errno == EACCES || errno == EPERM)) {
    if (strcmp(dir, "/proc"))
      warn(m, "%s: %s: no free map", path, strerror(errno));
    return 0; /* /proc/kpageflags needs root */
  }
  if (rc)
    return read_fail(path, rc, msg, err, errlen);
  if (n < end && strcmp(dir, "/proc")) { /* a compressed copy cut short (check_flags_file) */
    free(flags);
    return bh__errf(err, errlen, BH_EFORMAT,
                    "%s: %llu page entries, but the zones reach pfn %llu (truncated "
                    "copy?); remove it to start from the counts",
                    path, (unsigned long long)n, (unsigned long long)end);
  }
  /* kpagecount (mapcounts) tells nothing KPF_MMAP does not: it is accepted and not read */
  (void)nc;
  char *text = NULL;
  rc = bh__freemap_derive(m, which, flags, count, n, &text, err, errlen);
  free(flags);
  free(count);
  if (!rc) {
    char sec[64];
    snprintf(sec, sizeof(sec), "%s/freemap", bh__snap_name(which));
    rc = bh__machine_set_section(m, sec, text, strlen(text));
  }
  free(text);
  return rc;
}

static int set_window_section(bh_machine_t *m, int which, uint64_t begin_ns, uint64_t end_ns) {
  char info[128];
  int k = snprintf(info, sizeof(info), "window_begin_ns %lu\nwindow_end_ns %lu\n",
                   (unsigned long)begin_ns, (unsigned long)end_ns);
  return bh__machine_set_section(m, which == BH_SNAP_START ? "start/info" : "end/info", info,
                                 (size_t)k);
}

int bh_machine_set_window(bh_machine_t *m, int which, uint64_t begin_ns, uint64_t end_ns) {
  if (!m || which < 0 || which >= BH_NR_SNAPS || !m->snaps[which].present)
    return BH_EINVAL;
  int rc = set_window_section(m, which, begin_ns, end_ns);
  if (!rc) {
    m->snaps[which].pub.window_begin_ns = begin_ns;
    m->snaps[which].pub.window_end_ns = end_ns;
  }
  return rc;
}

/* Whether entry name of a snapshot folder is the file read for one of bh__snap_files: the
 * first of its names there (find_file's order). */
static bool used_file(const char *dir, const char *name) {
  char path[4096], want[4096];
  for (size_t f = 0; f < sizeof bh__snap_files / sizeof bh__snap_files[0]; f++)
    if (find_file(dir, bh__snap_files[f], want, sizeof(want)) &&
        snprintf(path, sizeof(path), "%s/%s", dir, name) > 0 && !strcmp(path, want))
      return true;
  return false;
}

/* A warning for every file of folder dir that the snapshot does not read: another copy of a
 * file it read under another name, kpagecount (what it tells, KPF_MMAP tells too), meminfo
 * and the rest.  Not for /proc, whose other files are no snapshot's. */
static void warn_unused(bh_machine_t *m, const char *dir) {
  if (!strcmp(dir, "/proc"))
    return;
  DIR *d = opendir(dir);
  if (!d)
    return;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || used_file(dir, e->d_name))
      continue;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode))
      continue;
    warn(m,
         "%s: not used (a snapshot is read from zoneinfo, buddyinfo, pagetypeinfo and "
         "kpageflags, each plain, .txt, .zst or .gz, the first found)",
         path);
  }
  closedir(d);
}

int bh_machine_read_snapshot(bh_machine_t *m, int which, const char *dir, uint64_t begin_ns,
                             uint64_t end_ns, char *err, size_t errlen) {
  int rc = bh_machine_read_counts(m, which, dir, begin_ns, end_ns, err, errlen);
  if (!rc)
    rc = bh_machine_read_freemap(m, which, dir, NULL, NULL, err, errlen);
  if (!rc)
    warn_unused(m, dir);
  return rc;
}

int bh_machine_read_freemap(bh_machine_t *m, int which, const char *dir,
                            void (*read_done)(void *ctx), void *ctx, char *err, size_t errlen) {
  if (!m || !dir || which < 0 || which >= BH_NR_SNAPS || !m->snaps[which].present)
    return BH_EINVAL;
  int rc = read_freemap(m, which, dir, read_done, ctx, err, errlen);
  if (!rc)
    rc = bh__machine_interpret_snapshot(m, which, err, errlen);
  if (rc)
    bh_machine_drop_snapshot(m, which);
  return rc;
}

int bh_machine_read_counts_marked(bh_machine_t *m, int which, const char *dir, uint64_t begin_ns,
                                  uint64_t end_ns, void (*zoneinfo_read)(void *ctx), void *ctx,
                                  char *err, size_t errlen) {
  if (!m || !dir || which < 0 || which >= BH_NR_SNAPS)
    return BH_EINVAL;
  bh_machine_drop_snapshot(m, which);
  bool found[3];
  static const char *const files[] = {"zoneinfo", "buddyinfo", "pagetypeinfo"};
  for (int f = 0; f < 3; f++) {
    int rc =
        read_text(m, which, dir, files[f], &found[f], f ? NULL : zoneinfo_read, ctx, err, errlen);
    if (rc)
      return rc;
  }
  if (!found[0])
    return bh__errf(err, errlen, BH_EFORMAT,
                    "%s: no zoneinfo (looked for zoneinfo, zoneinfo.txt and either "
                    "compressed, .zst or .gz)",
                    dir);
  if (begin_ns || end_ns) {
    int rc = set_window_section(m, which, begin_ns, end_ns);
    if (rc)
      return rc;
  }
  int rc = bh__machine_interpret_snapshot(m, which, err, errlen);
  if (!rc)
    rc = bh__machine_update_settings(m);
  if (rc)
    bh_machine_drop_snapshot(m, which);
  return rc;
}

int bh_machine_read_counts(bh_machine_t *m, int which, const char *dir, uint64_t begin_ns,
                           uint64_t end_ns, char *err, size_t errlen) {
  return bh_machine_read_counts_marked(m, which, dir, begin_ns, end_ns, NULL, NULL, err, errlen);
}

/* A number from a one-line file; false if it cannot be read. */
static bool read_number(const char *path, int64_t *v) {
  char *t;
  size_t n;
  if (slurp(path, 4096, &t, &n))
    return false;
  char *end;
  errno = 0;
  long long x = strtoll(t, &end, 10);
  bool ok = end != t && !errno;
  free(t);
  if (ok)
    *v = x;
  return ok;
}

/* CONFIG_HZ of the running kernel, from /boot/config-RELEASE or /proc/config.gz (IKCONFIG);
 * 0 if neither says. */
static unsigned config_hz(const char *release) {
  char path[256], msg[BH__TRACE_MSG_SIZE];
  snprintf(path, sizeof(path), "/boot/config-%s", release);
  const char *paths[] = {path, "/proc/config.gz"};
  for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
    char *t;
    size_t n;
    if (!release[0] && i == 0)
      continue;
    if (read_decompressed(paths[i], 16u << 20, &t, &n, msg))
      continue;
    const char *l = strstr(t, "\nCONFIG_HZ="); /* a line of its own, never the first */
    unsigned hz = l ? (unsigned)strtoul(l + 11, NULL, 10) : 0;
    free(t);
    if (hz > 0 && hz <= 100000)
      return hz;
  }
  return 0;
}

int bh_machine_read_settings(bh_machine_t *m) {
  if (!m)
    return BH_EINVAL;
  bh_machine_info_t *in = &m->info;
  int64_t v;
  struct utsname u;
  if (!uname(&u))
    snprintf(in->kernel_release, sizeof(in->kernel_release), "%s", u.release);
  in->hz = config_hz(in->kernel_release);
  if (read_number("/proc/sys/vm/min_free_kbytes", &v) && v > 0)
    in->min_free_kbytes = (uint64_t)v;
  if (read_number("/proc/sys/vm/watermark_scale_factor", &v) && v > 0)
    in->watermark_scale_factor = (unsigned)v;
  if (read_number("/proc/sys/vm/watermark_boost_factor", &v) && v >= 0)
    in->watermark_boost_factor = (unsigned)v;
  if (read_number("/sys/module/page_reporting/parameters/page_reporting_order", &v) && v >= -1 &&
      v < 64)
    in->page_reporting_order = (int)v;
  char *t;
  size_t n;
  if (!slurp("/proc/sys/vm/lowmem_reserve_ratio", 4096, &t, &n)) {
    char *p = t;
    for (int i = 0; i < BH_NR_ZONE_TYPES; i++) {
      char *end;
      long x = strtol(p, &end, 10);
      if (end == p)
        break;
      in->lowmem_reserve_ratio[i] = x < 0 ? 0 : (unsigned)x;
      p = end;
    }
    free(t);
  }
  return bh__machine_update_settings(m);
}
