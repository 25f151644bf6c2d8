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
 * pfn=0x%lx order=0".  Before 5.14 pfn was "%lu": a pfn without 0x is decimal.  Before 3.3 the
 * two frees were mm_page_free_direct and mm_pagevec_free.  All printed
 * fields are required; unknown keys are ignored.  A failed allocation prints a NULL page
 * ("(null)", "(nil)", "0000000000000000", "0x0") and pfn 0.
 */
#include "trace/trace_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* ---------------------------------------------------------------------------------------- */
/* Small helpers                                                                             */
/* ---------------------------------------------------------------------------------------- */

/* The scanners below run several times per line: inlined even where they are used often. */
#define HOT static inline __attribute__((always_inline))

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
HOT const char *scan_dec(const char *p, const char *e, uint64_t *out) {
  const char *b = p, *e19 = e - p > 19 ? p + 19 : e; /* 19 digits cannot overflow */
  uint64_t v = 0;
  while (p < e19 && is_digit(*p))
    v = v * 10 + (uint64_t)(*p++ - '0');
  while (p < e && is_digit(*p)) {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
      return NULL;
    p++;
  }
  *out = v;
  return p == b ? NULL : p;
}

/* 1 + the value of a hex digit, 0 for other bytes: one load per digit instead of three range
 * checks. */
static const uint8_t hex_value1[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* "0x" + hex digits, or decimal. */
HOT const char *scan_num(const char *p, const char *e, uint64_t *out) {
  if (e - p < 3 || p[0] != '0' || (p[1] | 0x20) != 'x')
    return scan_dec(p, e, out);
  p += 2;
  const char *b = p, *e16 = e - p > 16 ? p + 16 : e; /* 16 digits cannot overflow */
  uint64_t v = 0;
  unsigned d;
  while (p < e16 && (d = hex_value1[(unsigned char)*p]) != 0) {
    v = v << 4 | (d - 1);
    p++;
  }
  while (p < e && (d = hex_value1[(unsigned char)*p]) != 0) {
    if (v >> 60)
      return NULL;
    v = v << 4 | (d - 1);
    p++;
  }
  *out = v;
  return p == b ? NULL : p;
}

/* Signed decimal in [lo, hi]. */
HOT const char *scan_int(const char *p, const char *e, int64_t lo, int64_t hi, int64_t *out) {
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
  /* a word of eight '0' at a time: the hashed pointers of real traces start with eight */
  for (; n >= 8; s += 8, n -= 8) {
    uint64_t x;
    memcpy(&x, s, 8);
    if (x != 0x3030303030303030ull)
      return false;
  }
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
  size_t ts, ts_end; /* timestamp [ts, ts_end) */
  size_t ev, ev_end; /* event name without the trailing ':' and the "kmem:" prefix */
  size_t args;       /* first byte after the event name's ':' */
  bool prefixed;     /* the event name had a "system:" prefix */
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

/*
 * Our events by name, with the names Linux 2.6.33 to 3.2 gave the two frees (renamed in 3.3
 * with the same arguments: "page=%p pfn=%lu order=%d" and "page=%p pfn=%lu order=0 cold=%d").
 */
static const struct {
  const char *name;
  int op;
} events[] = {
    {"mm_page_alloc", BH_EV_ALLOC},
    {"mm_page_free", BH_EV_FREE},
    {"mm_page_free_batched", BH_EV_FREE_BATCHED},
    {"mm_page_free_direct", BH_EV_FREE},
    {"mm_pagevec_free", BH_EV_FREE_BATCHED},
    /* the pcp events (Linux 6.12 kmem.h: "page=%p pfn=0x%lx order=%d migratetype=%d", and
     * mm_page_alloc_zone_locked's "... percpu_refill=%d"), only when the reader asks for them */
    {"mm_page_pcpu_drain", BH_EV_PCPU_DRAIN},
    {"mm_page_alloc_zone_locked", BH_EV_ALLOC_ZONE_LOCKED},
    /* and the fallbacks (kmem.h: "page=%p pfn=0x%lx alloc_order=%d fallback_order=%d
     * pageblock_order=%d alloc_migratetype=%d fallback_migratetype=%d fragmenting=%d
     * change_ownership=%d"), with them */
    {"mm_page_alloc_extfrag", BH_EV_EXTFRAG},
};
enum { NR_EVENTS = sizeof(events) / sizeof(events[0]), NR_PAGE_EVENTS = NR_EVENTS - 3 };

/* Our op for an event name, 0 for another event (the pcp events too unless pcp). */
static int event_op(const char *s, size_t n, bool pcp) {
  if (n < 12 || memcmp(s, "mm_page", 7) != 0)
    return 0;
  for (size_t i = 0; i < (pcp ? NR_EVENTS : NR_PAGE_EVENTS); i++)
    if (strlen(events[i].name) == n && memcmp(s, events[i].name, n) == 0)
      return events[i].op;
  return 0;
}

/* workqueue_execute_start of vmstat_update (Linux 6.12 include/trace/events/workqueue.h:
 * "work struct %p: function %ps"): the vmstat worker ran on the line's CPU.  Only when asked
 * for (bh__tparse_t.vmstat); the other work functions are other lines. */
static bool vmstat_work(const char *ev, size_t n, const char *args, const char *end) {
  static const char name[] = "workqueue_execute_start", fn[] = "function vmstat_update";
  size_t k = sizeof(fn) - 1;
  return n == sizeof(name) - 1 && !memcmp(ev, name, n) && (size_t)(end - args) >= k &&
         !memcmp(end - k, fn, k) && (end - k == args || is_blank(end[-(ptrdiff_t)k - 1]));
}

/* Does a line that has no event-line shape still name one of our events? */
static bool names_our_event(const char *s, size_t n, bool pcp) {
  char mark[32];
  for (size_t i = 0; i < (pcp ? NR_EVENTS : NR_PAGE_EVENTS); i++) {
    size_t k = strlen(events[i].name);
    memcpy(mark, events[i].name, k);
    mark[k] = ':';
    if (memmem(s, n, mark, k + 1))
      return true;
  }
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
enum {
  F_PAGE = 1,
  F_PFN = 2,
  F_ORDER = 4,
  F_MT = 8,
  F_GFP = 16,
  F_REFILL = 32,
  F_FORDER = 64, /* mm_page_alloc_extfrag's fallback_order, fallback_migratetype and */
  F_FMT = 128,   /* change_ownership (its alloc_order and alloc_migratetype fill F_ORDER, F_MT) */
  F_OWN = 256,
};

/*
 * Eight bytes at a time: the high bit of each byte of x that is not a blank.  A byte of
 * x ^ ' ' or x ^ '\t' is zero where x has a blank, and ((y & 0x7f) + 0x7f) | y has its high
 * bit set exactly where y is not zero (no carry crosses bytes).
 */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define BH_SWAR 1
static inline uint64_t nonblank_bytes(uint64_t x) {
  const uint64_t lows = 0x7f7f7f7f7f7f7f7full, ones = 0x0101010101010101ull;
  uint64_t sp = x ^ (ones * ' '), tb = x ^ (ones * '\t');
  return (((sp & lows) + lows) | sp) & (((tb & lows) + lows) | tb) & ~lows;
}
#endif

/* The end of the word at p: the first blank or e. */
HOT const char *word_end(const char *p, const char *e) {
#ifdef BH_SWAR
  while (e - p >= 8) {
    uint64_t x;
    memcpy(&x, p, 8);
    uint64_t m = ~nonblank_bytes(x) & 0x8080808080808080ull;
    if (m)
      return p + (__builtin_ctzll(m) >> 3);
    p += 8;
  }
#endif
  while (p < e && !is_blank(*p))
    p++;
  return p;
}

/* The first byte at or after p that is not a blank, or e. */
HOT const char *blanks_end(const char *p, const char *e) {
#ifdef BH_SWAR
  while (e - p >= 8) {
    uint64_t x;
    memcpy(&x, p, 8);
    uint64_t m = nonblank_bytes(x);
    if (m)
      return p + (__builtin_ctzll(m) >> 3);
    p += 8;
  }
#endif
  while (p < e && is_blank(*p))
    p++;
  return p;
}

/*
 * Do the len bytes at p equal the literal lit?  len is a constant: with 4 to 16 bytes this is
 * two overlapping word compares against immediates, where memcmp would be a call.
 */
HOT bool literal_at(const char *p, const char *lit, size_t len) {
  if (len >= 8 && len <= 16) {
    uint64_t a, b, c, d;
    memcpy(&a, p, 8);
    memcpy(&b, lit, 8);
    memcpy(&c, p + len - 8, 8);
    memcpy(&d, lit + len - 8, 8);
    return ((a ^ b) | (c ^ d)) == 0;
  }
  if (len >= 4 && len < 8) {
    uint32_t a, b, c, d;
    memcpy(&a, p, 4);
    memcpy(&b, lit, 4);
    memcpy(&c, p + len - 4, 4);
    memcpy(&d, lit + len - 4, 4);
    return ((a ^ b) | (c ^ d)) == 0;
  }
  return memcmp(p, lit, len) == 0;
}

/* Does the key at p (ending at e) equal lit (with its '=')?  Then returns the value. */
HOT const char *key_is(const char *p, const char *e, const char *lit, size_t len) {
  return (size_t)(e - p) >= len && literal_at(p, lit, len) ? p + len : NULL;
}
#define KEY(p, e, lit) key_is(p, e, lit, sizeof(lit) - 1)

/* A value that did not parse: its whole word goes into the message. */
static int bad_value(bh__tparse_t *p, const char *what, const char *v, const char *e) {
  char sb[48];
  return malformed(p, "bad %s '%s'", what, shown(v, (size_t)(word_end(v, e) - v), sb, sizeof(sb)));
}

static inline bool field_end(const char *q, const char *e) { return q && (q == e || is_blank(*q)); }

/*
 * One of mm_page_alloc_extfrag's own fields at c: alloc_order and alloc_migratetype into
 * order and migratetype, fallback_order, fallback_migratetype, change_ownership.  Returns its
 * F_ bit with *end after the value, 0 for another key, or -1 for a bad value (p->why says so).
 */
static int extfrag_field(bh__tparse_t *p, const char *c, const char *e, bh_event_t *ev,
                         const char **end) {
  static const struct {
    const char *key;
    unsigned bit;
    int lo, hi;
  } keys[] = {
      {"alloc_order=", F_ORDER, 0, BH_TRACE_MAX_ORDER},
      {"fallback_order=", F_FORDER, 0, BH_TRACE_MAX_ORDER},
      {"alloc_migratetype=", F_MT, -1, INT8_MAX},
      {"fallback_migratetype=", F_FMT, -1, INT8_MAX},
      {"change_ownership=", F_OWN, 0, 1},
  };
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
    size_t n = strlen(keys[i].key);
    if ((size_t)(e - c) < n || memcmp(c, keys[i].key, n) != 0)
      continue;
    int64_t y;
    const char *v = c + n;
    *end = scan_int(v, e, keys[i].lo, keys[i].hi, &y);
    if (!field_end(*end, e)) {
      char name[32];
      snprintf(name, sizeof(name), "%.*s", (int)n - 1, keys[i].key);
      bad_value(p, name, v, e);
      return -1;
    }
    if (keys[i].bit == F_ORDER)
      ev->order = (uint8_t)y;
    else if (keys[i].bit == F_FORDER)
      ev->fallback_order = (uint8_t)y;
    else if (keys[i].bit == F_MT)
      ev->migratetype = (int8_t)y;
    else if (keys[i].bit == F_FMT)
      ev->fallback_migratetype = (int8_t)y;
    else
      ev->change_ownership = (uint8_t)y;
    return (int)keys[i].bit;
  }
  return 0;
}

/* A gfp flags word at v: the text of the last one is compared first, without a scan. */
static inline const char *gfp_value(bh__tparse_t *p, const char *v, const char *e, uint32_t *gfp) {
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
    } else if (ev->op == BH_EV_ALLOC_ZONE_LOCKED && (v = KEY(c, e, "percpu_refill="))) {
      q = scan_int(v, e, 0, 1, &y);
      if (!field_end(q, e))
        return bad_value(p, "percpu_refill", v, e);
      ev->percpu_refill = (uint8_t)y;
      seen |= F_REFILL;
    } else if (ev->op == BH_EV_EXTFRAG && (y = extfrag_field(p, c, e, ev, &q)) != 0) {
      if (y < 0)
        return BH__LINE_MALFORMED;
      seen |= (unsigned)y;
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
  else if (ev->op == BH_EV_PCPU_DRAIN)
    need |= F_MT;
  else if (ev->op == BH_EV_ALLOC_ZONE_LOCKED)
    need |= F_MT | F_REFILL;
  else if (ev->op == BH_EV_EXTFRAG)
    need |= F_MT | F_FORDER | F_FMT | F_OWN;
  if (bh__trace_unlikely((seen & need) != need)) {
    bool xf = ev->op == BH_EV_EXTFRAG;
    const char *const names[] = {"page",
                                 "pfn",
                                 xf ? "alloc_order" : "order",
                                 xf ? "alloc_migratetype" : "migratetype",
                                 "gfp_flags",
                                 "percpu_refill",
                                 "fallback_order",
                                 "fallback_migratetype",
                                 "change_ownership"};
    for (unsigned bit = 0; bit < 9; bit++)
      if ((need & ~seen) & (1u << bit))
        return malformed(p, "missing %s=", names[bit]);
  }
  ev->failed = ev->op == BH_EV_ALLOC && null_page;
  return BH__LINE_EVENT;
}

/*
 * The fast path.  Nearly every line of a real trace has one of two shapes: the kernel's
 * "%16s-%-7d [(%7d)] [%03d] FLAGS %5lu.%06lu: mm_page_alloc: page=%p pfn=0x%lx order=%d ..."
 * (the tgid with options/record-tgid, FLAGS optional; the task name may hold blanks, dashes
 * and ':') or perf's "%16s %6d [%03d] %lu.%06lu: kmem:mm_page_alloc: ...", the kmem.h
 * arguments in their printed order with one blank between them.  This reads just those and
 * gives up (FAST_NO) on anything else, the general parser above then starting over.  It only
 * takes lines the general parser reads the same way, with the same gfp cache updates, so no
 * event, count or message changes: where the two could differ (a ':' before the timestamp
 * that find_timestamp could take, an integer timestamp, a PID/TID, other keys, other blanks)
 * it gives up.
 *
 * The prefix is read on bitmasks: the first 64 bytes of the line, which hold everything up to
 * the timestamp's ':' in these shapes, are classified once (blank, digit, ':'), and each step
 * of parse_prefix's walk back over blanks, a word or digits is one count of leading zeros.
 */
enum { FAST_NO = -1 };

struct cls64 {
  uint64_t blank, digit, colon; /* bit i set where p[i] is one */
};

/* Classifies the 64 bytes at p. */
static inline void classify64(const char *p, struct cls64 *m) {
  uint64_t b = 0, d = 0, c = 0;
#ifdef __SSE2__
  const __m128i sp = _mm_set1_epi8(' '), tb = _mm_set1_epi8('\t'), co = _mm_set1_epi8(':');
  const __m128i zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
  for (int i = 0; i < 4; i++) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
    __m128i bl = _mm_or_si128(_mm_cmpeq_epi8(x, sp), _mm_cmpeq_epi8(x, tb));
    __m128i t = _mm_sub_epi8(x, zero); /* a digit iff t <= 9, unsigned */
    __m128i dg = _mm_cmpeq_epi8(_mm_min_epu8(t, nine), t);
    b |= (uint64_t)(uint16_t)_mm_movemask_epi8(bl) << (16 * i);
    d |= (uint64_t)(uint16_t)_mm_movemask_epi8(dg) << (16 * i);
    c |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, co)) << (16 * i);
  }
#else
  for (int i = 0; i < 64; i++) {
    b |= (uint64_t)is_blank(p[i]) << i;
    d |= (uint64_t)is_digit(p[i]) << i;
    c |= (uint64_t)(p[i] == ':') << i;
  }
#endif
  m->blank = b;
  m->digit = d;
  m->colon = c;
}

/* The highest set bit of m below bit i (0 <= i < 64), or -1. */
static inline int last_below(uint64_t m, int i) {
  m &= (1ull << i) - 1;
  return m ? 63 - __builtin_clzll(m) : -1;
}

/*
 * SWAR number conversions: x holds up to 8 digit values (0..9 or 0..15), one per byte, the
 * most significant in the lowest byte used, zeros in the bytes before it.  Pairs, then quads,
 * then the eight are combined: three multiply-adds instead of a loop.
 */
HOT uint64_t dec8(uint64_t x) {
  x = (x * 10 + (x >> 8)) & 0x00ff00ff00ff00ffull;
  x = (x * 100 + (x >> 16)) & 0x0000ffff0000ffffull;
  return (x * 10000 + (x >> 32)) & 0xffffffffull;
}

HOT uint64_t hex8(uint64_t x) {
  x = (x << 4 | x >> 8) & 0x00ff00ff00ff00ffull;
  x = (x << 8 | x >> 16) & 0x0000ffff0000ffffull;
  return (x << 16 | x >> 32) & 0xffffffffull;
}

/* Are all 8 bytes of x ASCII digits?  A digit is 0x30..0x39: its high nibble is 3, and
 * still is after adding 6 (a byte with another high nibble fails either way, carry or not). */
HOT bool all_digits8(uint64_t x) {
  const uint64_t high = 0xf0f0f0f0f0f0f0f0ull, zeros = 0x3030303030303030ull;
  return (((x & high) ^ zeros) | (((x + 0x0606060606060606ull) & high) ^ zeros)) == 0;
}

/* The value of the digits [p, e) (known to be digits, at most 19).  lo is where the line
 * starts: the last 8 are converted at once when the 8 bytes before e are in it. */
HOT uint64_t digits_value(const char *lo, const char *p, const char *e) {
  uint64_t v = 0;
#ifdef BH_SWAR
  if (e - p > 2 && e - lo >= 8) {
    for (; e - p > 8; p++)
      v = v * 10 + (uint64_t)(*p - '0');
    uint64_t x, keep = ~0ull << (8 * (8 - (e - p)));
    memcpy(&x, e - 8, 8);
    return v * 100000000u + dec8((x & keep) - (0x3030303030303030ull & keep));
  }
#endif
  for (; p < e; p++)
    v = v * 10 + (uint64_t)(*p - '0');
  return v;
}

/*
 * A number in hex after "0x" or in decimal at p, as scan_num reads it, when it has 1 to 7
 * digits and 8 bytes are left (the common pfn): returns its end, or NULL where scan_num is
 * to be asked.
 */
HOT const char *swar_digits(const char *p, const char *e, bool hex, uint64_t *out) {
#ifdef BH_SWAR
  const uint64_t H = 0x8080808080808080ull, ones = 0x0101010101010101ull;
  if (e - p < 8)
    return NULL;
  uint64_t x, y;
  memcpy(&x, p, 8);
  /* the high bit of a byte: (b & 0x7f) >= '0', > '9'; the same for 'a'..'f' on b | 0x20 */
  uint64_t dg = ((x | H) - ones * '0') & ~((x & ~H) + ones * (0x80 - ':')) & ~x & H;
  y = x | ones * 0x20;
  uint64_t lt = ((y | H) - ones * 'a') & ~((y & ~H) + ones * (0x80 - 'g')) & ~y & H;
  uint64_t bad = ~(hex ? dg | lt : dg) & H;
  if (!bad)
    return NULL; /* 8 digits or more */
  unsigned k = (unsigned)__builtin_ctzll(bad) >> 3;
  if (k == 0)
    return NULL;
  x <<= 8 * (8 - k); /* the k digits to the top, zeros before */
  if (hex)
    *out = hex8((x & ones * 0x0f) + 9 * (x >> 6 & ones));
  else
    *out = dec8(x - (ones * '0' & ~0ull << (8 * (8 - k))));
  return p + k;
#else
  (void)p, (void)e, (void)hex, (void)out;
  return NULL;
#endif
}

/* The same after "0x" (hex) or at a decimal. */
static inline const char *swar_num(const char *p, const char *e, uint64_t *out) {
  bool hex = e - p >= 3 && p[0] == '0' && (p[1] | 0x20) == 'x';
  return swar_digits(p + (hex ? 2 : 0), e, hex, out);
}

/* A small decimal in [lo, hi] (lo >= 0, hi <= 99) as scan_int reads it, when it is 1 or 2
 * digits; NULL where scan_int is to be asked. */
HOT const char *small_int(const char *p, const char *e, int hi, int64_t *out) {
  if (e - p < 1 || !is_digit(p[0]))
    return NULL;
  if (e - p == 1 || !is_digit(p[1])) {
    *out = p[0] - '0';
    return *out <= hi ? p + 1 : NULL;
  }
  if (e - p > 2 && is_digit(p[2]))
    return NULL;
  *out = (p[0] - '0') * 10 + (p[1] - '0');
  return *out <= hi ? p + 2 : NULL;
}

/* Is every one of the 16 bytes at p above ' ' (so none is a blank)? */
HOT bool above_blank16(const char *p) {
#ifdef __SSE2__
  __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
  return _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(x, _mm_set1_epi8(0x21)), x)) == 0xffff;
#else
  const uint64_t ones = 0x0101010101010101ull;
  uint64_t a, b;
  memcpy(&a, p, 8);
  memcpy(&b, p + 8, 8);
  /* the high bit of (x - 0x21...) & ~x is set in some byte iff some byte is below 0x21 */
  return !((((a - ones * 0x21) & ~a) | ((b - ones * 0x21) & ~b)) & (ones << 7));
#endif
}

/* Are the 16 bytes at p all '0'? */
HOT bool all_zeros16(const char *p) {
#ifdef __SSE2__
  __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
  return _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('0'))) == 0xffff;
#else
  const uint64_t zeros = 0x3030303030303030ull;
  uint64_t a, b;
  memcpy(&a, p, 8);
  memcpy(&b, p + 8, 8);
  return a == zeros && b == zeros;
#endif
}

/* The gfp_flags word at v, which must end the line; the cached text is compared first. */
static inline bool fast_gfp(bh__tparse_t *p, const char *v, const char *e, uint32_t *gfp) {
  size_t n = p->gfp_len;
  if ((size_t)(e - v) == n && n && memcmp(v, p->gfp_text, n) == 0) { /* gfp_value's hit */
    *gfp = p->gfp_bits;
    p->gfp_unknown += (uint64_t)p->gfp_unknown_last;
    return true;
  }
  /* a miss: gfp_value parses it (it has no effect when it fails, so giving up stays clean) */
  return word_end(v, e) == e && gfp_value(p, v, e, gfp);
}

static const uint32_t frac_scale[10] = {0,     100000000, 10000000, 1000000, 100000,
                                        10000, 1000,      100,      10,      1};

/*
 * The line start by the walk over the classified first 64 bytes: sets ev's time, pid and cpu
 * and returns the position of the timestamp's ':' (FAST_NO where the fast path gives up).  A
 * start it reads replaces the older of the two in p->kprefix.  n >= 64.
 */
static inline int prefix_walk(bh__tparse_t *p, const char *s, size_t n, bh_event_t *ev) {
  struct cls64 m;
  classify64(s, &m);
  uint64_t nb = ~m.blank, nd = ~m.digit;
  /* not a comment; the first ':' ends "SECONDS.FRACTION" after a blank, with 1 to 10 digits of
   * seconds (the ns cannot overflow) and 1 to 9 decimals */
  /* a ':' without a blank after it or a digit before it (in "kworker/0:1", "memfd:x") is one
   * find_timestamp passes over too */
  uint64_t colon = m.colon & m.blank >> 1 & m.digit << 1;
  if (!colon || !nb || s[__builtin_ctzll(nb)] == '#')
    return FAST_NO;
  int ic = __builtin_ctzll(colon), t = last_below(nd, ic);
  if (t < 0 || t == ic - 1 || ic - 1 - t > 9 || s[t] != '.' || ic + 1 == (int)n || s[ic + 1] != ' ')
    return FAST_NO;
  int t2 = last_below(nd, t);
  if (t2 < 0 || t2 == t - 1 || t - 1 - t2 > 10 || !(m.blank >> t2 & 1))
    return FAST_NO;
  /* back from the blank before the timestamp: [FLAGS] [CPU] PID; [w, pe) is a word */
  int pe = last_below(nb, t2) + 1, w = last_below(m.blank, pe) + 1;
  if (pe == 0 || w == 0)
    return FAST_NO;
  int32_t cpu = -1;
  if (s[w] != '[' && !is_digit(s[w])) { /* flags */
    pe = last_below(nb, w) + 1;
    w = last_below(m.blank, pe) + 1;
    if (pe == 0 || w == 0 || s[w] != '[')
      return FAST_NO;
  }
  if (s[w] == '[') { /* "[DIGITS]" */
    int k = pe - w - 2;
    if (k < 1 || k > 9 || s[pe - 1] != ']' || (nd >> (w + 1) & ((1ull << k) - 1)))
      return FAST_NO;
    cpu = k == 3 ? (s[w + 1] - '0') * 100 + (s[w + 2] - '0') * 10 + (s[w + 3] - '0')
                 : (int32_t)digits_value(s, s + w + 1, s + pe - 1); /* "%03d" */
    pe = last_below(nb, w) + 1;
  }
  /* record-tgid's "(   1234)": skipped unread, as parse_prefix does */
  if (pe > 0 && s[pe - 1] == ')') {
    int o = pe - 2;
    while (o >= 0 && s[o] != '(')
      o--;
    if (o < 0)
      return FAST_NO;
    pe = last_below(nb, o) + 1;
  }
  int d = last_below(nd, pe) + 1;
  if (d == 0 || d == pe || pe - d > 9 || (s[d - 1] != '-' && !(m.blank >> (d - 1) & 1)))
    return FAST_NO; /* also a PID/TID */
  ev->pid = (int32_t)digits_value(s, s + d, s + pe);
  ev->cpu = cpu;
  ev->time_ns = digits_value(s, s + t2 + 1, s + t) * 1000000000u +
                digits_value(s, s + t + 1, s + ic) * frac_scale[ic - 1 - t];
  p->kprefix_last ^= 1; /* the other one is replaced */
  struct bh__kprefix *c = &p->kprefix[p->kprefix_last];
  memcpy(c->text, s, 64);
  c->secs = (uint8_t)(t - t2 - 1);
  c->frac = (uint8_t)(ic - 1 - t);
  c->dot = (uint8_t)t;
  c->ic = (uint8_t)ic;
  /* up to 8 digits each, with 8 bytes before the '.': else the next line walks again too */
  bool fits = c->secs <= 8 && c->frac <= 8 && t >= 8;
  c->len = fits ? (uint8_t)(t2 + 1) : 0;
  /* the bytes a line must share with this one: the start, the '.', the ':' and the blank
   * after it (ic <= 62: the colon mask above wants a blank at ic + 1) */
  c->same = fits ? ((1ull << c->len) - 1) | 1ull << t | 1ull << ic | 1ull << (ic + 1) : 0;
  c->keep_secs = fits ? ~0ull << (8 * (8 - c->secs)) : 0;
  c->keep_frac = fits ? ~0ull << (8 * (8 - c->frac)) : 0;
  c->secs_word = 0; /* no word of digits: the next hit converts its seconds */
  c->pid = ev->pid;
  c->cpu = cpu;
  return ic;
}

#ifdef __SSE2__
/* Bit i set where the bytes a[i] and b[i] are equal, for 16 bytes. */
HOT uint64_t equal16(const char *a, const char *b) {
  __m128i x = _mm_loadu_si128((const __m128i *)(const void *)a);
  __m128i y = _mm_loadu_si128((const __m128i *)(const void *)b);
  return (uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, y));
}
#endif

/*
 * Does the line start with the cached start c, followed by a timestamp with as many digits
 * before and after its '.' and then ": "?  prefix_walk would then read the same pid and cpu
 * and stop at the same ':', because it reads nothing before the seconds but those bytes, and
 * after them only where the digits, the '.' and the first such ':' are.  Sets ev's time, pid
 * and cpu and returns the ':' position, or FAST_NO where prefix_walk is to be asked.  n >= 64.
 */
HOT int start_hit(struct bh__kprefix *c, const char *s, size_t n, bh_event_t *ev) {
  int l = c->len, dot = c->dot, ic = c->ic;
  if (!l)
    return FAST_NO;
#ifdef __SSE2__
  /* one compare of the 64 bytes: those in c->same must be equal */
  (void)n;
  uint64_t eq = equal16(s, c->text) | equal16(s + 16, c->text + 16) << 16 |
                equal16(s + 32, c->text + 32) << 32 | equal16(s + 48, c->text + 48) << 48;
  if ((eq & c->same) != c->same)
    return FAST_NO;
#else
  if ((size_t)ic + 1 >= n || s[dot] != '.' || s[ic] != ':' || s[ic + 1] != ' ' ||
      memcmp(s, c->text, (size_t)l) != 0)
    return FAST_NO;
#endif
  /* the seconds are the last bytes of the word that ends at the '.', the fraction of the one
   * that ends at the ':' (prefix_walk caches only such stamps): the bytes before them are
   * made '0', then each byte must be a digit */
  const uint64_t zeros = 0x3030303030303030ull;
  uint64_t xs, xf;
  memcpy(&xs, s + dot - 8, 8);
  memcpy(&xf, s + ic - 8, 8);
  xs = (xs & c->keep_secs) | (zeros & ~c->keep_secs);
  xf = (xf & c->keep_frac) | (zeros & ~c->keep_frac);
  if (!all_digits8(xf))
    return FAST_NO;
  if (xs != c->secs_word) { /* the seconds of the line before are kept in ns */
    if (!all_digits8(xs))
      return FAST_NO;
    c->secs_word = xs;
    c->secs_ns = dec8(xs - zeros) * 1000000000u;
  }
  ev->pid = c->pid;
  ev->cpu = c->cpu;
  ev->time_ns = c->secs_ns + dec8(xf - zeros) * frac_scale[c->frac];
  return ic;
}

/* start_hit with the start that matched last, then with the other. */
HOT int prefix_hit(bh__tparse_t *p, const char *s, size_t n, bh_event_t *ev) {
  int k = p->kprefix_last, ic = start_hit(&p->kprefix[k], s, n, ev);
  if (ic == FAST_NO && (ic = start_hit(&p->kprefix[k ^ 1], s, n, ev)) != FAST_NO)
    p->kprefix_last = (uint8_t)(k ^ 1);
  return ic;
}

/*
 * The gfp_flags word at v of a line not yet cut ([v, e) is the rest of the window): it must
 * end the line, right before its '\n'.  Returns the '\n', or NULL where the fast path gives
 * up, having changed nothing.  (Such a line is longer than 64 bytes, the cut fast path's
 * least: its fields after the ':' alone take 80.)
 */
static inline const char *uncut_gfp(bh__tparse_t *p, const char *v, const char *e, uint32_t *gfp) {
  size_t n = p->gfp_len;
  if (n && (size_t)(e - v) > n && v[n] == '\n' && memcmp(v, p->gfp_text, n) == 0) {
    *gfp = p->gfp_bits; /* the cached text holds no '\n': this is the line's end */
    p->gfp_unknown += (uint64_t)p->gfp_unknown_last;
    return v + n;
  }
  /* a miss: the end of the line is searched for, then the word parsed as gfp_value parses a
   * miss (the cached text cannot match a word without blanks that the compare above missed);
   * a '\r' before the '\n' is left to the cut line's parser, which drops it */
  const char *nl = memchr(v, '\n', (size_t)(e - v));
  if (!nl || (nl > v && nl[-1] == '\r') || word_end(v, nl) != nl ||
      bh__gfp_parse_cached(p, v, (size_t)(nl - v), gfp) < 0)
    return NULL;
  return nl;
}

/*
 * Cut: s[0, n) is a line without NUL bytes and trailing blanks; returns BH__LINE_EVENT or
 * FAST_NO.  Not cut (uncut): s[0, n) is the rest of the reader's window, without NUL bytes,
 * and the line is found as it is read: where it is taken, it ends with the '\n' right after
 * its last field, and its length is returned.  Every byte read up to there is known to be no
 * '\n' (a cached start or gfp text, digits, literals, bytes above ' '), so that '\n' is the
 * first one, where the reader would cut it; the cut fast path then reads the same line the
 * same way.  Lines that need the walk over their start, or end otherwise, are given up on
 * (FAST_NO) with nothing but the start cache's order changed, and are cut and parsed again.
 */
HOT int fast_line(bh__tparse_t *p, const char *s, size_t n, bh_event_t *ev, bool uncut) {
  if (n < 64)
    return FAST_NO;
  memset(ev, 0, sizeof(*ev)); /* a line given up on is parsed again from scratch */
  int ic = prefix_hit(p, s, n, ev);
  if (ic != FAST_NO)
    p->start_hits += !uncut; /* an uncut line counts where it is taken */
  else if (uncut || (ic = prefix_walk(p, s, n, ev)) == FAST_NO)
    return FAST_NO;
  /* the event name */
  const char *e = s + n, *v = s + ic + 2, *q;
  int op;
  if ((q = KEY(v, e, "mm_page_")))
    v = q;
  else if (!(q = KEY(v, e, "kmem:")) || !(v = KEY(q, e, "mm_page_")))
    return FAST_NO;
  /* the name and the first key in one compare where they fit in 16 bytes */
  const char *page;
  if (e - v < 5)
    return FAST_NO;
  if (v[0] == 'a' && (page = KEY(v, e, "alloc: page=")))
    op = BH_EV_ALLOC;
  else if (v[4] == ':' && (page = KEY(v, e, "free: page=")))
    op = BH_EV_FREE;
  else if ((q = KEY(v, e, "free_batched:")) && (page = KEY(q, e, " page=")))
    op = BH_EV_FREE_BATCHED;
  else
    return FAST_NO;
  /* the arguments */
  uint64_t x;
  int64_t y;
  v = page;
  bool null_page;
  if (e - v > 16 && v[16] == ' ' && above_blank16(v)) { /* %p's 16 hex digits */
    null_page = all_zeros16(v) || ((v[1] == 'x' || v[1] == 'X') && is_null_page(v, 16));
    q = v + 16;
  } else if (uncut) { /* the word could run past the line's end */
    return FAST_NO;
  } else {
    q = word_end(v, e);
    null_page = q > v && (*v == '0' || *v == '(') && is_null_page(v, (size_t)(q - v));
  }
  if ((v = KEY(q, e, " pfn=0x"))) { /* as scan_num reads it, the "0x" known */
    if (!((q = swar_digits(v, e, true, &x)) || (q = scan_num(v - 2, e, &x))))
      return FAST_NO;
  } else if (!(v = KEY(q, e, " pfn=")) || !((q = swar_num(v, e, &x)) || (q = scan_num(v, e, &x))))
    return FAST_NO;
  ev->pfn = x;
  if (!(v = KEY(q, e, " order=")) || !(q = small_int(v, e, BH_TRACE_MAX_ORDER, &y)))
    return FAST_NO;
  ev->order = (uint8_t)y;
  ev->migratetype = -1;
  if (op == BH_EV_ALLOC) {
    if (!(v = KEY(q, e, " migratetype=")) || !(q = small_int(v, e, INT8_MAX, &y)))
      return FAST_NO;
    ev->migratetype = (int8_t)y;
    if (!(v = KEY(q, e, " gfp_flags=")))
      return FAST_NO;
    if (uncut ? !(e = uncut_gfp(p, v, e, &ev->gfp)) : !fast_gfp(p, v, e, &ev->gfp))
      return FAST_NO;
    q = e;
  } else if (uncut) { /* the line ends after the order; the cut fast path takes 64 bytes up */
    if (q == e || *q != '\n' || q - s < 64)
      return FAST_NO;
    e = q;
  }
  if (q != e)
    return FAST_NO;
  ev->op = (uint8_t)op;
  ev->failed = op == BH_EV_ALLOC && null_page;
  bh__trace_set_zone(p, ev);
  return uncut ? (int)(e - s) : BH__LINE_EVENT;
}

/* The general parser: s[0, n) is a line without trailing blanks.  Kept out of line so that a
 * line the fast path takes does not pay for its frame. */
static __attribute__((noinline)) int general_kernel_line(bh__tparse_t *p, const char *s, size_t n,
                                                         bool nul, bh_event_t *ev,
                                                         bh__kline_shape_t *shape) {
  size_t f = (size_t)(blanks_end(s, s + n) - s);
  if (f == n || s[f] == '#')
    return BH__LINE_OTHER;
  if (bh__trace_unlikely(nul)) {
    if (!names_our_event(s, n, p->pcp))
      return BH__LINE_OTHER;
    return malformed(p, "embedded NUL byte");
  }
  struct kline k;
  if (!find_timestamp(s, n, &k)) {
    if (names_our_event(s, n, p->pcp))
      return malformed(p, "cannot find the 'TIMESTAMP: EVENT:' part");
    return BH__LINE_OTHER;
  }
  int op = event_op(s + k.ev, k.ev_end - k.ev, p->pcp);
  if (!op && p->vmstat && vmstat_work(s + k.ev, k.ev_end - k.ev, s + k.args, s + n))
    op = BH_EV_VMSTAT;
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
  if (op == BH_EV_VMSTAT)
    return BH__LINE_EVENT; /* no fields of ours */
  int r = parse_kernel_args(p, s + k.args, s + n, ev);
  if (r == BH__LINE_EVENT)
    bh__trace_set_zone(p, ev);
  return r;
}

size_t bh__parse_kernel_run(bh__tparse_t *p, const char *s, size_t n, bh_event_t *evs, int max,
                            int *got) {
  size_t used = 0;
  int k = 0;
  while (k < max) {
    /* a line is at most BH_TRACE_MAX_LINE bytes before its '\n': no more is offered */
    size_t rest = n - used, m = rest <= BH_TRACE_MAX_LINE ? rest : BH_TRACE_MAX_LINE + 1;
    int r = fast_line(p, s + used, m, &evs[k], true);
    if (r == FAST_NO)
      break;
    used += (size_t)r + 1;
    k++;
  }
  p->fast_lines += (uint64_t)k;
  p->start_hits += (uint64_t)k;
  *got = k;
  return used;
}

int bh__parse_kernel_line(bh__tparse_t *p, const char *s, size_t n, bool nul, bh_event_t *ev,
                          bh__kline_shape_t *shape) {
  while (n > 0 && (is_blank(s[n - 1]) || s[n - 1] == '\r'))
    n--;
  if (!shape && !nul) {
    int r = fast_line(p, s, n, ev, false);
    if (bh__trace_likely(r != FAST_NO)) {
      p->fast_lines++;
      return r;
    }
  }
  return general_kernel_line(p, s, n, nul, ev, shape);
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
  } else if (ev->op == BH_EV_ALLOC_ZONE_LOCKED && (v = KEY(c, e, "refill="))) {
    if (!field_end(q = scan_int(v, e, 0, 1, &y), e))
      return bad_value(p, "refill", v, e);
    ev->percpu_refill = (uint8_t)y;
  } else if (ev->op == BH_EV_ALLOC && p->version >= BH__TRACE_TEXT_VERSION3 &&
             (v = KEY(c, e, "bulk="))) {
    if (!field_end(q = scan_int(v, e, 0, 1, &y), e))
      return bad_value(p, "bulk", v, e);
    ev->bulk = (uint8_t)y;
  } else if (ev->op == BH_EV_EXTFRAG && (v = KEY(c, e, "fallback_order="))) {
    if (!field_end(q = scan_int(v, e, 0, BH_TRACE_MAX_ORDER, &y), e))
      return bad_value(p, "fallback_order", v, e);
    ev->fallback_order = (uint8_t)y;
    p->xf_seen |= 1;
  } else if (ev->op == BH_EV_EXTFRAG && (v = KEY(c, e, "fallback_mt="))) {
    if (!field_end(q = scan_int(v, e, -1, INT8_MAX, &y), e))
      return bad_value(p, "fallback_mt", v, e);
    ev->fallback_migratetype = (int8_t)y;
    p->xf_seen |= 2;
  } else if (ev->op == BH_EV_EXTFRAG && (v = KEY(c, e, "claim="))) {
    if (!field_end(q = scan_int(v, e, 0, 1, &y), e))
      return bad_value(p, "claim", v, e);
    ev->change_ownership = (uint8_t)y;
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
      return malformed(p, "expected key=value, got '%s'",
                       shown(c, (size_t)(q - c), sb, sizeof(sb)));
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

/* The rest of a lost-events marker "TIME L COUNT [cpu=N]" (version 2), from c. */
static int native_lost(bh__tparse_t *p, const char *c, const char *e, bh_event_t *ev) {
  const char *q;
  char sb[48];
  if (c == e)
    return malformed(p, "missing count of lost events");
  if (!field_end(q = scan_dec(c, e, &ev->pfn), e) || ev->pfn == 0)
    return malformed(p, "bad count of lost events '%s'",
                     shown(c, (size_t)(word_end(c, e) - c), sb, sizeof(sb)));
  while ((c = skip_blanks(q, e)) < e && *c != '#') {
    const char *v = KEY(c, e, "cpu=");
    int64_t y;
    if (!v)
      return malformed(p, "a lost-events line takes cpu= only, not '%s'",
                       shown(c, (size_t)(word_end(c, e) - c), sb, sizeof(sb)));
    if (!field_end(q = scan_int(v, e, -1, INT32_MAX, &y), e))
      return bad_value(p, "cpu", v, e);
    ev->cpu = (int32_t)y;
  }
  ev->op = BH__EV_LOST;
  return BH__LINE_LOST;
}

int bh__parse_native_line(bh__tparse_t *p, const char *s, size_t n, bool nul, bh_event_t *ev) {
  const char *c = s, *e = s + n, *q;
  char sb[48];
  while (e > c && (is_blank(e[-1]) || e[-1] == '\r')) /* trailing blanks, CRLF */
    e--;
  c = skip_blanks(c, e);
  if (c == e || *c == '#')
    return BH__LINE_OTHER;
  if (bh__trace_unlikely(nul))
    return malformed(p, "embedded NUL byte");
  memset(ev, 0, sizeof(*ev));
  ev->pid = -1;
  ev->cpu = -1;
  ev->migratetype = -1;
  if (!field_end(q = scan_dec(c, e, &ev->time_ns), e))
    return malformed(p, "bad time '%s'", shown(c, (size_t)(word_end(c, e) - c), sb, sizeof(sb)));
  if ((c = skip_blanks(q, e)) == e)
    return malformed(p, "missing op");
  if (*c == 'L' && field_end(c + 1, e) && p->version >= BH__TRACE_TEXT_VERSION2)
    return native_lost(p, skip_blanks(c + 1, e), e, ev);
  bool pcp_op =
      (*c == 'D' || *c == 'Z' || *c == 'X' || *c == 'V') && p->version >= BH__TRACE_TEXT_VERSION3;
  if (!field_end(c + 1, e) || (*c != 'A' && *c != 'F' && *c != 'B' && !pcp_op))
    return malformed(p, "bad op '%s' (A, F or B%s)",
                     shown(c, (size_t)(word_end(c, e) - c), sb, sizeof(sb)),
                     p->version >= BH__TRACE_TEXT_VERSION3   ? ", or L, D, Z, X, V"
                     : p->version >= BH__TRACE_TEXT_VERSION2 ? ", or L"
                                                             : "");
  ev->op = *c == 'A'   ? BH_EV_ALLOC
           : *c == 'F' ? BH_EV_FREE
           : *c == 'B' ? BH_EV_FREE_BATCHED
           : *c == 'D' ? BH_EV_PCPU_DRAIN
           : *c == 'Z' ? BH_EV_ALLOC_ZONE_LOCKED
           : *c == 'X' ? BH_EV_EXTFRAG
                       : BH_EV_VMSTAT;
  p->xf_seen = 0;
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
  if (ev->op == BH_EV_EXTFRAG && p->xf_seen != 3)
    return malformed(p, "missing %s", p->xf_seen & 1 ? "fallback_mt=" : "fallback_order=");
  if (bh__trace_vmstat_bad(ev))
    return malformed(p, "a vmstat event (V) has pfn 0, order 0 and no mt=");
  if (pcp_op && (ev->op == BH_EV_VMSTAT ? !p->vmstat : !p->pcp))
    return BH__LINE_OTHER; /* not asked for */
  bh__trace_set_zone(p, ev);
  return BH__LINE_EVENT;
}

/* ---------------------------------------------------------------------------------------- */
/* Lost-event markers in kernel text                                                         */
/* ---------------------------------------------------------------------------------------- */

/* The first occurrence of the NUL-terminated lit in s[0, n), or NULL. */
static const char *find_lit(const char *s, size_t n, const char *lit) {
  size_t m = strlen(lit);
  for (const char *x = s; (size_t)(s + n - x) >= m; x++) {
    x = memchr(x, lit[0], (size_t)(s + n - x));
    if (!x || (size_t)(s + n - x) < m)
      return NULL;
    if (!memcmp(x, lit, m))
      return x;
  }
  return NULL;
}

/* The decimal number at p (blanks skipped first), or 0. */
static uint64_t dec_at(const char *p, const char *e) {
  uint64_t v = 0;
  p = skip_blanks(p, e);
  const char *q = scan_dec(p, e, &v);
  return q ? v : 0;
}

uint64_t bh__lost_in_line(const char *s, size_t n) {
  const char *e = s + n, *x;
  if ((x = find_lit(s, n, "entries-in-buffer/entries-written:"))) {
    uint64_t in_buf = 0, written = 0;
    const char *q = scan_dec(skip_blanks(x + 34, e), e, &in_buf);
    if (q && q < e && *q == '/' && scan_dec(q + 1, e, &written))
      return written > in_buf ? written - in_buf : 0;
    return 0;
  }
  if ((x = find_lit(s, n, "[LOST ")))
    return dec_at(x + 6, e) ? dec_at(x + 6, e) : 1;
  if ((x = find_lit(s, n, "EVENTS DROPPED]"))) {
    const char *b = find_lit(s, (size_t)(x - s), "[");
    uint64_t v = b ? dec_at(b + 1, x) : 0;
    return v ? v : 1;
  }
  if ((x = find_lit(s, n, "PERF_RECORD_LOST"))) {
    const char *l = find_lit(x, (size_t)(e - x), " lost");
    if (!l)
      return 1;
    l += 5;
    if (l < e && *l == ':')
      l++;
    uint64_t v = dec_at(l, e);
    return v ? v : 1;
  }
  return 0;
}
