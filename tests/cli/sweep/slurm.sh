#!/usr/bin/env bash
# `make test-slurm`: buddyhint sweep on a real Slurm cluster of one node, started here.
#
# munged, slurmctld and slurmd run from a temporary folder with a generated slurm.conf (Debian's
# slurm-wlm and munge, as root, on localhost, free ports).  Then:
#   1. a 12-job sweep through --engine slurm (3 jobs per array task, --partition, --time and
#      --mem passed through) is merged and checked against the same sweep run with the local
#      engine: the same rows, the wall clock aside;
#   2. one task of a running array is cancelled with scancel; merge then reports the job as
#      missing, the sweep run again submits an array of exactly the jobs without a result,
#      the results from before are left alone, and the merged table is complete;
#   3. the same sweep through --engine parallel (GNU parallel, with an --sshloginfile naming
#      this machine) gives the same table as the local engine.
# Where the daemons cannot start this fails, with the reason and their logs; it never skips.
# Every process it starts is stopped by its recorded pid (slurmstepd by the slurm.conf in its
# environment), running jobs first, as Slurm wants.
#
# usage: slurm.sh BUDDYHINT TRACES_DIR
set -u
if [ $# -ne 2 ]; then
  echo "usage: $0 BUDDYHINT TRACES_DIR" >&2
  exit 2
fi
bh=$(realpath "$1")
traces=$(realpath "$2")
passed=0
failed=0
ok() {
  echo "ok   $*"
  passed=$((passed + 1))
}
bad() {
  echo "FAIL $*"
  failed=$((failed + 1))
}
check() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
finish() {
  echo "test-slurm: $passed passed, $failed failed"
  [ $failed -eq 0 ] && [ $passed -gt 0 ]
  exit $?
}
# A failure that ends the test (the cluster is not there): the reason, then the logs.
die() {
  bad "$*"
  for log in "${work:-/nonexistent}"/*.log; do
    [ -f "$log" ] || continue
    echo "---- $log (last 20 lines)"
    tail -n 20 "$log"
  done
  finish
}

[ "$(id -u)" -eq 0 ] || die "the Slurm daemons need root (this is user $(id -un))"
for tool in munged slurmctld slurmd sbatch squeue scontrol scancel sinfo parallel; do
  command -v "$tool" >/dev/null ||
    die "$tool is not installed (make test-slurm installs slurm-wlm, munge and parallel)"
done

work=$(mktemp -d /tmp/bh-slurm-XXXXXX) || die "mktemp"
chmod 0755 "$work" # munge's clients want the socket's folders not writable by others
host=$(uname -n)
host=${host%%.*}
export SLURM_CONF=$work/slurm.conf
ctld_pid= slurmd_pid=

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_ports() {
  local p
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 30000))
    if port_free "$p" && port_free $((p + 1)); then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# Jobs first (while slurmd runs), then the step daemons, then the daemons, then munged.
stop_all() {
  set +e
  if [ -n "$ctld_pid" ] && kill -0 "$ctld_pid" 2>/dev/null; then
    scancel --full --quiet --user root 2>/dev/null
    for _ in $(seq 1 50); do
      [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  # slurmstepd ignores SIGTERM; ours carry this slurm.conf in their environment
  local pid
  for env in /proc/[0-9]*/environ; do
    pid=${env#/proc/}
    pid=${pid%/environ}
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ] &&
      tr '\0' '\n' <"$env" 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF"; then
      kill -KILL "$pid" 2>/dev/null
    fi
  done
  for pid in $slurmd_pid $ctld_pid; do
    kill "$pid" 2>/dev/null
  done
  for pid in $slurmd_pid $ctld_pid; do
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
  done
  [ -S "$work/munge/munge.sock" ] && munged --stop --socket="$work/munge/munge.sock" >/dev/null 2>&1
  rm -rf "$work"
}
trap stop_all EXIT

# ---- munge ----
mkdir -p "$work/munge" "$work/state" "$work/spool"
chmod 0755 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1 count=1024 status=none
chmod 0400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/munge.sock" \
  --pid-file="$work/munge/munged.pid" --seed-file="$work/munge/munged.seed" \
  --log-file="$work/munged.log" || die "munged did not start"
ok "munged started"

# ---- slurm.conf and the daemons ----
port=$(pick_ports) || die "no two free ports for slurmctld and slurmd"
mem_mb=$(awk '/^MemTotal:/ { print int($2 / 1024 / 2) }' /proc/meminfo)
cat >"$SLURM_CONF" <<EOF
ClusterName=bhtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
MinJobAge=5
KillWait=5
MailProg=/bin/true
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i >>"$work/slurmctld.log" 2>&1 &
ctld_pid=$!
slurmd -D -N "$host" >>"$work/slurmd.log" 2>&1 &
slurmd_pid=$!
ready=
for _ in $(seq 1 150); do
  kill -0 "$ctld_pid" 2>/dev/null || die "slurmctld exited at start"
  kill -0 "$slurmd_pid" 2>/dev/null || die "slurmd exited at start"
  if scontrol ping 2>/dev/null | grep -q "is UP" &&
    [ "$(sinfo -h -n "$host" -o %T 2>/dev/null)" = idle ]; then
    ready=1
    break
  fi
  sleep 0.2
done
[ -n "$ready" ] || die "the cluster did not come up in 30 s (scontrol ping / sinfo: node not idle)"
ok "slurmctld and slurmd up, node $host idle (ports $port, $((port + 1)))"

# Waits for a Slurm job (all its array tasks) to leave the queue.
wait_job() {
  for _ in $(seq 1 1500); do
    [ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ] && return 0
    sleep 0.2
  done
  return 1
}
njson() { find "$1/jobs" -maxdepth 1 -name '*.json' ! -name '.*' 2>/dev/null | wc -l; }
strip_wall() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++)
                       drop[i] = $i ~ /^(wall_seconds|cpu_seconds|minflt)$/ || $i ~ /_ns$/ }
           { line = ""; for (i = 1; i <= NF; i++) if (!drop[i]) line = line $i ","
             print (NR == 1 ? "0 " : "1 ") line }' "$1" | sort
}

cd "$work" || die "cd $work"
cp "$traces/gen-memhog-256M.bht.zst" "$traces/real-thp-256M.bht.zst" .
cat >grid.yaml <<'EOF'
traces: [gen-memhog-256M.bht.zst, real-thp-256M.bht.zst]
strategies: [none, bubble: {order: [3, 9]}]
options: {backing: sim, compaction-proactiveness: [0, 20]}
seeds: [7]
EOF

# ---- 1. the same sweep on Slurm and here ----
"$bh" sweep grid.yaml -o local -j 2 >local.out 2>&1
check "the local sweep: 12 jobs done" [ "$(njson local)" -eq 12 ]
"$bh" merge local -o local.csv >/dev/null

id=$("$bh" sweep grid.yaml -o viaslurm --engine slurm --per-task 3 --partition debug \
  --time 10 --mem 256M 2>submit.err)
rc=$?
check "sweep --engine slurm submits (exit 0, job id '$id')" [ $rc -eq 0 ] && [ -n "$id" ]
check "the script asks for 4 tasks of 3 jobs" grep -q "^#SBATCH --array=0-3$" viaslurm/slurm/batch-1.sbatch
check "with the partition, time and memory given" \
  grep -q "^#SBATCH --partition=debug$" viaslurm/slurm/batch-1.sbatch
wait_job "$id" || bad "the array did not finish in 300 s"
check "the array wrote 12 results" [ "$(njson viaslurm)" -eq 12 ]
check "each task's output names its 3 jobs" [ "$(cat viaslurm/slurm/batch-1-*.out | grep -c ': done in')" -eq 12 ]
"$bh" merge viaslurm -o viaslurm.csv >merge.out
check "merge of the Slurm sweep exits 0" [ $? -eq 0 ]
check "the Slurm table equals the local one (wall clock aside)" \
  cmp -s <(strip_wall local.csv) <(strip_wall viaslurm.csv)

# ---- 2. scancel one array task, then resume ----
cat >slow.yaml <<'EOF'
traces: [gen-memhog-256M.bht.zst]
strategies: [none, bitmap, bubble, "bubble:order=3"]
options: {backing: sim, speed: 1, idle: 4}
EOF
id=$("$bh" sweep slow.yaml -o slow --engine slurm 2>slow-submit.err)
check "the slow sweep is submitted" [ -n "$id" ]
victim=
for _ in $(seq 1 300); do
  victim=$(squeue -h -j "$id" -t R -o %i 2>/dev/null | grep '_' | head -1)
  [ -n "$victim" ] && break
  sleep 0.1
done
check "an array task runs ($victim)" [ -n "$victim" ]
scancel "$victim"
wait_job "$id" || bad "the slow array did not finish"
task=${victim#*_}
victim_job=$(sed -n "$((task + 1))p" slow/slurm/batch-1.list)
check "the cancelled task's job ($victim_job) has no result" [ ! -e "slow/jobs/$victim_job.json" ]
check "the other three are done" [ "$(njson slow)" -eq 3 ]
"$bh" merge slow -o slow-partial.csv >partial.out
check "merge exits 1 and lists the job as missing" [ $? -eq 1 ] && grep -q "^missing: $victim_job " partial.out
(cd slow/jobs && stat -c '%n %Y %i' -- *.json | sort) >before.txt
id2=$("$bh" sweep slow.yaml -o slow --engine slurm 2>resume.err)
check "the resumed sweep runs only the missing job" grep -q "3 done before, 1 to run" resume.err
check "in an array of one task" grep -q "^#SBATCH --array=0-0$" slow/slurm/batch-2.sbatch
check "that is the cancelled job" [ "$(cat slow/slurm/batch-2.list)" = "$victim_job" ]
wait_job "$id2" || bad "the resumed array did not finish"
(cd slow/jobs && stat -c '%n %Y %i' -- *.json | sort) | grep -F -f before.txt >kept.txt
check "the results from before are untouched" cmp -s before.txt kept.txt
"$bh" merge slow -o slow.csv >/dev/null
check "the merged table is complete" [ $? -eq 0 ] && [ "$(wc -l <slow.csv)" -eq 5 ]

# ---- 3. GNU parallel ----
echo ":" >sshlogins # ':' is this machine, without ssh
"$bh" sweep grid.yaml -o viapar --engine parallel -j 2 --sshloginfile sshlogins >par.out 2>&1
check "sweep --engine parallel exits 0" [ $? -eq 0 ]
check "parallel ran 12 jobs" [ "$(tail -n +2 viapar/parallel/batch-1.log | wc -l)" -eq 12 ]
"$bh" merge viapar -o viapar.csv >/dev/null
check "the parallel table equals the local one" cmp -s <(strip_wall local.csv) <(strip_wall viapar.csv)

finish
