#!/usr/bin/env bash
# Lists the files of the module that one change crosses on its way from the informer to the
# router: the files with a statement run while cmd/path-of-a-change makes one Ingress's new
# address travel through the operator, built with coverage of every package; then their count.
# Usage: hack/path-of-a-change.sh
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/counters"
go build -cover -covermode=atomic -coverpkg=./... -o "$dir/path-of-a-change" ./cmd/path-of-a-change
GOCOVERDIR="$dir/counters" "$dir/path-of-a-change"
go tool covdata textfmt -i="$dir/counters" -o "$dir/profile.txt"
module=$(go list -m)
# A profile line is file:start,end statements count; a file is crossed when a count is not 0.
awk -v m="$module/" 'NR > 1 && $NF > 0 { split($1, a, ":"); f = a[1]; sub(m, "", f); print f }' "$dir/profile.txt" |
	sort -u | tee "$dir/files.txt"
echo "$(wc -l <"$dir/files.txt") files"
