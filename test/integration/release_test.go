package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// TestReleaseRefusesWhileTheOperatorRunsThenLetsTheClusterGo runs the operator binary of
// cluster test, then `release` of that cluster beside it: the running operator takes the
// probe off at its next sync, so release refuses, and nothing but the probe (taken off again)
// reaches the router. Once the operator is stopped, a dry run writes nothing, and release gives
// the adopted entry back as the user had it and deletes the created one, touching nothing else.
func TestReleaseRefusesWhileTheOperatorRunsThenLetsTheClusterGo(t *testing.T) {
	h := newHarness(t, options{})
	store := h.srv.Store()
	// A hand-made entry the cluster adopts, another cluster's, and one of the user's.
	hand := &pb.AddHostRequest{Hostname: "NAS.lan", IpAddress: "192.168.40.5", Aliases: []string{"old-nas.lan"}, Comment: proto.String("by hand"),
		Tags: []string{"zeta", "kind:printer", "mine"}}
	for _, req := range []*pb.AddHostRequest{hand,
		{Hostname: "other.lan", IpAddress: "10.40.0.9", Tags: []string{"k8s-operator", "cluster:other"}},
		{Hostname: "router.lan", IpAddress: "192.168.40.1", Tags: []string{"manual"}}} {
		if _, err := store.Add(req); err != nil {
			t.Fatal(err)
		}
	}
	h.create(ingress(h.ns, "web", enabled("ip-address", "10.40.0.1"), "web.lan"))
	h.create(ingress(h.ns, "nas", enabled("ip-address", "10.40.0.5", "aliases", "storage.lan"), "nas.lan"))
	op := startOperator(t, h, kubeconfig, "--interval=1s")
	waitFor(t, 30*time.Second, func() bool {
		m := entriesByHost(store)
		return m["web.lan"] != nil && m["nas.lan"] != nil && slices.Contains(m["nas.lan"].GetTags(), registry.TagPreExisting)
	})
	// The operator's entries in step: a few interval syncs that write nothing.
	time.Sleep(2 * time.Second)
	synced := entriesByHost(store)

	// Every state the router goes through from here, and whether one had the probe.
	var probeSeen atomic.Bool
	store.SetOnWrite(func(live []*pb.HostEntry) {
		for _, e := range live {
			if slices.ContainsFunc(e.GetTags(), func(t string) bool { return strings.HasPrefix(t, registry.PrefixReleaseProbe) }) {
				probeSeen.Store(true)
			}
		}
	})
	t.Cleanup(func() { store.SetOnWrite(nil) })
	h.srv.Service().ResetCalls()
	out, err := runRelease(t, h, "--probe-wait=5s")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(out, "the operator of cluster test still runs: it took the probe off entry ") ||
		!strings.Contains(out, "within 5s; stop it (helm uninstall / scale to 0) and run release again") {
		t.Fatalf("release beside a running operator: %v\n%s", err, out)
	}
	calls := h.srv.Service().CallCounts()
	if !probeSeen.Load() || calls[inmemory.MethodUpdate] != 2 || calls[inmemory.MethodAdd] != 0 || calls[inmemory.MethodDelete] != 0 {
		t.Fatalf("want the probe written and taken off (two UpdateHost) and nothing else; probe seen %v, calls %v", probeSeen.Load(), calls)
	}
	if got := entriesByHost(store); !sameContent(got, synced) {
		t.Fatalf("the router after the refusal:\n%v\nwant as synced:\n%v", got, synced)
	}

	// helm uninstall.
	if err := op.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = op.cmd.Wait()
	h.srv.Service().ResetCalls()
	out, err = runRelease(t, h, "--dry-run")
	if err != nil || h.writes() != 0 || !strings.Contains(out, "release nas.lan 10.40.0.5") || !strings.Contains(out, "delete  web.lan 10.40.0.1") ||
		!strings.Contains(out, "1 released, 1 deleted; nothing written") {
		t.Fatalf("dry run: %v, %d writes\n%s", err, h.writes(), out)
	}
	out, err = runRelease(t, h, "--probe-wait=3s")
	if err != nil || !strings.Contains(out, "1 released, 1 deleted") {
		t.Fatalf("release of a stopped cluster: %v\n%s", err, out)
	}
	calls = h.srv.Service().CallCounts()
	if calls[inmemory.MethodUpdate] != 2 || calls[inmemory.MethodDelete] != 1 || calls[inmemory.MethodAdd] != 0 {
		t.Fatalf("want the probe, one release and one delete; calls %v", calls)
	}
	// The adopted entry given back, the same entry as the user had it; the created one gone;
	// the rest as it was.
	want := map[string]*pb.HostEntry{"other.lan": synced["other.lan"], "router.lan": synced["router.lan"],
		"NAS.lan": {Hostname: hand.Hostname, IpAddress: hand.IpAddress, Aliases: hand.Aliases, Comment: hand.Comment, Tags: hand.Tags}}
	got := entriesByHost(store)
	if !sameContent(got, want) || got["NAS.lan"].GetId() != synced["nas.lan"].GetId() {
		t.Fatalf("the router after the release:\n%v\nwant:\n%v", got, want)
	}
}

// runRelease runs `release --cluster-name=test` against h's server with args, and returns
// what it printed and logged.
func runRelease(t *testing.T, h *harness, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(operatorBin, append([]string{"release", "--cluster-name=test"}, args...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = operatorEnv(h), &out, &out
	err := cmd.Run()
	t.Logf("release %s:\n%s", strings.Join(args, " "), out.String())
	return out.String(), err
}

// entriesByHost is the router's entries by hostname.
func entriesByHost(s *inmemory.Store) map[string]*pb.HostEntry {
	out := map[string]*pb.HostEntry{}
	for _, e := range s.List() {
		out[e.GetHostname()] = e
	}
	return out
}

// sameContent reports whether a and b hold the same entries, field for field, whatever their
// IDs, versions and times.
func sameContent(a, b map[string]*pb.HostEntry) bool {
	if len(a) != len(b) {
		return false
	}
	strip := func(e *pb.HostEntry) *pb.HostEntry {
		if e == nil {
			return nil
		}
		e = proto.Clone(e).(*pb.HostEntry)
		e.Id, e.Version, e.CreatedAt, e.UpdatedAt = "", "", nil, nil
		return e
	}
	for h, e := range a {
		if !proto.Equal(strip(e), strip(b[h])) {
			return false
		}
	}
	return true
}

// TestReleaseKnowsTheOperatorRunsWhateverItWrites: an operator that writes nothing at its syncs
// still answers release's probe: one run with --policy=upsert-only whose only entry no object
// wants any more (it never marks it), one run with --dry-run, one whose every entry the
// mass-deletion brake holds. Each time release refuses, and the router ends exactly as it was:
// the probe, and its answer, are the only writes.
func TestReleaseKnowsTheOperatorRunsWhateverItWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		// prepare makes the situation on h (the operator binary is started by run); args are
		// the operator's flags.
		prepare func(t *testing.T, h *harness, run func(args ...string) *process) *process
	}{
		{"upsert-only, the entry's object gone", func(t *testing.T, h *harness, run func(args ...string) *process) *process {
			web := h.create(ingress(h.ns, "web", enabled("ip-address", "10.41.0.1"), "web.lan"))
			p := run("--policy=upsert-only")
			waitFor(t, 30*time.Second, func() bool { return entriesByHost(h.srv.Store())["web.lan"] != nil })
			h.delete(web)
			return p
		}},
		{"a dry run", func(t *testing.T, h *harness, run func(args ...string) *process) *process {
			h.create(ingress(h.ns, "web", enabled("ip-address", "10.41.0.1"), "web.lan"))
			p := run()
			waitFor(t, 30*time.Second, func() bool { return entriesByHost(h.srv.Store())["web.lan"] != nil })
			stop(t, p)
			return run("--dry-run")
		}},
		{"every entry held by the brake", func(t *testing.T, h *harness, run func(args ...string) *process) *process {
			for i := range 12 {
				ing := ingress(h.ns, fmt.Sprintf("m%d", i), enabled("ip-address", fmt.Sprintf("10.41.1.%d", i+1)), fmt.Sprintf("m%d.lan", i))
				ing.Labels = map[string]string{"batch": "all"}
				h.create(ing)
			}
			p := run()
			waitFor(t, 30*time.Second, func() bool { return len(h.srv.Store().List()) == 12 })
			if err := h.cp.Client.NetworkingV1().Ingresses(h.ns).DeleteCollection(context.Background(), metav1.DeleteOptions{},
				metav1.ListOptions{LabelSelector: "batch=all"}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, func() bool { return p.metric(t, "router_hosts_operator_mass_deletion_held_entries") == 12 })
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, options{})
			store := h.srv.Store()
			tc.prepare(t, h, func(args ...string) *process {
				return startOperator(t, h, kubeconfig, append([]string{"--interval=1s"}, args...)...)
			})
			// A few of its interval syncs: nothing of the router changes any more.
			before := entriesByHost(store)
			waitFor(t, 10*time.Second, func() bool { return h.srv.Service().CallCounts()[inmemory.MethodList] >= 3 })
			if got := entriesByHost(store); !sameContent(got, before) || len(got) == 0 {
				t.Fatalf("the operator still writes: %v, was %v", got, before)
			}
			h.srv.Service().ResetCalls()
			out, err := runRelease(t, h, "--probe-wait=5s")
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(out, "the operator of cluster test still runs: it took the probe off entry ") {
				t.Fatalf("release beside the operator: %v\n%s", err, out)
			}
			calls := h.srv.Service().CallCounts()
			if calls[inmemory.MethodUpdate] != 2 || calls[inmemory.MethodAdd] != 0 || calls[inmemory.MethodDelete] != 0 {
				t.Fatalf("want the probe and its answer (two UpdateHost) and nothing else; calls %v", calls)
			}
			if got := entriesByHost(store); !sameContent(got, before) {
				t.Fatalf("the router after the refusal:\n%v\nwant:\n%v", got, before)
			}
		})
	}
}

// stop ends an operator process as Kubernetes does (SIGTERM) and waits for it.
func stop(t *testing.T, p *process) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}
