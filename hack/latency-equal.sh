#!/usr/bin/env bash
# The side-by-side latency run of ../shared/real-router/latency.sh with the payloads made equal:
# the upstream operator's HostMappings carry, in spec.tags (which it writes verbatim), the six
# tags our operator writes on every entry (the design's five and the identity's), so both servers replay logs of the same size and
# what is left between the two figures is the operators'. The script is derived from the shared
# one at run time; the upstream operator runs on the tagged objects, ours on the plain
# ones (its HostMappings' spec.tags would add to its own), alternating ROUNDS times.
#
# Two things are added to the shared script:
#   - after the N lines show, it waits until every HostMapping's status says Synced before the
#     settle. Our operator writes statuses beside the sync at --kube-api-qps (50 s for 1,000
#     after a start), upstream's inside each reconcile; a change timed while those writes still
#     run times the apiserver's load, not the operator.
#   - every create's times are kept (before kubectl, after it, the line seen), and each round
#     ends with the creates split in two from the operators' own logs: the Kubernetes side
#     (from before kubectl until the operator starts on the object: kubectl, the apiserver, the
#     watch) and the router side (from then until the line shows: for ours the sync, its
#     search and AddHost; for upstream its AddHost, after its finalizer's round trip).
#
# usage: hack/latency-equal.sh OUT_DIR   (env as latency.sh's, N=1000, ROUNDS=1)
set -eu
cd "$(dirname "$0")/.."
OUT=${1:?usage: $0 OUT_DIR}; mkdir -p "$OUT"
SHARED=$(cd "${REAL_ROUTER_DIR:-../shared/real-router}" && pwd)
python3 - "$SHARED/latency.sh" "$OUT" "$SHARED" <<'EOF'
import sys
src, out, shared = sys.argv[1:]
s = open(src).read()
def sub(old, new):
    global s
    if old not in s:
        sys.exit("latency.sh changed: %r not found" % old)
    s = s.replace(old, new)
sub('HERE=$(cd "$(dirname "$0")" && pwd)', 'HERE=' + shared)
sub('''  until [ "$(cnt 'bench\\.example')" -ge "$N" ]; do sleep 0.05; done
''', '''  until [ "$(cnt 'bench\\.example')" -ge "$N" ]; do sleep 0.05; done
  synced() { K get hostmappings -o jsonpath='{range .items[*]}{.status.synced}{.status.phase}{"\\n"}{end}' | grep -c -E '^(true|Synced)$' || true; }
  until [ "$(synced)" -ge "$N" ]; do sleep 1; done
''')
sub('''| K create -f - > /dev/null
    until grep -q "^$ip[[:space:]]" "$RUN/hosts" 2>/dev/null; do sleep 0.01; done
    lat+=("$(python3 -c "print(round(($(now_ns)-$t)/1e9,3))")")''', '''| K create -f - > /dev/null
    tk=$(now_ns)
    until grep -q "^$ip[[:space:]]" "$RUN/hosts" 2>/dev/null; do sleep 0.01; done
    t1=$(now_ns); echo "new-$j $t $tk $t1" >> "$RUN/creates"
    lat+=("$(python3 -c "print(round(($t1-$t)/1e9,3))")")''')
plain = s
tags = '''tags: [\\"cluster-id:1a2b3c4d\\", \\"cluster:bench\\", \\"k8s-operator\\", \\"kind:HostMapping\\", \\"namespace:default\\", \\"source:00000000-0000-4000-8000-000000000000\\"]'''
sub('spec: {hostname: h%s.bench.example, ip: 10.0.%s.%s}', 'spec: {hostname: h%s.bench.example, ip: 10.0.%s.%s, ' + tags + '}')
sub('spec: {hostname: n%s.bench.example, ip: %s}', 'spec: {hostname: n%s.bench.example, ip: %s, ' + tags + '}')
open(out + '/latency-tagged.sh', 'w').write(s)
open(out + '/latency-plain.sh', 'w').write(plain)
EOF
for r in $(seq 1 "${ROUNDS:-1}"); do
  WHO=upstream RESULTS=$OUT/r$r-upstream-tagged bash "$OUT/latency-tagged.sh"
  WHO=ours RESULTS=$OUT/r$r-ours ROUTER_HOSTS_OPERATOR_MAX_ENTRIES_PER_NAMESPACE=0 bash "$OUT/latency-plain.sh"
done
# The split of every round's creates, both pooled, and the pooled end-to-end figures.
python3 - "$OUT" <<'EOF'
import sys, glob, json, re, statistics
from datetime import datetime

def stamp(s):
    # RFC 3339 with up to nanoseconds, to Unix nanoseconds.
    m = re.match(r'(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)', s)
    base = datetime.fromisoformat(m.group(1) + (m.group(3).replace('Z', '+00:00')))
    return int(base.timestamp()) * 10**9 + int(((m.group(2) or '') + '000000000')[:9])

def starts(who, log):
    """When the operator started on each new-N object, from its log."""
    out = []
    for line in open(log):
        if who == 'upstream':
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if j.get('msg') == 'creating host entry':
                out.append(stamp(j['time']))
        else:
            # A sync that read the router for a new name: it ends at its line's time, and
            # started its duration before.
            if 'read=host' not in line or 'mode=event' not in line:
                continue
            t = re.search(r'time="([^"]+)"', line).group(1)
            d = re.search(r' duration=([0-9.]+)(ms|s)\b', line)
            ms = float(d.group(1)) * (1000 if d.group(2) == 's' else 1)
            out.append(stamp(t) - int(ms * 1e6))
    return sorted(out)

pooled = {}
for run in sorted(glob.glob(sys.argv[1] + '/r*-*/*/creates')):
    who = run.split('/')[-2]
    st = starts(who, run.rsplit('/', 1)[0] + '/operator.log')
    kube, router = [], []
    for line in open(run):
        _, t0, tk, t1 = line.split(); t0, t1 = int(t0), int(t1)
        s = [x for x in st if t0 <= x <= t1]
        if not s:
            continue
        kube.append((s[0] - t0) / 1e6); router.append((t1 - s[0]) / 1e6)
    p = pooled.setdefault(who, ([], []))
    p[0].extend(kube); p[1].extend(router)
    print('%s %s: creates %d, Kubernetes side p50 %.1f ms, router side p50 %.1f ms' % (
        run.split('/')[-3], who, len(kube), statistics.median(kube), statistics.median(router)))
for who, (kube, router) in sorted(pooled.items()):
    print('pooled %s: creates %d, Kubernetes side p50 %.1f ms, router side p50 %.1f ms' % (
        who, len(kube), statistics.median(kube), statistics.median(router)))
# Every round's changes and creates end to end, pooled (latency.sh's lines, in seconds).
e2e = {}
for f in sorted(glob.glob(sys.argv[1] + '/r*-*/latency.txt')):
    for line in open(f):
        m = re.match(r'^(upstream|ours)( create)?: ([0-9. ]+)$', line.strip())
        if m:
            e2e.setdefault('%s %s' % (m.group(1), 'create' if m.group(2) else 'change'), []).extend(
                float(x) * 1000 for x in m.group(3).split())
for k, v in sorted(e2e.items()):
    print('pooled %s: %d, p50 %.1f ms' % (k, len(v), statistics.median(v)))
EOF
