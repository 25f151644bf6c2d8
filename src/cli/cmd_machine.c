/* buddyhint machine: a trace's machine description, or a snapshot of this machine. */
#include "cli/cli.h"

#include <buddyhint/machine.h>
#include <buddyhint/trace.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VERB "machine"

static void usage(FILE *out) {
  fprintf(out,
          "usage: buddyhint machine TRACE [--extract DIR] [--text]\n"
          "       buddyhint machine --snapshot DIR [--end DIR] [-o FILE]\n"
          "\n"
          "The first form describes the machine a trace was recorded on (the machine\n"
          "description `buddyhint record` stores with it): its zones and, for the snapshots\n"
          "taken at the start and the end of the recording, the free memory per order, the\n"
          "pageblocks per migratetype and whether there is a free map from kpageflags.\n"
          "\n"
          "The second form takes a snapshot from DIR, a directory of /proc files under their\n"
          "own names (buddyinfo, pagetypeinfo, zoneinfo, and optionally kpageflags), or /proc\n"
          "itself (as root for pagetypeinfo and kpageflags), and prints the description that\n"
          "`replay --start DIR` would use.\n"
          "\n"
          "options:\n"
          "  --extract DIR   write the snapshots' files to DIR/start/ and DIR/end/ (buddyinfo,\n"
          "                  pagetypeinfo, zoneinfo as the kernel printed them, and freemap),\n"
          "                  to diff against `replay --dump` (never over a file)\n"
          "  --text          print the description's text instead of the summary\n"
          "  --snapshot DIR  the start snapshot from DIR (see above)\n"
          "  --end DIR       an end snapshot too\n"
          "  -o FILE         write the description's text to FILE (default: a summary on\n"
          "                  standard output)\n"
          "  -h, --help      this help\n"
          "\n"
          "exit status: 0 done; 1 a file could not be written; 2 bad usage or input.\n");
}

static void print_summary(FILE *f, const bh_machine_t *m) {
  const bh_machine_info_t *in = bh_machine_info(m);
  fprintf(f, "kernel       %s\n", in->kernel_release[0] ? in->kernel_release : "(unknown)");
  fprintf(f, "allocator    MAX_PAGE_ORDER %u, pageblock order %u, %u cpus, %u nodes\n",
          in->max_order, in->pageblock_order, in->nr_cpus, in->nr_nodes);
  if (in->min_free_kbytes)
    fprintf(f,
            "sysctls      min_free_kbytes %lu, watermark_scale_factor %u, "
            "watermark_boost_factor %u, lowmem_reserve_ratio %u %u %u %u\n",
            (unsigned long)in->min_free_kbytes, in->watermark_scale_factor,
            in->watermark_boost_factor, in->lowmem_reserve_ratio[0], in->lowmem_reserve_ratio[1],
            in->lowmem_reserve_ratio[2], in->lowmem_reserve_ratio[3]);
  if (in->page_reporting_order >= 0)
    fprintf(f, "reporting    page_reporting_order %d\n", in->page_reporting_order);
  for (int i = 0; i < in->nr_zones; i++) {
    const bh_machine_zone_t *z = &in->zones[i];
    fprintf(f,
            "zone         node %d %-7s start_pfn %#lx spanned %lu present %lu managed %lu "
            "wmark %lu/%lu/%lu\n",
            z->node, bh_zone_name(z->type), (unsigned long)z->start_pfn,
            (unsigned long)z->spanned_pages, (unsigned long)z->present_pages,
            (unsigned long)z->managed_pages, (unsigned long)z->wmark_min,
            (unsigned long)z->wmark_low, (unsigned long)z->wmark_high);
  }
  for (int w = 0; w < BH_NR_SNAPS; w++) {
    const bh_snapshot_t *s = bh_machine_snapshot(m, w);
    if (!s)
      continue;
    fprintf(f, "%-12s %s%s%s%s\n", w == BH_SNAP_START ? "start" : "end",
            s->have_buddyinfo ? "buddyinfo " : "", s->have_pagetypeinfo ? "pagetypeinfo " : "",
            s->have_zoneinfo ? "zoneinfo " : "", s->have_freemap ? "freemap" : "(no free map)");
    for (int i = 0; i < in->nr_zones; i++) {
      const bh_snapshot_zone_t *sz = &s->zones[i];
      uint64_t free = 0, big = 0;
      for (unsigned o = 0; o <= in->max_order; o++) {
        free += sz->nr_free[o] << o;
        if (o >= in->pageblock_order)
          big += sz->nr_free[o] << o;
      }
      fprintf(f,
              "             %-7s free %lu pages (%lu in blocks of order >= %u), pcp %lu; "
              "pageblocks U/M/R/H %lu/%lu/%lu/%lu\n",
              bh_zone_name(in->zones[i].type), (unsigned long)free, (unsigned long)big,
              in->pageblock_order, (unsigned long)sz->pcp_pages,
              (unsigned long)sz->pageblocks[BH_MT_UNMOVABLE],
              (unsigned long)sz->pageblocks[BH_MT_MOVABLE],
              (unsigned long)sz->pageblocks[BH_MT_RECLAIMABLE],
              (unsigned long)sz->pageblocks[BH_MT_HIGHATOMIC]);
    }
    if (s->have_freemap)
      fprintf(f,
              "             free map: %zu runs of free blocks, %zu runs of movable pages; "
              "%lu pages skew against buddyinfo, %lu pages on other types' lists than "
              "pagetypeinfo says\n",
              s->nr_free_runs, s->nr_movable_runs, (unsigned long)s->freemap_skew_pages,
              (unsigned long)s->freemap_type_error_pages);
  }
}

/* Writes text to DIR/NAME, creating DIR: through a temporary file linked to NAME when
 * complete, so that a file that is there (or appears meanwhile) is never written over. */
static int write_file(const char *dir, const char *name, const char *text) {
  char path[4096], tmp[4200];
  mkdir(dir, 0777);
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name);
  int fd = mkstemp(tmp);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  bool ok = f && fputs(text, f) >= 0;
  if (f && fclose(f))
    ok = false;
  else if (!f && fd >= 0)
    close(fd);
  if (ok && link(tmp, path))
    ok = false;
  int e = errno;
  if (fd >= 0)
    unlink(tmp);
  if (!ok) {
    fprintf(stderr, "buddyhint machine: cannot write %s: %s\n", path, strerror(e));
    return -1;
  }
  return 0;
}

static const char *const extract_files[] = {"buddyinfo", "pagetypeinfo", "zoneinfo", "freemap"};

/* The files --extract would write that are there already (any kind, a symbolic link too): as
 * replay --dump, --extract writes over none.  0, or BH_EXIT_USAGE after naming the first. */
static int extract_refuses(const bh_machine_t *m, const char *dir) {
  struct stat st;
  char path[4096];
  for (int w = 0; w < BH_NR_SNAPS; w++) {
    const char *snap = w == BH_SNAP_START ? "start" : "end";
    for (int i = 0; i < 4; i++) {
      char name[64];
      snprintf(name, sizeof(name), "%s/%s", snap, extract_files[i]);
      snprintf(path, sizeof(path), "%s/%s", dir, name);
      if (bh_machine_section(m, name) && !lstat(path, &st))
        return bh_cli_usage_error(VERB,
                                  "--extract: %s exists; it is not written over (name a "
                                  "new folder)",
                                  path);
    }
  }
  snprintf(path, sizeof(path), "%s/machine", dir);
  if (bh_machine_section(m, "machine") && !lstat(path, &st))
    return bh_cli_usage_error(VERB,
                              "--extract: %s exists; it is not written over (name a new "
                              "folder)",
                              path);
  return 0;
}

static int extract(const bh_machine_t *m, const char *dir) {
  if (mkdir(dir, 0777) && errno != EEXIST) {
    fprintf(stderr, "buddyhint machine: cannot make %s: %s\n", dir, strerror(errno));
    return BH_EXIT_FAIL;
  }
  int rc = extract_refuses(m, dir);
  if (rc)
    return rc;
  for (int w = 0; w < BH_NR_SNAPS; w++) {
    const char *snap = w == BH_SNAP_START ? "start" : "end";
    char sub[4096];
    snprintf(sub, sizeof(sub), "%s/%s", dir, snap);
    for (int i = 0; i < 4; i++) {
      char name[64];
      snprintf(name, sizeof(name), "%s/%s", snap, extract_files[i]);
      const char *t = bh_machine_section(m, name);
      if (t && write_file(sub, extract_files[i], t))
        return BH_EXIT_FAIL;
    }
  }
  const char *t = bh_machine_section(m, "machine");
  return t && write_file(dir, "machine", t) ? BH_EXIT_FAIL : BH_EXIT_OK;
}

static int from_trace(const char *trace, const char *dir, bool text) {
  bh_trace_t *t;
  if (bh_trace_open(trace, NULL, &t)) {
    fprintf(stderr, "buddyhint machine: %s\n", bh_trace_error(NULL));
    return BH_EXIT_USAGE;
  }
  size_t len;
  const char *desc = bh_trace_description(t, &len);
  if (!desc) {
    fprintf(stderr, "buddyhint machine: %s has no machine description\n", trace);
    bh_trace_close(t);
    return BH_EXIT_USAGE;
  }
  bh_machine_t *m;
  char err[512];
  if (bh_machine_parse(desc, len, &m, err, sizeof(err))) {
    fprintf(stderr, "buddyhint machine: %s: machine description: %s\n", trace, err);
    bh_trace_close(t);
    return BH_EXIT_USAGE;
  }
  int rc = BH_EXIT_OK;
  if (text)
    fwrite(desc, 1, len, stdout);
  else
    print_summary(stdout, m);
  if (dir)
    rc = extract(m, dir);
  bh_machine_free(m);
  bh_trace_close(t);
  return rc;
}

static int from_dirs(const char *start, const char *end, const char *out) {
  bh_machine_t *m = bh_machine_new();
  char err[512];
  if (!m)
    return BH_EXIT_FAIL;
  if (!strcmp(start, "/proc"))
    bh_machine_read_settings(m);
  int e = bh_machine_read_snapshot(m, BH_SNAP_START, start, 0, 0, err, sizeof(err));
  if (!e && end)
    e = bh_machine_read_snapshot(m, BH_SNAP_END, end, 0, 0, err, sizeof(err));
  if (e) {
    fprintf(stderr, "buddyhint machine: %s\n", err);
    bh_machine_free(m);
    return e == BH_ENOMEM ? BH_EXIT_FAIL : BH_EXIT_USAGE;
  }
  bh_cli_print_machine_warnings("machine", m);
  int rc = BH_EXIT_OK;
  if (out) {
    char *text;
    if (bh_machine_format(m, &text, NULL)) {
      rc = BH_EXIT_FAIL;
    } else {
      FILE *f = strcmp(out, "-") ? fopen(out, "w") : stdout;
      if (!f || fputs(text, f) < 0 || (f != stdout && fclose(f))) {
        fprintf(stderr, "buddyhint machine: cannot write %s\n", out);
        rc = BH_EXIT_FAIL;
      }
      free(text);
    }
  } else {
    print_summary(stdout, m);
  }
  bh_machine_free(m);
  return rc;
}

int cmd_machine(int argc, char **argv) {
  const char *trace = NULL, *dir = NULL, *snap = NULL, *end = NULL, *out = NULL;
  bool text = false;
  for (int i = 1; i < argc;) {
    const char *a = argv[i];
    int r;
    if (bh_cli_is_help(a)) {
      usage(stdout);
      return BH_EXIT_OK;
    }
    if ((r = bh_cli_opt(argc, argv, &i, "extract", &dir)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "snapshot", &snap)) != 0 ||
        (r = bh_cli_opt(argc, argv, &i, "end", &end)) != 0 ||
        (r = bh_cli_short_opt(VERB, argc, argv, &i, "-o", &out)) != 0) {
      if (r < 0)
        return BH_EXIT_USAGE;
    } else if (!strcmp(a, "--text")) {
      text = true;
      i++;
    } else if (a[0] == '-' && a[1]) {
      return bh_cli_usage_error(VERB, "unknown option '%s'", a);
    } else if (!trace) {
      trace = a;
      i++;
    } else {
      return bh_cli_usage_error(VERB, "one trace at a time");
    }
  }
  if (!trace == !snap)
    return bh_cli_usage_error(VERB, "give a TRACE or --snapshot DIR");
  if (snap && (dir || text))
    return bh_cli_usage_error(VERB, "--extract and --text are for a TRACE");
  if (trace && (end || out))
    return bh_cli_usage_error(VERB, "--end and -o are for --snapshot");
  return trace ? from_trace(trace, dir, text) : from_dirs(snap, end, out);
}
