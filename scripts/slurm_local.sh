#!/usr/bin/env bash
# A private one-node Slurm on this machine, for the cluster tests of the batch (tests/test_slurm.py, `make test-slurm`).
#
#   scripts/slurm_local.sh start         install Slurm and munge from Debian if missing (needs root), write a one-node
#                                        slurm.conf (this host, its cores and memory, no GPUs), start munged,
#                                        slurmctld and slurmd, wait until `sinfo` shows the node idle
#   scripts/slurm_local.sh stop          stop the daemons this script started (by their process ids), keep the logs
#   scripts/slurm_local.sh status        sinfo and squeue of this Slurm
#   scripts/slurm_local.sh run CMD ...   start, run CMD with SLURM_CONF set, stop on exit (also on error or Ctrl-C)
#
# Everything lives in $BCL_SLURM_DIR (default /tmp/bcl-slurm): its own slurm.conf, munge key and socket, ports
# $BCL_SLURM_PORT and $BCL_SLURM_PORT+1 (default 6917, 6918), state, logs and the job completion log (jobcomp.log:
# one line per finished job with its state). With BCL_SLURM_ACCOUNTING=1 it also runs a private MariaDB (port +2,
# data in the folder) and slurmdbd (port +3), installed from Debian when missing, so that `sacct` works. A Slurm,
# munge or MariaDB that this script did not start (/etc/slurm, /run/munge, ports 6817-6819, 3306) is never read,
# stopped or changed.
# Commands such as sbatch, squeue, scancel and sinfo reach this Slurm with `source $BCL_SLURM_DIR/env`.
set -euo pipefail

DIR=${BCL_SLURM_DIR:-/tmp/bcl-slurm}
PORT=${BCL_SLURM_PORT:-6917}
HOST=$(hostname -s)
CONF=$DIR/slurm.conf
ACCOUNTING=${BCL_SLURM_ACCOUNTING:-0}
DAEMONS=(munged slurmctld slurmd)
[ "$ACCOUNTING" = 1 ] && DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)

say() { echo "slurm_local: $*" >&2; }

# The pid recorded for daemon $1 if that process is alive and is ours (its command line names our folder, or its
# environment holds our SLURM_CONF).
ours() {
  local file=$DIR/run/$1.pid pid
  [ -f "$file" ] || return 1
  pid=$(cat "$file")
  [ -r "/proc/$pid/cmdline" ] || return 1
  { tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$DIR" || grep -qsxzF -- "SLURM_CONF=$CONF" "/proc/$pid/environ"; } &&
    echo "$pid"
}

install_missing() {
  local missing=()
  command -v slurmctld >/dev/null || missing+=(slurmctld)
  command -v slurmd >/dev/null || missing+=(slurmd)
  command -v sbatch >/dev/null || missing+=(slurm-client)
  command -v munged >/dev/null || missing+=(munge)
  if [ "$ACCOUNTING" = 1 ]; then
    command -v slurmdbd >/dev/null || missing+=(slurmdbd)
    command -v mariadbd >/dev/null || missing+=(mariadb-server)
  fi
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    say "Slurm or munge is missing (${missing[*]}): run as root, or 'sudo apt-get install -y slurm-wlm munge'."
    exit 1
  fi
  say "installing slurm-wlm and munge from Debian"
  export DEBIAN_FRONTEND=noninteractive
  local packages=(slurm-wlm munge)
  [ "$ACCOUNTING" = 1 ] && packages+=(slurmdbd mariadb-server)
  apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null; }
}

write_config() {
  local node
  node=$(slurmd -C | head -1)  # NodeName=HOST CPUs=.. Boards=.. SocketsPerBoard=.. CoresPerSocket=.. ThreadsPerCore=.. RealMemory=..
  mkdir -p "$DIR"/{run,log,state,spool}
  chmod 700 "$DIR"
  cat >"$CONF" <<EOF
# Written by scripts/slurm_local.sh: a private one-node Slurm (no GPUs, no accounting database).
ClusterName=bcl-local
SlurmctldHost=$HOST
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/run/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.daemon.pid
SlurmdPidFile=$DIR/run/slurmd.daemon.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
PlugStackConfig=$DIR/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
$(if [ "$ACCOUNTING" = 1 ]; then
    echo "AccountingStorageType=accounting_storage/slurmdbd"
    echo "AccountingStorageHost=$HOST"
    echo "AccountingStoragePort=$((PORT + 3))"
    echo "AccountingStoragePass=$DIR/run/munge.socket"
  else
    echo "AccountingStorageType=accounting_storage/none"
  fi)
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=5
OverTimeLimit=0
InactiveLimit=0
$node State=UNKNOWN
PartitionName=local Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
  : >"$DIR/plugstack.conf"
  if [ ! -s "$DIR/munge.key" ]; then
    (umask 077; head -c 1024 /dev/urandom >"$DIR/munge.key")
  fi
  chmod 600 "$DIR/munge.key"
  if [ "$ACCOUNTING" = 1 ]; then
    (umask 077; cat >"$DIR/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$DIR/run/munge.socket
DbdHost=$HOST
DbdPort=$((PORT + 3))
SlurmUser=root
PidFile=$DIR/run/slurmdbd.daemon.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$((PORT + 2))
StorageUser=slurm
StoragePass=bcl-local
StorageLoc=slurm_acct_db
EOF
)
  fi
  cat >"$DIR/env" <<EOF
export SLURM_CONF=$CONF
EOF
}

# Start "$@" in its own session in the background; its pid goes to run/NAME.pid.
launch() {
  local name=$1; shift
  setsid "$@" >>"$DIR/log/$name.out" 2>&1 </dev/null &
  echo $! >"$DIR/run/$name.pid"
}

start() {
  install_missing
  local running=()
  for d in "${DAEMONS[@]}"; do ours "$d" >/dev/null && running+=("$d"); done
  if [ ${#running[@]} -eq ${#DAEMONS[@]} ]; then
    say "already running in $DIR (source $DIR/env)"; return 0
  elif [ ${#running[@]} -gt 0 ]; then
    say "a partial Slurm of this script is running (${running[*]}): stopping it first"; stop
  fi
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    say "port $PORT is taken by a process this script did not start: set BCL_SLURM_PORT to a free port pair."; exit 1
  fi
  rm -rf "$DIR/state" "$DIR/spool" "$DIR/run" "$DIR/mysql"
  write_config
  export SLURM_CONF=$CONF
  launch munged munged --foreground --force --socket "$DIR/run/munge.socket" --key-file "$DIR/munge.key" \
    --pid-file "$DIR/run/munged.daemon.pid" --seed-file "$DIR/run/munged.seed" --log-file "$DIR/log/munged.log"
  for _ in $(seq 50); do [ -S "$DIR/run/munge.socket" ] && break; sleep 0.1; done
  [ -S "$DIR/run/munge.socket" ] || { say "munged did not start: $(tail -3 "$DIR/log/munged.out" "$DIR/log/munged.log" 2>/dev/null)"; stop; exit 1; }
  if [ "$ACCOUNTING" = 1 ]; then
    if [ ! -d "$DIR/mysql/mysql" ]; then
      mariadb-install-db --user=root --datadir="$DIR/mysql" --auth-root-authentication-method=socket \
        >>"$DIR/log/mariadb-install.out" 2>&1 || { say "mariadb-install-db failed: see $DIR/log"; stop; exit 1; }
    fi
    launch mariadbd mariadbd --no-defaults --user=root --datadir="$DIR/mysql" --socket="$DIR/run/mysql.sock" \
      --port=$((PORT + 2)) --bind-address=127.0.0.1 --pid-file="$DIR/run/mariadbd.daemon.pid" \
      --log-error="$DIR/log/mariadb.log"
    for _ in $(seq 100); do [ -S "$DIR/run/mysql.sock" ] && break; sleep 0.2; done
    mariadb --no-defaults --socket="$DIR/run/mysql.sock" -u root -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' \
      IDENTIFIED BY 'bcl-local'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" ||
      { say "MariaDB did not start: see $DIR/log/mariadb.log"; stop; exit 1; }
    launch slurmdbd slurmdbd -D
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$((PORT + 3))") 2>/dev/null && break; sleep 0.2; done
  fi
  launch slurmctld slurmctld -D -c -f "$CONF"
  launch slurmd slurmd -D -f "$CONF"
  local state=""
  for _ in $(seq 120); do
    state=$(sinfo -h -n "$HOST" -o %t 2>/dev/null || true)
    [ "$state" = idle ] && break
    for d in slurmctld slurmd; do
      ours "$d" >/dev/null || { say "$d exited: $(tail -5 "$DIR/log/$d.log" "$DIR/log/$d.out" 2>/dev/null)"; stop; exit 1; }
    done
    sleep 0.5
  done
  if [ "$state" != idle ]; then
    say "the node is '${state:-not listed}' after 60 s, not idle; see $DIR/log"; stop; exit 1
  fi
  say "Slurm is up: node $HOST idle in $DIR (source $DIR/env)"
  sinfo -N -l | sed 's/^/  /' >&2
}

stop() {
  local pid jobs
  if ours slurmctld >/dev/null; then  # cancel this Slurm's jobs first, so that their processes end with them
    jobs=$(SLURM_CONF=$CONF squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      SLURM_CONF=$CONF scancel $jobs 2>/dev/null || true
      for _ in $(seq 30); do [ -z "$(SLURM_CONF=$CONF squeue -h -t R,CG -o %i 2>/dev/null)" ] && break; sleep 0.5; done
    fi
  fi
  for d in slurmd slurmctld slurmdbd mariadbd munged; do
    if pid=$(ours "$d"); then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
      say "stopped $d ($pid)"
    fi
    rm -f "$DIR/run/$d.pid"
  done
  # what a job of this Slurm left running: slurmstepd and job processes, whose environment holds our SLURM_CONF
  for pid in $(grep -lsxzF -- "SLURM_CONF=$CONF" /proc/[0-9]*/environ | cut -d/ -f3); do
    [ "$pid" = $$ ] && continue
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ] || grep -qsz '^SLURM_JOB_ID=' "/proc/$pid/environ"; then
      kill -KILL "$pid" 2>/dev/null && say "killed job process $pid" || true
    fi
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status)
    export SLURM_CONF=$CONF
    for d in "${DAEMONS[@]}"; do echo "$d: $(ours "$d" || echo 'not running')"; done
    sinfo -N -l && squeue ;;
  run)
    shift
    [ $# -gt 0 ] || { say "usage: $0 run CMD [ARGS...]"; exit 2; }
    trap stop EXIT INT TERM
    start
    export SLURM_CONF=$CONF
    "$@" ;;
  *) echo "usage: $0 start|stop|status|run CMD [ARGS...]" >&2; exit 2 ;;
esac
