#!/usr/bin/env bash
# Builds helm from the Go module proxy (no release download exists on this network) into
# $HELM_DIR, for the chart tests; a second run with the binary present does nothing.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
top="$(cd "$(dirname "$0")/.." && pwd)"
HELM_DIR="${HELM_DIR:-$top/.cache/helm/$HELM_VERSION}"

if [[ -x "$HELM_DIR/helm" ]]; then
  echo "$HELM_DIR/helm"
  exit 0
fi
mkdir -p "$HELM_DIR"
echo "building helm $HELM_VERSION (a few minutes the first time)..." >&2
GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 GOBIN="$HELM_DIR" go install -trimpath "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
echo "$HELM_DIR/helm"
