/*
 * Running one job of a sweep: a replay in a child process of its own, so that a crash, the
 * OOM killer or a signal ends that job only.
 *
 * The child writes its standard error to jobs/.ID.PID.err and the summary to jobs/.ID.PID.json;
 * when the replay succeeded it syncs the JSON, links it to jobs/ID.json (link, not rename: an
 * ID.json that is already there, written by another run of the same job, is never replaced),
 * syncs the folder and drops its temporary files.  A job that fails leaves its standard error
 * as jobs/ID.err, with a last line giving the exit status or the signal.  A job killed together
 * with its parent (a node that fails, SIGKILL to the whole group) leaves only hidden temporary
 * files: it is missing, and the next run of the sweep runs it again.
 */
#include "cli/baseline.h"
#include "cli/replay_opts.h"
#include "cli/run_json.h"
#include "cli/sweep/sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void no_help(FILE *f) { (void)f; }

static bool tmp_path(char *buf, size_t len, const char *dir, const char *id, long pid,
                     const char *suffix) {
  return snprintf(buf, len, "%s/jobs/.%s.%ld.%s", dir, id, pid, suffix) < (int)len;
}

/* The strategy label is coordinate 1 ("strategy").  c is the job's configuration (the
 * caller frees it); its argument vector, as a replay's, is the run's command line. */
static int replay(const bh_sweep_job_t *j, bh_replay_summary_t *s, bh_cli_replay_t *c,
                  bh_cli_run_info_t *info) {
  static char *argv[BH_CLI_MAX_OPTS + 64];
  int argc = 0;
  argv[argc++] = (char *)"replay";
  argv[argc++] = j->trace;
  for (size_t i = 0; i < j->nargs && argc < (int)(sizeof(argv) / sizeof(argv[0])) - 2; i++)
    argv[argc++] = j->args[i];
  argv[argc++] = (char *)"--quiet";
  argv[argc] = NULL;
  bh_cli_set_argv(argc, argv);
  const char *trace;
  int r = bh_cli_replay_args(argc, argv, c, &trace, NULL, NULL, no_help);
  if (r)
    return BH_EXIT_USAGE;
  bh_cli_replay_finish(c);
  c->cfg.trace = trace;
  *info = (bh_cli_run_info_t){.cfg = &c->cfg, .trace = trace};
  bh_replay_config_t given = c->cfg; /* the settings as given: the run may size the arena */
  bh_cli_hash_t *hash = bh_cli_hash_attach(&c->cfg); /* taken as the replay reads the trace */
  char err[1024] = "";
  const char *label = j->coords[BH_SWEEP_COL_STRATEGY];
  int e = bh_cli_is_baseline(c->cfg.hint.strategy)
              ? bh_cli_baseline_run(&c->cfg, c->cfg.hint.strategy, s, err, sizeof(err))
              : bh_replay_run(&c->cfg, s, err, sizeof(err));
  bh_cli_hash_finish(hash, &c->cfg, trace, info);
  c->cfg = given;
  if (e) {
    fprintf(stderr, "%s\n", err[0] ? err : bh_strerror(e));
    return BH_EXIT_FAIL;
  }
  if (label)
    snprintf(s->strategy, sizeof(s->strategy), "%s", label);
  return BH_EXIT_OK;
}

/* Writes the summary to tmp, syncs it and links it to final; 0 or -1 after a message. */
static int publish(const char *dir, const bh_replay_summary_t *s, const bh_cli_run_info_t *info,
                   const char *tmp, const char *final) {
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
  if (!f) {
    fprintf(stderr, "sweep: cannot write %s: %s\n", tmp, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  bool bad = bh_cli_run_json(f, s, info) != BH_OK;
  bad |= fflush(f) || ferror(f) || fsync(fileno(f));
  if (fclose(f) || bad) {
    fprintf(stderr, "sweep: cannot write %s: %s\n", tmp, strerror(errno));
    unlink(tmp);
    return -1;
  }
  if (link(tmp, final) && errno != EEXIST) {
    fprintf(stderr, "sweep: cannot link %s to %s: %s\n", tmp, final, strerror(errno));
    unlink(tmp);
    return -1;
  }
  unlink(tmp);
  char jobs[PATH_MAX];
  snprintf(jobs, sizeof(jobs), "%s/jobs", dir);
  int dfd = open(jobs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return 0;
}

/* The child: never returns. */
static void child(const char *dir, const bh_sweep_job_t *j) {
  char err[PATH_MAX], tmp[PATH_MAX], final[PATH_MAX];
  long pid = (long)getpid();
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (!tmp_path(err, sizeof(err), dir, j->id, pid, "err") ||
      !tmp_path(tmp, sizeof(tmp), dir, j->id, pid, "json") ||
      !bh_sweep_job_path(final, sizeof(final), dir, j->id, "json"))
    _exit(BH_EXIT_FAIL);
  int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "sweep: job %s: cannot write %s: %s\n", j->id, err, strerror(errno));
    _exit(BH_EXIT_FAIL);
  }
  fflush(NULL);
  dup2(fd, STDERR_FILENO);
  dup2(fd, STDOUT_FILENO);
  close(fd);
  setvbuf(stderr, NULL, _IONBF, 0);
  bh_replay_summary_t *s = calloc(1, sizeof(*s));
  bh_cli_replay_t c;
  bh_cli_replay_init(&c);
  bh_cli_run_info_t info;
  int rc = s ? replay(j, s, &c, &info) : BH_EXIT_FAIL;
  if (rc == BH_EXIT_OK && publish(dir, s, &info, tmp, final))
    rc = BH_EXIT_FAIL;
  bh_cli_replay_free(&c);
  free(s);
  fflush(NULL);
  if (rc == BH_EXIT_OK)
    unlink(err);
  /* on failure the parent moves the error file to ID.err with the exit status */
  _exit(rc);
}

pid_t bh_sweep_job_start(const char *dir, const bh_sweep_job_t *j) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "buddyhint sweep: fork: %s\n", strerror(errno));
    return -1;
  }
  if (pid == 0)
    child(dir, j);
  return pid;
}

bool bh_sweep_job_end(const char *dir, const bh_sweep_job_t *j, pid_t pid, int status) {
  char err[PATH_MAX], final[PATH_MAX];
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && bh_sweep_state(dir, j->id) == BH_SWEEP_DONE)
    return true;
  if (!tmp_path(err, sizeof(err), dir, j->id, (long)pid, "err") ||
      !bh_sweep_job_path(final, sizeof(final), dir, j->id, "err"))
    return false;
  FILE *f = fopen(err, "a");
  if (f) {
    if (WIFSIGNALED(status))
      fprintf(f, "sweep: job %s was killed by signal %d (%s)\n", j->id, WTERMSIG(status),
              strsignal(WTERMSIG(status)));
    else
      fprintf(f, "sweep: job %s failed with exit status %d\n", j->id, WEXITSTATUS(status));
    fclose(f);
  }
  /* ID.err is this sweep's own record of the job's last failure: it is replaced */
  if (rename(err, final))
    fprintf(stderr, "buddyhint sweep: job %s: cannot keep its error output: %s\n", j->id,
            strerror(errno));
  char tmp[PATH_MAX];
  if (tmp_path(tmp, sizeof(tmp), dir, j->id, (long)pid, "json"))
    unlink(tmp); /* a child killed while writing */
  return false;
}

bool bh_sweep_job_run(const char *dir, const bh_sweep_job_t *j) {
  pid_t pid = bh_sweep_job_start(dir, j);
  if (pid < 0)
    return false;
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return false;
  return bh_sweep_job_end(dir, j, pid, st);
}
