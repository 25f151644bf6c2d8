/*
 * A run's figures by name: the numbers of its JSON object, nested members named PARENT.KEY.
 * The summary's JSON is the one place that names its figures (bh_replay_summary_json), so a
 * figure added there is a figure here without a second list to keep in step.
 *
 * The reader below takes only what a JSON writer produces (RFC 8259): no comments, no
 * trailing commas.  It does not build anything: it walks the text once and collects numbers.
 */
#include <buddyhint/gate.h>
#include <buddyhint/replay.h>

#include <stdlib.h>
#include <string.h>

/* The reader's state: the text, where it is, and the figures found so far. */
struct figscan {
  const char *p, *end;
  bh_figure_t *out;
  size_t max, n;
  int depth;
};

#define FIG_MAX_DEPTH 32

static void skip_ws(struct figscan *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
    s->p++;
}

/* A string at s->p; its bytes (escapes kept as written) in [*a, *b).  0, or -1. */
static int scan_string(struct figscan *s, const char **a, const char **b) {
  if (s->p >= s->end || *s->p != '"')
    return -1;
  *a = ++s->p;
  while (s->p < s->end && *s->p != '"') {
    if ((unsigned char)*s->p < 0x20)
      return -1;
    s->p += *s->p == '\\' ? 2 : 1;
  }
  if (s->p >= s->end)
    return -1;
  *b = s->p++;
  return 0;
}

static void add(struct figscan *s, const char *name, double v) {
  if (s->n < s->max) {
    snprintf(s->out[s->n].name, sizeof(s->out[s->n].name), "%s", name);
    s->out[s->n].value = v;
  }
  s->n++;
}

static int scan_value(struct figscan *s, const char *name, bool keep);

/* An object at s->p; its members' figures are named PREFIX.KEY (KEY alone at the top). */
static int scan_object(struct figscan *s, const char *prefix, bool keep) {
  if (++s->depth > FIG_MAX_DEPTH)
    return -1;
  s->p++; /* '{' */
  skip_ws(s);
  if (s->p < s->end && *s->p == '}') {
    s->p++;
    s->depth--;
    return 0;
  }
  for (;;) {
    const char *a, *b;
    skip_ws(s);
    if (scan_string(s, &a, &b))
      return -1;
    skip_ws(s);
    if (s->p >= s->end || *s->p++ != ':')
      return -1;
    char name[BH_FIGURE_NAME_MAX];
    size_t plen = *prefix ? strlen(prefix) + 1 : 0, klen = (size_t)(b - a);
    /* a name too long for a figure, or with escapes, is no figure (its value is read) */
    bool ok = keep && plen + klen < sizeof(name) && !memchr(a, '\\', klen) &&
              !(!*prefix && klen == 10 && !memcmp(a, "provenance", 10));
    if (ok)
      snprintf(name, sizeof(name), "%s%s%.*s", prefix, *prefix ? "." : "", (int)klen, a);
    if (scan_value(s, ok ? name : "", ok))
      return -1;
    skip_ws(s);
    if (s->p < s->end && *s->p == ',') {
      s->p++;
      continue;
    }
    if (s->p < s->end && *s->p == '}') {
      s->p++;
      s->depth--;
      return 0;
    }
    return -1;
  }
}

/* An array: read through, nothing kept. */
static int scan_array(struct figscan *s) {
  if (++s->depth > FIG_MAX_DEPTH)
    return -1;
  s->p++; /* '[' */
  skip_ws(s);
  if (s->p < s->end && *s->p == ']') {
    s->p++;
    s->depth--;
    return 0;
  }
  for (;;) {
    if (scan_value(s, "", false))
      return -1;
    skip_ws(s);
    if (s->p < s->end && *s->p == ',') {
      s->p++;
      continue;
    }
    if (s->p < s->end && *s->p == ']') {
      s->p++;
      s->depth--;
      return 0;
    }
    return -1;
  }
}

static bool word(struct figscan *s, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n))
    return false;
  s->p += n;
  return true;
}

static int scan_number(struct figscan *s, const char *name, bool keep) {
  char buf[64];
  size_t n = 0;
  while (s->p + n < s->end && n < sizeof(buf) - 1 && strchr("+-0123456789.eE", s->p[n]))
    n++;
  memcpy(buf, s->p, n);
  buf[n] = '\0';
  char *e;
  double v = strtod(buf, &e);
  if (!n || *e)
    return -1;
  s->p += n;
  if (keep)
    add(s, name, v);
  return 0;
}

static int scan_value(struct figscan *s, const char *name, bool keep) {
  skip_ws(s);
  if (s->p >= s->end)
    return -1;
  const char *a, *b;
  switch (*s->p) {
  case '{':
    return scan_object(s, name, keep);
  case '[':
    return scan_array(s);
  case '"':
    return scan_string(s, &a, &b);
  case 't':
  case 'f':
    if (!word(s, "true") && !word(s, "false"))
      return -1;
    if (keep)
      add(s, name, s->p[-1] == 'e' && s->p[-2] == 'u' ? 1.0 : 0.0);
    return 0;
  case 'n':
    return word(s, "null") ? 0 : -1;
  default:
    return scan_number(s, name, keep);
  }
}

int bh_gate_figures_json(const char *text, size_t len, bh_figure_t *out, size_t max) {
  if (!text || (!out && max))
    return BH_EINVAL;
  struct figscan s = {text, text + len, out, max, 0, 0};
  skip_ws(&s);
  if (s.p >= s.end || *s.p != '{' || scan_object(&s, "", true))
    return BH_EFORMAT;
  skip_ws(&s);
  if (s.p != s.end)
    return BH_EFORMAT;
  return s.n > (size_t)0x7fffffff ? BH_EFORMAT : (int)s.n;
}

int bh_gate_summary_figures(const struct bh_replay_summary *s, bh_figure_t *out, size_t max) {
  if (!s || (!out && max))
    return BH_EINVAL;
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m)
    return BH_ENOMEM;
  int r = bh_replay_summary_json(s, m, 0);
  if (fclose(m) || r) {
    free(buf);
    return BH_ENOMEM;
  }
  r = bh_gate_figures_json(buf, len, out, max);
  free(buf);
  return r;
}
