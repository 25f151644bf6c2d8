/*
 * Line parsers: ftrace / perf script text, and buddyhint's native text.  Hand-written, no
 * sscanf or regex: these run once per line of traces with hundreds of millions of lines.
 *
 * ftrace (trace, trace_pipe), kernel 6.x with the default irq-info option:
 *
 *            <...>-1234    [001] d..1. 12345.678901: mm_page_alloc: page=... pfn=0x10a2b3 ...
 *   TASK-PID [(TGID)] [CPU] [FLAGS] SECONDS.FRACTION: EVENT: KEY=VALUE...
 *
 *   TASK may hold spaces and dashes: the pid follows the last '-' before the [cpu] field.  The
 *   (TGID) column comes with options/record-tgid, the FLAGS column ("d..1.", "d..1" before
 *   6.x) goes away with options/irq-info=0.
 *
 * perf script, default fields for tracepoints:
 *
 *             memhog  4242 [000]  1234.567890: kmem:mm_page_alloc: page=0xffffea... pfn=...
 *   COMM PID[/TID] [[CPU]] SECONDS.FRACTION: SYSTEM:EVENT: KEY=VALUE...
 *
 * So both are parsed the same way: find the timestamp (the first "NUMBER: " preceded by a
 * blank), take the event name after it, and walk back from the timestamp over the optional
 * flags, the cpu, the optional tgid, the pid (the tid for "PID/TID") and its separator: '-' in
 * ftrace, a blank in perf.  Timestamps are seconds with up to 9 decimals; an integer timestamp
 * (trace_clock counter, x86-tsc) is kept as it is.
 *
 * Arguments (kmem.h, 6.12): mm_page_alloc "page=%p pfn=0x%lx order=%d migratetype=%d
 * gfp_flags=%s", mm_page_free "page=%p pfn=0x%lx order=%d", mm_page_free_batched "page=%p
 * pfn=0x%lx order=0".  Before 5.14 pfn was "%lu": a pfn without 0x is decimal.  All printed
 * fields are required; unknown keys are ignored.  A failed allocation prints a NULL page
 * ("(null)", "(nil)", "0000000000000000", "0x0") and pfn 0.
 */
#include "trace/trace_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Small helpers                                                                             */
/* ---------------------------------------------------------------------------------------- */

static inline bool is_digit(char c) { return (unsigned)(c - '0') < 10u; }
static inline bool is_blank(char c) { return c == ' ' || c == '\t'; }

static int malformed(bh__tparse_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int malformed(bh__tparse_t *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->why, sizeof(p->why), fmt, ap);
  va_end(ap);
  return BH__LINE_MALFORMED;
}

/* Shows at most 40 bytes of a field in a message, control bytes as '?'. */
static const char *shown(const char *s, size_t n, char *buf, size_t cap) {
  size_t m = n < 40 ? n : 40, j = 0;
  for (size_t i = 0; i < m && j + 1 < cap; i++)
    buf[j++] = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f ? '?' : s[i];
  if (m < n && j + 4 < cap) {
    memcpy(buf + j, "...", 3);
    j += 3;
  }
  buf[j] = '\0';
  return buf;
}

/*
 * Scanners: parse the number that starts at p (stopping at the first byte that cannot belong
 * to it, or at e) and return where it ends, or NULL if there is no number or it overflows.
 * The callers check that the number is followed by a delimiter.
 */
static inline const char *scan_dec(const char *p, const char *e, uint64_t *out) {
  const char *b = p;
  uint64_t v = 0;
  while (p < e && is_digit(*p) && p - b < 19) /* 19 digits cannot overflow */
    v = v * 10 + (uint64_t)(*p++ - '0');
  while (p < e && is_digit(*p)) {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
      return NULL;
    p++;
  }
  *out = v;
  return p == b ? NULL : p;
}

static inline int hex_digit(char c) {
  if (is_digit(c))
    return c - '0';
  c = (char)(c | 0x20);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "0x" + hex digits, or decimal. */
static inline const char *scan_num(const char *p, const char *e, uint64_t *out) {
  if (e - p < 3 || p[0] != '0' || (p[1] | 0x20) != 'x')
    return scan_dec(p, e, out);
  p += 2;
  const char *b = p;
  uint64_t v = 0;
  int d;
  while (p < e && (d = hex_digit(*p)) >= 0) {
    if (v >> 60)
      return NULL;
    v = v << 4 | (unsigned)d;
    p++;
  }
  *out = v;
  return p == b ? NULL : p;
}

/* Signed decimal in [lo, hi]. */
static inline const char *scan_int(const char *p, const char *e, int64_t lo, int64_t hi,
                                   int64_t *out) {
  bool neg = p < e && *p == '-';
  uint64_t v;
  const char *q = scan_dec(p + neg, e, &v);
  if (!q || v > (uint64_t)INT64_MAX)
    return NULL;
  int64_t x = neg ? -(int64_t)v : (int64_t)v;
  if (x < lo || x > hi)
    return NULL;
  *out = x;
  return q;
}

/* The same over a whole field of n bytes. */
static bool parse_dec(const char *s, size_t n, uint64_t *out) {
  return scan_dec(s, s + n, out) == s + n;
}

static bool parse_int(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out) {
  return scan_int(s, s + n, lo, hi, out) == s + n;
}

/* SECONDS[.FRACTION] with up to 9 decimals -> ns; SECONDS alone is kept as a raw count. */
static bool parse_time(const char *s, size_t n, uint64_t *ns) {
  const char *dot = memchr(s, '.', n);
  if (!dot)
    return parse_dec(s, n, ns);
  size_t ni = (size_t)(dot - s), nf = n - ni - 1;
  uint64_t sec, frac;
  if (nf == 0 || nf > 9 || !parse_dec(s, ni, &sec) || !parse_dec(dot + 1, nf, &frac))
    return false;
  for (size_t i = nf; i < 9; i++)
    frac *= 10;
  if (__builtin_mul_overflow(sec, 1000000000u, ns) || __builtin_add_overflow(*ns, frac, ns))
    return false;
  return true;
}

/* A NULL page pointer as %p prints it. */
static bool is_null_page(const char *s, size_t n) {
  if ((n == 6 && memcmp(s, "(null)", 6) == 0) || (n == 5 && memcmp(s, "(nil)", 5) == 0))
    return true;
  if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s += 2;
    n -= 2;
  }
  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] != '0')
      return false;
  return true;
}

/* ---------------------------------------------------------------------------------------- */
/* ftrace / perf script                                                                      */
/* ---------------------------------------------------------------------------------------- */

/* Where the parts of an event line are. */
struct kline {
  size_t ts, ts_end;    /* timestamp [ts, ts_end) */
  size_t ev, ev_end;    /* event name without the trailing ':' and the "kmem:" prefix */
  size_t args;          /* first byte after the event name's ':' */
  bool prefixed;        /* the event name had a "system:" prefix */
};

/*
 * Finds "NUMBER: NAME:" where NUMBER is preceded by a blank.  Returns false if the line has
 * no such thing (it is then not an event line).
 */
static bool find_timestamp(const char *s, size_t n, struct kline *k) {
  size_t from = 0;
  for (;;) {
    const char *c = memchr(s + from, ':', n - from);
    if (!c)
      return false;
    size_t i = (size_t)(c - s);
    from = i + 1;
    if (i + 1 >= n || !is_blank(s[i + 1]) || i == 0 || !is_digit(s[i - 1]))
      continue;
    size_t b = i;
    while (b > 0 && (is_digit(s[b - 1]) || s[b - 1] == '.'))
      b--;
    if (b == 0 || !is_blank(s[b - 1]) || !is_digit(s[b]))
      continue;
    /* the event name: the next word, which ends with ':' */
    size_t e = i + 1;
    while (e < n && is_blank(s[e]))
      e++;
    size_t w = e;
    while (w < n && !is_blank(s[w]))
      w++;
    if (w - e < 2 || s[w - 1] != ':')
      continue;
    k->ts = b;
    k->ts_end = i;
    k->args = w;
    k->ev_end = w - 1;
    const char *colon = memchr(s + e, ':', k->ev_end - e);
    k->prefixed = colon != NULL;
    k->ev = colon ? (size_t)(colon - s) + 1 : e;
    return true;
  }
}

static const char ev_alloc[] = "mm_page_alloc";
static const char ev_free[] = "mm_page_free";
static const char ev_free_batched[] = "mm_page_free_batched";

/* Our op for an event name, 0 for another event. */
static int event_op(const char *s, size_t n) {
  if (n < sizeof(ev_free) - 1 || memcmp(s, "mm_page_", 8) != 0)
    return 0;
  if (n == sizeof(ev_alloc) - 1 && memcmp(s, ev_alloc, n) == 0)
    return BH_EV_ALLOC;
  if (n == sizeof(ev_free) - 1 && memcmp(s, ev_free, n) == 0)
    return BH_EV_FREE;
  if (n == sizeof(ev_free_batched) - 1 && memcmp(s, ev_free_batched, n) == 0)
    return BH_EV_FREE_BATCHED;
  return 0;
}

/* Does a line that has no event-line shape still name one of our events? */
static bool names_our_event(const char *s, size_t n) {
  static const char *const marks[] = {"mm_page_alloc:", "mm_page_free:",
                                      "mm_page_free_batched:"};
  for (size_t i = 0; i < 3; i++)
    if (memmem(s, n, marks[i], strlen(marks[i])))
      return true;
  return false;
}

static size_t skip_blanks_back(const char *s, size_t e) {
  while (e > 0 && is_blank(s[e - 1]))
    e--;
  return e;
}

static size_t word_start_back(const char *s, size_t e) {
  while (e > 0 && !is_blank(s[e - 1]))
    e--;
  return e;
}

/* "[NNN]" -> cpu. */
static bool parse_cpu_field(const char *s, size_t b, size_t e, int32_t *cpu) {
  int64_t v;
  if (e - b < 3 || s[b] != '[' || s[e - 1] != ']' ||
      !parse_int(s + b + 1, e - b - 2, 0, INT32_MAX, &v))
    return false;
  *cpu = (int32_t)v;
  return true;
}

/*
 * Walks back from the timestamp: [flags] [cpu] [(tgid)] pid.  Sets ev->cpu, ev->pid and
 * *perf_sep (true if the pid is preceded by a blank, as perf prints it).  Returns NULL or
 * what is wrong.
 */
static const char *parse_prefix(const char *s, size_t ts, bh_event_t *ev, bool *perf_sep) {
  size_t e = skip_blanks_back(s, ts);
  size_t b = word_start_back(s, e);
  ev->cpu = -1;
  if (b < e && s[b] != '[' && !is_digit(s[b])) { /* latency flags, e.g. "d..1." */
    e = skip_blanks_back(s, b);
    b = word_start_back(s, e);
    if (b == e || s[b] != '[')
      return "no [cpu] field before the flags";
  }
  if (b < e && s[b] == '[') {
    if (!parse_cpu_field(s, b, e, &ev->cpu))
      return "bad [cpu] field";
    e = skip_blanks_back(s, b);
  }
  if (e > 0 && s[e - 1] == ')') { /* record-tgid: "(   1234)" */
    const char *open = NULL;
    for (size_t i = e - 1; i-- > 0;)
      if (s[i] == '(') {
        open = s + i;
        break;
      }
    if (!open)
      return "bad (tgid) field";
    e = skip_blanks_back(s, (size_t)(open - s));
  }
  size_t d = e;
  while (d > 0 && is_digit(s[d - 1]))
    d--;
  int64_t pid;
  if (d == e || !parse_int(s + d, e - d, 0, INT32_MAX, &pid))
    return "no pid before the timestamp";
  if (d > 0 && s[d - 1] == '/') { /* perf "PID/TID": keep the tid, as ftrace does */
    size_t d2 = d - 1;
    while (d2 > 0 && is_digit(s[d2 - 1]))
      d2--;
    if (d2 == d - 1)
      return "bad pid/tid field";
    d = d2;
  }
  ev->pid = (int32_t)pid;
  if (d == 0 || is_blank(s[d - 1]))
    *perf_sep = true;
  else if (s[d - 1] == '-')
    *perf_sep = false;
  else
    return "no task-pid field";
  return NULL;
}

/* Fields of the kmem events. */
enum { F_PAGE = 1, F_PFN = 2, F_ORDER = 4, F_MT = 8, F_GFP = 16 };

/* The end of the word at p: the first blank or e.  Eight bytes at a time where it can. */
static inline const char *word_end(const char *p, const char *e) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  while (e - p >= 8) {
    uint64_t x, sp, tb;
    memcpy(&x, p, 8);
    sp = x ^ (ones * ' ');
    tb = x ^ (ones * '\t');
    /* a byte of sp or tb is zero where x has a blank; the lowest flagged byte is exact */
    uint64_t m = (((sp - ones) & ~sp) | ((tb - ones) & ~tb)) & highs;
    if (m)
      return p + (__builtin_ctzll(m) >> 3);
    p += 8;
  }
#endif
  while (p < e && !is_blank(*p))
    p++;
  return p;
}

/* Does the key at p (ending at e) equal lit (with its '=')?  Then returns the value. */
static inline const char *key_is(const char *p, const char *e, const char *lit, size_t len) {
  return (size_t)(e - p) >= len && memcmp(p, lit, len) == 0 ? p + len : NULL;
}
#define KEY(p, e, lit) key_is(p, e, lit, sizeof(lit) - 1)

/* A value that did not parse: its whole word goes into the message. */
static int bad_value(bh__tparse_t *p, const char *what, const char *v, const char *e) {
  char sb[48];
  return malformed(p, "bad %s '%s'", what, shown(v, (size_t)(word_end(v, e) - v), sb, sizeof(sb)));
}

static inline bool field_end(const char *q, const char *e) { return q && (q == e || is_blank(*q)); }

/* A gfp flags word at v: the text of the last one is compared first, without a scan. */
static inline const char *gfp_value(bh__tparse_t *p, const char *v, const char *e,
                                    uint32_t *gfp) {
  size_t n = p->gfp_len;
  if (n && (size_t)(e - v) >= n && memcmp(v, p->gfp_text, n) == 0 && field_end(v + n, e)) {
    *gfp = p->gfp_bits;
    p->gfp_unknown += (uint64_t)p->gfp_unknown_last;
    return v + n;
  }
  const char *q = word_end(v, e);
  return bh__gfp_parse_cached(p, v, (size_t)(q - v), gfp) < 0 ? NULL : q;
}

/*
 * KEY=VALUE words from c to e.  The numbers are parsed where they stand (no second pass): this
 * loop runs for every event of traces with hundreds of millions of them.
 */
static int parse_kernel_args(bh__tparse_t *p, const char *c, const char *e, bh_event_t *ev) {
  unsigned seen = 0;
  bool null_page = false;
  uint64_t x;
  int64_t y;
  for (;;) {
    while (c < e && is_blank(*c))
      c++;
    if (c == e)
      break;
    const char *v, *q;
    if ((v = KEY(c, e, "pfn="))) {
      q = scan_num(v, e, &x);
      if (!field_end(q, e))
        return bad_value(p, "pfn", v, e);
      ev->pfn = x;
      seen |= F_PFN;
    } else if ((v = KEY(c, e, "page="))) {
      q = word_end(v, e);
      null_page = is_null_page(v, (size_t)(q - v));
      seen |= F_PAGE;
    } else if ((v = KEY(c, e, "order="))) {
      q = scan_int(v, e, 0, BH_TRACE_MAX_ORDER, &y);
      if (!field_end(q, e)) {
        char sb[48];
        return malformed(p, "bad order '%s' (0..%d)",
                         shown(v, (size_t)(word_end(v, e) - v), sb, sizeof(sb)),
                         BH_TRACE_MAX_ORDER);
      }
      ev->order = (uint8_t)y;
      seen |= F_ORDER;
    } else if ((v = KEY(c, e, "migratetype="))) {
      q = scan_int(v, e, -1, INT8_MAX, &y);
      if (!field_end(q, e))
        return bad_value(p, "migratetype", v, e);
      ev->migratetype = (int8_t)y;
      seen |= F_MT;
    } else if ((v = KEY(c, e, "gfp_flags="))) {
      q = gfp_value(p, v, e, &ev->gfp);
      if (!q)
        return bad_value(p, "gfp_flags", v, e);
      seen |= F_GFP;
    } else { /* another key: skipped */
      q = c;
      while (q < e && *q != '=' && !is_blank(*q))
        q++;
      if (q == e || *q != '=') {
        char sb[48];
        return malformed(p, "expected key=value, got '%s'",
                         shown(c, (size_t)(q - c), sb, sizeof(sb)));
      }
      q = word_end(q, e);
    }
    c = q;
  }
  unsigned need = F_PAGE | F_PFN | F_ORDER;
  if (ev->op == BH_EV_ALLOC)
    need |= F_MT | F_GFP;
  if (bh__trace_unlikely((seen & need) != need)) {
    static const char *const names[] = {"page", "pfn", "order", "migratetype", "gfp_flags"};
    for (unsigned bit = 0; bit < 5; bit++)
      if ((need & ~seen) & (1u << bit))
        return malformed(p, "missing %s=", names[bit]);
  }
  ev->failed = ev->op == BH_EV_ALLOC && null_page;
  return BH__LINE_EVENT;
}

int bh__parse_kernel_line(bh__tparse_t *p, const char *s, size_t n, bh_event_t *ev,
                          bh__kline_shape_t *shape) {
  while (n > 0 && (is_blank(s[n - 1]) || s[n - 1] == '\r'))
    n--;
  size_t f = 0;
  while (f < n && is_blank(s[f]))
    f++;
  if (f == n || s[f] == '#')
    return BH__LINE_OTHER;
  if (bh__trace_unlikely(memchr(s, '\0', n) != NULL)) {
    if (!names_our_event(s, n))
      return BH__LINE_OTHER;
    return malformed(p, "embedded NUL byte");
  }
  struct kline k;
  if (!find_timestamp(s, n, &k)) {
    if (names_our_event(s, n))
      return malformed(p, "cannot find the 'TIMESTAMP: EVENT:' part");
    return BH__LINE_OTHER;
  }
  int op = event_op(s + k.ev, k.ev_end - k.ev);
  bool perf_sep = false;
  memset(ev, 0, sizeof(*ev));
  const char *why = parse_prefix(s, k.ts, ev, &perf_sep);
  if (shape) {
    shape->event_line = why == NULL;
    shape->perf = k.prefixed || perf_sep;
  }
  if (op == 0)
    return BH__LINE_OTHER;
  if (why)
    return malformed(p, "%s", why);
  ev->op = (uint8_t)op;
  ev->migratetype = -1;
  if (!parse_time(s + k.ts, k.ts_end - k.ts, &ev->time_ns)) {
    char sb[48];
    return malformed(p, "bad timestamp '%s'", shown(s + k.ts, k.ts_end - k.ts, sb, sizeof(sb)));
  }
  int r = parse_kernel_args(p, s + k.args, s + n, ev);
  if (r == BH__LINE_EVENT)
    bh__trace_set_zone(p, ev);
  return r;
}

/* ---------------------------------------------------------------------------------------- */
/* Native text                                                                               */
/* ---------------------------------------------------------------------------------------- */

static int parse_native_key(bh__tparse_t *p, const char *c, const char *e, bh_event_t *ev,
                            const char **end) {
  const char *v, *q;
  int64_t y;
  if ((v = KEY(c, e, "cpu="))) {
    if (!field_end(q = scan_int(v, e, -1, INT32_MAX, &y), e))
      return bad_value(p, "cpu", v, e);
    ev->cpu = (int32_t)y;
  } else if ((v = KEY(c, e, "pid="))) {
    if (!field_end(q = scan_int(v, e, -1, INT32_MAX, &y), e))
      return bad_value(p, "pid", v, e);
    ev->pid = (int32_t)y;
  } else if ((v = KEY(c, e, "mt="))) {
    if (!field_end(q = scan_int(v, e, -1, INT8_MAX, &y), e))
      return bad_value(p, "mt", v, e);
    ev->migratetype = (int8_t)y;
  } else if ((v = KEY(c, e, "gfp="))) {
    if (!(q = gfp_value(p, v, e, &ev->gfp)))
      return bad_value(p, "gfp", v, e);
  } else if ((v = KEY(c, e, "failed="))) {
    if (!field_end(q = scan_int(v, e, 0, 1, &y), e)) {
      char sb[48];
      return malformed(p, "bad failed '%s' (0 or 1)",
                       shown(v, (size_t)(word_end(v, e) - v), sb, sizeof(sb)));
    }
    ev->failed = (uint8_t)y;
  } else {
    char sb[48];
    q = word_end(c, e);
    const char *eq = memchr(c, '=', (size_t)(q - c));
    if (!eq)
      return malformed(p, "expected key=value, got '%s'", shown(c, (size_t)(q - c), sb, sizeof(sb)));
    return malformed(p, "unknown key '%s'", shown(c, (size_t)(eq - c), sb, sizeof(sb)));
  }
  *end = q;
  return BH__LINE_EVENT;
}

static inline const char *skip_blanks(const char *c, const char *e) {
  while (c < e && is_blank(*c))
    c++;
  return c;
}

int bh__parse_native_line(bh__tparse_t *p, const char *s, size_t n, bh_event_t *ev) {
  const char *c = s, *e = s + n, *q;
  char sb[48];
  while (e > c && (is_blank(e[-1]) || e[-1] == '\r')) /* trailing blanks, CRLF */
    e--;
  c = skip_blanks(c, e);
  if (c == e || *c == '#')
    return BH__LINE_OTHER;
  if (bh__trace_unlikely(memchr(s, '\0', n) != NULL))
    return malformed(p, "embedded NUL byte");
  memset(ev, 0, sizeof(*ev));
  ev->pid = -1;
  ev->cpu = -1;
  ev->migratetype = -1;
  if (!field_end(q = scan_dec(c, e, &ev->time_ns), e))
    return malformed(p, "bad time '%s'", shown(c, (size_t)(word_end(c, e) - c), sb, sizeof(sb)));
  if ((c = skip_blanks(q, e)) == e)
    return malformed(p, "missing op");
  if (!field_end(c + 1, e) || (*c != 'A' && *c != 'F' && *c != 'B'))
    return malformed(p, "bad op '%s' (A, F or B)",
                     shown(c, (size_t)(word_end(c, e) - c), sb, sizeof(sb)));
  ev->op = *c == 'A' ? BH_EV_ALLOC : *c == 'F' ? BH_EV_FREE : BH_EV_FREE_BATCHED;
  if ((c = skip_blanks(c + 1, e)) == e)
    return malformed(p, "missing pfn");
  if (!field_end(q = scan_num(c, e, &ev->pfn), e))
    return malformed(p, "bad pfn '%s'", shown(c, (size_t)(word_end(c, e) - c), sb, sizeof(sb)));
  if ((c = skip_blanks(q, e)) == e)
    return malformed(p, "missing order");
  int64_t y;
  if (!field_end(q = scan_int(c, e, 0, BH_TRACE_MAX_ORDER, &y), e))
    return malformed(p, "bad order '%s' (0..%d)",
                     shown(c, (size_t)(word_end(c, e) - c), sb, sizeof(sb)), BH_TRACE_MAX_ORDER);
  ev->order = (uint8_t)y;
  while ((c = skip_blanks(q, e)) < e && *c != '#') { /* a '#' word starts a comment */
    int r = parse_native_key(p, c, e, ev, &q);
    if (r != BH__LINE_EVENT)
      return r;
  }
  if (ev->op != BH_EV_ALLOC && (ev->gfp || ev->failed))
    return malformed(p, "gfp= and failed= belong to allocations only");
  bh__trace_set_zone(p, ev);
  return BH__LINE_EVENT;
}
