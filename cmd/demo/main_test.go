package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
	"google.golang.org/protobuf/proto"
)

// TestTheDemoRefusesARealRouterUnlessToldSo: the operator's variables name a router, and the
// demo refuses it unless asked by name; asked without one, it says what it needs.
func TestTheDemoRefusesARealRouterUnlessToldSo(t *testing.T) {
	named := routerFromEnv(func(k string) string {
		return map[string]string{envPrefix + "ROUTER_HOSTS_ENDPOINT": "router.lan:50051", envPrefix + "TLS_CA": "ca.crt"}[k]
	})
	for _, tc := range []struct {
		name   string
		router *router
		real   bool
		want   string
	}{
		{"a router named, not asked for", named, false, "will not touch a real router unless told so"},
		{"asked for, none named", nil, true, "needs " + envPrefix + "ROUTER_HOSTS_ENDPOINT"},
		{"a router named and asked for", named, true, ""},
		{"neither", nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := consent(tc.router, tc.real)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("consent = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestTheDemoLeavesARouterAsItFoundIt runs the whole demo against a router it was told to use,
// which holds a person's entries: one on a name the demo's examples claim (nas.home.arpa,
// adopted during the demo) and one elsewhere. Every write lands under home.arpa, and at the end
// the router holds exactly what it held before: the same IDs, addresses, aliases, tags in order
// and comments.
func TestTheDemoLeavesARouterAsItFoundIt(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through make test, which builds the control plane")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "router-hosts-operator")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the operator: %v\n%s", err, out)
	}
	srv, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	store := srv.Store()
	for _, req := range []*pb.AddHostRequest{
		{Hostname: "nas.home.arpa", IpAddress: "192.168.1.10", Aliases: []string{"storage.home.arpa"}, Comment: proto.String("the NAS, by hand"), Tags: []string{"manual", "kind:printer"}},
		{Hostname: "router.lan", IpAddress: "192.168.1.1", Comment: proto.String("the router"), Tags: []string{"infra"}},
	} {
		if _, err := store.Add(req); err != nil {
			t.Fatal(err)
		}
	}
	before := hostsFile(store.List())
	var (
		mu      sync.Mutex
		outside []string
	)
	store.SetOnWrite(func(live []*pb.HostEntry) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range live {
			if h := e.GetHostname(); h != "router.lan" && !strings.HasSuffix(h, "."+demoDomain) {
				outside = append(outside, h)
			}
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out strings.Builder
	d := demo{operator: bin, examples: filepath.Join(root, "examples"), root: root, out: &out,
		router: &router{Endpoint: srv.Addr(), CA: srv.CAFile(), Cert: srv.CertFile(), Key: srv.KeyFile()}}
	if err := d.run(ctx); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "adopted") && !strings.Contains(out.String(), "pre-existing:true") {
		t.Errorf("the demo never adopted nas.home.arpa, so giving it back was not tried:\n%s", out.String())
	}
	// explain says why the deleted Ingress's name is leaving, and list shows it among the rest.
	for _, want := range []string{"whoami." + demoDomain + ": NOT on the router as wanted", "GracePeriod", "pending-deletion", "HOSTNAME", "adopted"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo's explain and list do not show %q:\n%s", want, out.String())
		}
	}
	if srv.Service().WriteCalls() == 0 {
		t.Fatal("the demo wrote nothing to the router it was told to use")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(outside) > 0 {
		t.Errorf("the demo wrote names outside %s: %v", demoDomain, outside)
	}
	if after := hostsFile(store.List()); after != before {
		t.Errorf("the router after the demo:\n%s\nbefore it:\n%s", after, before)
	}
}

// hostsFile renders entries with everything a person may have written on them.
func hostsFile(es []*pb.HostEntry) string {
	var lines []string
	for _, e := range es {
		lines = append(lines, strings.Join([]string{e.GetId(), e.GetHostname(), e.GetIpAddress(), strings.Join(e.GetAliases(), ","),
			strings.Join(e.GetTags(), ","), e.GetComment()}, " | "))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
