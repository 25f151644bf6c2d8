/* buddyhint info: version, build, strategies, configuration defaults, trace formats. */
#include "cli/cli.h"
#include "common/json.h"

#include <buddyhint/gen.h>
#include <buddyhint/strategy.h>
#include <buddyhint/trace.h>

#include <string.h>

#define VERB "info"

/*
 * The build type.  CMake does not pass CMAKE_BUILD_TYPE to the compiler; if the build
 * defines BH_BUILD_TYPE we print it, otherwise what the compiler flags tell: Debug (no
 * optimisation), MinSizeRel (-Os), or "Release or RelWithDebInfo" (-O2/-O3 with NDEBUG).
 */
static const char *build_type(void) {
#if defined(BH_BUILD_TYPE)
  return BH_BUILD_TYPE;
#elif !defined(__OPTIMIZE__)
  return "Debug (not optimised)";
#elif defined(__OPTIMIZE_SIZE__)
  return "MinSizeRel (optimised for size)";
#elif defined(NDEBUG)
  return "Release or RelWithDebInfo (optimised, NDEBUG)";
#else
  return "optimised, assertions on";
#endif
}

/* As the build configured them (BH_ASAN, BH_UBSAN, BH_TSAN); else as the compiler says, which
 * for GCC is address and thread only. */
static const char *sanitizers(void) {
#if defined(BH_SANITIZERS)
  return BH_SANITIZERS[0] ? BH_SANITIZERS : "none";
#elif defined(__SANITIZE_ADDRESS__) && defined(__SANITIZE_UNDEFINED__)
  return "address,undefined";
#elif defined(__SANITIZE_ADDRESS__)
  return "address";
#elif defined(__SANITIZE_THREAD__)
  return "thread";
#else
  return "none";
#endif
}

static const char *backing_name(int b) {
  return b == BH_BACKING_MMAP ? "mmap" : b == BH_BACKING_MEMFD ? "memfd" : "sim";
}

static void usage(FILE *out) {
  fprintf(out, "usage: buddyhint info [--json]\n"
               "\n"
               "Prints the version and build, the registered hinting strategies with their\n"
               "options, the arena configuration defaults (bh_config_init) and the watermarks and\n"
               "pcp sizes they resolve to, the synthetic workloads, and the trace formats and\n"
               "compressions that can be read and written.\n"
               "\n"
               "options:\n"
               "  --json       one JSON object instead of text\n"
               "  -h, --help   this help\n");
}

/* ---- JSON ---- */

/* ---- the resolved defaults of a default arena (sim backing: metadata only) ---- */

typedef struct resolved {
  bh_arena_t *arena;
  int nzones;
} resolved_t;

static void resolve(resolved_t *r) {
  bh_config_t cfg;
  bh_config_init(&cfg);
  cfg.backing = BH_BACKING_SIM;
  r->arena = NULL;
  r->nzones = 0;
  if (!bh_arena_create(&cfg, &r->arena))
    r->nzones = bh_zone_count(r->arena);
}

/* ---- text ---- */

static void print_text(const bh_config_t *c, resolved_t *r) {
  printf("buddyhint %s (library %s)\n", BH_VERSION_STRING, bh_version());
  printf("build: %s; sanitizers: %s; compiler: %s\n", build_type(), sanitizers(), __VERSION__);

  printf("\nhinting strategies (replay --strategy NAME --opt KEY=VALUE):\n");
  for (int i = 0; bh_strategy_at(i); i++) {
    const bh_strategy_ops_t *s = bh_strategy_at(i);
    printf("  %-10s %s\n", s->name, s->summary ? s->summary : "");
    const char *o = s->options;
    while (o && *o) {
      const char *nl = strchr(o, '\n');
      int n = nl ? (int)(nl - o) : (int)strlen(o);
      if (n)
        printf("      %.*s\n", n, o);
      o = nl ? nl + 1 : o + n;
    }
  }

  printf("\narena defaults (bh_config_init):\n");
  printf("  backing                 %s\n", backing_name(c->backing));
  printf("  nr_nodes                %u\n", c->nr_nodes);
  for (int z = 0; z < BH_NR_ZONE_TYPES; z++)
    printf("  zone %-18s %llu MiB per node\n", bh_zone_name(z),
           (unsigned long long)(c->zone_bytes[z] >> 20));
  printf("  max_order               %u (largest block %lu KiB)\n", c->max_order,
         (BH_PAGE_SIZE << c->max_order) >> 10);
  printf("  pageblock_order         %u\n", c->pageblock_order);
  printf("  mobility_grouping       %s\n", c->mobility_grouping ? "on" : "off");
  printf("  shuffle                 %s (seed %llu)\n", c->shuffle ? "on" : "off",
         (unsigned long long)c->seed);
  if (c->min_free_kbytes)
    printf("  min_free_kbytes         %llu\n", (unsigned long long)c->min_free_kbytes);
  else
    printf("  min_free_kbytes         0 (Linux's int_sqrt(lowmem_kbytes*16), 128..262144)\n");
  printf("  watermark_scale_factor  %u\n", c->watermark_scale_factor);
  printf("  watermark_boost_factor  %u\n", c->watermark_boost_factor);
  printf("  lowmem_reserve_ratio    %u %u %u %u\n", c->lowmem_reserve_ratio[0],
         c->lowmem_reserve_ratio[1], c->lowmem_reserve_ratio[2], c->lowmem_reserve_ratio[3]);
  printf("  pcp                     %s, %u cpus, %s, batch %u%s, high %u%s, thp lists %s\n",
         c->pcp ? "on" : "off", c->nr_cpus, c->pcp_key == BH_PCP_PER_CPU ? "per cpu" : "per thread",
         c->pcp_batch, c->pcp_batch ? "" : " (zone_batchsize)", c->pcp_high,
         c->pcp_high ? "" : " (zone_highsize)", c->pcp_thp ? "on" : "off");
  printf("  numa_bind               %s\n", c->numa_bind ? "on" : "off");
  printf("  debug_checks            %s\n", c->debug_checks ? "on" : "off");
  printf("  compact_large_blocks    %s\n", c->compact_large_blocks ? "on" : "off");
  printf("  compact_skip_unsplit    %s\n", c->compact_skip_unsplit ? "on" : "off");
  printf("  cpu_data_slice_bytes    %lu\n", (unsigned long)c->cpu_data_slice_bytes);

  if (r->arena) {
    printf("\nresolved for that arena (pages):\n");
    printf("  %-8s %9s %9s %7s %7s %7s %6s %6s\n", "zone", "spanned", "managed", "min", "low",
           "high", "batch", "high");
    for (int i = 0; i < r->nzones; i++) {
      bh_zone_info_t zi;
      if (bh_zone_info(r->arena, i, &zi))
        continue;
      printf("  %-8s %9llu %9llu %7llu %7llu %7llu %6u %6u\n", bh_zone_name(zi.type),
             (unsigned long long)zi.spanned_pages, (unsigned long long)zi.managed_pages,
             (unsigned long long)zi.wmark_min, (unsigned long long)zi.wmark_low,
             (unsigned long long)zi.wmark_high, zi.pcp_batch, zi.pcp_high);
    }
  }

  printf("\nsynthetic workloads (gen):\n");
  for (int i = 0; bh_gen_workload_at(i); i++)
    printf("  %-12s %s\n", bh_gen_workload_at(i), bh_gen_summary(bh_gen_workload_at(i)));

  printf("\ntraces:\n");
  printf("  read         ftrace, perf-script, native-text, native-binary (found by content);\n"
         "               trace-dat (a library built with libtracecmd), perf-data (through\n"
         "               perf script)\n");
  printf("  write        native-text, native-binary\n");
  printf("  compression  none, gzip, zstd (read: found by magic bytes)\n");
}

/* ---- JSON ---- */

static void print_json(const bh_config_t *c, resolved_t *r) {
  printf("{\n  \"version\": ");
  bh__json_str(stdout, bh_version());
  printf(",\n  \"build\": {\"type\": ");
  bh__json_str(stdout, build_type());
  printf(", \"sanitizers\": ");
  bh__json_str(stdout, sanitizers());
  printf(", \"compiler\": ");
  bh__json_str(stdout, __VERSION__);
  printf("},\n  \"strategies\": [");
  for (int i = 0; bh_strategy_at(i); i++) {
    const bh_strategy_ops_t *s = bh_strategy_at(i);
    printf("%s\n    {\"name\": ", i ? "," : "");
    bh__json_str(stdout, s->name);
    printf(", \"summary\": ");
    bh__json_str(stdout, s->summary);
    printf(", \"options\": ");
    bh__json_str(stdout, s->options);
    printf("}");
  }
  printf("\n  ],\n  \"config_defaults\": {\n");
  printf("    \"backing\": \"%s\", \"nr_nodes\": %u,\n", backing_name(c->backing), c->nr_nodes);
  printf("    \"zone_bytes\": {");
  for (int z = 0; z < BH_NR_ZONE_TYPES; z++)
    printf("%s\"%s\": %llu", z ? ", " : "", bh_zone_name(z), (unsigned long long)c->zone_bytes[z]);
  printf("},\n");
  printf("    \"max_order\": %u, \"pageblock_order\": %u, \"mobility_grouping\": %s,\n",
         c->max_order, c->pageblock_order, c->mobility_grouping ? "true" : "false");
  printf("    \"shuffle\": %s, \"seed\": %llu, \"min_free_kbytes\": %llu,\n",
         c->shuffle ? "true" : "false", (unsigned long long)c->seed,
         (unsigned long long)c->min_free_kbytes);
  printf("    \"watermark_scale_factor\": %u, \"watermark_boost_factor\": %u,\n",
         c->watermark_scale_factor, c->watermark_boost_factor);
  printf("    \"lowmem_reserve_ratio\": [%u, %u, %u, %u],\n", c->lowmem_reserve_ratio[0],
         c->lowmem_reserve_ratio[1], c->lowmem_reserve_ratio[2], c->lowmem_reserve_ratio[3]);
  printf("    \"pcp\": %s, \"nr_cpus\": %u, \"pcp_key\": \"%s\", \"pcp_batch\": %u, "
         "\"pcp_high\": %u, \"pcp_thp\": %s,\n",
         c->pcp ? "true" : "false", c->nr_cpus,
         c->pcp_key == BH_PCP_PER_CPU ? "per_cpu" : "per_thread", c->pcp_batch, c->pcp_high,
         c->pcp_thp ? "true" : "false");
  printf("    \"numa_bind\": %s, \"debug_checks\": %s, \"compact_large_blocks\": %s, "
         "\"compact_skip_unsplit\": %s, \"cpu_data_slice_bytes\": %lu\n  },\n",
         c->numa_bind ? "true" : "false", c->debug_checks ? "true" : "false",
         c->compact_large_blocks ? "true" : "false", c->compact_skip_unsplit ? "true" : "false",
         (unsigned long)c->cpu_data_slice_bytes);
  printf("  \"resolved_zones\": [");
  for (int i = 0, n = 0; r->arena && i < r->nzones; i++) {
    bh_zone_info_t zi;
    if (bh_zone_info(r->arena, i, &zi))
      continue;
    printf("%s\n    {\"node\": %d, \"zone\": \"%s\", \"spanned_pages\": %llu, "
           "\"managed_pages\": %llu, \"wmark_min\": %llu, \"wmark_low\": %llu, "
           "\"wmark_high\": %llu, \"pcp_batch\": %u, \"pcp_high\": %u}",
           n++ ? "," : "", zi.node, bh_zone_name(zi.type), (unsigned long long)zi.spanned_pages,
           (unsigned long long)zi.managed_pages, (unsigned long long)zi.wmark_min,
           (unsigned long long)zi.wmark_low, (unsigned long long)zi.wmark_high, zi.pcp_batch,
           zi.pcp_high);
  }
  printf("\n  ],\n  \"workloads\": [");
  for (int i = 0; bh_gen_workload_at(i); i++) {
    printf("%s", i ? ", " : "");
    bh__json_str(stdout, bh_gen_workload_at(i));
  }
  printf("],\n  \"trace_read_formats\": [\"ftrace\", \"perf-script\", \"native-text\", "
         "\"native-binary\", \"trace-dat\", \"perf-data\"],\n");
  printf("  \"trace_write_formats\": [\"native-text\", \"native-binary\"],\n");
  printf("  \"compressions\": [\"none\", \"gzip\", \"zstd\"]\n}\n");
}

int cmd_info(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (bh_cli_is_help(argv[i])) {
      usage(stdout);
      return BH_EXIT_OK;
    }
    if (!strcmp(argv[i], "--json"))
      json = true;
    else
      return bh_cli_usage_error(VERB, "unknown argument '%s'", argv[i]);
  }
  bh_config_t cfg;
  bh_config_init(&cfg);
  resolved_t r;
  resolve(&r);
  if (json)
    print_json(&cfg, &r);
  else
    print_text(&cfg, &r);
  bh_arena_destroy(r.arena);
  return BH_EXIT_OK; /* main checks what was written (bh_cli_stdout_close) */
}
