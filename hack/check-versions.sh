#!/usr/bin/env bash
# The release's version, said once per place a user meets it, must agree everywhere (make lint):
# the chart's version and appVersion, the newest release heading of CHANGELOG.md, the image tag
# kustomize and the examples deploy (v<version>), the release the example workflow installs,
# and, on a release tag (GITHUB_REF_NAME=v*), the tag itself. No manifest may deploy a floating "latest". (Placeholders such as vX.Y.Z in
# prose are not versions.)
set -eu
cd "$(dirname "$0")/.."
fail=0
bad() { echo "version check: $*" >&2; fail=1; }
chart=charts/router-hosts-operator/Chart.yaml
version=$(sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' $chart)
app=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' $chart)
[ -n "$version" ] || bad "$chart has no version"
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || bad "$chart: version $version is not a semantic version"
[ "$app" = "$version" ] || bad "$chart: appVersion \"$app\" differs from version $version"
log=$(sed -n 's/^## \[\([0-9][^]]*\)\].*/\1/p' CHANGELOG.md | head -1)
[ "$log" = "$version" ] || bad "CHANGELOG.md's newest release is \"$log\", the chart's $version"
for f in kustomize/kustomization.yaml; do
  tag=$(sed -n 's/^ *newTag: *//p' $f)
  [ "$tag" = "v$version" ] || bad "$f deploys image tag \"$tag\", not v$version"
done
while IFS= read -r line; do
  bad "deploys the operator's image at another tag than v$version: $line"
done < <(grep -rnE 'ghcr.io/router-hosts-operator/router-hosts-operator:(v?[0-9]|latest)' examples kustomize charts docs README.md 2>/dev/null | grep -v ":v$version\b" || true)
# The example workflow's release, which it downloads to plan with (examples/ci).
wf=examples/ci/router-hosts-plan.yaml
tag=$(sed -n 's/^ *OPERATOR_VERSION: *//p' $wf)
[ "$tag" = "v$version" ] || bad "$wf installs the release \"$tag\", not v$version"
# Values files that name the operator's image by repository and tag (external-dns's chart).
while IFS= read -r f; do
  tag=$(grep -A1 'repository: ghcr.io/router-hosts-operator/router-hosts-operator' "$f" | sed -n 's/^ *tag: *//p')
  [ "$tag" = "v$version" ] || bad "$f sets the operator's image tag \"$tag\", not v$version"
done < <(grep -rl 'repository: ghcr.io/router-hosts-operator/router-hosts-operator' examples)
if grep -rnw 'latest' $chart charts/router-hosts-operator/values.yaml kustomize/kustomization.yaml; then
  bad "a floating \"latest\" is deployed"
fi
case "${GITHUB_REF_NAME:-}" in
  v*) [ "$GITHUB_REF_NAME" = "v$version" ] || bad "tag $GITHUB_REF_NAME is not v$version" ;;
esac
[ $fail = 0 ] && echo "version check: v$version everywhere"
exit $fail
