package routerhosts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/internal/rhtestserver"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// newProvider returns a provider on an in-process server with the real server's semantics.
func newProvider(t *testing.T) (*Provider, *inmemory.Service) {
	t.Helper()
	svc, conn := inmemory.DialTest(t)
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	return NewFromConn(conn, Options{Timeout: 5 * time.Second, Log: log}), svc
}

func create(t *testing.T, p *Provider, r endpoint.Record) endpoint.Record {
	t.Helper()
	if err := p.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Create, New: &r}}); err != nil {
		t.Fatal(err)
	}
	recs, err := p.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range recs {
		if got.Hostname == r.Hostname && got.IP == r.IP {
			return got
		}
	}
	t.Fatalf("created %s not listed", r.Hostname)
	return endpoint.Record{}
}

func get(t *testing.T, svc *inmemory.Service, id string) *pb.HostEntry {
	t.Helper()
	e, err := svc.Store().Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestUpdateSendsOnlyChangedFields(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(r *endpoint.Record)
		events int
	}{
		{"nothing", func(*endpoint.Record) {}, 0},
		{"tags reordered", func(r *endpoint.Record) { r.Tags = []string{"b", "a"} }, 0},
		{"tags", func(r *endpoint.Record) { r.Tags = []string{"a", "c"} }, 1},
		{"ip", func(r *endpoint.Record) { r.IP = "10.0.0.2" }, 1},
		{"clear aliases", func(r *endpoint.Record) { r.Aliases = nil }, 1},
		{"ip, comment and aliases", func(r *endpoint.Record) { r.IP, r.Comment, r.Aliases = "10.0.0.3", "new", []string{"z.lan"} }, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, svc := newProvider(t)
			have := create(t, p, endpoint.Record{Hostname: "a.lan", IP: "10.0.0.1", Tags: []string{"a", "b"}, Aliases: []string{"x.lan"}, Comment: "c"})
			want := have
			want.Tags, want.Aliases = append([]string(nil), have.Tags...), append([]string(nil), have.Aliases...)
			tc.mutate(&want)
			svc.ResetCalls()
			if err := p.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Update, Old: &have, New: &want}}); err != nil {
				t.Fatal(err)
			}
			wantCalls := int64(0)
			if tc.events > 0 {
				wantCalls = 1
			}
			if got := svc.Calls(inmemory.MethodUpdate); got != wantCalls {
				t.Fatalf("UpdateHost calls = %d, want %d", got, wantCalls)
			}
			e := get(t, svc, have.ID)
			// One event per field sent: the version shows exactly which fields went.
			if wantV := strconv.Itoa(1 + tc.events); e.GetVersion() != wantV {
				t.Fatalf("version = %s, want %s", e.GetVersion(), wantV)
			}
			if !endpoint.SameSet(e.GetTags(), want.Tags) || !endpoint.SameSet(e.GetAliases(), want.Aliases) || e.GetIpAddress() != want.IP {
				t.Fatalf("entry = %s, want %+v", inmemory.String(e), want)
			}
		})
	}
}

func TestUpdateAbortedRebasesOnce(t *testing.T) {
	p, svc := newProvider(t)
	have := create(t, p, endpoint.Record{Hostname: "a.lan", IP: "10.0.0.1", Tags: []string{"k8s-operator", "old"}})
	want := have
	want.Tags = []string{"k8s-operator", "new"}
	// A person tags the entry between our read and our write.
	first := true
	svc.SetBefore(func(m string) error {
		if m == inmemory.MethodUpdate && first {
			first = false
			_, err := svc.Store().Update(&pb.UpdateHostRequest{Id: have.ID, ExpectedVersion: proto.String("1"), Tags: &pb.TagsUpdate{Values: []string{"k8s-operator", "old", "human"}}})
			return err
		}
		return nil
	})
	if err := p.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Update, Old: &have, New: &want}}); err != nil {
		t.Fatal(err)
	}
	e := get(t, svc, have.ID)
	if !endpoint.SameSet(e.GetTags(), []string{"k8s-operator", "new", "human"}) {
		t.Fatalf("tags after rebase = %q; want ours applied and the person's kept", e.GetTags())
	}
	if c := svc.CallCounts(); c[inmemory.MethodUpdate] != 2 || c[inmemory.MethodGet] != 1 {
		t.Fatalf("calls = %v, want 2 UpdateHost and 1 GetHost", c)
	}

	// A writer that always wins: one retry, then an error for the next sync.
	have = endpoint.Record{ID: e.GetId(), Hostname: "a.lan", IP: "10.0.0.1", Tags: e.GetTags(), Version: e.GetVersion()}
	want = have
	want.IP = "10.0.0.9"
	svc.SetBefore(func(m string) error {
		if m == inmemory.MethodUpdate {
			cur, _ := svc.Store().Get(have.ID)
			_, err := svc.Store().Update(&pb.UpdateHostRequest{Id: have.ID, ExpectedVersion: proto.String(cur.GetVersion()), Comment: proto.String("x")})
			return err
		}
		return nil
	})
	svc.ResetCalls()
	err := p.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Update, Old: &have, New: &want}})
	if status.Code(err) != codes.Aborted || svc.Calls(inmemory.MethodUpdate) != 2 {
		t.Fatalf("err = %v after %d UpdateHost calls; want Aborted after 2", err, svc.Calls(inmemory.MethodUpdate))
	}
}

func TestDelete(t *testing.T) {
	p, svc := newProvider(t)
	a := create(t, p, endpoint.Record{Hostname: "a.lan", IP: "10.0.0.1"})
	b := create(t, p, endpoint.Record{Hostname: "b.lan", IP: "10.0.0.1"})
	// Already gone: success.
	if err := svc.Store().Delete(a.ID, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Delete, Old: &a}}); err != nil {
		t.Fatalf("delete of a gone entry: %v", err)
	}
	// Edited since read: not deleted.
	if _, err := svc.Store().Update(&pb.UpdateHostRequest{Id: b.ID, ExpectedVersion: proto.String("1"), IpAddress: proto.String("10.0.0.2")}); err != nil {
		t.Fatal(err)
	}
	if err := p.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Delete, Old: &b}}); err == nil {
		t.Fatal("deleted an entry edited since it was read")
	}
	if svc.Store().Len() != 1 {
		t.Fatal("edited entry is gone")
	}
}

func TestOneFailureDoesNotStopOthersAndInvalidIsNeverSent(t *testing.T) {
	p, svc := newProvider(t)
	create(t, p, endpoint.Record{Hostname: "dup.lan", IP: "10.0.0.1"})
	svc.ResetCalls()
	changes := []plan.Change{
		{Action: plan.Create, New: &endpoint.Record{Hostname: "dup.lan", IP: "10.0.0.1"}},
		{Action: plan.Create, New: &endpoint.Record{Hostname: "bad_name.lan", IP: "10.0.0.1"}},
		{Action: plan.Create, New: &endpoint.Record{Hostname: "ok.lan", IP: "10.0.0.1", Tags: []string{"x"}}},
	}
	err := p.ApplyChanges(context.Background(), changes)
	// Each failure names the caller's own Change, and a create learns its ID.
	var ce *plan.ChangeError
	if !errors.As(err, &ce) || (ce.Change != &changes[0] && ce.Change != &changes[1]) {
		t.Fatalf("failure does not point at the caller's change: %v", err)
	}
	if changes[2].New.ID == "" {
		t.Fatal("the created entry's ID was not reported back")
	}
	if err == nil || !strings.Contains(err.Error(), "dup.lan") || !strings.Contains(err.Error(), "bad_name.lan") {
		t.Fatalf("err = %v, want both failures reported", err)
	}
	if got := svc.Calls(inmemory.MethodAdd); got != 2 {
		t.Fatalf("AddHost calls = %d, want 2 (the invalid one is never sent)", got)
	}
	if svc.Store().Len() != 2 {
		t.Fatalf("entries = %d, want ok.lan created despite the failures", svc.Store().Len())
	}
}

func TestRecordsIsOneListHosts(t *testing.T) {
	p, svc := newProvider(t)
	for _, h := range []string{"a.lan", "b.lan", "c.lan"} {
		create(t, p, endpoint.Record{Hostname: h, IP: "10.0.0.1", Comment: "c"})
	}
	svc.ResetCalls()
	recs, err := p.Records(context.Background())
	if err != nil || len(recs) != 3 || svc.Calls(inmemory.MethodList) != 1 || len(svc.CallCounts()) == 0 {
		t.Fatalf("records %d, err %v, calls %v", len(recs), err, svc.CallCounts())
	}
	if recs[0].Comment != "c" || recs[0].Version != "1" {
		t.Fatalf("record = %+v", recs[0])
	}
}

// TestObserveReportsEveryCallWithItsOutcome: unary calls report their code, and ListHosts
// reports how its stream ended, so a server error that arrives mid-stream is not counted as OK.
func TestObserveReportsEveryCallWithItsOutcome(t *testing.T) {
	svc, conn := inmemory.DialTest(t)
	seen := map[string]int{}
	observe := func(method string, code codes.Code) { seen[method+" "+code.String()]++ }
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	p := NewFromConn(conn, Options{Timeout: 5 * time.Second, Observe: observe, Log: log})
	create(t, p, endpoint.Record{Hostname: "a.lan", IP: "10.0.0.1"}) // one AddHost, one ListHosts
	svc.SetFault(inmemory.MethodList, status.Error(codes.Unavailable, "going down"), 1)
	if _, err := p.Records(context.Background()); err == nil || !strings.Contains(err.Error(), "going down") {
		t.Fatalf("Records = %v, want the injected failure", err)
	}
	want := map[string]int{"AddHost OK": 1, "ListHosts OK": 1, "ListHosts Unavailable": 1}
	if len(seen) != len(want) {
		t.Fatalf("observed %v, want %v", seen, want)
	}
	for k, n := range want {
		if seen[k] != n {
			t.Fatalf("observed %v, want %v", seen, want)
		}
	}
}

func TestMTLS(t *testing.T) {
	dir := t.TempDir()
	srv, err := rhtestserver.Start(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	p, err := New(Options{Endpoint: srv.Addr(), CAFile: srv.CAFile(), CertFile: srv.CertFile(), KeyFile: srv.KeyFile(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Records(context.Background()); err != nil {
		t.Fatalf("Records over mTLS: %v", err)
	}
	if err := p.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}

	cert, key, err := rhtestserver.WriteForeignClientCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := New(Options{Endpoint: srv.Addr(), CAFile: srv.CAFile(), CertFile: cert, KeyFile: key, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	if _, err := wrong.Records(context.Background()); status.Code(err) != codes.Unavailable {
		t.Fatalf("client certificate from another CA: %v, want Unavailable", err)
	}
	// The server's certificate must chain to the configured CA.
	if other, err := New(Options{Endpoint: srv.Addr(), CAFile: cert, CertFile: srv.CertFile(), KeyFile: srv.KeyFile(), Timeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	} else {
		defer other.Close()
		if _, err := other.Records(context.Background()); err == nil {
			t.Fatal("a server certificate from another CA was accepted")
		}
	}
	if _, err := New(Options{Endpoint: srv.Addr(), CAFile: srv.CAFile(), CertFile: dir + "/missing.crt", KeyFile: srv.KeyFile()}); err == nil ||
		!strings.Contains(err.Error(), "missing.crt") {
		t.Fatalf("missing certificate file: %v", err)
	}
}

// TestCertificateRotation replaces the client certificate files on disk, as cert-manager does
// with a Secret, and checks that the next call uses the new certificate without a restart.
func TestCertificateRotation(t *testing.T) {
	dir := t.TempDir()
	srv, err := rhtestserver.Start(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	certFile, keyFile := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	// install puts a key pair in place modified at mtime: each install's own, so that the
	// files' stamp changes even when the new files have the old ones' sizes.
	install := func(cert, key string, mtime time.Time) {
		t.Helper()
		for src, dst := range map[string]string{cert: certFile, key: keyFile} {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			// Write then rename, as the kubelet swaps a Secret volume's files atomically.
			if err := os.WriteFile(dst+".tmp", data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(dst+".tmp", mtime, mtime); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(dst+".tmp", dst); err != nil {
				t.Fatal(err)
			}
		}
	}
	at := time.Now()
	install(srv.CertFile(), srv.KeyFile(), at)
	p, err := New(Options{Endpoint: srv.Addr(), CAFile: srv.CAFile(), CertFile: certFile, KeyFile: keyFile, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Records(context.Background()); err != nil {
		t.Fatalf("with the valid certificate: %v", err)
	}
	// Rotate to a certificate the server does not trust: the next call must present it.
	foreignCert, foreignKey, err := rhtestserver.WriteForeignClientCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	install(foreignCert, foreignKey, at.Add(time.Second))
	if _, err := p.Records(context.Background()); status.Code(err) != codes.Unavailable {
		t.Fatalf("after rotating to an untrusted certificate: %v, want Unavailable", err)
	}
	// And back to a trusted one.
	install(srv.CertFile(), srv.KeyFile(), at.Add(2*time.Second))
	if _, err := p.Records(context.Background()); err != nil {
		t.Fatalf("after rotating back: %v", err)
	}
}

func TestAdoptionOfAnEntryEditedSinceItWasReadIsDropped(t *testing.T) {
	reg, err := registry.New(registry.Config{ClusterName: "home", GracePeriod: time.Minute, Log: logrus.New()})
	if err != nil {
		t.Fatal(err)
	}
	svc, conn := inmemory.DialTest(t)
	p := NewFromConn(conn, Options{Timeout: 5 * time.Second, Log: logrus.New(), StillApplies: reg.StillApplies})
	hand := create(t, p, endpoint.Record{Hostname: "nas.lan", IP: "192.168.1.5", Tags: []string{"manual"}, Comment: "by hand"})
	want := &endpoint.Endpoint{Hostname: "nas.lan", Targets: []string{"10.0.0.5"}, OwnerTags: []string{"cluster:home", "k8s-operator", "namespace:d"},
		Sources: []endpoint.SourceRef{{Kind: "Ingress", Namespace: "d", Name: "n", UID: "uid"}}}
	recs, err := p.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	eps := []*endpoint.Endpoint{want}
	st := reg.Classify(recs, eps, nil)
	desired := reg.Desired(time.Now(), eps, st, nil).Endpoints
	changes := reg.Apply(time.Now(), st, (&plan.Plan{Current: reg.Current(st, desired, nil), Desired: desired}).Calculate()).Changes
	if len(changes) != 1 || changes[0].Action != plan.Adopt {
		t.Fatalf("changes = %v", changes)
	}
	// Between the read and the write, the user renames the entry.
	renamed, err := svc.Store().Update(&pb.UpdateHostRequest{Id: hand.ID, ExpectedVersion: proto.String(hand.Version),
		Hostname: proto.String("files.lan"), IpAddress: proto.String("192.168.1.6")})
	if err != nil {
		t.Fatal(err)
	}
	err = p.ApplyChanges(context.Background(), changes)
	var ce *plan.ChangeError
	if !errors.As(err, &ce) || !ce.Refused || !ce.Stale {
		t.Fatalf("apply error = %v; want the adoption dropped as stale", err)
	}
	if got := get(t, svc, hand.ID); !proto.Equal(got, renamed) {
		t.Fatalf("entry = %v; the user's renamed entry must stay as they left it (%v)", got, renamed)
	}
}

// TestSearchReadsOneHostnameInAnyCase: the entries of one hostname however it is spelled, and
// none of the others the server's substring match also sends (a longer hostname, a comment).
func TestSearchReadsOneHostnameInAnyCase(t *testing.T) {
	p, svc := newProvider(t)
	for _, r := range []*pb.AddHostRequest{
		{IpAddress: "10.0.0.1", Hostname: "NAS.lan"},
		{IpAddress: "10.0.0.2", Hostname: "nas.lan"},
		{IpAddress: "10.0.0.3", Hostname: "nas.lan.example"},
		{IpAddress: "10.0.0.4", Hostname: "web.lan", Comment: proto.String("moved from nas.lan")},
	} {
		if _, err := svc.Store().Add(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := p.Search(context.Background(), "nas.lan")
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, r := range got {
		ips = append(ips, r.IP)
	}
	sort.Strings(ips)
	if want := []string{"10.0.0.1", "10.0.0.2"}; !reflect.DeepEqual(ips, want) {
		t.Fatalf("Search(nas.lan) = %v, want %v", ips, want)
	}
	if n := svc.Calls(inmemory.MethodSearch); n != 1 {
		t.Fatalf("%d SearchHosts calls, want 1", n)
	}
}
