#!/usr/bin/env bash
# Writes what controller-gen makes of the API types (api/v1alpha1) under ROOT, at the paths the
# repository keeps them: the DeepCopy beside the types, each CRD in kustomize/crds/ under the
# kind's lowercase name (the name the manifests and docs use, not controller-gen's
# <group>_<plural>.yaml), and the same CRD in the chart's crds/. make generate-crds writes into
# the repository; the staleness test (api/v1alpha1) into a temporary directory, to compare.
#
# usage: CONTROLLER_GEN=path/to/controller-gen hack/generate-crds.sh ROOT
set -euo pipefail

gen="${CONTROLLER_GEN:?set CONTROLLER_GEN to controller-gen (make controller-gen builds it under .cache/)}"
root="${1:?usage: CONTROLLER_GEN=... $0 ROOT}"
mkdir -p "$root"
root="$(cd "$root" && pwd)"
cd "$(dirname "$0")/.."

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$gen" object crd paths=./api/v1alpha1/... output:object:dir="$tmp/object" output:crd:dir="$tmp/crd"

mkdir -p "$root/api/v1alpha1" "$root/kustomize/crds" "$root/charts/router-hosts-operator/crds"
cp "$tmp/object/zz_generated.deepcopy.go" "$root/api/v1alpha1/"
for f in "$tmp"/crd/*.yaml; do
  plural="$(basename "$f" .yaml)"
  plural="${plural#*_}"
  kind="$(sed -n 's/^    kind: //p' "$f")"
  [[ "${kind,,}s" == "$plural" ]] || { echo "$f: kind $kind is not the plural $plural less an s; name its file here" >&2; exit 1; }
  cp "$f" "$root/kustomize/crds/${kind,,}.yaml"
  cp "$f" "$root/charts/router-hosts-operator/crds/${kind,,}.yaml"
done
