/*
 * Sweeps: the expansion of a spec (sweep_spec.c) into jobs with stable ids, the manifest of a
 * sweep folder and the state of each job (see sweep.h).
 *
 * The expansion is the product traces x strategy variants x option values x seeds, in the
 * order the spec lists them, the last axis varying fastest.  The jemalloc baseline
 * (compare's jemalloc entries) takes only the replay options that apply to it (idle, touch,
 * lenient, max-order) and no seed: its other coordinates are empty, and the grid points that
 * differ only there are one job.
 */
#include "cli/sweep/sweep.h"

#include "cli/replay_opts.h"
#include "cli/sweep/sweep_spec.h"

#include <buddyhint.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- expansion ---- */

void bh_sweep_free(bh_sweep_t *s) {
  if (!s)
    return;
  for (size_t j = 0; j < s->njobs; j++) {
    bh_sweep_job_t *job = &s->jobs[j];
    for (size_t c = 0; job->coords && c < s->ncols; c++)
      free(job->coords[c]);
    free(job->coords);
    for (size_t a = 0; job->args && a < job->nargs; a++)
      free(job->args[a]);
    free(job->args);
    free(job->trace);
  }
  free(s->jobs);
  for (size_t c = 0; c < s->ncols; c++)
    free(s->cols[c]);
  free(s->cols);
  free(s);
}

static uint64_t fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  h ^= h >> 33; /* MurmurHash3's finalizer: every input bit moves every digit of the id */
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

/* A growing string for canonical job descriptions. */
typedef struct sbuf {
  char *p;
  size_t n, cap;
  bool oom;
} sbuf_t;

static void sb_add(sbuf_t *b, const char *a, const char *c, const char *d) {
  const char *parts[] = {a, c, d};
  for (int i = 0; i < 3; i++) {
    size_t l = parts[i] ? strlen(parts[i]) : 0;
    if (b->n + l + 2 > b->cap) {
      size_t cap = (b->n + l + 2) * 2;
      char *p = realloc(b->p, cap);
      if (!p) {
        b->oom = true;
        return;
      }
      b->p = p;
      b->cap = cap;
    }
    memcpy(b->p + b->n, parts[i] ? parts[i] : "", l);
    b->n += l;
  }
  b->p[b->n++] = '\n';
  b->p[b->n] = 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* id -> index, open addressing; detects two different jobs with the same hash. */
typedef struct idset {
  uint64_t *keys;
  size_t *idx;
  size_t cap;
} idset_t;

static int add_arg(bh_sweep_job_t *j, size_t *cap, const char *a, const char *b) {
  size_t na = strlen(a), nb = b ? strlen(b) : 0;
  char *s = malloc(na + nb + 1);
  if (!s)
    return BH_ENOMEM;
  memcpy(s, a, na);
  memcpy(s + na, b ? b : "", nb + 1);
  char **args = bh__sweep_push(j->args, &j->nargs, cap, sizeof(char *));
  if (!args) {
    free(s);
    return BH_ENOMEM;
  }
  j->args = args;
  args[j->nargs - 1] = s;
  return 0;
}

/* Builds one job: coordinates, replay arguments and the canonical text its id hashes. */
static int make_job(const spec_t *sp, bh_sweep_t *s, size_t t, const variant_t *v, const size_t *ax,
                    const char *seed, bh_sweep_job_t *j, sbuf_t *canon) {
  size_t cap = 0, c = 0;
  j->coords = calloc(s->ncols, sizeof(char *));
  j->trace = strdup(sp->abs[t]);
  if (!j->coords || !j->trace)
    return BH_ENOMEM;
  j->coords[c++] = strdup(sp->rel[t]);
  j->coords[c++] = strdup(v->label);
  j->coords[c++] = strdup(v->name);
  int r = add_arg(j, &cap, "--strategy=", v->baseline ? v->label : v->name);
  char *keys[BH_CLI_MAX_OPTS + 64];
  size_t nk = 0;
  for (size_t i = 0; i < sp->nscols; i++, c++) {
    const char *col = sp->scols[i], *dot = strrchr(col, '.');
    if ((size_t)(dot - col) != strlen(v->name) || strncmp(col, v->name, strlen(v->name)))
      continue;
    for (size_t k = 0; k < v->nopts; k++)
      if (!strcmp(v->opts[k].key, dot + 1))
        j->coords[c] = strdup(v->opts[k].val);
  }
  for (size_t k = 0; !r && k < v->nopts; k++) {
    char kv[1024];
    snprintf(kv, sizeof(kv), "%s=%s", v->opts[k].key, v->opts[k].val);
    if (!v->baseline)
      r = add_arg(j, &cap, "--opt=", kv);
    keys[nk++] = strdup(kv);
  }
  sb_add(canon, "trace=", sp->rel[t], NULL);
  sb_add(canon, "strategy=", v->name, NULL);
  qsort(keys, nk, sizeof(char *), cmp_str);
  for (size_t k = 0; k < nk; k++) {
    sb_add(canon, "strategy.", keys[k], NULL);
    free(keys[k]);
  }
  nk = 0;
  for (size_t a = 0; a < sp->naxes; a++, c++) {
    const axis_t *x = &sp->axes[a];
    const char *val = x->vals[ax[a]];
    if (v->baseline && !bh__sweep_baseline_takes(x->name))
      continue;
    j->coords[c] = strdup(val);
    if (x->flag && strcmp(val, "true"))
      continue;
    char kv[1100];
    snprintf(kv, sizeof(kv), "%s=%s", x->name, val);
    if (!r) /* "--flag" or "--name=value" */
      r = add_arg(j, &cap, "--", x->flag ? x->name : kv);
    keys[nk++] = strdup(kv);
  }
  qsort(keys, nk, sizeof(char *), cmp_str);
  for (size_t k = 0; k < nk; k++) {
    sb_add(canon, "option.", keys[k], NULL);
    free(keys[k]);
  }
  if (seed && !v->baseline) {
    j->coords[c] = strdup(seed);
    if (!r)
      r = add_arg(j, &cap, "--seed=", seed);
    sb_add(canon, "seed=", seed, NULL);
  }
  if (r || canon->oom)
    return BH_ENOMEM;
  snprintf(j->id, sizeof(j->id), "%016llx", (unsigned long long)fnv1a(canon->p));
  return 0;
}

static int build_cols(const spec_t *sp, bh_sweep_t *s) {
  size_t n = 3 + sp->nscols + sp->naxes + (sp->nseeds ? 1 : 0);
  s->cols = calloc(n, sizeof(char *));
  if (!s->cols)
    return BH_ENOMEM;
  s->cols[s->ncols++] = strdup("trace");
  s->cols[s->ncols++] = strdup("strategy");
  s->cols[s->ncols++] = strdup("strategy_name");
  for (size_t i = 0; i < sp->nscols; i++)
    s->cols[s->ncols++] = strdup(sp->scols[i]);
  for (size_t i = 0; i < sp->naxes; i++)
    s->cols[s->ncols++] = strdup(sp->axes[i].name);
  if (sp->nseeds)
    s->cols[s->ncols++] = strdup("seed");
  for (size_t i = 0; i < n; i++)
    if (!s->cols[i])
      return BH_ENOMEM;
  /* a column name taken twice (an option named like a strategy's column) cannot be told apart */
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < i; k++)
      if (!strcmp(s->cols[i], s->cols[k])) {
        fprintf(stderr, "buddyhint sweep: %s: two columns named '%s'\n", sp->name, s->cols[i]);
        return BH_EINVAL;
      }
  return 0;
}

/* Whether some job of the grid shuffles (an option axis "shuffle" with the value true): only
 * then does the seed (--seed) change a replay. */
static bool shuffled(const spec_t *sp) {
  for (size_t a = 0; a < sp->naxes; a++)
    for (size_t k = 0; !strcmp(sp->axes[a].name, "shuffle") && k < sp->axes[a].nvals; k++)
      if (!strcmp(sp->axes[a].vals[k], "true"))
        return true;
  return false;
}

/* Adds job (moved) unless the same job is there already; BH_EBUSY for a hash collision. */
static int add_job(bh_sweep_t *s, idset_t *set, bh_sweep_job_t *job, char **canons, char *canon,
                   size_t *dups) {
  uint64_t h = strtoull(job->id, NULL, 16);
  size_t i = (size_t)(h % set->cap);
  while (set->idx[i] != SIZE_MAX) {
    if (set->keys[i] == h) {
      if (strcmp(canons[set->idx[i]], canon))
        return BH_EBUSY;
      (*dups)++;
      return 1;
    }
    i = (i + 1) % set->cap;
  }
  set->keys[i] = h;
  set->idx[i] = s->njobs;
  canons[s->njobs] = canon;
  s->jobs[s->njobs++] = *job;
  return 0;
}

static void job_free(const bh_sweep_t *s, bh_sweep_job_t *j) {
  for (size_t c = 0; j->coords && c < s->ncols; c++)
    free(j->coords[c]);
  free(j->coords);
  for (size_t a = 0; a < j->nargs; a++)
    free(j->args[a]);
  free(j->args);
  free(j->trace);
  memset(j, 0, sizeof(*j));
}

static int expand(const spec_t *sp, bh_sweep_t *s) {
  double total = (double)sp->ntraces * (double)sp->nvars * (double)(sp->nseeds ? sp->nseeds : 1);
  for (size_t a = 0; a < sp->naxes; a++)
    total *= (double)sp->axes[a].nvals;
  if (total > BH_SWEEP_MAX_JOBS) {
    fprintf(stderr, "buddyhint sweep: %s: %.0f jobs; a sweep has at most %d\n", sp->name, total,
            BH_SWEEP_MAX_JOBS);
    return BH_EINVAL;
  }
  size_t n = (size_t)total;
  idset_t set = {calloc(n * 2 + 1, sizeof(uint64_t)), malloc((n * 2 + 1) * sizeof(size_t)),
                 n * 2 + 1};
  char **canons = calloc(n + 1, sizeof(char *));
  s->jobs = calloc(n + 1, sizeof(bh_sweep_job_t));
  s->cap = n + 1;
  int r = set.keys && set.idx && canons && s->jobs ? build_cols(sp, s) : BH_ENOMEM;
  for (size_t i = 0; set.idx && i < set.cap; i++)
    set.idx[i] = SIZE_MAX;
  size_t ax[64] = {0}, dups = 0;
  if (!r && sp->naxes > 64) {
    fprintf(stderr, "buddyhint sweep: %s: at most 64 options\n", sp->name);
    r = BH_EINVAL;
  }
  for (size_t t = 0; !r && t < sp->ntraces; t++)
    for (size_t v = 0; !r && v < sp->nvars; v++)
      for (bool more = true; !r && more;) {
        for (size_t si = 0; !r && si < (sp->nseeds ? sp->nseeds : 1); si++) {
          bh_sweep_job_t job = {0};
          sbuf_t canon = {0};
          r = make_job(sp, s, t, &sp->vars[v], ax, sp->nseeds ? sp->seeds[si] : NULL, &job, &canon);
          if (!r)
            r = add_job(s, &set, &job, canons, canon.p, &dups);
          if (r) {
            job_free(s, &job);
            free(canon.p);
          }
          if (r == 1)
            r = 0;
        }
        size_t a = sp->naxes;
        while (a > 0 && ++ax[a - 1] == sp->axes[a - 1].nvals)
          ax[--a] = 0;
        more = a > 0;
      }
  if (r == BH_EBUSY)
    fprintf(stderr, "buddyhint sweep: %s: two different jobs hash to the same id\n", sp->name);
  else if (!r && dups)
    fprintf(stderr,
            "sweep: %zu grid points repeat a job (a strategy listed twice, or jemalloc, which "
            "takes no seed and few options): %zu jobs\n",
            dups, s->njobs);
  if (!r && sp->nseeds > 1 && !shuffled(sp))
    fprintf(stderr,
            "sweep: warning: %s: %zu seeds and no 'shuffle: true': a seed only changes the "
            "shuffle of freed top-order blocks (--shuffle), so every seed gives the same "
            "results\n",
            sp->name, sp->nseeds);
  for (size_t i = 0; i < s->njobs; i++)
    free(canons[i]);
  free(canons);
  free(set.keys);
  free(set.idx);
  return r;
}

int bh_sweep_from_text(const char *text, size_t len, const char *name, const char *base,
                       bh_sweep_t **out) {
  spec_t sp;
  memset(&sp, 0, sizeof(sp));
  sp.name = name;
  snprintf(sp.base, sizeof(sp.base), "%s", base && *base ? base : ".");
  *out = NULL;
  int r = bh__sweep_spec_parse(&sp, text, len);
  bh_sweep_t *s = r ? NULL : calloc(1, sizeof(*s));
  if (!r && !s)
    r = BH_ENOMEM;
  if (!r)
    r = expand(&sp, s);
  bh__sweep_spec_free(&sp);
  if (r) {
    bh_sweep_free(s);
    return r;
  }
  *out = s;
  return 0;
}

int bh_sweep_from_spec(const char *path, bh_sweep_t **out) {
  *out = NULL;
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "buddyhint sweep: cannot read %s: %s\n", path, strerror(errno));
    return BH_ENOENT;
  }
  char *text = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 > cap) {
      char *t = realloc(text, cap = cap * 2 + 8192);
      if (!t) {
        free(text);
        fclose(f);
        return BH_ENOMEM;
      }
      text = t;
    }
    size_t n = fread(text + len, 1, cap - len, f);
    len += n;
    if (!n)
      break;
  }
  bool bad = ferror(f);
  fclose(f);
  if (bad || len > (16u << 20)) {
    free(text);
    fprintf(stderr, "buddyhint sweep: cannot read %s%s\n", path, bad ? "" : ": over 16 MiB");
    return BH_EIO;
  }
  char *slash = strrchr(path, '/');
  char *base = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
  int r = base ? bh_sweep_from_text(text, len, path, base, out) : BH_ENOMEM;
  free(base);
  free(text);
  return r;
}

/* ---- the manifest ---- */

static json_t *strs_json(char **v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    json_array_append_new(a, v[i] ? json_string(v[i]) : json_null());
  return a;
}

static json_t *manifest(const bh_sweep_t *s) {
  json_t *jobs = json_array();
  for (size_t i = 0; jobs && i < s->njobs; i++) {
    const bh_sweep_job_t *j = &s->jobs[i];
    json_array_append_new(jobs, json_pack("{s:s, s:o, s:s, s:o}", "id", j->id, "coords",
                                          strs_json(j->coords, s->ncols), "trace", j->trace, "args",
                                          strs_json(j->args, j->nargs)));
  }
  return json_pack("{s:s, s:o, s:o}", "format", "buddyhint-sweep-1", "columns",
                   strs_json(s->cols, s->ncols), "jobs", jobs);
}

static char **json_strs(json_t *a, size_t *n, bool nulls) {
  *n = json_array_size(a);
  char **v = calloc(*n + 1, sizeof(char *));
  for (size_t i = 0; v && i < *n; i++) {
    json_t *e = json_array_get(a, i);
    if (json_is_string(e))
      v[i] = strdup(json_string_value(e));
    if (!v[i] && !(nulls && json_is_null(e))) {
      for (size_t k = 0; k < i; k++)
        free(v[k]);
      free(v);
      return NULL;
    }
  }
  return v;
}

static bool path_join(char *buf, size_t len, const char *dir, const char *name) {
  return snprintf(buf, len, "%s/%s", dir, name) < (int)len;
}

/* A list of exactly n strings (nulls allowed where nulls), or NULL: what a damaged manifest
 * holds instead is refused before anything indexes the list by the column count. */
static char **json_strs_n(json_t *a, size_t n, bool nulls) {
  size_t got;
  if (!json_is_array(a) || json_array_size(a) != n)
    return NULL;
  return json_strs(a, &got, nulls);
}

/* One job of the manifest into s->jobs[s->njobs]; NULL, or what is wrong with it.  The job is
 * counted only when whole, so that bh_sweep_free never reads past what it holds. */
static const char *load_job(bh_sweep_t *s, json_t *o) {
  bh_sweep_job_t *j = &s->jobs[s->njobs];
  if (!json_is_object(o))
    return "is not an object";
  const char *id = json_string_value(json_object_get(o, "id"));
  const char *tr = json_string_value(json_object_get(o, "trace"));
  if (!id || strlen(id) != BH_SWEEP_ID_LEN || strspn(id, "0123456789abcdef") != BH_SWEEP_ID_LEN)
    return "has no \"id\" of 16 hexadecimal digits";
  if (!tr)
    return "has no \"trace\" string";
  json_t *args = json_object_get(o, "args");
  char **coords = json_strs_n(json_object_get(o, "coords"), s->ncols, true);
  if (!coords)
    return "has no \"coords\" list of one string (or null) per column";
  size_t nargs = json_array_size(args);
  char **argv = json_strs_n(args, nargs, false);
  char *trace = strdup(tr);
  if (!argv || !trace) {
    const char *why = argv ? "cannot be loaded: out of memory" : "has no \"args\" list of strings";
    for (size_t c = 0; c < s->ncols; c++)
      free(coords[c]);
    free(coords);
    for (size_t a = 0; argv && a < nargs; a++)
      free(argv[a]);
    free(argv);
    free(trace);
    return why;
  }
  memcpy(j->id, id, BH_SWEEP_ID_LEN + 1);
  j->trace = trace;
  j->coords = coords;
  j->args = argv;
  j->nargs = nargs;
  s->njobs++;
  return NULL;
}

int bh_sweep_load(const char *dir, bh_sweep_t **out) {
  char path[PATH_MAX];
  *out = NULL;
  if (!path_join(path, sizeof(path), dir, "sweep.json"))
    return BH_EINVAL;
  json_error_t e;
  json_t *m = json_load_file(path, 0, &e);
  if (!m) {
    if (access(path, F_OK))
      fprintf(stderr, "buddyhint: %s is not a sweep folder (no sweep.json)\n", dir);
    else
      fprintf(stderr, "buddyhint: %s:%d: %s\n", path, e.line, e.text);
    return BH_EFORMAT;
  }
  bh_sweep_t *s = calloc(1, sizeof(*s));
  json_t *jobs = json_object_get(m, "jobs");
  const char *fmt = json_string_value(json_object_get(m, "format"));
  const char *why = NULL;
  int r = s && fmt && !strcmp(fmt, "buddyhint-sweep-1") && json_is_array(jobs) ? 0 : BH_EFORMAT;
  if (!r)
    s->cols = json_strs(json_object_get(m, "columns"), &s->ncols, false);
  if (!r && (!s->cols || s->ncols < 3))
    r = BH_EFORMAT;
  if (!r && !(s->jobs = calloc(json_array_size(jobs) + 1, sizeof(bh_sweep_job_t))))
    r = BH_ENOMEM;
  size_t i; /* after a failure: the failing job's number, from 1 */
  json_t *ids = json_object();
  for (i = 0; !r && i < json_array_size(jobs); i++) {
    if ((why = load_job(s, json_array_get(jobs, i))))
      r = BH_EFORMAT;
    else if (json_object_get(ids, s->jobs[s->njobs - 1].id))
      why = "has the id of an earlier job", r = BH_EFORMAT;
    else
      json_object_set_new(ids, s->jobs[s->njobs - 1].id, json_true());
  }
  json_decref(ids);
  json_decref(m);
  if (r) {
    if (why)
      fprintf(stderr, "buddyhint: %s: job %zu of the \"jobs\" list %s\n", path, i, why);
    else
      fprintf(stderr, "buddyhint: %s is not a sweep manifest this version can read\n", path);
    bh_sweep_free(s);
    return r;
  }
  s->cap = s->njobs;
  *out = s;
  return 0;
}

const bh_sweep_job_t *bh_sweep_find(const bh_sweep_t *s, const char *id) {
  for (size_t i = 0; i < s->njobs; i++)
    if (!strcmp(s->jobs[i].id, id))
      return &s->jobs[i];
  return NULL;
}

int bh_sweep_col(const bh_sweep_t *s, const char *name) {
  for (size_t i = 0; i < s->ncols; i++)
    if (!strcmp(s->cols[i], name))
      return (int)i;
  return -1;
}

int bh_sweep_write_new(const char *path, const char *text, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, text + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    off += (size_t)w;
  }
  int bad = off < len || fsync(fd);
  if (close(fd) || bad) {
    unlink(path);
    return -1;
  }
  return 0;
}

/* A manifest another start of the same sweep is writing (bh_sweep_prepare's temporary name,
 * sweep.json.PID.tmp): two starts at once on a new folder are not "a folder with files". */
static bool manifest_tmp(const char *name) {
  size_t n = strlen(name);
  return !strncmp(name, "sweep.json.", 11) && n > 15 && !strcmp(name + n - 4, ".tmp") &&
         strspn(name + 11, "0123456789") == n - 15;
}

static bool dir_empty(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  bool empty = true;
  while (d && empty && (e = readdir(d)))
    empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || manifest_tmp(e->d_name);
  if (d)
    closedir(d);
  return empty;
}

/* True if the file at path holds exactly text. */
static bool same_text(const char *path, const char *text, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  bool same = true;
  char buf[65536];
  size_t off = 0, n;
  while (same && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
    same = off + n <= len && !memcmp(buf, text + off, n);
    off += n;
  }
  fclose(f);
  return same && off == len;
}

int bh_sweep_prepare(const bh_sweep_t *s, const char *dir) {
  char path[PATH_MAX], tmp[PATH_MAX + 32];
  if (mkdir(dir, 0755) && errno != EEXIST) {
    fprintf(stderr, "buddyhint sweep: cannot create %s: %s\n", dir, strerror(errno));
    return BH_ESYS;
  }
  if (!path_join(path, sizeof(path), dir, "sweep.json"))
    return BH_EINVAL;
  json_t *m = manifest(s);
  char *text = m ? json_dumps(m, JSON_INDENT(1)) : NULL;
  json_decref(m);
  if (!text)
    return BH_ENOMEM;
  size_t len = strlen(text);
  int r = 0;
  bool have = !access(path, F_OK), empty = have || dir_empty(dir);
  if (!have && !empty && !access(path, F_OK))
    have = true; /* another start of this sweep wrote it meanwhile */
  if (have) {
    bh_sweep_t *old;
    if (bh_sweep_load(dir, &old)) {
      free(text);
      return BH_EFORMAT;
    }
    size_t gone = 0;
    for (size_t i = 0; i < old->njobs; i++)
      gone += !bh_sweep_find(s, old->jobs[i].id);
    if (gone) {
      fprintf(stderr,
              "buddyhint sweep: %s holds another sweep (%zu of its %zu jobs are not in this "
              "spec); give another -o DIR\n",
              dir, gone, old->njobs);
      r = BH_EBUSY;
    } else if (old->njobs < s->njobs) {
      fprintf(stderr, "sweep: the grid in %s grows from %zu to %zu jobs\n", dir, old->njobs,
              s->njobs);
    }
    bh_sweep_free(old);
  } else if (!empty) {
    fprintf(stderr, "buddyhint sweep: %s has files but no sweep.json; give a new or empty folder\n",
            dir);
    r = BH_EBUSY;
  }
  /* the new manifest lists every job the old one did: it replaces it atomically, unless it
   * is the same */
  if (!r && same_text(path, text, len))
    ;
  else if (!r &&
           snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) < (int)sizeof(tmp) &&
           (bh_sweep_write_new(tmp, text, len) || rename(tmp, path))) {
    fprintf(stderr, "buddyhint sweep: cannot write %s: %s\n", path, strerror(errno));
    unlink(tmp);
    r = BH_ESYS;
  }
  free(text);
  if (!r && path_join(path, sizeof(path), dir, "jobs") && mkdir(path, 0755) && errno != EEXIST) {
    fprintf(stderr, "buddyhint sweep: cannot create %s: %s\n", path, strerror(errno));
    r = BH_ESYS;
  }
  return r;
}

bool bh_sweep_job_path(char *buf, size_t len, const char *dir, const char *id, const char *suffix) {
  return snprintf(buf, len, "%s/jobs/%s.%s", dir, id, suffix) < (int)len;
}

int bh_sweep_state(const char *dir, const char *id) {
  char path[PATH_MAX];
  if (!bh_sweep_job_path(path, sizeof(path), dir, id, "json"))
    return BH_SWEEP_MISSING;
  if (!access(path, F_OK)) {
    json_t *j = json_load_file(path, 0, NULL);
    bool ok = json_is_object(j);
    json_decref(j);
    return ok ? BH_SWEEP_DONE : BH_SWEEP_CORRUPT;
  }
  if (bh_sweep_job_path(path, sizeof(path), dir, id, "err") && !access(path, F_OK))
    return BH_SWEEP_FAILED;
  return BH_SWEEP_MISSING;
}
