/* The buddyhint command: one file per verb (cmd_<verb>.c), main.c only dispatches. */
#ifndef BH_CLI_H
#define BH_CLI_H

#include <buddyhint.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes of every verb. */
enum { BH_EXIT_OK = 0, BH_EXIT_FAIL = 1, BH_EXIT_USAGE = 2 };

typedef struct bh_cli_verb {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv); /* argv[0] is the verb */
} bh_cli_verb_t;

int cmd_replay(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_machine(int argc, char **argv);

/* cli_util.c */
/* Prints "buddyhint VERB: message" to stderr and returns BH_EXIT_USAGE. */
int bh_cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parses "512M", "2G", "4096", "1.5G" (binary units K/M/G/T, optional "iB"/"B") into bytes. */
int bh_cli_parse_size(const char *s, uint64_t *bytes);
/* Parses a non-negative number of seconds ("30", "2.5", "500ms", "2s") into ns. */
int bh_cli_parse_seconds(const char *s, uint64_t *ns);
/* True if arg is "-h" or "--help". */
bool bh_cli_is_help(const char *arg);
/* Looks for "--name=value" or "--name value" at argv[*i]; on a match stores the value,
 * advances *i past what it consumed and returns 1; returns 0 if argv[*i] is not --name, -1 if
 * the value is missing (after printing a usage error). */
int bh_cli_opt(int argc, char **argv, int *i, const char *name, const char **value);

/* bh_cli_opt for a short option "-o VALUE". */
int bh_cli_short_opt(const char *verb, int argc, char **argv, int *i, const char *name,
                     const char **value);
/* Output trace kind: --format / --compress if given, else from the name (.gz, .zst; then
 * .bht, .bin → binary, else text).  0, or BH_EXIT_USAGE after a message. */
int bh_cli_output_kind(const char *verb, const char *path, const char *fmt, const char *comp,
                       int *format, int *compression);
const char *bh_cli_format_name(int format);
const char *bh_cli_compression_name(int compression);

#endif
