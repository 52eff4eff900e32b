#!/usr/bin/env bash
# Cold start on the real server: 4 plain writers (the bench's floor client, the operator's own
# payloads) on a fresh server, against the operator from exec until the hosts file has N lines.
#
# Also prints the CPU seconds each client and each server used: on a two-core machine the
# server is CPU-bound, so a client's own CPU is taken from the server's writes.
#
# The same client on consecutive fresh servers spreads by as much as the budget, so ROUNDS
# pairs are run, the order alternating (the floor first in odd rounds), and the ratio is of
# the medians.
#
# VIA_PROVIDER=1 also times, in each round, the same requests through the operator's provider
# alone (`bench floor -via provider`): the operator's write path without the rest of it.
#
# IDENTITY=<8 lowercase hex digits> has the floor's payloads carry the installation's identity
# in a tag of its own beside cluster:bench, cluster-id:<IDENTITY>, as the operator writes it (the
# operator derives its own identity; the tag is 19 bytes whatever its digits), for an operator
# that writes it. FLOOR_ONLY=1 runs no operator and no control plane: each round times the floor
# with the payloads of before and with the identity's (IDENTITY, default 1a2b3c4d), the order
# alternating, and gives the ratio of their medians: what the identity costs the server's own
# limit. IDENTITY_TAGS=k (default 1) adds k-1 tags of 19 bytes to the identity's payloads
# (cluster-i0:<IDENTITY>, ...): an amplifier, so that the cost of one tag is read as a share
# of a difference many times as large as the noise.
# Each timed run first waits for the machine to be quiet (hack/quiet.sh: QUIET, QUIET_WAIT_S)
# and the share of the machine busy during it is printed.
#
# usage: hack/coldstart-real.sh OUT_DIR   (N=1000, ROUNDS=1 by default)
# env:   R (the real-router build: router-hosts, controlplane; default .cache/real-router),
#        REAL_ROUTER_LIB (../shared/real-router/lib.sh), KUBEBUILDER_ASSETS,
#        OPERATOR_BIN (bin/router-hosts-operator), BENCH_BIN (built here when unset)
set -u
cd "$(dirname "$0")/.."
R=${R:-$PWD/.cache/real-router}
export RH_BIN=$R/router-hosts RAWLOAD_BIN=/bin/true KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-$(ls -d $PWD/.cache/envtest/*/ | head -1)}
source "${REAL_ROUTER_LIB:-../shared/real-router/lib.sh}"
source hack/quiet.sh
set +e
OPERATOR_BIN=${OPERATOR_BIN:-$PWD/bin/router-hosts-operator}
if [ -z "${BENCH_BIN:-}" ]; then BENCH_BIN=$PWD/.cache/bench; go build -o "$BENCH_BIN" ./cmd/bench || exit 1; fi
N=${N:-1000}; OUT=${1:?usage: $0 OUT_DIR}; rm -rf $OUT; mkdir -p $OUT; P=$OUT/pki
make_pki $P
[ -n "${FLOOR_ONLY:-}" ] && IDENTITY=${IDENTITY:-1a2b3c4d}
python3 - $N $OUT/payloads.json $OUT/payloads-identity.json "${IDENTITY:-}" "${IDENTITY_TAGS:-1}" <<'PY'
import sys,json,uuid
n, plain, ident, cid = int(sys.argv[1]), open(sys.argv[2], 'w'), open(sys.argv[3], 'w'), sys.argv[4]
for i in range(n):
    req = {"hostname":"h%d.bench.example"%i,"ipAddress":"10.0.%d.%d"%(i>>8,i&255),"comment":"router-hosts-operator: HostMapping default/hm-%d"%i,
      "tags":["cluster:bench","k8s-operator","kind:HostMapping","namespace:default","source:%s"%uuid.uuid4()]}
    print(json.dumps(req), file=plain)
    if cid:
        extra = ["cluster-i%d:%s" % (k, cid) for k in range(int(sys.argv[5]) - 1)]  # IDENTITY_TAGS > 1: the amplifier
        req["tags"] = sorted(set(req["tags"] + ["cluster-id:" + cid] + extra))  # the identity's own tag; the operator's SortedUnique
        print(json.dumps(req), file=ident)
PY
FLOOR_PAYLOADS=$OUT/payloads.json; [ -n "${IDENTITY:-}" ] && FLOOR_PAYLOADS=$OUT/payloads-identity.json
if [ -z "${FLOOR_ONLY:-}" ]; then
$R/controlplane -out $OUT/kubeconfig -crds $PWD/kustomize/crds > $OUT/cp.log 2>&1 & echo $! > $OUT/cp.pid
for _ in $(seq 1 600); do grep -q '^ready' $OUT/cp.log && break; sleep 0.1; done
for i in $(seq 0 $((N-1))); do printf -- '---\napiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: HostMapping\nmetadata: {name: hm-%s, namespace: default}\nspec: {hostname: h%s.bench.example, ip: 10.0.%s.%s}\n' "$i" "$i" $((i>>8)) $((i&255)); done > $OUT/objects.yaml
kubectl --kubeconfig $OUT/kubeconfig create -f $OUT/objects.yaml > /dev/null
fi
# wait_lines FILE N returns once FILE has N lines naming bench.example. One process polls every
# 20 ms: a shell loop forks grep and sleep fifty times a second, a tenth of a core taken from a
# server that needs both while only the operator's run is watched that way.
wait_lines() {
  python3 - "$1" "$2" <<'PY'
import sys, time
path, n = sys.argv[1], int(sys.argv[2])
while True:
    try:
        with open(path, 'rb') as f:
            if f.read().count(b'bench.example') >= n:
                break
    except FileNotFoundError:
        pass
    time.sleep(0.02)
PY
}
# CPU seconds (user + system) of a live process, from /proc (fields 14 and 15, in clock ticks).
cpu() { awk -v hz="$(clk_tck)" '{printf "%.2f", ($14+$15)/hz}' /proc/$1/stat; }
TIMEFORMAT='%U %S'
# dur_s prints a Go duration (1m30.5s, 9.25s, 475ms) in seconds.
dur_s() { python3 -c 'import re,sys; u={"h":3600,"m":60,"s":1,"ms":1e-3,"us":1e-6,"µs":1e-6,"ns":1e-9}; print(round(sum(float(v)*u[k] for v,k in re.findall(r"([0-9.]+)(ms|us|µs|ns|h|m|s)", sys.argv[1])),6))' "$1"; }
# run_floor [NAME [PAYLOADS]]: the floor client on a fresh server (NAME floor, the payloads
# FLOOR_PAYLOADS by default).
run_floor() {
local f=${1:-floor} pl=${2:-$FLOOR_PAYLOADS}
quiet=$(wait_quiet)
start_server $P $OUT/$round/$f
b0=$(busy_ticks)
{ time ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT=127.0.0.1:$SRV_PORT ROUTER_HOSTS_OPERATOR_TLS_CA=$P/ca.crt ROUTER_HOSTS_OPERATOR_TLS_CERT=$P/client.crt ROUTER_HOSTS_OPERATOR_TLS_KEY=$P/client.key \
  "$BENCH_BIN" floor -payloads $pl -concurrency 4 > $OUT/$round/$f.txt 2>&1 ; } 2> $OUT/$round/$f.time
busy=$(busy_since "$b0")
floor_cpu=$(awk '{printf "%.2f", $1+$2}' $OUT/$round/$f.time); floor_srv_cpu=$(cpu "$(cat $OUT/$round/$f/server.pid)")
stop_pidfile $OUT/$round/$f/server.pid 40
dur_s "$(cat $OUT/$round/$f.txt)" >> $OUT/$f.times
echo "$round $f $(cat $OUT/$round/$f.txt) machine busy $quiet before, $busy during; CPU seconds: client $floor_cpu, server $floor_srv_cpu" >> $OUT/runs.log
}
run_provider() {
start_server $P $OUT/$round/provider
ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT=127.0.0.1:$SRV_PORT ROUTER_HOSTS_OPERATOR_TLS_CA=$P/ca.crt ROUTER_HOSTS_OPERATOR_TLS_CERT=$P/client.crt ROUTER_HOSTS_OPERATOR_TLS_KEY=$P/client.key \
  "$BENCH_BIN" floor -via provider -payloads $OUT/payloads.json -concurrency 4 > $OUT/$round/provider.txt 2>&1
stop_pidfile $OUT/$round/provider/server.pid 40
dur_s "$(cat $OUT/$round/provider.txt)" >> $OUT/provider.times
}
run_operator() {
quiet=$(wait_quiet)
start_server $P $OUT/$round/op
b0=$(busy_ticks)
t0=$(now_ns)
ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT=127.0.0.1:$SRV_PORT ROUTER_HOSTS_OPERATOR_TLS_CA=$P/ca.crt ROUTER_HOSTS_OPERATOR_TLS_CERT=$P/client.crt ROUTER_HOSTS_OPERATOR_TLS_KEY=$P/client.key \
  "$OPERATOR_BIN" --kubeconfig $OUT/kubeconfig --source=hostmapping --cluster-name=bench --max-entries-per-namespace=0 --metrics-address 127.0.0.1:$(free_port) > $OUT/$round/operator.log 2>&1 & echo $! > $OUT/$round/op.pid
wait_lines "$OUT/$round/op/hosts" "$N"
t1=$(now_ns)
busy=$(busy_since "$b0")
op_cpu=$(cpu "$(cat $OUT/$round/op.pid)"); op_srv_cpu=$(cpu "$(cat $OUT/$round/op/server.pid)")
stop_pidfile $OUT/$round/op.pid 20; stop_pidfile $OUT/$round/op/server.pid 40
op_s=$(python3 -c "print(round(($t1-$t0)/1e9,3))"); echo $op_s >> $OUT/operator.times
echo "$round operator ${op_s}s machine busy $quiet before, $busy during; CPU seconds: operator $op_cpu, server $op_srv_cpu" >> $OUT/runs.log
}
if [ -n "${FLOOR_ONLY:-}" ]; then
  for round in $(seq 1 "${ROUNDS:-1}"); do
    mkdir -p $OUT/$round
    if [ $((round % 2)) = 1 ]; then run_floor floor $OUT/payloads.json; run_floor identity $OUT/payloads-identity.json
    else run_floor identity $OUT/payloads-identity.json; run_floor floor $OUT/payloads.json; fi
    echo "round $round: floor $(cat $OUT/$round/floor.txt) with the identity tag $(cat $OUT/$round/identity.txt)"; tail -2 $OUT/runs.log
  done
  python3 - $OUT/floor.times $OUT/identity.times <<'PY'
import sys, statistics
f=[float(x) for x in open(sys.argv[1])]; i=[float(x) for x in open(sys.argv[2])]
mf, mi = statistics.median(f), statistics.median(i)
print("floor median %.2f s (%.2f-%.2f), with the identity tag median %.2f s (%.2f-%.2f), ratio of medians %.3f, per-round ratios %s, rounds %d" % (mf, min(f), max(f), mi, min(i), max(i), mi/mf, " ".join("%.3f" % (b/a) for a, b in zip(f, i)), len(f)))
PY
  exit 0
fi
for round in $(seq 1 "${ROUNDS:-1}"); do
  mkdir -p $OUT/$round
  if [ $((round % 2)) = 1 ]; then run_floor; run_operator; else run_operator; run_floor; fi
  [ -n "${VIA_PROVIDER:-}" ] && run_provider
  echo "round $round: floor${IDENTITY:+ (identity tag)} $(cat $OUT/$round/floor.txt) operator ${op_s}s${VIA_PROVIDER:+ provider $(cat $OUT/$round/provider.txt)}; CPU seconds: floor client $floor_cpu, its server $floor_srv_cpu; operator $op_cpu (its whole start included), its server $op_srv_cpu"; grep "^$round floor\|^$round operator" $OUT/runs.log
done
pgrep -P $(cat $OUT/cp.pid) > $OUT/cp-children; stop_pidfile $OUT/cp.pid 60
while read -r c; do echo $c > $OUT/c.pid; stop_pidfile $OUT/c.pid 20; done < $OUT/cp-children
python3 - $OUT/floor.times $OUT/operator.times $OUT/provider.times <<'PY'
import sys, statistics
f=[float(x) for x in open(sys.argv[1])]; o=[float(x) for x in open(sys.argv[2])]
mf, mo = statistics.median(f), statistics.median(o)
print("floor median %.2f s (%.2f-%.2f), operator median %.2f s (%.2f-%.2f), ratio of medians %.3f, rounds %d" % (mf, min(f), max(f), mo, min(o), max(o), mo/mf, len(f)))
try:
    v=[float(x) for x in open(sys.argv[3])]
    print("provider path alone (bench floor -via provider): median %.2f s (%.2f-%.2f), ratio to the floor's median %.3f" % (statistics.median(v), min(v), max(v), statistics.median(v)/mf))
except FileNotFoundError:
    pass
PY
