#!/usr/bin/env bash
# check-slurm.sh — run a job emitted by `dmlkit run SPEC --emit slurm` under a real SLURM, as
# README.md "Cluster jobs" tells a user to: a single-node cluster of its own (MUNGE, slurmctld,
# slurmd with their slurm.conf, key, socket, state and logs in a temporary directory, on ports of
# their own; the node declares 8 CPUs, so that up to 4 of the tasks' 2-CPU allocations run at once,
# as on a cluster with free nodes), the job of scripts/testdata/slurm-check.yaml (a tuning chain:
# 7 smoke-sized runs in 3 phases) submitted with `bash FILE` from the repository root, twice on one
# store:
#
#   1. with an injected failure: task 1 of phase 2 runs the real bin/dmlkit with a backend it lacks
#      (a `dmlkit` wrapper first on PATH; the run fails and leaves no record, as a crashed run
#      does). Phase 1's array job ends COMPLETED, phase 2's with that task FAILED, phase 3's is
#      cancelled by SLURM (DependencyNeverSatisfied) without running, and the store holds runs
#      still pending;
#   2. the same script again, as emitted (bin/dmlkit, nothing injected): every task of every phase
#      ends COMPLETED, phase 1's tasks run nothing (their runs are stored), and the store ends
#      complete: every run of the plan stored once, nothing pending (the `dmlkit run --dry-run`
#      command the submit script prints);
#      `dmlkit tables` then writes the spec's tables from the store.
#
# States are read with scontrol (the cluster has no accounting database). The daemons this script
# starts are stopped by their PIDs, after cancelling whatever is left in this cluster's queue;
# the temporary directory is removed unless the check fails or SLURM_CHECK_KEEP=1.
#
#   scripts/check-slurm.sh                         # as root; installs the packages with apt-get if missing
#   SLURM_CHECK_INSTALL=0 scripts/check-slurm.sh   # never install: SKIPPED where the packages are missing
#
# Needs root (slurmd runs the tasks; its daemons run as root here) and Debian's slurmctld, slurmd,
# slurm-client and munge (SLURM 22.05 on bookworm); without root, or without the packages and
# apt-get, it prints SKIPPED and exits 0. SLURM_CHECK_PORT (default 16817) and the next port are
# the controller's and slurmd's. Measured on the 2-core CI machine type while two other sweeps
# ran: 30-40 s (the go build cached), plus ~15 s to install the packages (apt-get update included)
# where they are missing.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
export PATH=$PATH:/usr/sbin:/sbin
spec=scripts/testdata/slurm-check.yaml
port=${SLURM_CHECK_PORT:-16817}
limit=${SLURM_CHECK_TIMEOUT:-300} # seconds one submission may take to leave the queue
t0=$(date +%s)
say() { printf 'check-slurm: [%3d s] %s\n' "$(($(date +%s) - t0))" "$*" >&2; }
skip() {
	echo "check-slurm: SKIPPED: $*"
	exit 0
}
fails=0
fail() {
	echo "check-slurm: FAIL: $*" >&2
	fails=$((fails + 1))
}
die() {
	echo "check-slurm: FAIL: $*" >&2
	exit 1
}

[[ $(id -u) == 0 ]] || skip "needs root (it starts munged, slurmctld and slurmd, which run the tasks as root here)"
missing() {
	local c
	for c in munged munge unmunge slurmctld slurmd slurmstepd sbatch squeue scontrol scancel sinfo; do
		command -v "$c" >/dev/null || return 0
	done
	return 1
}
if missing; then
	if [[ ${SLURM_CHECK_INSTALL:-1} == 0 ]] || ! command -v apt-get >/dev/null; then
		skip "SLURM or MUNGE is not installed (Debian: apt-get install slurmctld slurmd slurm-client munge)"
	fi
	say "apt-get install slurmctld slurmd slurm-client munge"
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
		slurmctld slurmd slurm-client munge >/dev/null
	missing && die "the packages installed, but a SLURM or MUNGE command is still missing"
fi
# The tasks must run this checkout's bin/dmlkit (the emitted script prefers apptainer, then a dmlkit
# on PATH): the submissions get a PATH of system directories only.
syspath=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
for c in apptainer dmlkit; do
	if p=$(PATH=$syspath command -v "$c"); then
		die "$p is on the system PATH: the emitted tasks would run it instead of this checkout's bin/dmlkit"
	fi
done

say "go build -o bin/dmlkit ./cmd/dmlkit"
GOTOOLCHAIN=auto GOEXPERIMENT=simd go build -o bin/dmlkit ./cmd/dmlkit
dmlkit=$repo/bin/dmlkit

work=$(mktemp -d "${TMPDIR:-/tmp}/dmlkit-slurm.XXXXXX")
chmod 755 "$work" # munged wants its socket's directories searchable by all
mkdir -p "$work/log" "$work/state" "$work/spool"
mkdir -m 700 "$work/key"
mkdir -m 755 "$work/munge"
pids=() # the daemons this script started, in start order
started_ctld=0
cleanup() {
	local rc=$? p i ids
	trap - EXIT
	if ((started_ctld)); then
		# Whatever this cluster still queues (an interrupted check), then the daemons.
		ids=$(squeue -h -o %F 2>/dev/null | sort -u | paste -sd' ') || true
		if [[ -n $ids ]]; then
			say "scancel $ids"
			# shellcheck disable=SC2086
			scancel $ids || true
			for i in $(seq 1 30); do
				[[ -z $(squeue -h 2>/dev/null) ]] && break
				sleep 1
			done
		fi
	fi
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		p=${pids[i]}
		kill -TERM "$p" 2>/dev/null || continue
		for _ in $(seq 1 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	if ((rc == 0)) && [[ ${SLURM_CHECK_KEEP:-0} == 0 ]]; then
		rm -rf "$work"
	else
		say "kept $work (slurm.conf, log/, the job's logs in results/logs)"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- MUNGE: a key and a socket of its own ---------------------------------------------------------
head -c 1024 /dev/urandom >"$work/key/munge.key"
chmod 400 "$work/key/munge.key"
sock=$work/munge/munge.socket
munged -F --key-file="$work/key/munge.key" --socket="$sock" --pid-file="$work/munge/munged.pid" \
	--log-file="$work/log/munged.log" --seed-file="$work/key/munged.seed" >"$work/log/munged.out" 2>&1 &
pids+=($!)
for i in $(seq 1 50); do
	munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1 && break
	((i < 50)) || die "munged did not answer on $sock: $(tail -n 3 "$work/log/munged.out")"
	sleep 0.2
done

# --- SLURM: one node, this machine -----------------------------------------------------------------
# It declares 8 CPUs (config_overrides) whatever the machine has: each task asks for 2, so up to 4
# run at once, as on a cluster with free nodes, and a later phase's tasks would start beside the
# earlier ones' if the dependencies did not hold them. Memory is the machine's (slurmd -C). The
# daemons talk over 127.0.0.1: the host name need not resolve.
host=$(hostname -s)
mem=$(slurmd -C | sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' | head -n 1)
[[ -n $mem ]] || die "slurmd -C gives no RealMemory: $(slurmd -C 2>&1 | head -n 2)"
export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=dmlkitcheck
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
# Finished jobs stay known to scontrol for an hour (the states are read after each submission).
MinJobAge=3600
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 RealMemory=$mem State=UNKNOWN
PartitionName=check Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
say "slurmctld and slurmd ($work/slurm.conf, ports $port-$((port + 1)))"
slurmctld -D -f "$SLURM_CONF" >"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
started_ctld=1
slurmd -D -f "$SLURM_CONF" >"$work/log/slurmd.out" 2>&1 &
pids+=($!)
for i in $(seq 1 60); do
	[[ $(sinfo -h -o %T 2>/dev/null) == idle ]] && break
	((i < 60)) || die "the node is not idle after 30 s: $(sinfo 2>&1 | tail -n 2); $(tail -n 5 "$work/log/slurmctld.log" 2>/dev/null)"
	sleep 0.5
done
sinfo >&2

# --- the job -------------------------------------------------------------------------------------
job=$work/job.sh
"$dmlkit" run "$spec" --scale smoke --emit slurm --out "$job" >&2
grep -q '^# 7 runs of paper "slurmcheck", scale "smoke", in 3 phases' "$job" ||
	die "the emitted job does not hold the spec's 7 runs in 3 phases: $(grep -m1 '^# [0-9]* runs' "$job")"
names=dmlkit-slurmcheck-smoke-p1,dmlkit-slurmcheck-smoke-p2,dmlkit-slurmcheck-smoke-p3
results=$work/results # $DMLKIT_RESULTS: the store is $results/slurmcheck/results
store=$results/slurmcheck/results

pjobs=()
pending= # the command the submit script prints for what is still pending
# submit LABEL [DIR]: bash FILE from the repository root (DIR first on PATH), then wait until the
# phases have left the queue; pjobs holds the array job ids of phases 1, 2, 3.
submit() {
	local label=$1 out i
	say "$label: bash $job"
	out=$(DMLKIT_RESULTS=$results PATH=${2:+$2:}$syspath bash "$job") || die "$label: the submit script failed: $out"
	echo "$out" >&2
	mapfile -t pjobs < <(sed -n 's/^phase [0-9]*: job \([0-9]*\) .*/\1/p' <<<"$out")
	((${#pjobs[@]} == 3)) || die "$label: submitted ${#pjobs[@]} array jobs, want 3"
	pending=$(sed -n 's/.*what is still pending: dmlkit \(run .*--dry-run.*\)$/\1/p' <<<"$out")
	[[ $pending == *" --results $store" ]] || die "$label: the submit script does not say how to see what is pending in $store: $out"
	squeue --me --name="$names" >&2 # the watch command of the job's header and README.md
	for ((i = 0; ; i++)); do
		[[ -z $(squeue -h -j "$(IFS=,; echo "${pjobs[*]}")") ]] && break
		((i < limit)) || die "$label: the jobs are still queued after $limit s: $(squeue -j "$(IFS=,; echo "${pjobs[*]}")" -o '%i %T %r')"
		sleep 1
	done
	say "$label: the queue is empty"
}
# states K: the array tasks of phase K's job, one "TASK STATE REASON" line each, by task.
states() {
	scontrol -o show job "${pjobs[$1 - 1]}" |
		sed -n 's/.* ArrayTaskId=\([0-9]*\) .* JobState=\([A-Z_]*\) Reason=\([^ ]*\) .*/\1 \2 \3/p' | sort -n
}
# expect LABEL K WANT: phase K's tasks are WANT ("0 COMPLETED None" lines joined with "; ").
expect() {
	local got
	got=$(states "$2" | paste -sd';' | sed 's/;/; /g')
	if [[ $got == "$3" ]]; then
		say "$1: phase $2: $got"
	else
		fail "$1: phase $2's tasks are \"$got\", want \"$3\""
	fi
}

# 1. An injected failure: task 1 of phase 2 runs with a backend the binary lacks.
mkdir -p "$work/inject"
cat >"$work/inject/dmlkit" <<EOF
#!/bin/sh
case " \$* " in
*" --phase 2 --index 1 "*) export GOMLX_BACKEND=injected-failure ;;
esac
exec "$dmlkit" "\$@"
EOF
chmod +x "$work/inject/dmlkit"
submit "with a failure injected in phase 2" "$work/inject"
expect injected 1 "0 COMPLETED None; 1 COMPLETED None; 2 COMPLETED None"
expect injected 2 "0 COMPLETED None; 1 FAILED NonZeroExitCode; 2 COMPLETED None"
expect injected 3 "0 CANCELLED DependencyNeverSatisfied"
p2log=$results/logs/dmlkit-slurmcheck-smoke-p2-${pjobs[1]}_1.out
grep -q 'phase 2 is not complete: 1 of this task.s 1 runs have no record' "$p2log" ||
	fail "injected: the failed task's log does not say its run has no record: $(tail -n 3 "$p2log")"
compgen -G "$results/logs/dmlkit-slurmcheck-smoke-p3-*" >/dev/null && fail "injected: phase 3 ran (it has a log)"
dry=$(eval "\"\$dmlkit\" $pending") # the submit script's own command, with this checkout's dmlkit
grep -q '^pending: ' <<<"$dry" || fail "injected: the store has nothing pending after a failed phase 2:
$dry"

# 2. The same script again, as emitted: the failed and cancelled phases run, the stored runs do not.
submit "submitted again, nothing injected"
expect again 1 "0 COMPLETED None; 1 COMPLETED None; 2 COMPLETED None"
expect again 2 "0 COMPLETED None; 1 COMPLETED None; 2 COMPLETED None"
expect again 3 "0 COMPLETED None"
for i in 0 1 2; do
	log=$results/logs/dmlkit-slurmcheck-smoke-p1-${pjobs[0]}_$i.out
	grep -q '1 runs selected, 1 already stored, 0 ran, 0 failed' "$log" ||
		fail "again: phase 1 task $i did not skip its stored run: $(tail -n 2 "$log")"
done
dry=$(eval "\"\$dmlkit\" $pending")
if ! grep -q '^7 of 7 runs (scale "smoke") selected, 7 stored$' <<<"$dry" || grep -q '^pending: ' <<<"$dry"; then
	fail "again: the store is not complete:
$dry"
fi
hashes=$(grep -o '"hash":"[0-9a-f]*"' "$store/smoke.jsonl" | sort)
[[ $(wc -l <<<"$hashes") == 7 && $(uniq <<<"$hashes" | wc -l) == 7 ]] ||
	fail "again: the store holds $(wc -l <<<"$hashes") records of $(uniq <<<"$hashes" | wc -l) runs, want each of the 7 runs once"
"$dmlkit" tables "$spec" --scale smoke --results "$store" --out "$work/tables" >/dev/null
rows=$(grep -c '^| smoothap' "$work/tables/r1.md" || true)
[[ $rows == 3 && -f $work/tables/tune_lr.md && -f $work/tables/tune_margins.md ]] ||
	fail "tables: r1.md has $rows rows of sweep points (want 3), or a tuning step's table is missing: $(ls "$work/tables")"

((fails == 0)) || die "$fails check(s) failed"
say "ok: a failed phase stops the later ones; submitted again, every phase COMPLETED and the store holds each of the 7 runs once"
