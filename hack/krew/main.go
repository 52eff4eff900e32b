// Command krew writes the krew plugin manifest of a release, so that `kubectl krew install`
// can install the binary as the kubectl plugin `kubectl router-hosts`: one platform for each
// archive `make dist` built, its download address on the GitHub release and its SHA-256 sum
// from dist/checksums.txt, so that the sums are those of the archives shipped.
//
//	go run ./hack/krew -version v0.1.0 -platforms "linux/amd64 darwin/arm64" [-repo owner/name] [-checksums dist/checksums.txt] [-o dist/router-hosts.yaml]
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	o := options{}
	flag.StringVar(&o.version, "version", "", "the release's version, its tag (vX.Y.Z)")
	flag.StringVar(&o.repo, "repo", defaultRepo, "the GitHub repository the release is published on, owner/name")
	flag.StringVar(&o.checksums, "checksums", "dist/checksums.txt", "the archives' SHA-256 sums, as sha256sum writes them")
	platforms := flag.String("platforms", "", "the archives' platforms, os/arch separated by spaces (the Makefile's DIST_PLATFORMS)")
	out := flag.String("o", "dist/router-hosts.yaml", "where to write the manifest; - for standard output")
	flag.Parse()
	o.platforms = strings.Fields(*platforms)
	if err := run(o, *out); err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
}

// defaultRepo is the repository of the module's path.
const defaultRepo = "router-hosts-operator/router-hosts-operator"

// Plugin is the name kubectl knows the plugin by: `kubectl router-hosts`, whose binary krew
// links as kubectl-router_hosts.
const Plugin = "router-hosts"

type options struct {
	version, repo, checksums string
	platforms                []string
}

func run(o options, out string) error {
	sums, err := os.ReadFile(o.checksums)
	if err != nil {
		return fmt.Errorf("reading the archives' sums (run make dist first): %w", err)
	}
	b, err := render(o, sums)
	if err != nil {
		return err
	}
	if out == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return nil
}

// The manifest's schema, krew's index.krew.googlecontainertools.github.com/v1alpha2 Plugin.
type manifest struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   metadata `json:"metadata"`
	Spec       spec     `json:"spec"`
}

type metadata struct {
	Name string `json:"name"`
}

type spec struct {
	Version          string     `json:"version"`
	Homepage         string     `json:"homepage"`
	ShortDescription string     `json:"shortDescription"`
	Description      string     `json:"description"`
	Caveats          string     `json:"caveats,omitempty"`
	Platforms        []platform `json:"platforms"`
}

type platform struct {
	Selector selector `json:"selector"`
	URI      string   `json:"uri"`
	Sha256   string   `json:"sha256"`
	Files    []file   `json:"files"`
	Bin      string   `json:"bin"`
}

type selector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type file struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// semver is a release's tag as krew wants it, v and a semantic version.
var semver = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// render is the manifest for the archives of o.platforms, whose sums are in sums.
func render(o options, sums []byte) ([]byte, error) {
	if !semver.MatchString(o.version) {
		return nil, fmt.Errorf("-version %q: krew wants a tag such as v0.1.0", o.version)
	}
	if len(o.platforms) == 0 {
		return nil, errors.New("-platforms: none given")
	}
	if strings.Count(o.repo, "/") != 1 {
		return nil, fmt.Errorf("-repo %q: want owner/name", o.repo)
	}
	byFile, err := parseSums(sums)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.checksums, err)
	}
	m := manifest{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   metadata{Name: Plugin},
		Spec: spec{
			Version:          o.version,
			Homepage:         "https://github.com/" + o.repo,
			ShortDescription: "Explain router-hosts-operator's router entries",
			Description: "router-hosts-operator keeps a router-hosts server's host entries in step with a cluster's\n" +
				"Ingresses, routes, Services and HostMappings. As a kubectl plugin, the same binary answers\n" +
				"for the running operator: `kubectl router-hosts explain NAME` says why a name is or is not\n" +
				"on the router. It reads the operator's configuration and its mTLS Secret through your\n" +
				"kubeconfig, so no router certificate is needed on your machine.\n",
			Caveats: "The plugin takes the running operator's configuration from the Pod holding its leader Lease,\n" +
				"once proven the operator's (it says which Pod; unsure, it refuses), and reads its mTLS Secret:\n" +
				"your kubeconfig's user needs get and list on leases and pods, and get on serviceaccounts and\n" +
				"secrets, in the operator's namespace (give --leader-election-namespace; without it, leases\n" +
				"and pods are listed in every namespace).\n",
		},
	}
	for _, p := range o.platforms {
		osName, arch, ok := strings.Cut(p, "/")
		if !ok || osName == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("-platforms: %q is no os/arch", p)
		}
		dir := fmt.Sprintf("router-hosts-operator_%s_%s_%s", o.version, osName, arch)
		archive := dir + ".tar.gz"
		sum, ok := byFile[archive]
		if !ok {
			return nil, fmt.Errorf("%s has no sum for %s, the archive of %s", o.checksums, archive, p)
		}
		m.Spec.Platforms = append(m.Spec.Platforms, platform{
			Selector: selector{MatchLabels: map[string]string{"os": osName, "arch": arch}},
			URI:      fmt.Sprintf("https://github.com/%s/releases/download/%s/%s", o.repo, o.version, archive),
			Sha256:   sum,
			// The archive holds its files under a directory named after it; krew keeps the
			// binary and the licence, and links the binary as kubectl-router_hosts.
			Files: []file{{From: dir + "/router-hosts-operator", To: "."}, {From: dir + "/LICENSE", To: "."}},
			Bin:   "router-hosts-operator",
		})
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("writing the manifest: %w", err)
	}
	return append([]byte("# The krew manifest of router-hosts-operator "+o.version+", written by go run ./hack/krew (make krew-manifest).\n"), b...), nil
}

// parseSums reads sha256sum's lines, "<sum>  <file>" (a * before the file in binary mode).
func parseSums(b []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimSpace(name), "*")
		if !ok || !sha256Hex.MatchString(sum) || name == "" {
			return nil, fmt.Errorf("line %d: %q is no \"<sha256>  <file>\"", n, line)
		}
		out[name] = sum
	}
	return out, sc.Err()
}
