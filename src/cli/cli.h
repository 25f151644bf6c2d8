/* The buddyhint command: one file per verb (cmd_<verb>.c), main.c only dispatches. */
#ifndef BH_CLI_H
#define BH_CLI_H

#include <buddyhint.h>
#include <buddyhint/trace.h>

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
int cmd_live(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_machine(int argc, char **argv);

/* cli_util.c */
/* Prints "buddyhint VERB: message" to stderr and returns BH_EXIT_USAGE. */
int bh_cli_usage_error(const char *verb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Parses "512M", "2G", "4096", "1.5G" (binary units K/M/G/T, optional "iB"/"B") into bytes. */
/* Prints what reading snapshot folders into m noticed (bh_machine_warnings) to stderr, as
 * "buddyhint VERB: warning: ..." lines. */
struct bh_machine;
void bh_cli_print_machine_warnings(const char *verb, const struct bh_machine *m);
int bh_cli_parse_size(const char *s, uint64_t *bytes);
/* Parses a non-negative number of seconds ("30", "2.5", "500ms", "2s") into ns. */
int bh_cli_parse_seconds(const char *s, uint64_t *ns);
/* Decimal digits only (no sign, blank, hex or octal) with a value in [min, max]; 0 or -1. */
int bh_cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* --buffer-kb of record and live: KiB of ring buffer per cpu, 1 to 2^24, into *kb; 0, or the
 * usage error's exit code after its message. */
int bh_cli_parse_buffer_kb(const char *verb, const char *kbs, unsigned *kb);
/* A finite decimal number ("2", "0.5", "1e3"; no sign, blank, nan, inf or hex) in [min, max]. */
int bh_cli_parse_double(const char *s, double min, double max, double *out);
/* True if arg is "-h" or "--help". */
bool bh_cli_is_help(const char *arg);

/* The CPUs online (at least 1): the default of -j for compare and sweep. */
unsigned bh_cli_online_cpus(void);
/* Looks for "--name=value" or "--name value" at argv[*i]; on a match stores the value,
 * advances *i past what it consumed and returns 1; returns 0 if argv[*i] is not --name, -1 if
 * the value is missing (after printing a usage error). */
int bh_cli_opt(int argc, char **argv, int *i, const char *name, const char **value);

/* bh_cli_opt for a short option: "-o VALUE", or the value glued on, "-oVALUE" (-j1). */
int bh_cli_short_opt(const char *verb, int argc, char **argv, int *i, const char *name,
                     const char **value);
/* Output trace kind: --format / --compress if given, else from the name (.gz, .zst; then
 * .bht, .bin → binary, else text).  0, or BH_EXIT_USAGE after a message. */
int bh_cli_output_kind(const char *verb, const char *path, const char *fmt, const char *comp,
                       int *format, int *compression);
const char *bh_cli_format_name(int format);

/* cmd_plot.c: the gnuplot scripts' folder (0, or -1 after a message); gnuplot on PATH. */
int bh_cli_plot_find_scripts(const char *given, const char *script, char *dir, size_t len);
bool bh_cli_have_gnuplot(void);
/* The picture format of an output name: "png", "svg" or "pdf" by its suffix, else NULL. */
const char *bh_cli_plot_format(const char *out);
/* cmd_plot.c: VALUE as a gnuplot single-quoted string in buf (control characters as the text
 * \xNN, so that nothing in it can start a command); -1 if it does not fit.  True if s holds
 * a control character (a file name that cannot be handed to gnuplot as it is). */
int bh_cli_gp_quote(char *buf, size_t len, const char *value);
bool bh_cli_has_control(const char *s);
/* plot_sweep.c: true if the arguments ask for a sweep plot (--x, a folder, a .json table). */
bool bh_cli_plot_is_sweep(int argc, char **argv);
int bh_cli_plot_sweep(int argc, char **argv);
const char *bh_cli_compression_name(int compression);

/*
 * Outputs: every file a verb writes goes through these (src/common/outfile.c does the file
 * work).  A regular file is written to ".NAME.XXXXXX" beside it and renamed over NAME only
 * when everything was written and closed without error; a device, FIFO or socket is written in
 * place and never removed; "-" is standard output.  An output that is the same file as one of
 * the verb's inputs (bh_cli_set_inputs) is refused before anything is written.  Every write is
 * checked: a failure is "buddyhint VERB: FILE: write failed: <reason>" and exit status 1.
 */
typedef struct bh_cli_out bh_cli_out_t;

/* The verb's input files (NULL-terminated; kept, not copied), checked by every later open. */
void bh_cli_set_inputs(const char *const *inputs);
/* Opens path into *out.  BH_EXIT_OK; or after "buddyhint VERB: PATH: why" on stderr,
 * BH_EXIT_USAGE (the same file as an input, a directory, a dangling link) or BH_EXIT_FAIL. */
int bh_cli_out_open(const char *verb, const char *path, bh_cli_out_t **out);
/* The file that is being written: the temporary file, or the output itself if written in
 * place (for another program that writes it by name). */
const char *bh_cli_out_writing(const bh_cli_out_t *o);
/* A stdio stream on the output (standard output itself for "-"); NULL if out of memory. */
FILE *bh_cli_out_stream(bh_cli_out_t *o);
/* A trace writer on the output (it writes the descriptor; bh_cli_out_close finishes it): the
 * native format's version 1, or version 2 with description (may be NULL). */
int bh_cli_out_writer(bh_cli_out_t *o, int format, int compression, int version,
                      const char *description, bh_trace_writer_t **w);
/* Flushes and checks everything written, closes and renames into place.  BH_EXIT_OK, or
 * BH_EXIT_FAIL after the message (the temporary file is removed).  NULL is accepted. */
int bh_cli_out_close(bh_cli_out_t *o);
/* Gives the output up: removes the temporary file, nothing else.  NULL is accepted. */
void bh_cli_out_abort(bh_cli_out_t *o);
/* Standard output at the end of a verb: flushed and checked ("<stdout>: write failed"). */
int bh_cli_stdout_close(const char *verb, int rc);

#endif
