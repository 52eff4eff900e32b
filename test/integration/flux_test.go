package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
)

// TestFluxExample: examples/flux, as kustomize builds it, is accepted by a real apiserver with
// Flux's own OCIRepository and HelmRelease CRDs; its OCIRepository names the chart the release
// workflow pushes, at Chart.yaml's name and version, and verifies the signature that workflow
// makes; its HelmRelease installs that OCIRepository's chart; and its values pass the chart's
// schema and lint, render, and the apiserver accepts the result, the mTLS Secret mounted being
// the one examples/cert-manager issues in that namespace.
func TestFluxExample(t *testing.T) {
	ensureNamespace(t, operatorNS)
	if err := cp.InstallCRDs(filepath.Join(repoRoot(), "test", "integration", "testdata", "flux")); err != nil {
		t.Fatal(err)
	}
	if err := cp.InstallServiceMonitorCRD(); err != nil {
		t.Fatal(err)
	}
	if err := installPrometheusRuleCRD(); err != nil {
		t.Fatal(err)
	}
	out, err := kubetest.Kustomize(filepath.Join(repoRoot(), "examples", "flux"))
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, out, "apply", "--server-side", "--dry-run=server", "-f", "-")
	all := docs(t, out)
	if len(all["OCIRepository"]) != 1 || len(all["HelmRelease"]) != 1 {
		t.Fatalf("examples/flux holds %d OCIRepositories and %d HelmReleases, want one each", len(all["OCIRepository"]), len(all["HelmRelease"]))
	}
	type meta struct{ Name, Namespace string }
	var repo struct {
		Metadata meta
		Spec     struct {
			URL string `json:"url"`
			Ref struct {
				Tag string `json:"tag"`
			} `json:"ref"`
			LayerSelector struct {
				MediaType string `json:"mediaType"`
			} `json:"layerSelector"`
			Verify struct {
				Provider          string `json:"provider"`
				MatchOIDCIdentity []struct {
					Issuer  string `json:"issuer"`
					Subject string `json:"subject"`
				} `json:"matchOIDCIdentity"`
			} `json:"verify"`
		}
	}
	if err := yaml.Unmarshal(all["OCIRepository"][0], &repo); err != nil {
		t.Fatal(err)
	}
	var release struct {
		Metadata meta
		Spec     struct {
			ChartRef struct {
				Kind, Name, Namespace string
			} `json:"chartRef"`
			TargetNamespace string         `json:"targetNamespace"`
			Values          map[string]any `json:"values"`
		}
	}
	if err := yaml.Unmarshal(all["HelmRelease"][0], &release); err != nil {
		t.Fatal(err)
	}

	// The chart the release workflow pushes, at this checkout's version.
	chart := chartMeta(t)
	wf, err := os.ReadFile(filepath.Join(repoRoot(), ".github", "workflows", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(wf), `helm push dist/router-hosts-operator-*.tgz "oci://ghcr.io/${OWNER}/charts"`) ||
		!strings.Contains(string(wf), `cosign sign --yes "ghcr.io/${OWNER}/charts/router-hosts-operator@${digest}"`) {
		t.Fatal("the release workflow no longer pushes and signs the chart as the example expects")
	}
	if want := "oci://ghcr.io/router-hosts-operator/charts/" + chart.Name; repo.Spec.URL != want {
		t.Errorf("the OCIRepository pulls %s, want %s", repo.Spec.URL, want)
	}
	if repo.Spec.Ref.Tag != chart.Version {
		t.Errorf("the OCIRepository pulls version %q, Chart.yaml is %s", repo.Spec.Ref.Tag, chart.Version)
	}
	if repo.Spec.LayerSelector.MediaType != "application/vnd.cncf.helm.chart.content.v1.tar+gzip" {
		t.Errorf("the OCIRepository selects the layer %q, not the chart's", repo.Spec.LayerSelector.MediaType)
	}
	// The signature is the workflow's: GitHub's OIDC issuer, the release workflow on a tag.
	signer := "https://github.com/router-hosts-operator/router-hosts-operator/.github/workflows/release.yml@refs/tags/v" + chart.Version
	verified := false
	for _, id := range repo.Spec.Verify.MatchOIDCIdentity {
		issuer, err1 := regexp.Compile(id.Issuer)
		subject, err2 := regexp.Compile(id.Subject)
		if err1 != nil || err2 != nil {
			t.Fatalf("matchOIDCIdentity %+v: %v %v", id, err1, err2)
		}
		if issuer.MatchString("https://token.actions.githubusercontent.com") && subject.MatchString(signer) &&
			!subject.MatchString("https://github.com/someone-else/router-hosts-operator/.github/workflows/release.yml@refs/tags/v"+chart.Version) &&
			!subject.MatchString("https://github.com/router-hosts-operator/router-hosts-operator/.github/workflows/ci.yml@refs/heads/main") {
			verified = true
		}
	}
	if repo.Spec.Verify.Provider != "cosign" || !verified {
		t.Errorf("the OCIRepository does not verify the release workflow's keyless signature, and only it: %+v", repo.Spec.Verify)
	}
	ref := release.Spec.ChartRef
	if ref.Kind != "OCIRepository" || ref.Name != repo.Metadata.Name || (ref.Namespace != "" && ref.Namespace != repo.Metadata.Namespace) ||
		(ref.Namespace == "" && release.Metadata.Namespace != repo.Metadata.Namespace) {
		t.Errorf("the HelmRelease installs %+v, not the OCIRepository %s/%s", ref, repo.Metadata.Namespace, repo.Metadata.Name)
	}

	// Its values, as helm-controller hands them to the chart, in the namespace it installs into.
	ns := release.Metadata.Namespace
	if release.Spec.TargetNamespace != "" {
		ns = release.Spec.TargetNamespace
	}
	raw, err := yaml.Marshal(release.Spec.Values)
	if err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	helm(t, "lint", "--strict", chartDir(), "-f", values)
	rendered := helm(t, "template", release.Metadata.Name, chartDir(), "--namespace", ns, "-f", values)
	kubectl(t, rendered, "apply", "--dry-run=server", "-f", "-")
	r := docs(t, rendered)
	if len(r["ServiceMonitor"]) != 1 || len(r["PrometheusRule"]) != 1 || strings.Contains(string(r["PrometheusRule"][0]), "RouterHostsOperatorHostnameConflicts") {
		t.Errorf("the values render %d ServiceMonitors and %d PrometheusRules, the switched-off alert included: %v",
			len(r["ServiceMonitor"]), len(r["PrometheusRule"]), len(r["PrometheusRule"]) == 1 && strings.Contains(string(r["PrometheusRule"][0]), "RouterHostsOperatorHostnameConflicts"))
	}
	var dep appsv1.Deployment
	if err := yaml.Unmarshal(r["Deployment"][0], &dep); err != nil {
		t.Fatal(err)
	}
	cert, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "cert-manager", "certificate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var certificate struct {
		Metadata meta
		Spec     struct {
			SecretName string `json:"secretName"`
		}
	}
	if err := yaml.Unmarshal(docs(t, cert)["Certificate"][0], &certificate); err != nil {
		t.Fatal(err)
	}
	mounted := ""
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			mounted = dep.Namespace + "/" + v.Secret.SecretName
		}
	}
	if want := certificate.Metadata.Namespace + "/" + certificate.Spec.SecretName; mounted != want {
		t.Errorf("the release mounts %q; examples/cert-manager issues %s", mounted, want)
	}
}
