/*
 * Snapshot folders as users keep them (bh_machine_read_snapshot): the files under their /proc
 * names, with a .txt suffix, or compressed with gzip or zstd, are read alike; a file of the
 * folder that is not read is named in bh_machine_warnings; a folder without zoneinfo, or with
 * a file that is there and cannot be read (a corrupt gzip stream), is bad input (BH_EFORMAT).
 *
 * The files are written from an arena in a known, fragmented state, as a kernel would print
 * them; the folder of plain files gives the reference snapshot, and every other spelling must
 * give the same free map, block for block.
 */
#include "trace/trace_test_util.h"

#include <buddyhint/machine.h>

#include "buddy/internal.h"

#include <sys/stat.h>

static char *dump(bh_arena_t *a, int (*fn)(bh_arena_t *, FILE *), size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  assert_int_equal(fn(a, f), 0);
  fclose(f);
  return buf;
}

/* kpageflags of the arena: KPF_BUDDY on every page of a free block, allocated pages by kind
 * (movable: LRU and mapped, reclaimable: slab, the rest a page table). */
static uint64_t *kpageflags(bh_arena_t *a) {
  uint64_t *f = calloc(a->nr_pages, sizeof(uint64_t));
  assert_non_null(f);
  for (uint64_t p = 0; p < a->nr_pages;) {
    const bh__page_t *pg = &a->pages[p];
    uint64_t n = (pg->flags & BH__PG_STATE) ? 1ull << pg->order : 1, v = 0;
    if (pg->flags & BH__PG_BUDDY)
      v = 1ull << 10;
    else if (pg->flags & BH__PG_ALLOC)
      v = pg->mt == BH_MT_MOVABLE       ? (1ull << 5 | 1ull << 11)
          : pg->mt == BH_MT_RECLAIMABLE ? 1ull << 7
                                        : 1ull << 26;
    for (uint64_t i = p; i < p + n; i++)
      f[i] = v;
    p += n;
  }
  return f;
}

struct files {
  char *text[3];
  size_t len[3];
  uint64_t *flags;
  size_t flags_len;
};
static const char *const names[3] = {"zoneinfo", "buddyinfo", "pagetypeinfo"};

/* Writes data as dir/name: plain, or compressed as its suffix says. */
static void put(const char *dir, const char *name, const void *data, size_t len) {
  char rel[256];
  snprintf(rel, sizeof(rel), "%s/%s", dir, name);
  size_t n = strlen(name);
  if (n > 3 && !strcmp(name + n - 3, ".gz"))
    tt_write_gzip(rel, data, len);
  else if (n > 4 && !strcmp(name + n - 4, ".zst"))
    tt_write_zstd(rel, data, len);
  else
    tt_write(rel, data, len);
}

/* A folder dir holding the files under the suffixes given (NULL: left out), kpageflags last. */
static const char *folder(const char *dir, const struct files *f, const char *const suffix[4]) {
  char *path = strdup(tt_path(dir)); /* tt_path's buffer is reused by put */
  assert_int_equal(mkdir(path, 0700), 0);
  char name[64];
  for (int i = 0; i < 3; i++) {
    if (!suffix[i])
      continue;
    snprintf(name, sizeof(name), "%s%s", names[i], suffix[i]);
    put(dir, name, f->text[i], f->len[i]);
  }
  if (suffix[3]) {
    snprintf(name, sizeof(name), "kpageflags%s", suffix[3]);
    put(dir, name, f->flags, f->flags_len);
  }
  return path;
}

/* Removes folder path and its files. */
static void remove_folder(const char *path) {
  DIR *d = opendir(path);
  assert_non_null(d);
  char p[1024];
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(path);
}

static bh_machine_t *read_ok(const char *dir) {
  bh_machine_t *m = bh_machine_new();
  char err[512];
  if (bh_machine_read_snapshot(m, BH_SNAP_START, dir, 0, 0, err, sizeof(err)))
    fail_msg("%s: %s", dir, err);
  return m;
}

/* The same snapshot: every count and the free map, run for run. */
static void same_snapshot(const bh_machine_t *a, const bh_machine_t *b) {
  const bh_snapshot_t *x = bh_machine_snapshot(a, BH_SNAP_START);
  const bh_snapshot_t *y = bh_machine_snapshot(b, BH_SNAP_START);
  assert_true(x->have_zoneinfo && y->have_zoneinfo);
  assert_int_equal(x->have_buddyinfo, y->have_buddyinfo);
  assert_int_equal(x->have_pagetypeinfo, y->have_pagetypeinfo);
  assert_true(x->have_freemap && y->have_freemap);
  assert_int_equal(x->nr_free_runs, y->nr_free_runs);
  /* field by field: bh_block_run_t has padding after its order, which holds whatever the
   * two allocations left there */
  for (size_t i = 0; i < x->nr_free_runs; i++) {
    assert_int_equal(x->free_runs[i].pfn, y->free_runs[i].pfn);
    assert_int_equal(x->free_runs[i].count, y->free_runs[i].count);
    assert_int_equal(x->free_runs[i].order, y->free_runs[i].order);
  }
  assert_memory_equal(x->pageblock_mt, y->pageblock_mt, x->nr_pageblocks);
}

static void test_folders(void **state) {
  (void)state;
  bh_arena_t *a = tt_sim_arena(16, 240, 256);
  tt_churn(a, 4242, 40000, 40000);
  bh_drain_pcp(a);
  struct files f;
  f.text[0] = dump(a, bh_dump_zoneinfo, &f.len[0]);
  f.text[1] = dump(a, bh_dump_buddyinfo, &f.len[1]);
  f.text[2] = dump(a, bh_dump_pagetypeinfo, &f.len[2]);
  f.flags = kpageflags(a);
  f.flags_len = a->nr_pages * sizeof(uint64_t);

  const char *plain = folder("plain", &f, (const char *const[4]){"", "", "", ""});
  bh_machine_t *ref = read_ok(plain);
  assert_string_equal(bh_machine_warnings(ref), "");

  /* kept: .txt, gzip and zstd, with and without .txt; two files the snapshot does not read */
  const char *kept = folder("kept", &f, (const char *const[4]){".txt", ".gz", ".txt.zst", ".zst"});
  tt_write_str("kept/meminfo", "MemTotal: 1 kB\n");
  put("kept", "kpagecount", f.flags, 64);
  bh_machine_t *m = read_ok(kept);
  same_snapshot(ref, m);
  const char *w = bh_machine_warnings(m);
  print_message("warnings:\n%s", w);
  assert_non_null(strstr(w, "kept/meminfo: not used"));
  assert_non_null(strstr(w, "kept/kpagecount: not used"));
  assert_null(strstr(w, "zoneinfo.txt"));
  assert_null(strstr(w, "kpageflags.zst"));
  bh_machine_free(m);

  /* a gzip kpageflags, and a second zoneinfo that is not read (the plain one comes first) */
  const char *gz = folder("gz", &f, (const char *const[4]){"", "", "", ".gz"});
  put("gz", "zoneinfo.gz", f.text[0], f.len[0]);
  m = read_ok(gz);
  same_snapshot(ref, m);
  assert_non_null(strstr(bh_machine_warnings(m), "gz/zoneinfo.gz: not used"));
  bh_machine_free(m);

  /* no zoneinfo under any name: bad input, saying what was looked for */
  const char *none = folder("none", &f, (const char *const[4]){NULL, ".txt", NULL, NULL});
  m = bh_machine_new();
  char err[512];
  assert_int_equal(bh_machine_read_snapshot(m, BH_SNAP_START, none, 0, 0, err, sizeof(err)),
                   BH_EFORMAT);
  assert_non_null(strstr(err, "no zoneinfo"));
  bh_machine_free(m);

  /* a zoneinfo.gz that is not gzip past its magic: bad input naming the file */
  const char *bad = folder("bad", &f, (const char *const[4]){NULL, "", NULL, NULL});
  tt_write("bad/zoneinfo.gz", "\x1f\x8b\x08\x00garbage, not deflate", 24);
  m = bh_machine_new();
  assert_int_equal(bh_machine_read_snapshot(m, BH_SNAP_START, bad, 0, 0, err, sizeof(err)),
                   BH_EFORMAT);
  print_message("corrupt: %s\n", err);
  assert_non_null(strstr(err, "bad/zoneinfo.gz"));
  bh_machine_free(m);

  const char *dirs[] = {plain, kept, gz, none, bad};
  for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
    remove_folder(dirs[i]);
    free((void *)dirs[i]);
  }
  bh_machine_free(ref);
  for (int i = 0; i < 3; i++)
    free(f.text[i]);
  free(f.flags);
  bh_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_folders),
  };
  return cmocka_run_group_tests(tests, tt_setup, tt_teardown);
}
