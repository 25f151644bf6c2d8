/*
 * A run as JSON: the replay summary (bh_replay_summary_json) with a "provenance" object that
 * says how it was made: the tool, its version and git revision, the command line, every
 * option of the replay (the strategy's own options included), the seed, the arena, and the
 * trace with its SHA-256.  replay --json writes one run, compare --json {"runs": [run, ...]},
 * and a sweep job one run: the same schema everywhere.
 */
#include "cli/run_json.h"

#include <jansson.h>
#include <nettle/sha2.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitrev.h" /* BH_GIT_REVISION, written at build time by cmake/gitrev.cmake */

static int cli_argc;
static char **cli_argv;

void bh_cli_set_argv(int argc, char **argv) {
  cli_argc = argc;
  cli_argv = argv;
}

const char *bh_cli_git_revision(void) { return BH_GIT_REVISION; }

static void sha256_hex(struct sha256_ctx *ctx, char hex[65]) {
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_digest(ctx, sizeof(d), d);
  for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
    snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

int bh_cli_trace_sha256(const char *path, char hex[65], uint64_t *bytes) {
  hex[0] = '\0';
  *bytes = 0;
  struct stat st;
  if (!path || !strcmp(path, "-") || stat(path, &st) || !S_ISREG(st.st_mode))
    return -1; /* standard input or a FIFO: read once, by the replay */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  static unsigned char buf[1 << 16];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) != 0) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      close(fd);
      return -1;
    }
    sha256_update(&ctx, (size_t)n, buf);
    *bytes += (uint64_t)n;
  }
  close(fd);
  sha256_hex(&ctx, hex);
  return 0;
}

struct bh_cli_hash {
  struct sha256_ctx ctx;
  uint64_t bytes; /* passed so far */
};

static void hash_bytes(void *ctx, const void *buf, size_t n) {
  bh_cli_hash_t *h = ctx;
  sha256_update(&h->ctx, n, buf);
  h->bytes += n;
}

bh_cli_hash_t *bh_cli_hash_attach(bh_replay_config_t *cfg) {
  bh_cli_hash_t *h = malloc(sizeof(*h));
  if (!h)
    return NULL;
  sha256_init(&h->ctx);
  h->bytes = 0;
  cfg->trace_bytes = hash_bytes;
  cfg->trace_bytes_ctx = h;
  return h;
}

void bh_cli_hash_finish(bh_cli_hash_t *h, bh_replay_config_t *cfg, const char *path,
                        bh_cli_run_info_t *info) {
  cfg->trace_bytes = NULL;
  cfg->trace_bytes_ctx = NULL;
  info->sha256[0] = '\0';
  info->bytes = 0;
  struct stat st;
  bool file = path && strcmp(path, "-") && !stat(path, &st) && S_ISREG(st.st_mode);
  if (file && h && h->bytes == (uint64_t)st.st_size) { /* the reading passed the whole file */
    sha256_hex(&h->ctx, info->sha256);
    info->bytes = h->bytes;
  } else if (file) {
    bh_cli_trace_sha256(path, info->sha256, &info->bytes);
  }
  free(h);
}

/* The command line as one string, each argument quoted for a POSIX shell where it needs it. */
static json_t *command_line(void) {
  size_t cap = 64, len = 0;
  char *s = malloc(cap);
  if (!s)
    return NULL;
  s[0] = '\0';
  for (int i = -1; i < cli_argc; i++) {
    const char *a = i < 0 ? "buddyhint" : cli_argv[i];
    bool plain = *a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789-_=.,:/+@%") == strlen(a);
    size_t need = len + 4 * strlen(a) + 4;
    if (need > cap) {
      char *t = realloc(s, cap = 2 * need);
      if (!t) {
        free(s);
        return NULL;
      }
      s = t;
    }
    if (len)
      s[len++] = ' ';
    if (plain) {
      len += (size_t)sprintf(s + len, "%s", a);
      continue;
    }
    s[len++] = '\'';
    for (const char *p = a; *p; p++)
      len += (size_t)(*p == '\'' ? sprintf(s + len, "'\\''") : sprintf(s + len, "%c", *p));
    s[len++] = '\'';
    s[len] = '\0';
  }
  json_t *j = json_string(s);
  free(s);
  return j;
}

static const char *touch_name(enum bh_touch t) {
  return t == BH_TOUCH_NONE ? "none" : t == BH_TOUCH_FULL ? "full" : "page";
}

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

/* Every setting of the replay, as given (0 = chosen by the replay: see "arena"). */
static json_t *options(const bh_replay_config_t *cfg) {
  json_t *sopts = json_object();
  for (size_t i = 0; sopts && i < cfg->hint.nopts; i++)
    json_object_set_new(sopts, cfg->hint.opts[i].key, json_string(cfg->hint.opts[i].value));
  const bh_config_t *a = &cfg->arena;
  return json_pack(
      "{s:s, s:o, s:I, s:I, s:f, s:s, s:f, s:f, s:b, s:b, s:I, s:b, s:b, s:b, s:I, s:I, s:I, "
      "s:I, s:b, s:I, s:o, s:o, s:s, s:I, s:s}",
      "strategy", cfg->hint.strategy ? cfg->hint.strategy : "none", "strategy_options", sopts,
      "memory_bytes", (json_int_t)cfg->memory_bytes, "nr_cpus", (json_int_t)a->nr_cpus, "idle_s",
      (double)cfg->idle_ns / 1e9, "touch", touch_name(cfg->touch), "speed", cfg->speed, "sample_s",
      (double)cfg->sample_ns / 1e9, "lenient", cfg->lenient, "strict", cfg->strict, "check_every",
      (json_int_t)cfg->check_every, "pcp", a->pcp, "mobility_grouping", a->mobility_grouping,
      "shuffle", a->shuffle, "seed", (json_int_t)a->seed, "min_free_kbytes",
      (json_int_t)a->min_free_kbytes, "max_order", (json_int_t)a->max_order,
      "compaction_proactiveness", (json_int_t)cfg->compaction_proactiveness, "compact_large_blocks",
      a->compact_large_blocks, "pageblock_order", (json_int_t)a->pageblock_order, "start_dir",
      str_or_null(cfg->start_dir), "end_dir", str_or_null(cfg->end_dir), "by",
      bh_replay_by_name(cfg->by), "by_top", (json_int_t)cfg->by_top, "untraced_allocs",
      cfg->untraced_infer    ? "infer"
      : cfg->untraced_ignore ? "ignore"
      : cfg->untraced_lists  ? "lists"
      : cfg->untraced_late   ? "late"
                             : "auto");
}

/* The arena the run had: its size and CPUs as the replay chose them, its zones' layout. */
static json_t *arena(const bh_replay_summary_t *s, const bh_replay_config_t *cfg) {
  return json_pack(
      "{s:s, s:I, s:I, s:I, s:I, s:s, s:s, s:s}", "layout", s->layout[0] ? s->layout : "default",
      "memory_bytes", (json_int_t)s->memory_bytes, "nr_cpus", (json_int_t)s->nr_cpus, "max_order",
      (json_int_t)cfg->arena.max_order, "pageblock_order", (json_int_t)cfg->arena.pageblock_order,
      "backing", s->backing, "start_state", s->start_state[0] ? s->start_state : "empty",
      "placement", s->placement[0] ? s->placement : "allocator");
}

static json_t *provenance(const bh_replay_summary_t *s, const bh_cli_run_info_t *info) {
  json_t *trace =
      json_pack("{s:s, s:s, s:o, s:o}", "name", info->trace, "format", s->trace_format, "sha256",
                info->sha256[0] ? json_string(info->sha256) : json_null(), "bytes",
                info->sha256[0] ? json_integer((json_int_t)info->bytes) : json_null());
  return json_pack("{s:s, s:s, s:s, s:o, s:s, s:o, s:I, s:o, s:o}", "tool", "buddyhint", "version",
                   bh_version(), "git_revision", bh_cli_git_revision(), "command_line",
                   command_line(), "label", s->strategy, "options", options(info->cfg), "seed",
                   (json_int_t)info->cfg->arena.seed, "arena", arena(s, info->cfg), "trace", trace);
}

json_t *bh_cli_run_object(const bh_replay_summary_t *s, const bh_cli_run_info_t *info) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m)
    return NULL;
  int r = bh_replay_summary_json(s, m, 0);
  if (fclose(m) || r) {
    free(buf);
    return NULL;
  }
  json_error_t e;
  json_t *run = json_loadb(buf, len, 0, &e);
  free(buf);
  json_t *p = run && info ? provenance(s, info) : NULL;
  if (!run || (info && (!p || json_object_set_new(run, "provenance", p)))) {
    json_decref(run);
    return NULL;
  }
  return run;
}

/* The run as text: the summary as bh_replay_summary_json writes it (its figures in its own
 * number format), the provenance added as its last key. */
static int run_text(FILE *f, const bh_replay_summary_t *s, const bh_cli_run_info_t *info) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m)
    return BH_ENOMEM;
  int r = bh_replay_summary_json(s, m, 2);
  if (fclose(m) || r) {
    free(buf);
    return BH_ENOMEM;
  }
  json_t *p = provenance(s, info);
  char *ptext = p ? json_dumps(p, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : NULL;
  json_decref(p);
  while (len && (buf[len - 1] == '\n' || buf[len - 1] == '}'))
    if (buf[--len] == '}')
      break; /* the summary's closing brace */
  if (!ptext || !len) {
    free(ptext);
    free(buf);
    return BH_ENOMEM;
  }
  fwrite(buf, 1, len, f);
  fprintf(f, ",\n  \"provenance\": ");
  for (const char *c = ptext; *c; c++) /* one level deeper than json_dumps put it */
    fprintf(f, *c == '\n' ? "\n  " : "%c", *c);
  fprintf(f, "\n}");
  free(ptext);
  free(buf);
  return ferror(f) ? BH_EIO : BH_OK;
}

int bh_cli_run_json(FILE *f, const bh_replay_summary_t *s, const bh_cli_run_info_t *info) {
  int r = run_text(f, s, info);
  fputc('\n', f);
  return r ? r : ferror(f) ? BH_EIO : BH_OK;
}

void bh_cli_runs_json_start(FILE *f) { fprintf(f, "{\"runs\": ["); }

int bh_cli_runs_json_add(FILE *f, const bh_replay_summary_t *runs, const bh_cli_run_info_t *infos,
                         int n, int *count) {
  for (int i = 0; i < n; i++) {
    fprintf(f, "%s\n", (*count)++ ? "," : "");
    int r = run_text(f, &runs[i], &infos[i]);
    if (r)
      return r;
  }
  return ferror(f) ? BH_EIO : BH_OK;
}

int bh_cli_runs_json_end(FILE *f) {
  fprintf(f, "\n]}\n");
  return ferror(f) ? BH_EIO : BH_OK;
}

int bh_cli_runs_json(FILE *f, const bh_replay_summary_t *runs, const bh_cli_run_info_t *infos,
                     int n) {
  int count = 0;
  bh_cli_runs_json_start(f);
  int r = bh_cli_runs_json_add(f, runs, infos, n, &count);
  return r ? r : bh_cli_runs_json_end(f);
}

/* ---- CSV: one row per run, nested objects flattened with dots, arrays as JSON text ---- */

static int flatten(json_t *row, const char *prefix, json_t *obj) {
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
    char name[512];
    snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "", k);
    if (json_is_object(v) ? flatten(row, name, v) : json_object_set(row, name, v))
      return -1;
  }
  return 0;
}

static void csv_text(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n\r")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++)
    fprintf(f, *s == '"' ? "\"\"" : "%c", *s);
  fputc('"', f);
}

static void csv_value(FILE *f, json_t *v) {
  if (!v || json_is_null(v))
    return;
  if (json_is_string(v)) {
    csv_text(f, json_string_value(v));
  } else if (json_is_integer(v)) {
    fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  } else if (json_is_real(v)) {
    fprintf(f, "%.15g", json_real_value(v));
  } else if (json_is_boolean(v)) {
    fputs(json_is_true(v) ? "true" : "false", f);
  } else {
    char *s = json_dumps(v, JSON_COMPACT);
    csv_text(f, s ? s : "");
    free(s);
  }
}

int bh_cli_runs_csv(FILE *f, const bh_replay_summary_t *runs, const bh_cli_run_info_t *infos,
                    int n) {
  json_t *rows = json_array(), *cols = json_array(), *seen = json_object();
  int rc = rows && cols && seen ? BH_OK : BH_ENOMEM;
  for (int i = 0; !rc && i < n; i++) {
    json_t *run = bh_cli_run_object(&runs[i], &infos[i]), *row = json_object();
    rc = run && row && !flatten(row, "", run) && !json_array_append(rows, row) ? BH_OK : BH_ENOMEM;
    const char *k;
    json_t *v;
    json_object_foreach(row, k, v) {
      if (!rc && !json_object_get(seen, k))
        rc =
            json_object_set_new(seen, k, json_true()) || json_array_append_new(cols, json_string(k))
                ? BH_ENOMEM
                : BH_OK;
    }
    json_decref(run);
    json_decref(row);
  }
  size_t c, r;
  json_t *col, *row;
  json_array_foreach(rc ? NULL : cols, c, col) {
    fprintf(f, "%s", c ? "," : "");
    csv_text(f, json_string_value(col));
  }
  if (!rc)
    fputc('\n', f);
  json_array_foreach(rc ? NULL : rows, r, row) {
    json_array_foreach(cols, c, col) {
      fprintf(f, "%s", c ? "," : "");
      csv_value(f, json_object_get(row, json_string_value(col)));
    }
    fputc('\n', f);
  }
  json_decref(rows);
  json_decref(cols);
  json_decref(seen);
  return rc ? rc : ferror(f) ? BH_EIO : BH_OK;
}
