package operator

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	testingclock "k8s.io/utils/clock/testing"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

const releaseID = "aaaaaaaa"

// The router of the release tests: cluster home's entries (installation aaaaaaaa), another
// cluster's and a hand-made one.
var (
	// seedNAS is a hand-made entry home adopted, its loan recorded; seedNASGivenBack is it as
	// the user had it.
	seedNAS = &pb.AddHostRequest{Hostname: "nas.lan", IpAddress: "10.5.0.1", Aliases: []string{"storage.lan"}, Comment: proto.String("by hand"),
		Tags: []string{"zeta", "kind:printer", "has space", "pre-existing:true", "cluster:home", "cluster-id:" + releaseID, "k8s-operator",
			"kind:Ingress", "namespace:d", "source:u1", "original-hostname:NAS.lan", "original-alias:old-nas.lan", "original-ip:192.168.1.5", "added-later"}}
	seedNASGivenBack = &pb.HostEntry{Hostname: "NAS.lan", IpAddress: "192.168.1.5", Aliases: []string{"old-nas.lan"}, Comment: proto.String("by hand"),
		Tags: []string{"zeta", "kind:printer", "has space", "added-later"}}
	seedWeb = &pb.AddHostRequest{Hostname: "web.lan", IpAddress: "10.5.0.2", Comment: proto.String("router-hosts-operator: Ingress d/web"),
		Tags: []string{"cluster:home", "cluster-id:" + releaseID, "k8s-operator", "kind:Ingress", "namespace:d", "source:u2"}}
	seedOther  = &pb.AddHostRequest{Hostname: "other.lan", IpAddress: "10.5.0.3", Tags: []string{"cluster:other@cccccccc", "k8s-operator"}}
	seedRouter = &pb.AddHostRequest{Hostname: "router.lan", IpAddress: "192.168.1.1", Tags: []string{"manual", "cluster:home"}}
	// seedNamesake is another installation's of the same name; seedLegacy an earlier version's.
	seedNamesake = &pb.AddHostRequest{Hostname: "b.lan", IpAddress: "10.5.0.4", Tags: []string{"cluster:home@bbbbbbbb", "k8s-operator"}}
	seedLegacy   = &pb.AddHostRequest{Hostname: "legacy.lan", IpAddress: "10.5.0.5", Tags: []string{"cluster:home", "k8s-operator"}}
	// seedRenamed carries the identity under another name.
	seedRenamed = &pb.AddHostRequest{Hostname: "renamed.lan", IpAddress: "10.5.0.7", Tags: []string{"cluster:old", "cluster-id:" + releaseID, "k8s-operator"}}
	// seedWebHeartbeat is seedWeb with a heartbeat of an operator that syncs every hour.
	seedWebHeartbeat = &pb.AddHostRequest{Hostname: "web.lan", IpAddress: "10.5.0.2", Comment: proto.String("router-hosts-operator: Ingress d/web"),
		Tags: []string{"cluster:home", "cluster-id:" + releaseID, "k8s-operator", "kind:Ingress", "namespace:d", "source:u2",
			"alive:2026-11-25T11:00:00Z", "alive-every:151200", "alive-interval:3600"}}
	// seedWebBefore is seedWeb as versions before the design's tags wrote it, the identity after
	// the name.
	seedWebBefore = &pb.AddHostRequest{Hostname: "web.lan", IpAddress: "10.5.0.2", Comment: proto.String("router-hosts-operator: Ingress d/web"),
		Tags: []string{"cluster:home@" + releaseID, "k8s-operator", "kind:Ingress", "namespace:d", "source:u2"}}
	// seedLegacyAdopted was adopted by an earlier version.
	seedLegacyAdopted = &pb.AddHostRequest{Hostname: "old.lan", IpAddress: "10.5.0.6",
		Tags: []string{"mine", "pre-existing:true", "cluster:home", "k8s-operator", "original-hostname:old.lan", "original-ip:10.5.0.9"}}
)

// probedEntry is the entry that carries the release probe, nil when none does.
func probedEntry(s *inmemory.Store) *pb.HostEntry {
	for _, e := range s.List() {
		if slices.ContainsFunc(e.GetTags(), func(t string) bool { return strings.HasPrefix(t, registry.PrefixReleaseProbe) }) {
			return e
		}
	}
	return nil
}

// entryOf is the entry of hostname, nil when none.
func entryOf(s *inmemory.Store, hostname string) *pb.HostEntry {
	for _, e := range s.List() {
		if e.GetHostname() == hostname {
			return e
		}
	}
	return nil
}

// setTags rewrites e's tags behind release's back, as another writer would.
func setTags(t *testing.T, s *inmemory.Store, e *pb.HostEntry, tags []string) {
	t.Helper()
	if _, err := s.Update(&pb.UpdateHostRequest{Id: e.GetId(), ExpectedVersion: proto.String(e.GetVersion()), Tags: &pb.TagsUpdate{Values: tags}}); err != nil {
		t.Fatal(err)
	}
}

// clone is a deep copy of entries.
func clone(entries map[string]*pb.HostEntry) map[string]*pb.HostEntry {
	out := map[string]*pb.HostEntry{}
	for h, e := range entries {
		out[h] = proto.Clone(e).(*pb.HostEntry)
	}
	return out
}

// byHost is the store's entries by hostname, without what the server stamps on them.
func byHost(s *inmemory.Store) map[string]*pb.HostEntry {
	out := map[string]*pb.HostEntry{}
	for _, e := range s.List() {
		e.Id, e.Version, e.CreatedAt, e.UpdatedAt = "", "", nil, nil
		out[e.GetHostname()] = e
	}
	return out
}

func sameEntries(a, b map[string]*pb.HostEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for h, e := range a {
		if !proto.Equal(e, b[h]) {
			return false
		}
	}
	return true
}

// TestReleaseCommand runs the command against the test server, its clock a fake one: the wait
// passes when the test steps it, after doing what happens meanwhile.
func TestReleaseCommand(t *testing.T) {
	standard := []*pb.AddHostRequest{seedNAS, seedWeb, seedOther, seedRouter}
	tests := []struct {
		name  string
		seeds []*pb.AddHostRequest
		args  []string
		// during runs while release waits on the probe; interrupt ends release's context then.
		during    func(t *testing.T, s *inmemory.Store)
		interrupt bool
		// edit, when set, is another writer's change to the entry of edit's hostname just
		// before release's first write of method after the wait.
		edit   func(e *pb.HostEntry) *pb.UpdateHostRequest
		method string
		// out are lines the output must hold; err a text the error must hold ("" none).
		out []string
		err string
		// writes are release's write RPCs (the test's own during the wait go to the store
		// directly); after makes the entries as seeded into the entries as left (nil: as
		// seeded).
		writes int64
		after  func(seeded map[string]*pb.HostEntry) map[string]*pb.HostEntry
	}{
		{name: "a dry run prints the plan and writes nothing, not even the probe", seeds: standard, args: []string{"--dry-run"},
			out: []string{"release nas.lan 10.5.0.1 id=", "delete  web.lan 10.5.0.2 id=",
				"dry run: cluster home (cluster-id aaaaaaaa): 1 released, 1 deleted; nothing written"}},
		{name: "a stopped cluster is released: adopted given back, created deleted, nothing else touched", seeds: standard,
			out:    []string{"release nas.lan 10.5.0.1 id=", "delete  web.lan 10.5.0.2 id=", "cluster home (cluster-id aaaaaaaa): 1 released, 1 deleted"},
			writes: 3, // the probe, one UpdateHost, one DeleteHost
			after: func(m map[string]*pb.HostEntry) map[string]*pb.HostEntry {
				delete(m, "nas.lan")
				delete(m, "web.lan")
				m["NAS.lan"] = seedNASGivenBack
				return m
			}},
		{name: "an entry edited between the read and the write, still the cluster's: decided again on a new read, and deleted", seeds: standard,
			method: inmemory.MethodDelete, edit: func(e *pb.HostEntry) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Hostname: proto.String("web.lan"), Comment: proto.String("edited")}
			},
			out:    []string{"delete  web.lan 10.5.0.2 id=", "cluster home (cluster-id aaaaaaaa): 1 released, 1 deleted"},
			writes: 4, // the probe, the refused DeleteHost, one UpdateHost, the DeleteHost decided again
			after: func(m map[string]*pb.HostEntry) map[string]*pb.HostEntry {
				delete(m, "nas.lan")
				delete(m, "web.lan")
				m["NAS.lan"] = seedNASGivenBack
				return m
			}},
		{name: "an entry handed to another cluster between the read and the write: left as it is", seeds: standard,
			method: inmemory.MethodDelete, edit: func(e *pb.HostEntry) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Tags: &pb.TagsUpdate{Values: []string{"cluster:other", "cluster-id:cccccccc", "k8s-operator"}}}
			},
			out: []string{"left    web.lan 10.5.0.2 id=", "(changed since it was read, and no longer the cluster's to release)",
				"cluster home (cluster-id aaaaaaaa): 1 released, 0 deleted"},
			writes: 3, // the probe, the refused DeleteHost, one UpdateHost
			after: func(m map[string]*pb.HostEntry) map[string]*pb.HostEntry {
				delete(m, "nas.lan")
				m["NAS.lan"] = seedNASGivenBack
				m["web.lan"].Tags = []string{"cluster:other", "cluster-id:cccccccc", "k8s-operator"}
				return m
			}},
		{name: "the probe is taken off during the wait: refused, nothing released", seeds: standard,
			during: func(t *testing.T, s *inmemory.Store) {
				e := probedEntry(s)
				setTags(t, s, e, seedWeb.Tags) // as the operator writes it
			},
			err: "the operator of cluster home still runs: it took the probe off entry ", writes: 1},
		{name: "the probed entry is rewritten, the probe kept: refused", seeds: standard,
			during: func(t *testing.T, s *inmemory.Store) {
				e := probedEntry(s)
				setTags(t, s, e, append(e.GetTags(), "pending-deletion:2026-11-25T12:00:00Z"))
			},
			err: "still runs: it rewrote entry ", writes: 1,
			after: func(m map[string]*pb.HostEntry) map[string]*pb.HostEntry {
				m["web.lan"].Tags = append(m["web.lan"].Tags, "release-probe:2026-11-25T12:00:00Z", "pending-deletion:2026-11-25T12:00:00Z")
				return m
			}},
		{name: "the probed entry is deleted: refused", seeds: standard,
			during: func(t *testing.T, s *inmemory.Store) {
				if err := s.Delete(probedEntry(s).GetId(), nil); err != nil {
					t.Fatal(err)
				}
			},
			err: "still runs: it deleted entry ", writes: 1,
			after: func(m map[string]*pb.HostEntry) map[string]*pb.HostEntry { delete(m, "web.lan"); return m }},
		{name: "entries of versions that answer the probe only where they write: refused before anything is written",
			seeds: []*pb.AddHostRequest{seedWebBefore, seedLegacyAdopted, seedRouter},
			err:   "release of cluster home refused: the probe cannot tell whether its operator still runs: every entry of the cluster was written by a version"},
		{name: "the same with --force: released", seeds: []*pb.AddHostRequest{seedWebBefore, seedLegacyAdopted, seedRouter}, args: []string{"--force"},
			out: []string{"cluster home (cluster-id aaaaaaaa): 1 released, 1 deleted"}, writes: 3,
			after: func(m map[string]*pb.HostEntry) map[string]*pb.HostEntry {
				delete(m, "web.lan")
				m["old.lan"].Tags, m["old.lan"].IpAddress = []string{"mine"}, "10.5.0.9"
				return m
			}},
		{name: "the cluster's identity appears during the wait: refused", seeds: []*pb.AddHostRequest{seedLegacy, seedLegacyAdopted, seedRouter}, args: []string{"--force"},
			during: func(t *testing.T, s *inmemory.Store) {
				for _, e := range s.List() {
					if e.GetHostname() == "old.lan" {
						setTags(t, s, e, withIdentity(e.GetTags()))
					}
				}
			},
			err: "still runs: it changed the identity on the cluster's entries from none to aaaaaaaa within 1m0s", writes: 1,
			after: func(m map[string]*pb.HostEntry) map[string]*pb.HostEntry {
				m["legacy.lan"].Tags = append(m["legacy.lan"].Tags, "release-probe:2026-11-25T12:00:00Z")
				m["old.lan"].Tags = withIdentity(m["old.lan"].Tags)
				return m
			}},
		{name: "interrupted during the wait: nothing released, the probe stays", seeds: standard, interrupt: true,
			err: "interrupted while waiting on the probe", writes: 1,
			after: func(m map[string]*pb.HostEntry) map[string]*pb.HostEntry {
				m["web.lan"].Tags = append(m["web.lan"].Tags, "release-probe:2026-11-25T12:00:00Z")
				return m
			}},
		{name: "by name, two installations: refused before anything is written", seeds: append([]*pb.AddHostRequest{seedNamesake}, standard...),
			err: "release: cluster home: the router holds entries of this name from 2 installations: cluster-id aaaaaaaa (2 entries), cluster-id bbbbbbbb (1 entries); pass --cluster-id"},
		{name: "by identity among two: the namesake's, the earlier version's and the other name's entries are told and left",
			seeds: append([]*pb.AddHostRequest{seedNamesake, seedLegacy, seedRenamed}, standard...), args: []string{"--cluster-id=" + releaseID, "--dry-run"},
			out: []string{"left    legacy.lan 10.5.0.5 id=", "other installations write cluster home and keep their entries: cluster-id bbbbbbbb (1 entries)",
				"left    renamed.lan 10.5.0.7 id=", "(cluster-id aaaaaaaa under cluster old: a rename's, or another installation's sharing the identity; release --cluster-name=old lets it go)",
				"dry run: cluster home (cluster-id aaaaaaaa): 1 released, 1 deleted; nothing written"}},
		{name: "a cluster whose mark says it syncs every hour: a shorter wait is refused before anything is written",
			seeds: []*pb.AddHostRequest{seedNAS, seedWebHeartbeat, seedOther, seedRouter},
			err:   "release of cluster home refused: its heartbeat says its operator syncs every 1h0m0s, so it may take longer than --probe-wait=1m0s to answer the probe; run release again with --probe-wait=2h30m0s or longer"},
		{name: "the same with the wait it names: released", seeds: []*pb.AddHostRequest{seedNAS, seedWebHeartbeat, seedOther, seedRouter}, args: []string{"--probe-wait=2h30m0s"},
			out: []string{"cluster home (cluster-id aaaaaaaa): 1 released, 1 deleted"}, writes: 3,
			after: func(m map[string]*pb.HostEntry) map[string]*pb.HostEntry {
				delete(m, "nas.lan")
				delete(m, "web.lan")
				m["NAS.lan"] = seedNASGivenBack
				return m
			}},
		{name: "nothing of the cluster: nothing to do", seeds: []*pb.AddHostRequest{seedOther, seedRouter},
			out: []string{"cluster home: no entries to release"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := rhtestserver.Start(t.TempDir(), "")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Stop)
			store := srv.Store()
			for _, s := range tc.seeds {
				if _, err := store.Add(s); err != nil {
					t.Fatal(err)
				}
			}
			seeded := byHost(store)
			args := append([]string{"release", "--cluster-name=home", "--router-hosts-endpoint=" + srv.Addr(), "--tls-ca=" + srv.CAFile(),
				"--tls-cert=" + srv.CertFile(), "--tls-key=" + srv.KeyFile()}, tc.args...)
			if !slices.ContainsFunc(tc.args, func(a string) bool { return strings.HasPrefix(a, "--probe-wait=") }) {
				args = append(args, "--probe-wait=1m")
			}
			cfg, err := ParseFlags(args, Build{Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			log := logrus.New()
			log.SetOutput(testLog{t})
			clk := testingclock.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out bytes.Buffer
			done := make(chan error, 1)
			go func() { done <- Release(ctx, cfg, log, &out, clk) }()
			// Until release is done or waits on the probe; then what happens meanwhile, and
			// the wait passes.
		wait:
			for {
				select {
				case err = <-done:
					break wait
				case <-time.After(time.Millisecond):
					if !clk.HasWaiters() {
						continue
					}
					if tc.during != nil {
						tc.during(t, store)
					}
					if tc.edit != nil {
						var once atomic.Bool
						srv.Service().SetBefore(func(m string) error {
							if m != tc.method || !once.CompareAndSwap(false, true) {
								return nil
							}
							e := entryOf(store, "web.lan")
							req := tc.edit(e)
							req.Id, req.ExpectedVersion = e.GetId(), proto.String(e.GetVersion())
							_, err := store.Update(req)
							return err
						})
					}
					if tc.interrupt {
						cancel()
					} else {
						clk.Step(cfg.ProbeWait)
					}
					err = <-done
					break wait
				}
			}
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("release: %v\noutput:\n%s", err, out.String())
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one with %q", err, tc.err)
			}
			for _, want := range tc.out {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
			if got := srv.Service().WriteCalls(); got != tc.writes {
				t.Errorf("%d write RPCs reached the server, want %d: %v", got, tc.writes, srv.Service().CallCounts())
			}
			want := seeded
			if tc.after != nil {
				want = tc.after(clone(seeded))
			}
			if got := byHost(store); !sameEntries(got, want) {
				t.Errorf("entries\n%v\nwant\n%v", got, want)
			}
		})
	}
}

// testLog sends logs to t.Log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestReleaseFlags: the release command's flags, their environment variables and the mistakes
// they refuse.
func TestReleaseFlags(t *testing.T) {
	conn := []string{"--router-hosts-endpoint=r:1", "--tls-ca=a", "--tls-cert=b", "--tls-key=c"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want func(*Config) bool
		err  string
	}{
		{name: "defaults", args: append([]string{"release", "--cluster-name=home"}, conn...),
			want: func(c *Config) bool {
				return c.Command == CommandRelease && c.ClusterName == "home" && c.ClusterID == "" && c.ProbeWait == 150*time.Second && c.ConfigName == "" && !c.DryRun
			}},
		{name: "every flag", args: append([]string{"release", "--cluster-name=home", "--cluster-id=0123abcd", "--dry-run", "--probe-wait=5m", "--force"}, conn...),
			want: func(c *Config) bool {
				return c.ClusterID == "0123abcd" && c.ProbeWait == 5*time.Minute && c.DryRun && c.Force
			}},
		{name: "environment variables", args: append([]string{"release"}, conn...),
			env: map[string]string{"ROUTER_HOSTS_OPERATOR_CLUSTER_NAME": "home", "ROUTER_HOSTS_OPERATOR_CLUSTER_ID": "0123abcd", "ROUTER_HOSTS_OPERATOR_PROBE_WAIT": "3m"},
			want: func(c *Config) bool {
				return c.ClusterName == "home" && c.ClusterID == "0123abcd" && c.ProbeWait == 3*time.Minute
			}},
		{name: "the cluster is named on purpose", args: append([]string{"release"}, conn...), err: "--cluster-name is required"},
		{name: "not the RouterHostsConfig's connection", args: []string{"release", "--cluster-name=home"}, err: "--router-hosts-endpoint is required"},
		{name: "a bad identity", args: append([]string{"release", "--cluster-name=home", "--cluster-id=XYZ"}, conn...), err: "--cluster-id"},
		{name: "no wait", args: append([]string{"release", "--cluster-name=home", "--probe-wait=0s"}, conn...), err: "--probe-wait must be positive"},
		{name: "the in-memory store", args: []string{"release", "--cluster-name=home", "--provider=inmemory"}, err: "--provider=inmemory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cfg, err := ParseFlags(tc.args, Build{Version: "test"})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(cfg) {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}

// TestStillRunsErrorSaysWhatToDo: the refusal's words.
func TestStillRunsErrorSaysWhatToDo(t *testing.T) {
	err := error(&StillRunsError{Cluster: "home", Did: "took the probe off entry 01J (web.lan)", Within: DefaultProbeWait})
	want := "the operator of cluster home still runs: it took the probe off entry 01J (web.lan) within 2m30s; stop it (helm uninstall / scale to 0) and run release again"
	var sr *StillRunsError
	if err.Error() != want || !errors.As(err, &sr) {
		t.Fatalf("%v\nwant %s", err, want)
	}
}

// withIdentity is tags with the release's identity beside the cluster:home tag, as the
// cluster's operator writes it.
func withIdentity(tags []string) []string {
	out := slices.Clone(tags)
	if i := slices.Index(out, "cluster:home"); i >= 0 {
		out = slices.Insert(out, i+1, "cluster-id:"+releaseID)
	}
	return out
}
