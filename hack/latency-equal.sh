#!/usr/bin/env bash
# The side-by-side latency run of ../shared/real-router/latency.sh with the payloads made equal:
# the upstream operator's HostMappings carry, in spec.tags (which it writes verbatim), the six
# tags our operator writes on every entry (the design's five and the identity's), so both servers replay logs of the same size and
# what is left between the two figures is the operators'. The script is derived from the shared
# one with sed at run time; the upstream operator runs on the tagged objects, ours on the plain
# ones (its HostMappings' spec.tags would add to its own), alternating ROUNDS times.
#
# usage: hack/latency-equal.sh OUT_DIR   (env as latency.sh's, N=1000, ROUNDS=1)
set -eu
cd "$(dirname "$0")/.."
OUT=${1:?usage: $0 OUT_DIR}; mkdir -p "$OUT"
SHARED=$(cd "${REAL_ROUTER_DIR:-../shared/real-router}" && pwd)
tags='tags: [\"cluster-id:1a2b3c4d\", \"cluster:bench\", \"k8s-operator\", \"kind:HostMapping\", \"namespace:default\", \"source:00000000-0000-4000-8000-000000000000\"]'
sed -e "s|spec: {hostname: h%s.bench.example, ip: 10.0.%s.%s}|spec: {hostname: h%s.bench.example, ip: 10.0.%s.%s, $tags}|" \
    -e "s|spec: {hostname: n%s.bench.example, ip: %s}|spec: {hostname: n%s.bench.example, ip: %s, $tags}|" \
    -e "s|^HERE=.*|HERE=$SHARED|" "$SHARED/latency.sh" > "$OUT/latency-tagged.sh"
[ "$(grep -c 'k8s-operator' "$OUT/latency-tagged.sh")" = 2 ] || { echo "latency.sh changed: the tags were not inserted" >&2; exit 1; }
for r in $(seq 1 "${ROUNDS:-1}"); do
  WHO=upstream RESULTS=$OUT/r$r-upstream-tagged bash "$OUT/latency-tagged.sh"
  WHO=ours RESULTS=$OUT/r$r-ours ROUTER_HOSTS_OPERATOR_MAX_ENTRIES_PER_NAMESPACE=0 bash "$SHARED/latency.sh"
done
