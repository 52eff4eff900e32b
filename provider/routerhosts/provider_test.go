package routerhosts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
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
	if err := plan.ErrorOf(p.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Create, New: &r}})); err != nil {
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
			results := p.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Update, Old: &have, New: &want}})
			if err := plan.ErrorOf(results); err != nil {
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
			// The result is the entry as stored, for the next write; an update with nothing to
			// send stands as planned.
			if got := results[0].Stored; got == nil || got.ID != have.ID || got.Version != e.GetVersion() {
				t.Fatalf("stored = %+v, want entry %s at version %s", got, have.ID, e.GetVersion())
			}
			if !endpoint.SameSet(e.GetTags(), want.Tags) || !endpoint.SameSet(e.GetAliases(), want.Aliases) || e.GetIpAddress() != want.IP {
				t.Fatalf("entry = %s, want %+v", inmemory.String(e), want)
			}
		})
	}
}

// TestAStaleWriteIsNotRetried: an update or a delete the server refuses because the entry
// changed since it was read (Aborted) is sent once and never retried on the entry as it is
// now; its result says stale, so the caller plans it again from a fresh read.
func TestAStaleWriteIsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		change func(have endpoint.Record) plan.Change
	}{
		{"update", inmemory.MethodUpdate, func(have endpoint.Record) plan.Change {
			want := have
			want.Tags = []string{"k8s-operator", "new"}
			return plan.Change{Action: plan.Update, Old: &have, New: &want}
		}},
		{"delete", inmemory.MethodDelete, func(have endpoint.Record) plan.Change {
			return plan.Change{Action: plan.Delete, Old: &have}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, svc := newProvider(t)
			have := create(t, p, endpoint.Record{Hostname: "a.lan", IP: "10.0.0.1", Tags: []string{"k8s-operator", "old"}})
			// A person tags the entry between our read and our write.
			var edited *pb.HostEntry
			svc.SetBefore(func(m string) error {
				if m != tc.method || edited != nil {
					return nil
				}
				var err error
				edited, err = svc.Store().Update(&pb.UpdateHostRequest{Id: have.ID, ExpectedVersion: proto.String(have.Version),
					Tags: &pb.TagsUpdate{Values: []string{"k8s-operator", "old", "human"}}})
				return err
			})
			svc.ResetCalls()
			results := p.ApplyChanges(context.Background(), []plan.Change{tc.change(have)})
			ce := results[0].Err
			if ce == nil || !ce.Stale || !ce.Refused || status.Code(ce) != codes.Aborted || results[0].Stored != nil {
				t.Fatalf("result = %+v; want it stale, refused with Aborted, nothing stored", results[0])
			}
			if c := svc.CallCounts(); c[tc.method] != 1 || svc.WriteCalls() != 1 || c[inmemory.MethodGet] != 0 || c[inmemory.MethodList] != 0 {
				t.Fatalf("calls = %v; want the one refused %s, no re-read and no retry", c, tc.method)
			}
			if got := get(t, svc, have.ID); !proto.Equal(got, edited) {
				t.Fatalf("entry = %s; want it as the person left it, %s", inmemory.String(got), inmemory.String(edited))
			}
		})
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
	if results := p.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Delete, Old: &a}}); results[0].Err != nil || results[0].Stored != nil {
		t.Fatalf("delete of a gone entry: %+v, want success with nothing stored", results[0])
	}
	// Edited since read: not deleted, and said to be stale.
	if _, err := svc.Store().Update(&pb.UpdateHostRequest{Id: b.ID, ExpectedVersion: proto.String("1"), IpAddress: proto.String("10.0.0.2")}); err != nil {
		t.Fatal(err)
	}
	if ce := p.ApplyChanges(context.Background(), []plan.Change{{Action: plan.Delete, Old: &b}})[0].Err; ce == nil || !ce.Stale {
		t.Fatalf("delete of an entry edited since it was read: %v, want it refused as stale", ce)
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
	results := p.ApplyChanges(context.Background(), changes)
	// Each failure is at its change's index and carries that change, and a create learns its
	// ID.
	for i := range 2 {
		if ce := results[i].Err; ce == nil || ce.Change.New != changes[i].New || !ce.Refused {
			t.Fatalf("result %d = %+v, want the refusal of the caller's change %s", i, results[i], changes[i].String())
		}
	}
	if results[2].Err != nil || results[2].Stored == nil || results[2].Stored.ID == "" {
		t.Fatalf("result of the create = %+v, want the created entry's ID", results[2])
	}
	var ce *plan.ChangeError
	err := plan.ErrorOf(results)
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want the failed changes", err)
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

// TestApplyChangesAnswersInOrderAndLeavesItsInput: one result per change at the change's
// index, whatever order the phases send them in, each the entry as the server stored it; the
// changes and the records they point to are as the caller left them, and no result shares
// a slice with them.
func TestApplyChangesAnswersInOrderAndLeavesItsInput(t *testing.T) {
	p, svc := newProvider(t)
	upd := create(t, p, endpoint.Record{Hostname: "upd.lan", IP: "10.0.0.1", Tags: []string{"a"}, Aliases: []string{"u.lan"}})
	del := create(t, p, endpoint.Record{Hostname: "del.lan", IP: "10.0.0.2"})
	same := create(t, p, endpoint.Record{Hostname: "same.lan", IP: "10.0.0.3", Tags: []string{"keep"}, Aliases: []string{"s.lan"}})
	create(t, p, endpoint.Record{Hostname: "dup.lan", IP: "10.0.0.4"})
	moved := upd
	moved.IP, moved.Tags = "10.0.0.9", []string{"a", "b"}
	unchanged := same
	unchanged.Tags, unchanged.Aliases = slices.Clone(same.Tags), slices.Clone(same.Aliases)
	changes := []plan.Change{
		{Action: plan.Create, New: &endpoint.Record{Hostname: "new.lan", IP: "10.0.0.5", Tags: []string{"x"}, Comment: "c"}},
		{Action: plan.Update, Old: &upd, New: &moved},
		{Action: plan.Create, New: &endpoint.Record{Hostname: "dup.lan", IP: "10.0.0.4"}},
		{Action: plan.Delete, Old: &del},
		{Action: plan.Update, Old: &same, New: &unchanged},
	}
	before := deepCopy(changes)
	pointers := make([][2]*endpoint.Record, len(changes))
	for i := range changes {
		pointers[i] = [2]*endpoint.Record{changes[i].Old, changes[i].New}
	}

	results := p.ApplyChanges(context.Background(), changes)

	if len(results) != len(changes) {
		t.Fatalf("%d results for %d changes", len(results), len(changes))
	}
	untouched := func(when string) {
		t.Helper()
		if !reflect.DeepEqual(changes, before) {
			t.Fatalf("%s: changes = %+v, want them as the caller left them, %+v", when, changes, before)
		}
		for i := range changes {
			if changes[i].Old != pointers[i][0] || changes[i].New != pointers[i][1] {
				t.Fatalf("%s: change %d points at other records", when, i)
			}
		}
	}
	untouched("after the apply")
	stored := func(i int) *endpoint.Record {
		t.Helper()
		r := results[i]
		if r.Err != nil || r.Stored == nil {
			t.Fatalf("result %d (%s) = %+v, want the entry as stored", i, changes[i].String(), r)
		}
		for _, planned := range []*endpoint.Record{changes[i].Old, changes[i].New} {
			if r.Stored == planned {
				t.Fatalf("result %d is the change's own record", i)
			}
		}
		if e := get(t, svc, r.Stored.ID); r.Stored.Version != e.GetVersion() || r.Stored.IP != e.GetIpAddress() ||
			r.Stored.Hostname != e.GetHostname() || !slices.Equal(r.Stored.Tags, e.GetTags()) {
			t.Fatalf("result %d = %+v, want the entry as stored, %s", i, r.Stored, inmemory.String(e))
		}
		return r.Stored
	}
	if r := stored(0); r.ID == "" || r.Hostname != "new.lan" || r.Comment != "c" {
		t.Fatalf("created = %+v", r)
	}
	if r := stored(1); r.ID != upd.ID || r.Version == upd.Version || r.IP != "10.0.0.9" {
		t.Fatalf("updated = %+v, want entry %s at a version past %s", r, upd.ID, upd.Version)
	}
	if ce := results[2].Err; ce == nil || results[2].Stored != nil || !ce.Refused || !ce.Stale || status.Code(ce) != codes.AlreadyExists ||
		!reflect.DeepEqual(ce.Change, before[2]) {
		t.Fatalf("result of the duplicate = %+v, want it refused as AlreadyExists, carrying its change", results[2])
	}
	if results[3].Err != nil || results[3].Stored != nil {
		t.Fatalf("result of the delete = %+v, want success with nothing stored", results[3])
	}
	if _, err := svc.Store().Get(del.ID); err == nil {
		t.Fatal("deleted entry still stored")
	}
	if r := stored(4); !reflect.DeepEqual(*r, *before[4].New) {
		t.Fatalf("unchanged = %+v, want the planned entry %+v", r, before[4].New)
	}
	// A caller may change what it was given without touching what it sent.
	for i := range results {
		if r := results[i].Stored; r != nil {
			for j := range r.Tags {
				r.Tags[j] = "changed"
			}
			for j := range r.Aliases {
				r.Aliases[j] = "changed"
			}
		}
	}
	untouched("after changing the results")
}

// TestApplyChangesAfterTheContextEnded: nothing is sent, every change's result says it was not
// started, and the whole says so once.
func TestApplyChangesAfterTheContextEnded(t *testing.T) {
	p, svc := newProvider(t)
	have := create(t, p, endpoint.Record{Hostname: "a.lan", IP: "10.0.0.1"})
	svc.ResetCalls()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	changes := []plan.Change{{Action: plan.Create, New: &endpoint.Record{Hostname: "b.lan", IP: "10.0.0.2"}}, {Action: plan.Delete, Old: &have}}
	results := p.ApplyChanges(ctx, changes)
	for i, r := range results {
		if r.Err == nil || !errors.Is(r.Err, plan.ErrNotStarted) || !errors.Is(r.Err, context.Canceled) || r.Err.Refused || r.Err.Stale || r.Stored != nil {
			t.Fatalf("result %d = %+v, want not started", i, r)
		}
	}
	if n := svc.WriteCalls(); n != 0 {
		t.Fatalf("%d writes after the context ended", n)
	}
	if err := plan.ErrorOf(results); err == nil || err.Error() != "stopped after 0 of 2 changes: context canceled" {
		t.Fatalf("err = %v, want the stop said once", err)
	}
}

// bareConn is a server that answers AddHost and UpdateHost without the entry.
type bareConn struct{ grpc.ClientConnInterface }

func (c bareConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	err := c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
	switch r := reply.(type) {
	case *pb.AddHostResponse:
		r.Entry = nil
	case *pb.UpdateHostResponse:
		r.Entry = nil
	}
	return err
}

// TestAServerThatAnswersWithoutTheEntry: what was sent is what is stored, under the ID the
// server gave and at a version not known, as a record of the result's own.
func TestAServerThatAnswersWithoutTheEntry(t *testing.T) {
	svc, conn := inmemory.DialTest(t)
	p := NewFromConn(bareConn{conn}, Options{Timeout: 5 * time.Second, Log: logrus.New()})
	have := create(t, p, endpoint.Record{Hostname: "a.lan", IP: "10.0.0.1", Tags: []string{"t"}})
	want := have
	want.IP, want.Tags = "10.0.0.2", []string{"t", "u"}
	changes := []plan.Change{
		{Action: plan.Create, New: &endpoint.Record{Hostname: "b.lan", IP: "10.0.0.3", Tags: []string{"x"}}},
		{Action: plan.Update, Old: &have, New: &want},
	}
	before := deepCopy(changes)
	results := p.ApplyChanges(context.Background(), changes)
	if err := plan.ErrorOf(results); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(changes, before) {
		t.Fatalf("changes = %+v, want them as the caller left them", changes)
	}
	created := results[0].Stored
	if created == nil || created == changes[0].New || created.ID == "" || created.Hostname != "b.lan" || !slices.Equal(created.Tags, []string{"x"}) {
		t.Fatalf("created = %+v, want the planned record under the server's ID", created)
	}
	if _, err := svc.Store().Get(created.ID); err != nil {
		t.Fatalf("created ID %s: %v", created.ID, err)
	}
	updated := results[1].Stored
	wantStored := want
	wantStored.Version = ""
	if updated == nil || updated == changes[1].New || !reflect.DeepEqual(*updated, wantStored) {
		t.Fatalf("updated = %+v, want the planned record at no known version", updated)
	}
	created.Tags[0], updated.Tags[0] = "changed", "changed"
	if !reflect.DeepEqual(changes, before) {
		t.Fatal("a result shares a slice with the caller's records")
	}
}

// deepCopy copies changes and the records they point to.
func deepCopy(cs []plan.Change) []plan.Change {
	cp := func(r *endpoint.Record) *endpoint.Record {
		if r == nil {
			return nil
		}
		c := *r
		c.Tags, c.Aliases = slices.Clone(r.Tags), slices.Clone(r.Aliases)
		return &c
	}
	out := make([]plan.Change, len(cs))
	for i, c := range cs {
		out[i] = c
		out[i].Old, out[i].New = cp(c.Old), cp(c.New)
	}
	return out
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
	observe := func(method string, code codes.Code, _ time.Duration) { seen[method+" "+code.String()]++ }
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
	p := NewFromConn(conn, Options{Timeout: 5 * time.Second, Log: logrus.New()})
	hand := create(t, p, endpoint.Record{Hostname: "nas.lan", IP: "192.168.1.5", Tags: []string{"manual"}, Comment: "by hand"})
	want := &endpoint.Endpoint{Hostname: "nas.lan", Targets: []string{"10.0.0.5"}, OwnerTags: []string{"cluster:home", "k8s-operator", "namespace:d"},
		Sources: []endpoint.SourceRef{{Kind: "Ingress", Namespace: "d", Name: "n", UID: "uid"}}}
	recs, err := p.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	eps := []*endpoint.Endpoint{want}
	changes := reg.Decide(time.Now(), recs, eps, registry.Given{}).Changes
	if len(changes) != 1 || changes[0].Action != plan.Adopt {
		t.Fatalf("changes = %v", changes)
	}
	// Between the read and the write, the user renames the entry.
	renamed, err := svc.Store().Update(&pb.UpdateHostRequest{Id: hand.ID, ExpectedVersion: proto.String(hand.Version),
		Hostname: proto.String("files.lan"), IpAddress: proto.String("192.168.1.6")})
	if err != nil {
		t.Fatal(err)
	}
	results := p.ApplyChanges(context.Background(), changes)
	if ce := results[0].Err; ce == nil || !ce.Refused || !ce.Stale {
		t.Fatalf("result = %+v; want the adoption dropped as stale", results[0])
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
