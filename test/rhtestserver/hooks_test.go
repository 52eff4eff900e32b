package rhtestserver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// TestOnSuccessHookRunsAfterTheReplyAndCoalesces: the hook runs on a runner of its own, so a
// write's reply never waits for it; the writes that come while it runs make one more run, not
// one each; failed writes and reads run nothing; a hook's failure fails no write.
func TestOnSuccessHookRunsAfterTheReplyAndCoalesces(t *testing.T) {
	srv := start(t)
	c := dial(t, srv.Addr(), clientConfig{caFile: srv.CAFile(), certFile: srv.CertFile(), keyFile: srv.KeyFile()})
	started, release := make(chan struct{}, 16), make(chan struct{})
	srv.OnSuccess(func() error {
		started <- struct{}{}
		<-release
		return nil
	})
	add := func(host string) *pb.HostEntry {
		t.Helper()
		resp, err := c.AddHost(ctx(t), &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: host})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetEntry()
	}
	// The hook blocks, and the write's reply came all the same.
	first := add("a.lan")
	<-started
	for _, h := range []string{"b.lan", "c.lan", "d.lan"} {
		add(h)
	}
	if _, err := c.UpdateHost(ctx(t), &pb.UpdateHostRequest{Id: first.GetId(), IpAddress: proto.String("10.0.0.2"), ExpectedVersion: proto.String(first.GetVersion())}); err != nil {
		t.Fatal(err)
	}
	if runs, _ := srv.HookRuns(); runs != 0 {
		t.Fatalf("%d runs finished while the first was held", runs)
	}
	close(release)
	if err := srv.HooksIdle(ctx(t)); err != nil {
		t.Fatal(err)
	}
	// One run for the first write, one for the four that came during it.
	if runs, err := srv.HookRuns(); runs != 2 || err != nil {
		t.Fatalf("%d runs (err %v), want 2", runs, err)
	}
	// A failed write and a read run nothing.
	if _, err := c.DeleteHost(ctx(t), &pb.DeleteHostRequest{Id: "01ARZ3NDEKTSV4RRFFQ69G5FAV"}); err == nil {
		t.Fatal("deleting an unknown entry succeeded")
	}
	if _, err := listAll(t, c); err != nil {
		t.Fatal(err)
	}
	// The runner is started before the reply: waiting for it right after a write sees the run.
	if _, err := c.DeleteHost(ctx(t), &pb.DeleteHostRequest{Id: first.GetId()}); err != nil {
		t.Fatal(err)
	}
	if err := srv.HooksIdle(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if runs, _ := srv.HookRuns(); runs != 3 {
		t.Fatalf("%d runs, want 3: one more for the delete alone", runs)
	}

	// A hook that fails is remembered; the write succeeded.
	srv.OnSuccess(func() error { return errors.New("reload failed") })
	add("e.lan")
	if err := srv.HooksIdle(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if runs, err := srv.HookRuns(); runs != 4 || err == nil {
		t.Fatalf("%d runs, err %v; want 4 and the hook's error", runs, err)
	}
	// No hook, no run.
	srv.OnSuccess(nil)
	add("f.lan")
	if runs, _ := srv.HookRuns(); runs != 4 {
		t.Fatalf("%d runs without a hook, want 4", runs)
	}
}

// TestCommandHookRunsAShellCommand: a command hook runs as the real server's do, and its
// failure says the command and its output.
func TestCommandHookRunsAShellCommand(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "reloaded")
	if err := CommandHook("touch " + mark)(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the command did not run: %v", err)
	}
	err := CommandHook("echo no dnsmasq here >&2; exit 3")()
	if err == nil || !strings.Contains(err.Error(), "no dnsmasq here") || !strings.Contains(err.Error(), "exit 3") {
		t.Fatalf("err %v, want the command's output and status", err)
	}
}

// TestCompactionRunsNoHookNorWritesTheHostsFile: CompactAggregates changes no entry, so the
// server neither runs its hooks nor rewrites its hosts file for it, as the real one does not.
func TestCompactionRunsNoHookNorWritesTheHostsFile(t *testing.T) {
	srv := start(t)
	c := dial(t, srv.Addr(), clientConfig{caFile: srv.CAFile(), certFile: srv.CertFile(), keyFile: srv.KeyFile()})
	hosts := filepath.Join(t.TempDir(), "hosts")
	srv.WriteHostsFile(hosts)
	srv.OnSuccess(func() error { return nil })
	resp, err := c.AddHost(ctx(t), &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "a.lan"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateHost(ctx(t), &pb.UpdateHostRequest{Id: resp.GetId(), ExpectedVersion: proto.String("1"), Comment: proto.String("x")}); err != nil {
		t.Fatal(err)
	}
	if err := srv.HooksIdle(ctx(t)); err != nil {
		t.Fatal(err)
	}
	runs, _ := srv.HookRuns()
	// Gone, so that a rewrite would show.
	if err := os.Remove(hosts); err != nil {
		t.Fatal(err)
	}
	got, err := c.CompactAggregates(ctx(t), &pb.CompactAggregatesRequest{Target: &pb.CompactAggregatesRequest_AggregateId{AggregateId: resp.GetId()}})
	if err != nil || got.GetTotalEventsReclaimed() != 1 {
		t.Fatalf("CompactAggregates: %v, %v; want one event reclaimed", got, err)
	}
	if err := srv.HooksIdle(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n, _ := srv.HookRuns(); n != runs {
		t.Fatalf("%d hook runs after the compaction, want %d", n, runs)
	}
	if _, err := os.Stat(hosts); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the hosts file was written again (%v)", err)
	}
}
