#!/usr/bin/env bash
# The walk of one change from the informer to the router: cmd/path-of-a-change, built with
# coverage of every package, makes one Ingress's new address travel through the operator and
# keeps the counters of each phase of its journey apart (the event reaching the loop, the
# source's list, the decision, the write, what follows the write). This lists, phase by phase
# and layer by layer (downward: source, controller, planner, registry, plan, provider, then the
# plain data of endpoint), the files with a statement run, and then the count of all of them.
# The in-memory router (provider/inmemory and the API's generated code) and the command itself
# are the test's parts, listed apart.
# Usage: hack/path-of-a-change.sh
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/counters"
go build -cover -covermode=atomic -coverpkg=./... -o "$dir/path-of-a-change" ./cmd/path-of-a-change
GOCOVERDIR="$dir/counters" "$dir/path-of-a-change"
module=$(go list -m)
layers="source controller planner registry plan provider endpoint"
for phase in "$dir"/counters/*/; do
	name=$(basename "$phase")
	go tool covdata textfmt -i="$phase" -o "$dir/$name.txt"
	# A profile line is file:start,end statements count; a file is crossed when a count is not 0.
	awk -v m="$module/" 'NR > 1 && $NF > 0 { split($1, a, ":"); f = a[1]; sub(m, "", f); print f }' "$dir/$name.txt" |
		sort -u >"$dir/$name.files"
	echo "$name"
	grep -v -E '^(provider/inmemory|api|cmd)/' "$dir/$name.files" >"$dir/$name.ours" || true
	for layer in $layers; do
		files=$(grep "^$layer/" "$dir/$name.ours" | sed "s|^$layer/||" | tr '\n' ' ' || true)
		[ -n "$files" ] && printf '  %-10s %s\n' "$layer" "$files"
	done
	others=$(grep -v -E "^($(echo "$layers" | tr ' ' '|'))/" "$dir/$name.ours" | tr '\n' ' ' || true)
	[ -n "$others" ] && printf '  %-10s %s\n' "other" "$others"
	cat "$dir/$name.ours" >>"$dir/ours.txt"
done
echo "$(sort -u "$dir/ours.txt" | wc -l) files of the operator"
