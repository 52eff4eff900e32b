#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd binaries that the integration tests run, from the Go
# module proxy only (no prebuilt downloads exist on this network). The result is cached in
# $ASSETS (git-ignored); a second run with the binaries present does nothing.
#
# How: a throwaway module requires k8s.io/kubernetes at $K8S_VERSION and replaces every k8s.io
# staging module it lists (required as v0.0.0) with the matching v0.x.y release, then builds
# cmd/kube-apiserver; etcd's server module is built from the same module graph.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-}"
top="$(cd "$(dirname "$0")/.." && pwd)"
ASSETS="${ASSETS:-$top/.cache/envtest/$K8S_VERSION}"

if [[ -x "$ASSETS/kube-apiserver" && -x "$ASSETS/etcd" && -x "$ASSETS/kubectl" ]]; then
  echo "$ASSETS"
  exit 0
fi

staging_version="v0.${K8S_VERSION#v1.}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
export GOFLAGS=-mod=mod GOWORK=off
go mod init envtest-assets >/dev/null 2>&1

# The kubernetes go.mod requires its staging modules as v0.0.0 and replaces them with local
# paths; outside its repository each must be replaced with the published release instead.
modfile="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
staging=$(grep -E '^\s+k8s\.io/[a-z0-9-]+ v0\.0\.0$' "$modfile" | awk '{print $1}' | sort -u)
for m in $staging; do
  go mod edit -replace "$m=$m@$staging_version"
done
go mod edit -require "k8s.io/kubernetes@$K8S_VERSION"
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
if [[ -n "$ETCD_VERSION" ]]; then
  go mod edit -require "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
fi
go mod tidy -e >/dev/null 2>&1 || true
go mod download
mkdir -p "$ASSETS"
build() { # name package
  if [[ ! -x "$ASSETS/$1" ]]; then
    echo "building $1 ($K8S_VERSION; a few minutes the first time)..." >&2
    CGO_ENABLED=0 go build -trimpath -o "$ASSETS/$1.tmp" "$2"
    mv "$ASSETS/$1.tmp" "$ASSETS/$1"
  fi
}
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build etcd go.etcd.io/etcd/server/v3
# kubectl for the kustomize tests (kubectl kustomize, server-side dry-run apply).
build kubectl k8s.io/kubernetes/cmd/kubectl
echo "$ASSETS"
