#!/usr/bin/env bash
# A single-node Slurm cluster (Debian bookworm's Slurm 22.05, accounting through slurmdbd and a
# private MariaDB) on this machine, as root and without systemd: for the cluster test tier
# (tests/test_cluster_slurm.py) and for trying `hydra/launcher=slurm` for real.
#
#   .ci/slurm-cluster.sh up       # install what is missing, start every daemon not running
#   .ci/slurm-cluster.sh status   # exit 0 when every daemon answers and the node is usable
#   .ci/slurm-cluster.sh down     # cancel every job, stop the daemons (by pid; munged if it
#                                 # started it)
#
# Idempotent: `up` on a healthy cluster does nothing, and otherwise starts only the daemons that
# are not running (their pid files say), so it also restarts a killed slurmd under running jobs.
# A stale pid file is removed; a Slurm or MariaDB process from an earlier run that holds a port
# (6817-6819, 3307) without a pid file is stopped; a port held by anything else is an error. State, logs and the database
# live in $ATTNSVM_SLURM_DIR (default /var/tmp/attnsvm-slurm); the configuration goes where
# Slurm's own commands look for it (/etc/slurm). Logs: $ATTNSVM_SLURM_DIR/log/*.log.
set -euo pipefail

D=${ATTNSVM_SLURM_DIR:-/var/tmp/attnsvm-slurm}
CLUSTER=attnsvm
NODE=attnsvm-node
DB_PORT=3307
PACKAGES=(slurmctld slurmd slurm-client munge slurmdbd mariadb-server)
DAEMONS=(slurmd slurmctld slurmdbd mariadbd)  # stop order; then munged if `up` started it

say() { echo "slurm-cluster: $*" >&2; }
die() { say "error: $*"; exit 1; }

pidfile() { echo "$D/run/$1.pid"; }

pid_of() {  # pid of daemon $1 if its pid file names a live process running that program
    local f pid
    f=$(pidfile "$1")
    [ -s "$f" ] || return 1
    pid=$(cat "$f")
    if [ -d "/proc/$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ]; then
        echo "$pid"
    else
        say "removing stale pid file $f (pid $pid is not $1)"
        rm -f "$f"
        return 1
    fi
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds
    local limit=$1 what=$2 t=0
    shift 2
    until "$@" >/dev/null 2>&1; do
        t=$((t + 1))
        [ "$t" -le $((limit * 2)) ] || die "$what did not come up in ${limit}s (logs: $D/log)"
        sleep 0.5
    done
}

stop_pid() {  # stop_pid PID NAME: SIGTERM, then SIGKILL after 10 s
    local pid=$1 t=0
    kill "$pid" 2>/dev/null || return 0
    while [ -d "/proc/$pid" ] && [ "$t" -lt 20 ]; do sleep 0.5; t=$((t + 1)); done
    if [ -d "/proc/$pid" ]; then
        say "$2 (pid $pid) ignored SIGTERM: SIGKILL"
        kill -9 "$pid" 2>/dev/null || true
    fi
}

free_port() {  # a port held by a Slurm/MariaDB process (an earlier run) is freed; else an error
    local port=$1 pids pid comm
    pids=$(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u || true)
    for pid in $pids; do
        comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
        case $comm in
            slurmctld | slurmd | slurmdbd | mariadbd | mysqld)
                say "port $port held by $comm (pid $pid) from an earlier run: stopping it"
                stop_pid "$pid" "$comm" ;;
            *) die "port $port is taken by '$comm' (pid $pid); Slurm needs 6817-6819 and $DB_PORT" ;;
        esac
    done
}

install_packages() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] || die "packages missing (${missing[*]}) and not root to install them"
    command -v apt-get >/dev/null || die "packages missing (${missing[*]}) and no apt-get"
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "${missing[@]}" >"$D/log/apt.log" 2>&1 ||
        { apt-get update -q >>"$D/log/apt.log" 2>&1 &&
            apt-get install -y -q "${missing[@]}" >>"$D/log/apt.log" 2>&1; } ||
        die "apt-get install ${missing[*]} failed: see $D/log/apt.log"
}

write_config() {
    local cpus mem
    cpus=$(nproc)
    mem=$(($(free -m | awk '/^Mem:/ {print $2}') * 9 / 10))  # a little below what the node has
    mkdir -p /etc/slurm "$D"/{state,spool,log,run}
    cat >/etc/slurm/slurm.conf <<EOF
# written by attnsvm's .ci/slurm-cluster.sh: a single-node cluster without cgroups or systemd
ClusterName=$CLUSTER
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
KillWait=5
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$(pidfile slurmctld)
SlurmdPidFile=$(pidfile slurmd)
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
NodeName=$NODE NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
    cat >/etc/slurm/slurmdbd.conf <<EOF
# written by attnsvm's .ci/slurm-cluster.sh
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
PidFile=$(pidfile slurmdbd)
LogFile=$D/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
    chmod 600 /etc/slurm/slurmdbd.conf
}

healthy() {  # every daemon runs (its pid file) and answers, and the node takes jobs
    local name
    for name in "${DAEMONS[@]}"; do pid_of "$name" >/dev/null || return 1; done
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 &&
        scontrol ping 2>/dev/null | grep -q "is UP" &&
        sacctmgr -n show cluster format=cluster 2>/dev/null | grep -qw "$CLUSTER" &&
        sinfo -h -n "$NODE" -o %t 2>/dev/null | grep -Eq '^(idle|mix|alloc)'
}

start_munge() {
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then return 0; fi
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    [ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    rm -f /run/munge/munged.pid
    runuser -u munge -- /usr/sbin/munged --force
    wait_for 20 munged sh -c 'munge -n | unmunge'
    touch "$D/run/munged.ours"  # `down` stops a munged it started, never one it found running
}

db() { mariadb --socket="$D/mysql.sock" -uroot "$@"; }

start() {  # start NAME PORT COMMAND...: unless NAME runs (its pid file), free PORT and start it
    local name=$1 port=$2
    shift 2
    pid_of "$name" >/dev/null && return 0
    free_port "$port"
    say "starting $name"
    "$@" >>"$D/log/$name.out" 2>&1 &
}

start_mariadb() {
    if [ ! -d "$D/mysql/mysql" ]; then
        mariadb-install-db --datadir="$D/mysql" --user=root --skip-test-db \
            >"$D/log/mariadb-install.log" 2>&1 || die "mariadb-install-db failed: $D/log"
    fi
    start mariadbd $DB_PORT mariadbd --no-defaults --user=root --datadir="$D/mysql" \
        --socket="$D/mysql.sock" --port=$DB_PORT --bind-address=127.0.0.1 --skip-name-resolve \
        --pid-file="$(pidfile mariadbd)" --log-error="$D/log/mariadb.log"
    wait_for 60 MariaDB db -e 'select 1'
    db -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
           GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
}

start_slurm() {
    start slurmdbd 6819 slurmdbd -D
    wait_for 60 slurmdbd sacctmgr -n show cluster
    sacctmgr -n show cluster format=cluster | grep -qw "$CLUSTER" ||
        sacctmgr -i add cluster "$CLUSTER" >/dev/null
    start slurmctld 6817 slurmctld -D -i
    wait_for 60 slurmctld sh -c 'scontrol ping | grep -q "is UP"'
    start slurmd 6818 slurmd -D -N "$NODE"
    wait_for 60 "slurmd (node $NODE idle)" sh -c "sinfo -h -n $NODE -o %t | grep -Eq '^(idle|mix|alloc)'"
}

down() {
    if command -v squeue >/dev/null && scontrol ping 2>/dev/null | grep -q "is UP"; then
        scancel --full --quiet -u root 2>/dev/null || true  # every job, so none is left behind
    fi
    local name pid
    for name in "${DAEMONS[@]}"; do
        if pid=$(pid_of "$name"); then
            say "stopping $name (pid $pid)"
            stop_pid "$pid" "$name"
            rm -f "$(pidfile "$name")"
        fi
    done
    for port in 6818 6817 6819 $DB_PORT; do free_port "$port"; done
    if [ -e "$D/run/munged.ours" ] && [ -s /run/munge/munged.pid ]; then
        pid=$(cat /run/munge/munged.pid)
        if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = munged ]; then
            say "stopping munged (pid $pid)"
            stop_pid "$pid" munged
        fi
    fi
    rm -f "$D/run/munged.ours"
}

up() {
    [ "$(id -u)" -eq 0 ] || die "run as root (it installs packages and starts daemons)"
    mkdir -p "$D/log" "$D/run"
    install_packages
    write_config
    if healthy; then
        say "already up (cluster $CLUSTER, node $NODE)"
        return 0
    fi
    start_munge
    start_mariadb
    start_slurm
    say "up: cluster $CLUSTER, node $NODE ($(nproc) CPUs), partition debug; logs in $D/log"
}

case ${1:-} in
    up) up ;;
    down) down ;;
    status) healthy && say "up" || { say "down"; exit 1; } ;;
    *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
