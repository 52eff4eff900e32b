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
# usage: hack/coldstart-real.sh OUT_DIR   (N=1000, ROUNDS=1 by default)
# env:   R (the real-router build: router-hosts, controlplane; default .cache/real-router),
#        REAL_ROUTER_LIB (../shared/real-router/lib.sh), KUBEBUILDER_ASSETS,
#        OPERATOR_BIN (bin/router-hosts-operator), BENCH_BIN (built here when unset)
set -u
cd "$(dirname "$0")/.."
R=${R:-$PWD/.cache/real-router}
export RH_BIN=$R/router-hosts RAWLOAD_BIN=/bin/true KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-$(ls -d $PWD/.cache/envtest/*/ | head -1)}
source "${REAL_ROUTER_LIB:-../shared/real-router/lib.sh}"
set +e
OPERATOR_BIN=${OPERATOR_BIN:-$PWD/bin/router-hosts-operator}
if [ -z "${BENCH_BIN:-}" ]; then BENCH_BIN=$PWD/.cache/bench; go build -o "$BENCH_BIN" ./hack/bench || exit 1; fi
N=${N:-1000}; OUT=${1:?usage: $0 OUT_DIR}; rm -rf $OUT; mkdir -p $OUT; P=$OUT/pki
make_pki $P
python3 - $N > $OUT/payloads.json <<'PY'
import sys,json,uuid
for i in range(int(sys.argv[1])):
    print(json.dumps({"hostname":"h%d.bench.example"%i,"ipAddress":"10.0.%d.%d"%(i>>8,i&255),"comment":"router-hosts-operator: HostMapping default/hm-%d"%i,
      "tags":["cluster:bench","k8s-operator","kind:HostMapping","namespace:default","source:%s"%uuid.uuid4()]}))
PY
$R/controlplane -out $OUT/kubeconfig -crds $PWD/kustomize/crds > $OUT/cp.log 2>&1 & echo $! > $OUT/cp.pid
for _ in $(seq 1 600); do grep -q '^ready' $OUT/cp.log && break; sleep 0.1; done
for i in $(seq 0 $((N-1))); do printf -- '---\napiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: HostMapping\nmetadata: {name: hm-%s, namespace: default}\nspec: {hostname: h%s.bench.example, ip: 10.0.%s.%s}\n' "$i" "$i" $((i>>8)) $((i&255)); done > $OUT/objects.yaml
kubectl --kubeconfig $OUT/kubeconfig create -f $OUT/objects.yaml > /dev/null
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
run_floor() {
start_server $P $OUT/$round/floor
{ time ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT=127.0.0.1:$SRV_PORT ROUTER_HOSTS_OPERATOR_TLS_CA=$P/ca.crt ROUTER_HOSTS_OPERATOR_TLS_CERT=$P/client.crt ROUTER_HOSTS_OPERATOR_TLS_KEY=$P/client.key \
  "$BENCH_BIN" floor -payloads $OUT/payloads.json -concurrency 4 > $OUT/$round/floor.txt 2>&1 ; } 2> $OUT/$round/floor.time
floor_cpu=$(awk '{printf "%.2f", $1+$2}' $OUT/$round/floor.time); floor_srv_cpu=$(cpu "$(cat $OUT/$round/floor/server.pid)")
stop_pidfile $OUT/$round/floor/server.pid 40
echo "$(cat $OUT/$round/floor.txt | tr -d s)" >> $OUT/floor.times
}
run_provider() {
start_server $P $OUT/$round/provider
ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT=127.0.0.1:$SRV_PORT ROUTER_HOSTS_OPERATOR_TLS_CA=$P/ca.crt ROUTER_HOSTS_OPERATOR_TLS_CERT=$P/client.crt ROUTER_HOSTS_OPERATOR_TLS_KEY=$P/client.key \
  "$BENCH_BIN" floor -via provider -payloads $OUT/payloads.json -concurrency 4 > $OUT/$round/provider.txt 2>&1
stop_pidfile $OUT/$round/provider/server.pid 40
echo "$(cat $OUT/$round/provider.txt | tr -d s)" >> $OUT/provider.times
}
run_operator() {
start_server $P $OUT/$round/op
t0=$(now_ns)
ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT=127.0.0.1:$SRV_PORT ROUTER_HOSTS_OPERATOR_TLS_CA=$P/ca.crt ROUTER_HOSTS_OPERATOR_TLS_CERT=$P/client.crt ROUTER_HOSTS_OPERATOR_TLS_KEY=$P/client.key \
  "$OPERATOR_BIN" --kubeconfig $OUT/kubeconfig --source=hostmapping --cluster-name=bench --max-entries-per-namespace=0 --metrics-address 127.0.0.1:$(free_port) > $OUT/$round/operator.log 2>&1 & echo $! > $OUT/$round/op.pid
wait_lines "$OUT/$round/op/hosts" "$N"
t1=$(now_ns)
op_cpu=$(cpu "$(cat $OUT/$round/op.pid)"); op_srv_cpu=$(cpu "$(cat $OUT/$round/op/server.pid)")
stop_pidfile $OUT/$round/op.pid 20; stop_pidfile $OUT/$round/op/server.pid 40
op_s=$(python3 -c "print(round(($t1-$t0)/1e9,3))"); echo $op_s >> $OUT/operator.times
}
for round in $(seq 1 "${ROUNDS:-1}"); do
  mkdir -p $OUT/$round
  if [ $((round % 2)) = 1 ]; then run_floor; run_operator; else run_operator; run_floor; fi
  [ -n "${VIA_PROVIDER:-}" ] && run_provider
  echo "round $round: floor $(cat $OUT/$round/floor.txt) operator ${op_s}s${VIA_PROVIDER:+ provider $(cat $OUT/$round/provider.txt)}; CPU seconds: floor client $floor_cpu, its server $floor_srv_cpu; operator $op_cpu (its whole start included), its server $op_srv_cpu"
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
