#!/usr/bin/env bash
# Builds a tool the tests and make lint run (helm, actionlint) from the Go module proxy, since
# no release download exists on this network, into a directory of its own under .cache/; a
# second run with the binary present does nothing.
#
# usage: hack/go-tool.sh MODULE/CMD@VERSION DIR   (prints the binary's path)
set -euo pipefail

pkg="${1:?usage: $0 MODULE/CMD@VERSION DIR}"
dir="${2:?usage: $0 MODULE/CMD@VERSION DIR}"
name="$(basename "${pkg%@*}")"
if [[ -x "$dir/$name" ]]; then
  echo "$dir/$name"
  exit 0
fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)" # go install wants an absolute GOBIN
echo "building $name ${pkg##*@} (a few minutes the first time)..." >&2
GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 GOBIN="$dir" go install -trimpath "$pkg"
echo "$dir/$name"
