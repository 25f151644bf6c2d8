/*
 * The sweep spec, parsed (sweep_spec.c) for the expansion (sweep.c): traces, strategy
 * variants, replay option axes and seeds, each value checked.  Internal to the sweep unit.
 */
#ifndef BH_CLI_SWEEP_SPEC_H
#define BH_CLI_SWEEP_SPEC_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

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
  size_t nvals, cap;
  json_t *seen; /* the values as an object's keys: one listed twice is found in linear time */
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
  size_t nseeds, seeds_cap;
  json_t *seeds_seen; /* as axis_t.seen */
  char **scols;       /* strategy option columns "NAME.KEY" */
  size_t nscols;
} spec_t;

/* Parses YAML text into sp (whose name and base the caller set): 0, or a negative BH_E* code
 * after "NAME:LINE: what is wrong" on stderr. */
int bh__sweep_spec_parse(spec_t *sp, const char *text, size_t len);
void bh__sweep_spec_free(spec_t *sp);
/* True if the jemalloc baseline takes this replay option (baseline.h). */
bool bh__sweep_baseline_takes(const char *opt);
/* Grows arr (elements of size el) by one zeroed element; NULL if out of memory. */
void *bh__sweep_push(void *arr, size_t *n, size_t *cap, size_t el);

#endif
