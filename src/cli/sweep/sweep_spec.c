/*
 * The sweep spec: read with libyaml's document loader into traces, strategy variants, replay
 * option axes and seeds (sweep_spec.h), with every value checked before a job runs: trace
 * globs must match files, replay options go through the replay's own parser, strategy options
 * are checked by attaching the strategy to a small sim arena.  A strategy entry is compare's
 * "NAME[:KEY=VALUE...]" or a mapping NAME: {KEY: VALUE | [VALUES]} whose lists are axes of
 * that strategy only; a spec without strategies has compare's default, none, bitmap, bubble.
 */
#include "cli/sweep/sweep_spec.h"

#include "cli/baseline.h"
#include "cli/replay_opts.h"

#include <buddyhint/strategy.h>

#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define VERB "sweep"

/* Replay options that are flags; every other option takes a value. */
static const char *const flag_opts[] = {
    "realtime", "lenient", "no-pcp", "no-grouping", "compact-order0-only", "compact-skip-unsplit",
    "shuffle"};
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

void *bh__sweep_push(void *arr, size_t *n, size_t *cap, size_t el) {
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

/* Adds s to the set *seen (an object's keys, made on first use): 0, 1 if it was there already,
 * or BH_ENOMEM. */
static int seen_add(json_t **seen, const char *s) {
  if (!*seen && !(*seen = json_object()))
    return BH_ENOMEM;
  if (json_object_get(*seen, s))
    return 1;
  return json_object_set_new(*seen, s, json_true()) ? BH_ENOMEM : 0;
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
  char **r = bh__sweep_push(sp->rel, &n1, &c1, sizeof(char *));
  if (r)
    sp->rel = r;
  char **a = r ? bh__sweep_push(sp->abs, &n2, &c2, sizeof(char *)) : NULL;
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
  char **c = bh__sweep_push(sp->scols, &sp->nscols, &cap, sizeof(char *));
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
  variant_t *v = bh__sweep_push(sp->vars, &sp->nvars, &cap, sizeof(*v));
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
  char *copy = strdup(s);
  int dup = copy ? seen_add(&ax->seen, copy) : BH_ENOMEM;
  if (dup) {
    free(copy);
    return dup < 0 ? dup : serr(sp, n, "options: %s: '%s' is listed twice", ax->name, s);
  }
  char **v = bh__sweep_push(ax->vals, &ax->nvals, &ax->cap, sizeof(char *));
  if (!v) {
    free(copy);
    return BH_ENOMEM;
  }
  ax->vals = v;
  v[ax->nvals - 1] = copy;
  return 0;
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
    axis_t *ax = bh__sweep_push(sp->axes, &sp->naxes, &cap, sizeof(*ax));
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
  char *copy = strdup(s);
  int dup = copy ? seen_add(&sp->seeds_seen, copy) : BH_ENOMEM;
  if (dup) {
    free(copy);
    return dup < 0 ? dup : serr(sp, n, "seeds: %s is listed twice", s);
  }
  char **v = bh__sweep_push(sp->seeds, &sp->nseeds, &sp->seeds_cap, sizeof(char *));
  if (!v) {
    free(copy);
    return BH_ENOMEM;
  }
  sp->seeds = v;
  v[sp->nseeds - 1] = copy;
  return 0;
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

void bh__sweep_spec_free(spec_t *sp) {
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
    json_decref(sp->axes[i].seen);
  }
  free(sp->axes);
  for (size_t i = 0; i < sp->nseeds; i++)
    free(sp->seeds[i]);
  free(sp->seeds);
  json_decref(sp->seeds_seen);
  for (size_t i = 0; i < sp->nscols; i++)
    free(sp->scols[i]);
  free(sp->scols);
}

/*
 * The deepest nesting of flow collections ([ ] and { }) in the text, outside quotes and
 * comments, and the line where it is first passed: libyaml takes time quadratic in it (a
 * spec nested 100,000 deep took 77 s to be refused), and a spec needs a few levels.
 */
#define SPEC_MAX_DEPTH 64
static int flow_depth_line(const char *text, size_t len) {
  int depth = 0, line = 1;
  char quote = 0;
  bool comment = false;
  for (size_t i = 0; i < len; i++) {
    char c = text[i];
    if (c == '\n') {
      line++;
      comment = false;
    } else if (comment) {
    } else if (quote) {
      if (c == '\\' && quote == '"' && i + 1 < len)
        i++;
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
      comment = true;
    } else if (c == '[' || c == '{') {
      if (++depth > SPEC_MAX_DEPTH)
        return line;
    } else if ((c == ']' || c == '}') && depth > 0) {
      depth--;
    }
  }
  return 0;
}

int bh__sweep_spec_parse(spec_t *sp, const char *text, size_t len) {
  int deep = flow_depth_line(text, len);
  if (deep) {
    fprintf(stderr, "buddyhint sweep: %s:%d: nested more than %d levels deep\n", sp->name, deep,
            SPEC_MAX_DEPTH);
    return BH_EFORMAT;
  }
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser))
    return BH_ENOMEM;
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  int r;
  if (!yaml_parser_load(&parser, &sp->doc)) {
    fprintf(stderr, "buddyhint sweep: %s:%lu: %s%s%s\n", sp->name,
            (unsigned long)parser.problem_mark.line + 1, parser.problem ? parser.problem : "",
            parser.context ? " " : "", parser.context ? parser.context : "");
    yaml_parser_delete(&parser);
    return BH_EFORMAT;
  }
  yaml_node_t *root = yaml_document_get_root_node(&sp->doc);
  if (!root) {
    fprintf(stderr, "buddyhint sweep: %s: empty spec\n", sp->name);
    r = BH_EFORMAT;
  } else {
    r = read_doc(sp, root);
  }
  yaml_document_delete(&sp->doc);
  yaml_parser_delete(&parser);
  return r;
}

bool bh__sweep_baseline_takes(const char *opt) {
  return in_list(opt, baseline_opts, sizeof(baseline_opts) / sizeof(baseline_opts[0]));
}
