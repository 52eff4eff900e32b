package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// distPlatforms are the Makefile's DIST_PLATFORMS, the archives `make dist` builds.
func distPlatforms(t *testing.T) []string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^DIST_PLATFORMS\s*:?=\s*(.+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile has no DIST_PLATFORMS")
	}
	return strings.Fields(string(m[1]))
}

// TestTheManifestCoversEveryArchive renders the manifest from a checksums file as `make dist`
// writes it, and reads it back as krew would: the schema's fields, and for every platform of
// DIST_PLATFORMS its selector, its archive's address and sum, and the binary.
func TestTheManifestCoversEveryArchive(t *testing.T) {
	const version = "v1.2.3"
	platforms := distPlatforms(t)
	var sums strings.Builder
	want := map[string]string{} // os/arch: sum
	for _, p := range platforms {
		osName, arch, _ := strings.Cut(p, "/")
		sum := fmt.Sprintf("%x", sha256.Sum256([]byte(p)))
		want[p] = sum
		fmt.Fprintf(&sums, "%s  router-hosts-operator_%s_%s_%s.tar.gz\n", sum, version, osName, arch)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "checksums.txt"), filepath.Join(dir, "router-hosts.yaml")
	if err := os.WriteFile(in, []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(options{version: version, repo: "owner/rho", checksums: in, platforms: platforms}, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatalf("the manifest does not read back: %v\n%s", err, b)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "router-hosts" {
		t.Errorf("apiVersion %q, kind %q, name %q", m.APIVersion, m.Kind, m.Metadata.Name)
	}
	s := m.Spec
	if s.Version != version || s.Homepage != "https://github.com/owner/rho" || s.ShortDescription == "" || len(s.ShortDescription) > 50 || s.Description == "" {
		t.Errorf("spec: %+v", s)
	}
	if len(s.Platforms) != len(platforms) {
		t.Errorf("%d platforms, want %d (%v)", len(s.Platforms), len(platforms), platforms)
	}
	for _, p := range s.Platforms {
		key := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
		sum, ok := want[key]
		if !ok {
			t.Errorf("platform %s is none of DIST_PLATFORMS", key)
			continue
		}
		delete(want, key)
		archive := "router-hosts-operator_" + version + "_" + strings.ReplaceAll(key, "/", "_")
		if p.URI != "https://github.com/owner/rho/releases/download/"+version+"/"+archive+".tar.gz" || p.Sha256 != sum {
			t.Errorf("%s: uri %s, sha256 %s; want the archive's address and sum %s", key, p.URI, p.Sha256, sum)
		}
		if p.Bin != "router-hosts-operator" || len(p.Files) == 0 || p.Files[0].From != archive+"/router-hosts-operator" {
			t.Errorf("%s: bin %q from %+v: not the archive's binary", key, p.Bin, p.Files)
		}
	}
	for p := range want {
		t.Errorf("DIST_PLATFORMS' %s has no platform in the manifest", p)
	}
}

// TestTheManifestRefuses: no manifest with a sum missing, a version krew refuses or a line of
// the sums that is none.
func TestTheManifestRefuses(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	good := sum + "  router-hosts-operator_v1.0.0_linux_amd64.tar.gz\n"
	for _, c := range []struct {
		name, version, sums, err string
		platforms                []string
	}{
		{"an archive without its sum", "v1.0.0", good, "has no sum for router-hosts-operator_v1.0.0_darwin_arm64.tar.gz", []string{"linux/amd64", "darwin/arm64"}},
		{"a version krew refuses", "dev", good, `-version "dev"`, []string{"linux/amd64"}},
		{"a line that is no sum", "v1.0.0", "nonsense\n", `line 1: "nonsense"`, []string{"linux/amd64"}},
		{"a platform that is none", "v1.0.0", good, `"linux" is no os/arch`, []string{"linux"}},
		{"binary mode's star", "v1.0.0", sum + " *router-hosts-operator_v1.0.0_linux_amd64.tar.gz\n", "", []string{"linux/amd64"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(options{version: c.version, repo: defaultRepo, checksums: "checksums.txt", platforms: c.platforms}, []byte(c.sums))
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Errorf("error %v, want %q", err, c.err)
			}
		})
	}
}
