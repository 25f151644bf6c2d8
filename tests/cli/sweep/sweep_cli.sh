#!/usr/bin/env bash
# buddyhint sweep / merge / plot end to end, with the local engine and the job files of the
# other two engines run by hand (the real Slurm cluster and GNU parallel are `make test-slurm`):
#
#   - a grid runs, every job's JSON is there and merge gives one row per job with the grid's
#     coordinates; a row's numbers are those of the same `buddyhint replay` run directly;
#   - a second run runs nothing and leaves every result file as it was;
#   - a job that fails (an unreadable trace) leaves its stderr with the reason and is listed;
#   - a sweep killed mid-run (SIGKILL to its whole process group) and a single job killed
#     mid-run: the next run runs exactly the jobs without a result, and the table is complete;
#   - the Slurm script (--dry-run) has the array, chunking and sbatch lines asked for, and
#     running its command for array tasks by hand completes the sweep; the same for the GNU
#     parallel job list;
#   - the plot of a sweep is a PNG; bad usage and existing outputs are refused, files kept.
#
# usage: sweep_cli.sh BUDDYHINT TRACES_DIR WORK_DIR [PART]
#
# PART: main (everything but the killed sweeps and jobs) or killed (those, paced by the wall
# clock, so mostly waiting); ctest runs the two as two tests side by side.  Without it, both.
set -u
bh=$1 traces=$2 work=$3 part=${4:-all}
case $part in
  all | main | killed) ;;
  *) echo "sweep_cli.sh: unknown part '$part' (all, main, killed)" >&2; exit 2 ;;
esac
want() { [ "$part" = all ] || [ "$part" = "$1" ]; }
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() {
  echo "FAIL $*"
  fails=$((fails + 1))
}
check() { # check WHAT CMD...
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
njson() { find "$1/jobs" -maxdepth 1 -name '*.json' ! -name '.*' | wc -l; }
# name size mtime inode of every result, to tell that a second run left them alone
snapshot() { (cd "$1/jobs" && stat -c '%n %s %Y %i' -- *.json) | sort; }
# a merged CSV without the columns that measure the wall clock, rows sorted
strip_wall() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++)
                       drop[i] = $i ~ /^(wall_seconds|cpu_seconds|minflt)$/ || $i ~ /_ns$/ }
           { line = ""; for (i = 1; i <= NF; i++) if (!drop[i]) line = line $i ","
             print (NR == 1 ? "0 " : "1 ") line }' "$1" | sort
}
# a key's number in a replay's JSON summary (nested keys are unique in it)
json_num() { grep -o "\"$2\": [0-9.]*" "$1" | head -1 | sed 's/.*: //'; }
# the id, coordinates and trace-given counts of a merged CSV, rows sorted
pick() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++)
                       if (i <= 8 || $i ~ /^(events|allocs|frees|live_peak_bytes)$/) k[i] = 1 }
           { line = ""; for (i = 1; i <= NF; i++) if (k[i]) line = line $i ","; print line }' \
    "$1" | sort
}
# the child processes of a pid
children() {
  cat "/proc/$1/task/$1/children" 2>/dev/null | tr ' ' '\n' | grep . ||
    awk -v p="$1" '$4 == p { print $1 }' /proc/[0-9]*/stat 2>/dev/null
}
cp "$traces/gen-memhog-256M.bht.zst" "$traces/real-thp-256M.bht.zst" \
  "$traces/real-pyservice.bht.zst" .

if want main; then
# ---- a grid, run here ----
cat >grid.yaml <<'EOF'
traces: [gen-memhog-256M.bht.zst, "real-thp-*.bht.zst"]
strategies: [none, bubble: {order: [3, 9]}]
options:
  backing: sim
  compaction-proactiveness: [0, 20]
seeds: [1, 2]
EOF
"$bh" sweep grid.yaml -o grid -j 2 >run1.out 2>run1.err
rc=$?
check "sweep of 24 jobs exits 0" [ $rc -eq 0 ]
check "24 results" [ "$(njson grid)" -eq 24 ]
check "the summary says 24 done now" grep -q "^sweep: 24 jobs: 24 done (24 now, 0 before), 0 failed" run1.out
check "a progress line with an ETA" grep -q "24/24 finished, 0 failed, 0 running; .* ETA" run1.err
"$bh" merge grid -o grid.csv >merge1.out
check "merge exits 0 on a complete sweep" [ $? -eq 0 ]
check "merge's summary" grep -q "^merge: 24 jobs: 24 done, 0 failed, 0 missing; 24 rows" merge1.out
check "24 rows and a header" [ "$(wc -l <grid.csv)" -eq 25 ]
check "the coordinates are columns" \
  grep -q "^id,trace,strategy,strategy_name,bubble.order,backing,compaction-proactiveness,seed,trace_format," grid.csv
check "every grid point once" [ "$(tail -n +2 grid.csv | cut -d, -f2-8 | sort -u | wc -l)" -eq 24 ]
check "bubble.order is empty for none" [ "$(grep -c ',none,none,,sim,' grid.csv)" -eq 8 ]
# one job against the same replay run by hand
"$bh" replay real-thp-256M.bht.zst --strategy bubble --opt order=3 --backing sim \
  --compaction-proactiveness 20 --seed 2 --quiet --json direct.json >/dev/null
row=$(grep ',real-thp-256M.bht.zst,bubble:order=3,bubble,3,sim,20,2,' grid.csv)
for key in events reported_bytes madvise_calls live_peak_bytes arena_stats.compact_runs; do
  want=$(json_num direct.json "${key#arena_stats.}")
  got=$(echo "$row" | awk -F, -v c="$(head -1 grid.csv | tr , '\n' | grep -n "^$key\$" | cut -d: -f1)" '{print $c}')
  check "merged $key ($got) is the direct replay's ($want)" [ -n "$got" ] && [ "$got" = "$want" ]
done
"$bh" merge grid -o grid.json >/dev/null
check "the JSON table's summary" grep -q '"jobs": 24' grid.json && grep -q '"done": 24' grid.json &&
  grep -q '"failed": \[\]' grid.json && grep -q '"missing": \[\]' grid.json
check "the JSON table's runs" [ "$(grep -c '"events": ' grid.json)" -eq 24 ]

# ---- jemalloc: the baseline, with only the options it takes ----
cat >je.yaml <<'EOF'
traces: [gen-memhog-256M.bht.zst]
strategies: [none, "jemalloc:decay=0"]
options: {backing: sim, idle: 1, compaction-proactiveness: [0, 20]}
seeds: [1, 2]
EOF
"$bh" sweep je.yaml -o je -j 2 >je.out 2>je.err
check "a sweep with jemalloc exits 0" [ $? -eq 0 ]
check "jemalloc runs once, not once per seed and proactiveness" \
  grep -q "^sweep: 5 jobs: 5 done" je.out
"$bh" merge je -o je.csv >/dev/null
check "its row has no backing, proactiveness or seed" \
  grep -q "^[0-9a-f]*,gen-memhog-256M.bht.zst,jemalloc:decay=0,jemalloc,0,,1,,,native-binary" je.csv

# ---- resume: nothing to do, nothing touched ----
snapshot grid >before.txt
manifest=$(stat -c '%Y %i' grid/sweep.json)
"$bh" sweep grid.yaml -o grid -j 2 >run2.out 2>run2.err
check "a second run exits 0" [ $? -eq 0 ]
check "a second run runs nothing" grep -q "24 done before, 0 to run" run2.err
snapshot grid >after.txt
check "a second run leaves every result as it was" cmp -s before.txt after.txt
check "and the job list" [ "$(stat -c '%Y %i' grid/sweep.json)" = "$manifest" ]

# ---- a job that fails ----
printf 'this is not a trace\n' >broken.trace
cat >failing.yaml <<'EOF'
traces: [gen-memhog-256M.bht.zst, broken.trace]
strategies: [none]
options: {backing: sim}
EOF
"$bh" sweep failing.yaml -o failing -j 2 >fail.out 2>fail.err
check "a sweep with a failed job exits 1" [ $? -eq 1 ]
failed_id=$(sed -n 's/^failed: \([0-9a-f]\{16\}\) (broken.trace none.*/\1/p' fail.out)
check "the failed job is listed with its coordinates" [ -n "$failed_id" ]
check "its stderr is kept with the reason" grep -q "broken.trace" "failing/jobs/$failed_id.err"
check "and its exit status" grep -q "failed with exit status" "failing/jobs/$failed_id.err"
check "the other job is done" [ "$(njson failing)" -eq 1 ]
"$bh" merge failing -o failing.csv >fmerge.out
check "merge of an incomplete sweep exits 1" [ $? -eq 1 ]
check "merge lists the failed job" \
  grep -q "^failed: $failed_id (broken.trace, none, backing=sim): see failing/jobs/$failed_id.err" fmerge.out
check "the table has the done job" [ "$(wc -l <failing.csv)" -eq 2 ]

fi

if want killed; then
# ---- a sweep killed mid-run, then resumed ----
# speed 5: each job replays its 7 s of virtual time in about 1.4 s of wall time
cat >slow.yaml <<'EOF'
traces: [gen-memhog-256M.bht.zst]
strategies: [none, bitmap, bubble]
options: {backing: sim, speed: 5, idle: 1}
seeds: [1, 2]
EOF
setsid "$bh" sweep slow.yaml -o slow -j 2 >slow1.out 2>slow1.err &
leader=$!
# (the waits below end as soon as what they wait for is there; their bounds are for a busy
# machine, where a paced job or a fork can take far longer than on an idle one)
for _ in $(seq 1 1200); do
  [ -d slow/jobs ] && [ "$(njson slow)" -ge 2 ] && break
  sleep 0.1
done
kill -KILL -- -"$leader" 2>/dev/null
wait "$leader" 2>/dev/null
sleep 0.3
done_before=$(njson slow)
check "killed with $done_before of 6 jobs done" [ "$done_before" -ge 2 ] && [ "$done_before" -lt 6 ]
complete=1
for f in slow/jobs/*.json; do [ "$(tail -c 2 "$f" | head -c 1)" = "}" ] || complete=0; done
check "every result there is whole" [ $complete -eq 1 ]
snapshot slow >before.txt
"$bh" sweep slow.yaml -o slow -j 2 >slow2.out 2>slow2.err
check "the resumed sweep exits 0" [ $? -eq 0 ]
check "it runs only the $((6 - done_before)) missing jobs" \
  grep -q "$done_before done before, $((6 - done_before)) to run" slow2.err
check "and says so" grep -q "^sweep: 6 jobs: 6 done ($((6 - done_before)) now, $done_before before)" slow2.out
snapshot slow | grep -F -f before.txt >kept.txt
check "the results from before are untouched" cmp -s before.txt kept.txt
"$bh" merge slow -o slow.csv >/dev/null
check "the merged table is complete" [ $? -eq 0 ] && [ "$(wc -l <slow.csv)" -eq 7 ]
# the same sweep never interrupted has the same rows (on the wall clock of --speed the
# hinting worker's timing varies, so only what the trace decides is compared)
"$bh" sweep slow.yaml -o slow-whole -j 3 >/dev/null 2>&1
"$bh" merge slow-whole -o slow-whole.csv >/dev/null
check "an interrupted sweep's table has the uninterrupted one's rows" \
  cmp -s <(pick slow.csv) <(pick slow-whole.csv)

# ---- one job killed mid-run ----
cat >one.yaml <<'EOF'
traces: [gen-memhog-256M.bht.zst]
strategies: [none, bubble]
options: {backing: sim, speed: 2, idle: 1}
EOF
"$bh" sweep one.yaml -o one -j 1 >one1.out 2>one1.err &
sweeper=$!
victim=
for _ in $(seq 1 1200); do
  victim=$(children "$sweeper" | head -1)
  [ -n "$victim" ] && break
  sleep 0.05
done
sleep 0.5
[ -n "$victim" ] && kill -KILL "$victim"
wait "$sweeper"
check "a sweep with a killed job exits 1" [ $? -eq 1 ]
check "the killed job's error says so" grep -q "killed by signal 9" one/jobs/*.err
check "the other job is done" [ "$(njson one)" -eq 1 ]
"$bh" sweep one.yaml -o one -j 1 >one2.out 2>one2.err
check "the rerun runs the killed job only" grep -q "1 done before, 1 to run" one2.err
check "and completes the sweep" [ "$(njson one)" -eq 2 ]

# ---- SIGTERM to a local sweep: its running jobs end with it ----
"$bh" sweep one.yaml -o term -j 2 >term.out 2>term.err &
sweeper=$!
kids=
for _ in $(seq 1 1200); do
  kids=$(children "$sweeper" | tr '\n' ' ')
  [ "$(echo $kids | wc -w)" -eq 2 ] && break
  sleep 0.05
done
kill -TERM "$sweeper"
wait "$sweeper"
check "a sweep stopped by SIGTERM exits 1" [ $? -eq 1 ]
check "and says how to resume" grep -q "stopped by signal 15; run the sweep again to resume" term.err
alive=0
for k in $kids; do kill -0 "$k" 2>/dev/null && alive=1; done
check "its jobs ($kids) ended with it" [ -n "$kids" ] && [ $alive -eq 0 ]
check "and are recorded as killed" [ "$(grep -l "killed by signal 15" term/jobs/*.err | wc -l)" -eq 2 ]

fi

if want main; then
# The engines run the jobs of a grid of the same shape (24 jobs) with the smaller recorded
# trace: they are checked for which jobs they run and for giving the local engine's table, and
# they do not look inside a job, so the larger trace of the grid above would add only time.
sed 's/"real-thp-\*.bht.zst"/"real-pyserv*.bht.zst"/' grid.yaml >eng.yaml
"$bh" sweep eng.yaml -o eng -j 2 >/dev/null 2>&1 && "$bh" merge eng -o eng.csv >/dev/null
rc=$?
check "the engines' grid, run here: 24 rows" [ $rc -eq 0 ] && [ "$(wc -l <eng.csv)" -eq 25 ]

# ---- Slurm: the script, run by hand as its array tasks would ----
"$bh" sweep eng.yaml -o hand --engine slurm --dry-run --per-task 5 --partition debug \
  --time 0:10:00 --mem 1G --job-name bh-test >script.out 2>script.err
check "slurm --dry-run exits 0" [ $? -eq 0 ]
script=hand/slurm/batch-1.sbatch
check "it writes the script" [ -x "$script" ]
check "and prints it" cmp -s "$script" script.out
check "24 jobs, 5 a task: array 0-4" grep -q "^#SBATCH --array=0-4$" "$script"
for l in "--partition=debug" "--time=0:10:00" "--mem=1G" "--job-name=bh-test"; do
  check "#SBATCH $l" grep -q -- "^#SBATCH $l\$" "$script"
done
check "the job list has 24 ids" [ "$(wc -l <hand/slurm/batch-1.list)" -eq 24 ]
check "nothing ran" [ "$(njson hand)" -eq 0 ]
SLURM_ARRAY_TASK_ID=4 bash "$script" >task4.out 2>&1
check "task 4 runs the last 4 jobs" [ "$(njson hand)" -eq 4 ] && [ "$(grep -c ': done in' task4.out)" -eq 4 ]
"$bh" sweep eng.yaml -o hand --engine slurm --dry-run >script2.out 2>script2.err
check "a second script is for the 20 jobs left" grep -q "^#SBATCH --array=0-19$" hand/slurm/batch-2.sbatch
check "the first script is kept" [ -f "$script" ] && [ -f hand/slurm/batch-1.list ]
for t in $(seq 0 19); do SLURM_ARRAY_TASK_ID=$t bash hand/slurm/batch-2.sbatch >/dev/null 2>&1; done
"$bh" merge hand -o hand.csv >/dev/null
check "the array tasks complete the sweep" [ $? -eq 0 ]
check "with the same table as the local engine" cmp -s <(strip_wall eng.csv) <(strip_wall hand.csv)

# ---- GNU parallel: the job list, run line by line ----
"$bh" sweep eng.yaml -o par --engine parallel --dry-run -j 3 >par.out 2>par.err
check "parallel --dry-run exits 0" [ $? -eq 0 ]
check "it prints the parallel command" grep -q "^parallel --joblog .*/par/parallel/batch-1.log --jobs 3 -a .*/par/parallel/batch-1.jobs$" par.out
check "the job list has 24 commands" [ "$(grep -c " sweep --run '.*/par' [0-9a-f]\{16\}$" par/parallel/batch-1.jobs)" -eq 24 ]
bash par/parallel/batch-1.jobs >/dev/null 2>&1
"$bh" merge par -o par.csv >/dev/null
check "its commands complete the sweep" [ $? -eq 0 ] && cmp -s <(strip_wall eng.csv) <(strip_wall par.csv)

# ---- plot ----
"$bh" plot grid --x compaction-proactiveness --y reported_bytes -o grid.png >/dev/null
check "plot of a sweep folder draws a PNG" [ "$(head -c 4 grid.png | od -An -tx1 | tr -d ' ')" = 89504e47 ]
"$bh" plot grid.json --x bubble.order --y reported_bytes --where seed=1 -o grid.svg >/dev/null
check "plot of merge's JSON draws an SVG" grep -q "<svg" grid.svg
check "its legend names a trace by its file name without the suffixes" \
  grep -q "none, gen-memhog-256M, compaction-proactiveness=0 (no bubble.order)" grid.svg
check "and never by its path" [ "$(grep -c 'bht.zst' grid.svg)" -eq 0 ]
"$bh" plot grid --x trace --y reported_bytes -o traces.svg >/dev/null
check "a trace axis is labelled by the short names" grep -q ">real-thp-256M<" traces.svg
sum=$(md5sum grid.png)
"$bh" plot grid --x seed -o grid.png 2>/dev/null
check "plot refuses an existing picture (exit 2)" [ $? -eq 2 ] && [ "$(md5sum grid.png)" = "$sum" ]
"$bh" replay gen-memhog-256M.bht.zst --backing sim --quiet --timeline timeline.csv >/dev/null
"$bh" plot timeline.csv --scripts "$traces/../plots" -o timeline.png >/dev/null
check "a timeline with --scripts DIR is still a timeline plot" [ -s timeline.png ]
"$bh" plot grid --x nosuch -o x.png 2>/dev/null
check "plot refuses an unknown axis (exit 2)" [ $? -eq 2 ] && [ ! -e x.png ]

# ---- usage and safety ----
sum=$(md5sum grid.csv)
"$bh" merge grid -o grid.csv >/dev/null 2>&1
check "merge refuses an existing output (exit 2) and keeps it" [ $? -eq 2 ] && [ "$(md5sum grid.csv)" = "$sum" ]
mkdir -p theirs && echo data >theirs/file.txt
"$bh" sweep grid.yaml -o theirs 2>theirs.err
check "sweep refuses a folder of other files" [ $? -eq 2 ] && [ ! -e theirs/sweep.json ] && [ "$(cat theirs/file.txt)" = data ]
printf 'traces: [gen-memhog-256M.bht.zst]\noptions:\n  memory: plenty\n' >bad.yaml
"$bh" sweep bad.yaml -o badout 2>bad.err
check "a bad spec: exit 2, its line, nothing created" [ $? -eq 2 ] && grep -q "bad.yaml:3:" bad.err && [ ! -e badout ]
"$bh" sweep grid.yaml 2>/dev/null
check "sweep without -o: exit 2" [ $? -eq 2 ]
"$bh" sweep grid.yaml -o x --engine pbs 2>/dev/null
check "an unknown engine: exit 2" [ $? -eq 2 ]
"$bh" sweep grid.yaml -o x --partition p 2>/dev/null
check "--partition without slurm: exit 2" [ $? -eq 2 ]
"$bh" merge nosuch -o n.csv 2>/dev/null
check "merge of a folder that is not a sweep: exit 2" [ $? -eq 2 ] && [ ! -e n.csv ]

fi

echo "sweep_cli ($part): $fails failed"
[ $fails -eq 0 ]
