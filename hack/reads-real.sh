#!/usr/bin/env bash
# `bench reads` on the real server, payloads side by side: each round runs every payload of
# PAYLOADS on a fresh server of its own, one after the other, the order rotating from round to
# round, so a slow spell of the machine falls on all of them alike. Every timed call is kept
# (OUT_DIR/ROUND/PAYLOAD.samples) and the medians are pooled over the rounds at the end.
# Before each run it waits for the machine to be quiet (hack/quiet.sh: QUIET, QUIET_WAIT_S)
# and it prints the share of the machine's CPU busy before the run and during it, and what of
# that the server and the bench used (cpu s), so a run disturbed by other work can be told; and
# the server's CPU time a call of each kind (rows NAME-server-cpu in the pooled table), which
# other work disturbs less than the wall time.
#
# usage: hack/reads-real.sh OUT_DIR
# env:   PAYLOADS ("operator identity"), SIZES (1000), ROUNDS (3), CALLS (60: calls timed per
#        read, size and run), R (the real-router build; default .cache/real-router),
#        REAL_ROUTER_LIB (../shared/real-router/lib.sh), BENCH_BIN (built here when unset)
set -u
cd "$(dirname "$0")/.."
R=${R:-$PWD/.cache/real-router}
export RH_BIN=$R/router-hosts RAWLOAD_BIN=/bin/true
source "${REAL_ROUTER_LIB:-../shared/real-router/lib.sh}"
source hack/quiet.sh
set +e
if [ -z "${BENCH_BIN:-}" ]; then BENCH_BIN=$PWD/.cache/bench; go build -o "$BENCH_BIN" ./hack/bench || exit 1; fi
OUT=${1:?usage: $0 OUT_DIR}; rm -rf $OUT; mkdir -p $OUT; P=$OUT/pki
read -r -a pl <<< "${PAYLOADS:-operator identity}"
make_pki $P
for round in $(seq 1 "${ROUNDS:-3}"); do
  for k in $(seq 0 $((${#pl[@]}-1))); do
    name=${pl[$(( (k + round - 1) % ${#pl[@]} ))]}; D=$OUT/$round/$name
    q0=$(wait_quiet)
    start_server $P $D
    b0=$(busy_ticks); t0=$(now_ns)
    TIMEFORMAT='%U %S'
    { time ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT=127.0.0.1:$SRV_PORT ROUTER_HOSTS_OPERATOR_TLS_CA=$P/ca.crt ROUTER_HOSTS_OPERATOR_TLS_CERT=$P/client.crt ROUTER_HOSTS_OPERATOR_TLS_KEY=$P/client.key \
      "$BENCH_BIN" reads -payload=$name -sizes ${SIZES:-1000} -rounds ${CALLS:-60} -cleanup=false -server-pid $SRV_PID -samples $D.samples > $D.txt 2> $D.err ; } 2> $D.time
    rc=$?
    busy=$(busy_since "$b0"); wall=$(python3 -c "print(round(($(now_ns)-$t0)/1e9,1))")
    srv_cpu=$(awk -v hz="$(clk_tck)" '{printf "%.1f", ($14+$15)/hz}' /proc/$(cat $D/server.pid)/stat); cli_cpu=$(awk '{printf "%.1f", $1+$2}' $D.time)
    echo "$(event_total $D/hosts.db)" > $D.events
    stop_pidfile $D/server.pid 40
    echo "== round $round $name (rc $rc, $(tr '\n' ' ' < $D.err)events $(cat $D.events); machine busy ${q0} before, $busy during the ${wall}s run (share of $(nproc) cores); cpu s: server $srv_cpu, bench $cli_cpu)"; cat $D.txt
    [ $rc = 0 ] || exit $rc
  done
done
python3 - $OUT "${pl[@]}" <<'PY'
import sys, os, glob, statistics as st
out, names = sys.argv[1], sys.argv[2:]
runs = {}  # (size, call, payload) -> {round: [ms...]}
for path in glob.glob(os.path.join(out, '*', '*.samples')):
    rnd, name = os.path.basename(os.path.dirname(path)), os.path.basename(path)[:-len('.samples')]
    for line in open(path):
        n, call, us = line.split()
        runs.setdefault((int(n), call, name), {}).setdefault(rnd, []).append(int(us) / 1000)
base = names[0]
print("pooled: the median of every call of every run; diff: against %s's pooled median, and the range of the per-round differences of the runs' medians" % base)
print("%-7s %-22s %-10s %4s %9s %9s %9s %20s %9s %18s" % ("entries", "call", "payload", "runs", "p50 ms", "p90 ms", "p99 ms", "run p50s ms", "diff ms", "per-round diffs ms"))
for n, call in sorted({k[:2] for k in runs}):
    for name in names:
        r = runs.get((n, call, name))
        if not r: continue
        allv = sorted(v for vs in r.values() for v in vs)
        q = lambda f: allv[min(len(allv) - 1, int(len(allv) * f))]
        p50s = {k: st.median(v) for k, v in r.items()}
        d = pr = ""
        if name != base:
            b = runs[(n, call, base)]
            d = "%+.2f" % (st.median(allv) - st.median([v for vs in b.values() for v in vs]))
            ds = [p50s[k] - st.median(b[k]) for k in p50s if k in b]
            pr = "%+.2f..%+.2f" % (min(ds), max(ds))
        print("%-7d %-22s %-10s %4d %9.2f %9.2f %9.2f %9.2f-%-10.2f %9s %18s" % (n, call, name, len(r), st.median(allv), q(.9), q(.99), min(p50s.values()), max(p50s.values()), d, pr))
PY
