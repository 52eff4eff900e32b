#!/usr/bin/env bash
# `bench pair` on the real server: two fresh servers at once, one filled with each payload,
# the calls of `bench reads` timed in pairs, one on each server back to back, so that other
# work on the machine falls on both alike. RUNS times, on fresh servers each time, the order
# of the payloads swapped from run to run (which server is filled first, which is called first
# in a pair alternates within a run). Pools every pair at the end.
#
# usage: hack/pair-real.sh OUT_DIR
# env:   PAYLOADS ("operator identity"), SIZES (1000), RUNS (3), CALLS (100 pairs a kind),
#        R (the real-router build; default .cache/real-router), REAL_ROUTER_LIB
#        (../shared/real-router/lib.sh), BENCH_BIN (built here when unset), QUIET, QUIET_WAIT_S
#        (hack/quiet.sh: each run first waits for a quiet machine)
set -u
cd "$(dirname "$0")/.."
R=${R:-$PWD/.cache/real-router}
export RH_BIN=$R/router-hosts RAWLOAD_BIN=/bin/true
source "${REAL_ROUTER_LIB:-../shared/real-router/lib.sh}"
source hack/quiet.sh
set +e
if [ -z "${BENCH_BIN:-}" ]; then BENCH_BIN=$PWD/.cache/bench; go build -o "$BENCH_BIN" ./cmd/bench || exit 1; fi
OUT=${1:?usage: $0 OUT_DIR}; rm -rf $OUT; mkdir -p $OUT; P=$OUT/pki
read -r a b <<< "${PAYLOADS:-operator identity}"
make_pki $P
for run in $(seq 1 "${RUNS:-3}"); do
  if [ $((run % 2)) = 1 ]; then first=$a second=$b; else first=$b second=$a; fi
  D=$OUT/$run; mkdir -p $D
  q0=$(wait_quiet)
  start_server $P $D/$first; p1=$SRV_PORT
  start_server $P $D/$second; p2=$SRV_PORT
  b0=$(busy_ticks); t0=$(now_ns)
  ROUTER_HOSTS_OPERATOR_TLS_CA=$P/ca.crt ROUTER_HOSTS_OPERATOR_TLS_CERT=$P/client.crt ROUTER_HOSTS_OPERATOR_TLS_KEY=$P/client.key \
    "$BENCH_BIN" pair -payloads $first,$second -endpoints 127.0.0.1:$p1,127.0.0.1:$p2 -server-pids $(cat $D/$first/server.pid),$(cat $D/$second/server.pid) \
    -sizes ${SIZES:-1000} -rounds ${CALLS:-100} -samples $D/samples > $D/out.txt 2> $D/err.txt
  rc=$?
  busy=$(busy_since "$b0"); wall=$(python3 -c "print(round(($(now_ns)-$t0)/1e9,1))")
  stop_pidfile $D/$first/server.pid 40; stop_pidfile $D/$second/server.pid 40
  echo "$first $second" > $D/order
  echo "== run $run: $first, $second (rc $rc, $(tr '\n' ' ' < $D/err.txt)machine busy $q0 before, $busy during the ${wall}s run (share of $(nproc) cores))"; cat $D/out.txt
  [ $rc = 0 ] || exit $rc
done
python3 - $OUT $a $b <<'PY'
import sys, glob, os, statistics as st, random
out, a, b = sys.argv[1:]
pairs = {}  # (n, call) -> list of (ms of a, ms of b)
for d in sorted(glob.glob(os.path.join(out, '[0-9]*'))):
    first, second = open(os.path.join(d, 'order')).read().split()
    for line in open(os.path.join(d, 'samples')):
        n, call, x, y = line.split()
        v = {first: int(x) / 1000, second: int(y) / 1000}
        pairs.setdefault((int(n), call), []).append((v[a], v[b], os.path.basename(d)))
random.seed(1)
print("pooled over the runs; diff = %s - %s; pair diff: the median of the pairs' differences, its 95%% bootstrap interval, and the runs' own pair diffs" % (b, a))
print("%-7s %-22s %6s %9s %9s %9s %9s %9s %16s %s" % ("entries", "call", "pairs", a + " p50", b + " p50", a + " p90", b + " p90", "pair diff", "95% interval", "per run"))
for (n, call), ps in sorted(pairs.items()):
    xs, ys = sorted(p[0] for p in ps), sorted(p[1] for p in ps)
    ds = [p[1] - p[0] for p in ps]
    q = lambda v, f: v[min(len(v) - 1, int(len(v) * f))]
    if len(ds) > 5:
        boots = sorted(st.median(random.choices(ds, k=len(ds))) for _ in range(2000))
        ci = "%+.2f..%+.2f" % (boots[50], boots[1949])
    else:
        ci = ""
    runs = sorted({p[2] for p in ps})
    per = " ".join("%+.2f" % st.median([p[1] - p[0] for p in ps if p[2] == r]) for r in runs)
    print("%-7d %-22s %6d %9.2f %9.2f %9.2f %9.2f %+9.2f %16s %s" % (n, call, len(ps), st.median(xs), st.median(ys), q(xs, .9), q(ys, .9), st.median(ds), ci, per))
PY
