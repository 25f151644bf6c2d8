/*
 * Sweeps: the YAML spec, its expansion into jobs with stable ids, the manifest of a sweep
 * folder and the state of each job (see sweep.h).
 *
 * The spec is read with libyaml's document loader; everything it says is checked before a
 * job runs.  The expansion is the product traces x strategy variants x option values x
 * seeds, in the order the spec lists them, the last axis varying fastest.  A strategy entry
 * is compare's "NAME[:KEY=VALUE...]" or a mapping NAME: {KEY: VALUE | [VALUES]} whose lists
 * are axes of that strategy only.  The jemalloc baseline (compare's jemalloc entries) takes
 * only the replay options that apply to it (idle, touch, lenient, max-order) and no seed: its
 * other coordinates are empty, and the grid points that differ only there are one job.
 */
#include "cli/sweep.h"

#include "cli/baseline.h"
#include "cli/replay_opts.h"

#include <buddyhint/strategy.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define VERB "sweep"

typedef struct kv {
  char *key, *val;
} kv_t;

typedef struct variant {
  char *name, *label;
  kv_t *opts;
  size_t nopts;
  bool baseline;
} variant_t;

typedef struct axis {
  char *name;
  bool flag; /* values "true"/"false": the option is given or not */
  char **vals;
  size_t nvals;
} axis_t;

typedef struct spec {
  const char *name; /* for messages */
  char base[PATH_MAX];
  yaml_document_t doc;
  char **rel, **abs; /* traces: as the spec names them, absolute */
  size_t ntraces;
  variant_t *vars;
  size_t nvars;
  axis_t *axes;
  size_t naxes;
  char **seeds;
  size_t nseeds;
  char **scols; /* strategy option columns "NAME.KEY" */
  size_t nscols;
} spec_t;

/* Replay options that are flags; every other option takes a value. */
static const char *const flag_opts[] = {
    "realtime", "lenient", "no-pcp", "no-grouping", "compact-order0-only", "shuffle"};
/* Replay options a spec may not set, and what to use instead. */
static const char *const reserved_opts[][2] = {
    {"strategy", "list strategies under 'strategies'"},
    {"opt", "give strategy options in 'strategies' (NAME:KEY=VALUE or NAME: {KEY: VALUE})"},
    {"seed", "list seeds under 'seeds'"},
    {"json", "each job writes its own JSON in the sweep folder"},
    {"timeline", "timelines are not part of a sweep"},
    {"quiet", "jobs always run quietly"},
};
/* The replay options the jemalloc baseline takes (baseline.h). */
static const char *const baseline_opts[] = {"idle", "touch", "lenient", "max-order"};

static bool in_list(const char *s, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(s, list[i]))
      return true;
  return false;
}

/* Grows *arr (elements of size el) to hold one more; the new element is zeroed. */
static void *push(void *arr, size_t *n, size_t *cap, size_t el) {
  char *a = arr;
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 8;
    a = realloc(arr, c * el);
    if (!a)
      return NULL;
    *cap = c;
  }
  memset(a + *n * el, 0, el);
  (*n)++;
  return a;
}

static char *xstrndup(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = 0;
  }
  return p;
}

/* ---- YAML helpers ---- */

static int line_of(const yaml_node_t *n) { return n ? (int)n->start_mark.line + 1 : 0; }

static int serr(const spec_t *sp, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int serr(const spec_t *sp, const yaml_node_t *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "buddyhint sweep: %s:%d: ", sp->name, line_of(n));
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return BH_EINVAL;
}

static yaml_node_t *node(spec_t *sp, int id) { return yaml_document_get_node(&sp->doc, id); }

static const char *scalar(const yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static bool is_null(const yaml_node_t *n) {
  const char *s = scalar(n);
  return !n || (s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
                 !strcmp(s, "NULL")));
}

/* A scalar, or a sequence of scalars: calls fn on each; an empty list is an error. */
static int each_scalar(spec_t *sp, yaml_node_t *n, const char *what,
                       int (*fn)(spec_t *sp, yaml_node_t *item, void *ctx), void *ctx) {
  if (n->type == YAML_SCALAR_NODE && !is_null(n))
    return fn(sp, n, ctx);
  if (n->type != YAML_SEQUENCE_NODE)
    return serr(sp, n, "%s: a value or a list of values", what);
  if (n->data.sequence.items.start == n->data.sequence.items.top)
    return serr(sp, n, "%s: an empty list", what);
  for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
    yaml_node_t *item = node(sp, *it);
    if (!item || item->type != YAML_SCALAR_NODE || is_null(item))
      return serr(sp, item ? item : n, "%s: each entry must be a plain value", what);
    int r = fn(sp, item, ctx);
    if (r)
      return r;
  }
  return 0;
}

/* ---- traces ---- */

static int add_trace(spec_t *sp, const char *rel, const char *path, yaml_node_t *n) {
  char real[PATH_MAX];
  struct stat st;
  if (!realpath(path, real) || stat(real, &st))
    return serr(sp, n, "trace '%s': %s", rel, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return serr(sp, n, "trace '%s' is not a file", rel);
  for (size_t i = 0; i < sp->ntraces; i++)
    if (!strcmp(sp->abs[i], real))
      return 0; /* named twice (two globs): one trace */
  size_t n1 = sp->ntraces, c1 = sp->ntraces, n2 = sp->ntraces, c2 = sp->ntraces;
  char **r = push(sp->rel, &n1, &c1, sizeof(char *));
  if (r)
    sp->rel = r;
  char **a = r ? push(sp->abs, &n2, &c2, sizeof(char *)) : NULL;
  if (!a)
    return BH_ENOMEM;
  sp->abs = a;
  sp->rel[sp->ntraces] = strdup(rel);
  sp->abs[sp->ntraces] = strdup(real);
  sp->ntraces++;
  return sp->rel[sp->ntraces - 1] && sp->abs[sp->ntraces - 1] ? 0 : BH_ENOMEM;
}

/* One entry of 'traces': a file or a glob, relative to the spec's folder. */
static int trace_item(spec_t *sp, yaml_node_t *n, void *ctx) {
  const char *pat = scalar(n);
  char full[PATH_MAX];
  bool rel = pat[0] != '/' && strcmp(sp->base, ".");
  if (snprintf(full, sizeof(full), "%s%s%s", rel ? sp->base : "", rel ? "/" : "", pat) >=
      (int)sizeof(full))
    return serr(sp, n, "trace '%s': path too long", pat);
  size_t skip = rel ? strlen(sp->base) + 1 : 0;
  glob_t g;
  int r = glob(full, GLOB_ERR, NULL, &g);
  if (r == GLOB_NOMATCH) {
    globfree(&g);
    return serr(sp, n, "trace '%s' matches no file (relative to %s)", pat, sp->base);
  }
  if (r) {
    globfree(&g);
    return serr(sp, n, "trace '%s': cannot read its folder", pat);
  }
  for (size_t i = 0; !r && i < g.gl_pathc; i++)
    r = add_trace(sp, g.gl_pathv[i] + skip, g.gl_pathv[i], n);
  globfree(&g);
  return r;
}

/* ---- strategies ---- */

/* Attaches the strategy to a small sim arena: the options are checked by the strategy itself. */
static int check_strategy(spec_t *sp, yaml_node_t *n, const variant_t *v) {
  if (v->baseline) /* checked when its job runs (buddyhint-jemalloc parses the name) */
    return 0;
  if (!bh_strategy_find(v->name))
    return serr(sp, n, "unknown strategy '%s' ('buddyhint info' lists them)", v->name);
  bh_opt_t opts[BH_CLI_MAX_OPTS];
  for (size_t i = 0; i < v->nopts; i++)
    opts[i] = (bh_opt_t){v->opts[i].key, v->opts[i].val};
  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.backing = BH_BACKING_SIM;
  bh_replay_zone_layout(&cfg, 64ull << 20);
  bh_arena_t *a = NULL;
  if (bh_arena_create(&cfg, &a))
    return 0; /* cannot check here; the job will */
  bh_hint_config_t hc;
  bh_hint_config_init(&hc);
  hc.strategy = v->name;
  hc.opts = opts;
  hc.nopts = v->nopts;
  bh_hint_t *h = NULL;
  int r = bh_hint_attach(a, &hc, &h);
  if (!r)
    bh_hint_detach(h);
  else
    r = serr(sp, n, "strategy '%s': %s", v->label, bh_hint_last_error());
  bh_arena_destroy(a);
  return r;
}

static int add_scol(spec_t *sp, const char *name, const char *key) {
  char col[256];
  snprintf(col, sizeof(col), "%s.%s", name, key);
  for (size_t i = 0; i < sp->nscols; i++)
    if (!strcmp(sp->scols[i], col))
      return 0;
  size_t cap = sp->nscols;
  char **c = push(sp->scols, &sp->nscols, &cap, sizeof(char *));
  if (!c)
    return BH_ENOMEM;
  sp->scols = c;
  return (c[sp->nscols - 1] = strdup(col)) ? 0 : BH_ENOMEM;
}

/* Adds a variant name with opts (copied) under label. */
static int add_variant(spec_t *sp, yaml_node_t *n, const char *name, const char *label,
                       const kv_t *opts, size_t nopts) {
  if (nopts > BH_CLI_MAX_OPTS)
    return serr(sp, n, "strategy '%s': at most %d options", label, BH_CLI_MAX_OPTS);
  for (size_t i = 0; i < nopts; i++)
    for (size_t k = 0; k < i; k++)
      if (!strcmp(opts[i].key, opts[k].key))
        return serr(sp, n, "strategy '%s': option '%s' given twice", label, opts[i].key);
  size_t cap = sp->nvars;
  variant_t *v = push(sp->vars, &sp->nvars, &cap, sizeof(*v));
  if (!v)
    return BH_ENOMEM;
  sp->vars = v;
  v = &v[sp->nvars - 1];
  v->name = strdup(name);
  v->label = strdup(label);
  v->opts = calloc(nopts ? nopts : 1, sizeof(kv_t));
  if (!v->name || !v->label || !v->opts)
    return BH_ENOMEM;
  for (size_t i = 0; i < nopts; i++) {
    v->opts[i].key = strdup(opts[i].key);
    v->opts[i].val = strdup(opts[i].val);
    v->nopts++;
    if (!v->opts[i].key || !v->opts[i].val || add_scol(sp, name, opts[i].key))
      return BH_ENOMEM;
  }
  v->baseline = bh_cli_is_baseline(name);
  return check_strategy(sp, n, v);
}

/* "NAME[:KEY=VALUE...]", compare's form. */
static int strategy_string(spec_t *sp, yaml_node_t *n) {
  const char *s = scalar(n);
  kv_t opts[BH_CLI_MAX_OPTS + 1];
  size_t nopts = 0;
  char *copy = strdup(s);
  if (!copy)
    return BH_ENOMEM;
  int r = 0;
  char *save = NULL, *name = s[0] == ':' ? NULL : strtok_r(copy, ":", &save);
  if (!name)
    r = serr(sp, n, "strategy '%s': no name", s);
  for (char *kv = name ? strtok_r(NULL, ":", &save) : NULL; !r && kv;
       kv = strtok_r(NULL, ":", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
      r = serr(sp, n, "strategy '%s': '%s' is not KEY=VALUE", s, kv);
    else if (nopts > BH_CLI_MAX_OPTS)
      r = serr(sp, n, "strategy '%s': too many options", s);
    else {
      *eq = 0;
      opts[nopts++] = (kv_t){kv, eq + 1};
    }
  }
  if (!r)
    r = add_variant(sp, n, name, s, opts, nopts);
  free(copy);
  return r;
}

/* NAME: {KEY: VALUE | [VALUES]}: one variant per combination, in the order given. */
static int strategy_grid(spec_t *sp, yaml_node_t *keyn, yaml_node_t *val) {
  const char *name = scalar(keyn);
  if (!name || is_null(keyn))
    return serr(sp, keyn, "a strategy name must be a plain value");
  if (is_null(val))
    return add_variant(sp, keyn, name, name, NULL, 0);
  if (val->type != YAML_MAPPING_NODE)
    return serr(sp, val, "strategy '%s': its options are a mapping KEY: VALUE or KEY: [VALUES]",
                name);
  yaml_node_pair_t *p0 = val->data.mapping.pairs.start, *p1 = val->data.mapping.pairs.top;
  size_t nk = (size_t)(p1 - p0);
  if (nk > BH_CLI_MAX_OPTS)
    return serr(sp, val, "strategy '%s': too many options", name);
  yaml_node_t *vals[BH_CLI_MAX_OPTS];
  const char *keys[BH_CLI_MAX_OPTS];
  size_t count[BH_CLI_MAX_OPTS], idx[BH_CLI_MAX_OPTS] = {0};
  for (size_t i = 0; i < nk; i++) {
    yaml_node_t *k = node(sp, p0[i].key), *v = node(sp, p0[i].value);
    keys[i] = scalar(k);
    vals[i] = v;
    if (!keys[i] || is_null(k))
      return serr(sp, k, "strategy '%s': an option name must be a plain value", name);
    if (v->type == YAML_SEQUENCE_NODE) {
      count[i] = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
      if (!count[i])
        return serr(sp, v, "strategy '%s': option '%s': an empty list", name, keys[i]);
      for (size_t j = 0; j < count[i]; j++) {
        yaml_node_t *it = node(sp, v->data.sequence.items.start[j]);
        if (!scalar(it) || is_null(it))
          return serr(sp, it, "strategy '%s': option '%s': each entry must be a plain value", name,
                      keys[i]);
      }
    } else if (scalar(v) && !is_null(v)) {
      count[i] = 1;
    } else {
      return serr(sp, v, "strategy '%s': option '%s': a value or a list of values", name, keys[i]);
    }
  }
  for (;;) {
    kv_t opts[BH_CLI_MAX_OPTS];
    char label[1024];
    size_t l = (size_t)snprintf(label, sizeof(label), "%s", name);
    for (size_t i = 0; i < nk; i++) {
      yaml_node_t *v = vals[i];
      const char *s = v->type == YAML_SEQUENCE_NODE
                          ? scalar(node(sp, v->data.sequence.items.start[idx[i]]))
                          : scalar(v);
      opts[i] = (kv_t){(char *)keys[i], (char *)s};
      if (l < sizeof(label))
        l += (size_t)snprintf(label + l, sizeof(label) - l, ":%s=%s", keys[i], s);
    }
    if (l >= sizeof(label))
      return serr(sp, keyn, "strategy '%s': the options are too long", name);
    int r = add_variant(sp, keyn, name, label, opts, nk);
    if (r)
      return r;
    size_t i = nk;
    while (i > 0 && ++idx[i - 1] == count[i - 1])
      idx[--i] = 0;
    if (i == 0)
      return 0;
  }
}

static int strategies(spec_t *sp, yaml_node_t *n) {
  if (n->type == YAML_SCALAR_NODE && !is_null(n))
    return strategy_string(sp, n);
  if (n->type != YAML_SEQUENCE_NODE || n->data.sequence.items.start == n->data.sequence.items.top)
    return serr(sp, n, "strategies: a list of entries, NAME[:KEY=VALUE...] or NAME: {KEY: ...}");
  for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
    yaml_node_t *e = node(sp, *it);
    int r = 0;
    if (e->type == YAML_SCALAR_NODE && !is_null(e))
      r = strategy_string(sp, e);
    else if (e->type == YAML_MAPPING_NODE)
      for (yaml_node_pair_t *p = e->data.mapping.pairs.start; !r && p < e->data.mapping.pairs.top;
           p++)
        r = strategy_grid(sp, node(sp, p->key), node(sp, p->value));
    else
      r = serr(sp, e, "strategies: an entry is NAME[:KEY=VALUE...] or NAME: {KEY: ...}");
    if (r)
      return r;
  }
  return 0;
}

/* ---- replay options ---- */

static int parse_bool(const char *s, bool *b) {
  static const char *const yes[] = {"true", "yes", "on", "1", "True", "Yes", "On", "TRUE"};
  static const char *const no[] = {"false", "no", "off", "0", "False", "No", "Off", "FALSE"};
  if (in_list(s, yes, sizeof(yes) / sizeof(yes[0])))
    return *b = true, 0;
  if (in_list(s, no, sizeof(no) / sizeof(no[0])))
    return *b = false, 0;
  return -1;
}

/* Checks NAME=VALUE with the replay's own option parser. */
static int check_opt(spec_t *sp, yaml_node_t *n, const char *name, const char *val) {
  char arg[1024];
  if (snprintf(arg, sizeof(arg), "--%s=%s", name, val) >= (int)sizeof(arg))
    return serr(sp, n, "options: %s: value too long", name);
  char *argv[] = {(char *)VERB, arg, NULL};
  int i = 1;
  bh_cli_replay_t c;
  bh_cli_replay_init(&c);
  int r = bh_cli_replay_opt(2, argv, &i, &c);
  bh_cli_replay_free(&c);
  if (r == 0)
    return serr(sp, n, "options: '%s' is not a replay option ('buddyhint replay --help')", name);
  if (r < 0)
    return serr(sp, n, "options: %s: '%s' is not a valid value (see above)", name, val);
  return 0;
}

static int axis_value(spec_t *sp, yaml_node_t *n, void *ctx) {
  axis_t *ax = ctx;
  const char *s = scalar(n);
  bool b;
  if (ax->flag) {
    if (parse_bool(s, &b))
      return serr(sp, n, "options: %s is a flag: true or false, not '%s'", ax->name, s);
    s = b ? "true" : "false";
  } else {
    int r = check_opt(sp, n, ax->name, s);
    if (r)
      return r;
  }
  for (size_t i = 0; i < ax->nvals; i++)
    if (!strcmp(ax->vals[i], s))
      return serr(sp, n, "options: %s: '%s' is listed twice", ax->name, s);
  size_t cap = ax->nvals;
  char **v = push(ax->vals, &ax->nvals, &cap, sizeof(char *));
  if (!v)
    return BH_ENOMEM;
  ax->vals = v;
  return (v[ax->nvals - 1] = strdup(s)) ? 0 : BH_ENOMEM;
}

static int options(spec_t *sp, yaml_node_t *n) {
  if (is_null(n))
    return 0;
  if (n->type != YAML_MAPPING_NODE)
    return serr(sp, n, "options: a mapping of replay options, NAME: VALUE or NAME: [VALUES]");
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node(sp, p->key), *v = node(sp, p->value);
    const char *name = scalar(k);
    if (!name || is_null(k))
      return serr(sp, k, "options: an option name must be a plain value");
    if (!strncmp(name, "--", 2))
      return serr(sp, k, "options: name the option without its dashes ('%s')", name + 2);
    for (size_t i = 0; i < sizeof(reserved_opts) / sizeof(reserved_opts[0]); i++)
      if (!strcmp(name, reserved_opts[i][0]))
        return serr(sp, k, "options: '%s' is not for a sweep: %s", name, reserved_opts[i][1]);
    for (size_t i = 0; i < sp->naxes; i++)
      if (!strcmp(sp->axes[i].name, name))
        return serr(sp, k, "options: '%s' is given twice", name);
    size_t cap = sp->naxes;
    axis_t *ax = push(sp->axes, &sp->naxes, &cap, sizeof(*ax));
    if (!ax)
      return BH_ENOMEM;
    sp->axes = ax;
    ax = &ax[sp->naxes - 1];
    if (!(ax->name = strdup(name)))
      return BH_ENOMEM;
    ax->flag = in_list(name, flag_opts, sizeof(flag_opts) / sizeof(flag_opts[0]));
    char what[300];
    snprintf(what, sizeof(what), "options: %s", name);
    int r = each_scalar(sp, v, what, axis_value, ax);
    if (r)
      return r;
  }
  return 0;
}

static int seed_item(spec_t *sp, yaml_node_t *n, void *ctx) {
  const char *s = scalar(n);
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  (void)x;
  if (!*s || *end || *s == '-' || *s == '+' || errno)
    return serr(sp, n, "seeds: '%s' is not a number in 0..%llu", s, (unsigned long long)UINT64_MAX);
  for (size_t i = 0; i < sp->nseeds; i++)
    if (!strcmp(sp->seeds[i], s))
      return serr(sp, n, "seeds: %s is listed twice", s);
  size_t cap = sp->nseeds;
  char **v = push(sp->seeds, &sp->nseeds, &cap, sizeof(char *));
  if (!v)
    return BH_ENOMEM;
  sp->seeds = v;
  return (v[sp->nseeds - 1] = strdup(s)) ? 0 : BH_ENOMEM;
}

/* ---- the document ---- */

static int read_doc(spec_t *sp, yaml_node_t *root) {
  yaml_node_t *traces = NULL, *strats = NULL, *opts = NULL, *seeds = NULL;
  if (!root || root->type != YAML_MAPPING_NODE)
    return serr(sp, root, "a sweep spec is a mapping with traces, strategies, options, seeds");
  for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
       p++) {
    yaml_node_t *k = node(sp, p->key), *v = node(sp, p->value);
    const char *key = scalar(k);
    yaml_node_t **slot = !key                         ? NULL
                         : !strcmp(key, "traces")     ? &traces
                         : !strcmp(key, "strategies") ? &strats
                         : !strcmp(key, "options")    ? &opts
                         : !strcmp(key, "seeds")      ? &seeds
                                                      : NULL;
    if (!slot)
      return serr(sp, k, "unknown key '%s' (a spec has traces, strategies, options, seeds)",
                  key ? key : "?");
    if (*slot)
      return serr(sp, k, "'%s' is given twice", key);
    *slot = v;
  }
  if (!traces || is_null(traces))
    return serr(sp, root, "no traces: list the trace files (or globs) under 'traces'");
  int r = each_scalar(sp, traces, "traces", trace_item, NULL);
  if (!r && strats)
    r = strategies(sp, strats);
  if (!r && !strats) { /* compare's default */
    static const char *const def[] = {"none", "bitmap", "bubble"};
    for (size_t i = 0; !r && i < 3; i++)
      r = add_variant(sp, root, def[i], def[i], NULL, 0);
  }
  if (!r && opts)
    r = options(sp, opts);
  if (!r && seeds && !is_null(seeds))
    r = each_scalar(sp, seeds, "seeds", seed_item, NULL);
  return r;
}

static void spec_free(spec_t *sp) {
  for (size_t i = 0; i < sp->ntraces; i++) {
    free(sp->rel[i]);
    free(sp->abs[i]);
  }
  free(sp->rel);
  free(sp->abs);
  for (size_t i = 0; i < sp->nvars; i++) {
    for (size_t k = 0; k < sp->vars[i].nopts; k++) {
      free(sp->vars[i].opts[k].key);
      free(sp->vars[i].opts[k].val);
    }
    free(sp->vars[i].opts);
    free(sp->vars[i].name);
    free(sp->vars[i].label);
  }
  free(sp->vars);
  for (size_t i = 0; i < sp->naxes; i++) {
    for (size_t k = 0; k < sp->axes[i].nvals; k++)
      free(sp->axes[i].vals[k]);
    free(sp->axes[i].vals);
    free(sp->axes[i].name);
  }
  free(sp->axes);
  for (size_t i = 0; i < sp->nseeds; i++)
    free(sp->seeds[i]);
  free(sp->seeds);
  for (size_t i = 0; i < sp->nscols; i++)
    free(sp->scols[i]);
  free(sp->scols);
}

/* ---- expansion ---- */

void bh_sweep_free(bh_sweep_t *s) {
  if (!s)
    return;
  for (size_t j = 0; j < s->njobs; j++) {
    bh_sweep_job_t *job = &s->jobs[j];
    for (size_t c = 0; c < s->ncols; c++)
      free(job->coords[c]);
    free(job->coords);
    for (size_t a = 0; a < job->nargs; a++)
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
  char buf[1100];
  snprintf(buf, sizeof(buf), "%s%s", a, b ? b : "");
  char **args = push(j->args, &j->nargs, cap, sizeof(char *));
  if (!args)
    return BH_ENOMEM;
  j->args = args;
  return (args[j->nargs - 1] = strdup(buf)) ? 0 : BH_ENOMEM;
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
    if (v->baseline && !in_list(x->name, baseline_opts, 4))
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
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser))
    return BH_ENOMEM;
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  int r;
  if (!yaml_parser_load(&parser, &sp.doc)) {
    fprintf(stderr, "buddyhint sweep: %s:%lu: %s%s%s\n", name,
            (unsigned long)parser.problem_mark.line + 1, parser.problem ? parser.problem : "",
            parser.context ? " " : "", parser.context ? parser.context : "");
    yaml_parser_delete(&parser);
    return BH_EFORMAT;
  }
  yaml_node_t *root = yaml_document_get_root_node(&sp.doc);
  if (!root) {
    fprintf(stderr, "buddyhint sweep: %s: empty spec\n", name);
    r = BH_EFORMAT;
  } else {
    r = read_doc(&sp, root);
  }
  yaml_document_delete(&sp.doc);
  yaml_parser_delete(&parser);
  bh_sweep_t *s = r ? NULL : calloc(1, sizeof(*s));
  if (!r && !s)
    r = BH_ENOMEM;
  if (!r)
    r = expand(&sp, s);
  spec_free(&sp);
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
  char *base = slash ? xstrndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
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
  int r = s && fmt && !strcmp(fmt, "buddyhint-sweep-1") && json_is_array(jobs) ? 0 : BH_EFORMAT;
  if (!r)
    s->cols = json_strs(json_object_get(m, "columns"), &s->ncols, false);
  if (!r && (!s->cols || s->ncols < 3))
    r = BH_EFORMAT;
  if (!r && !(s->jobs = calloc(json_array_size(jobs) + 1, sizeof(bh_sweep_job_t))))
    r = BH_ENOMEM;
  for (size_t i = 0; !r && i < json_array_size(jobs); i++) {
    json_t *o = json_array_get(jobs, i);
    bh_sweep_job_t *j = &s->jobs[s->njobs];
    const char *id = json_string_value(json_object_get(o, "id"));
    const char *tr = json_string_value(json_object_get(o, "trace"));
    size_t nc;
    if (!id || strlen(id) != BH_SWEEP_ID_LEN || strspn(id, "0123456789abcdef") != BH_SWEEP_ID_LEN ||
        !tr) {
      r = BH_EFORMAT;
      break;
    }
    s->njobs++;
    memcpy(j->id, id, BH_SWEEP_ID_LEN + 1);
    j->trace = strdup(tr);
    j->coords = json_strs(json_object_get(o, "coords"), &nc, true);
    j->args = json_strs(json_object_get(o, "args"), &j->nargs, false);
    if (!j->trace || !j->coords || !j->args || nc != s->ncols)
      r = BH_EFORMAT;
  }
  json_decref(m);
  if (r) {
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

static bool dir_empty(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  bool empty = true;
  while (d && empty && (e = readdir(d)))
    empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
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
  if (!access(path, F_OK)) {
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
  } else if (!dir_empty(dir)) {
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
