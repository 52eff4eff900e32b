package soak

import (
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// ownTags are the operator's tags of an installation's entry under a cluster name.
func ownTags(id, cluster string, more ...string) []string {
	return append([]string{"cluster:" + cluster, "cluster-id:" + id, "k8s-operator", "kind:Ingress", "namespace:a1", "source:u1"}, more...)
}

// TestWritesAreTheWritersOwn: every write an installation sends is to an entry of its own
// identity or an adoption, leaves the entry its own or gives it back, and names a cluster it
// runs under; a namesake's entries, which carry its name, are not its own; twins share theirs.
func TestWritesAreTheWritersOwn(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	aEntry := &pb.HostEntry{Id: "ea", Hostname: "web.lan", IpAddress: "10.0.0.1", Version: "1", Tags: ownTags(idA, "a")}
	nEntry := &pb.HostEntry{Id: "en", Hostname: "web.lan", IpAddress: "10.0.14.1", Version: "1", Tags: ownTags(idN, "a")}
	hand := &pb.HostEntry{Id: "eh", Hostname: "nas.lan", IpAddress: "192.168.1.5", Version: "1", Tags: []string{"manual"}}
	adopted := &pb.HostEntry{Id: "eh", Hostname: "nas.lan", IpAddress: "10.0.0.5", Version: "2",
		Tags: append([]string{"manual", "pre-existing:true"}, ownTags(idA, "a", "original-ip:192.168.1.5")...)}
	cEntry := &pb.HostEntry{Id: "ec", Hostname: "c.lan", IpAddress: "10.0.99.1", Version: "1", Tags: []string{"k8s-operator", "cluster:c"}}
	tEntry := &pb.HostEntry{Id: "et", Hostname: "t1-pin.lan", IpAddress: "10.0.20.101", Version: "1", Tags: twinTags("t1", "u-t1")}
	v := func(s string) *string { return &s }
	update := func(inst string, before *pb.HostEntry, tags []string, at time.Duration) *write {
		after := proto.Clone(before).(*pb.HostEntry)
		after.Version += "+"
		if tags != nil {
			after.Tags = tags
		}
		return &write{inst: inst, at: t0.Add(at), method: methodUpdate, id: before.GetId(), expected: v(before.GetVersion()),
			req: &pb.UpdateHostRequest{Id: before.GetId(), Tags: &pb.TagsUpdate{Values: tags}}, after: after}
	}
	for _, tc := range []struct {
		name   string
		w      *write
		fail   bool
		unseen int
	}{
		{"a re-points its own entry", update("a", aEntry, nil, 0), false, 0},
		{"the namesake takes a's entry", update("n", aEntry, ownTags(idN, "a"), 0), true, 0},
		{"the namesake marks a's entry, a's tags kept", update("n", aEntry, ownTags(idA, "a", "pending-deletion:2026-01-01T00:00:00Z"), 0), true, 0},
		{"a's update of the namesake's entry fails on its version", func() *write {
			w := update("a", nEntry, ownTags(idA, "a"), 0)
			w.after, w.err = nil, errors.New("Aborted")
			return w
		}(), true, 0},
		{"a deletes the namesake's entry", &write{inst: "a", at: t0, method: methodDelete, id: "en", expected: v("1"), req: &pb.DeleteHostRequest{Id: "en"}}, true, 0},
		{"a deletes its own entry", &write{inst: "a", at: t0, method: methodDelete, id: "ea", expected: v("1"), req: &pb.DeleteHostRequest{Id: "ea"}}, false, 0},
		{"a adds an entry of the namesake's identity", &write{inst: "a", at: t0, method: methodAdd, host: "x.lan",
			req: &pb.AddHostRequest{Hostname: "x.lan", Tags: ownTags(idN, "a")}}, true, 0},
		{"a adds its own", &write{inst: "a", at: t0, method: methodAdd, host: "x.lan", req: &pb.AddHostRequest{Hostname: "x.lan", Tags: ownTags(idA, "a")}}, false, 0},
		{"a adopts the person's entry", update("a", hand, adopted.GetTags(), 0), false, 0},
		{"a gives the person's entry back", update("a", adopted, []string{"manual"}, 0), false, 0},
		{"a writes the person's entry without adopting it", update("a", hand, []string{"manual", "iot"}, 0), true, 0},
		{"a writes cluster c's entry", update("a", cEntry, ownTags(idA, "a"), 0), true, 0},
		{"a writes a name it does not run under", update("a", aEntry, ownTags(idA, "a-typo"), 0), true, 0},
		{"b writes its new name before its rename", update("b", &pb.HostEntry{Id: "eb", Version: "1", Tags: ownTags(idB, "b")}, ownTags(idB, "b-renamed"), -time.Second), true, 0},
		{"b writes its new name once renamed", update("b", &pb.HostEntry{Id: "eb", Version: "1", Tags: ownTags(idB, "b")}, ownTags(idB, "b-renamed"), time.Second), false, 0},
		{"b's old process writes the old name as the rename starts", update("b", &pb.HostEntry{Id: "eb", Version: "1", Tags: ownTags(idB, "b")}, nil, time.Second), false, 0},
		{"a twin marks the other's entry: their one identity", update("t2", tEntry, twinTags("t1", "u-t1", "pending-deletion:2026-01-01T00:00:00Z"), 0), false, 0},
		{"a twin deletes the other's entry", &write{inst: "t1", at: t0, method: methodDelete, id: "et", expected: v("1"), req: &pb.DeleteHostRequest{Id: "et"}}, false, 0},
		{"a twin writes a's entry", update("t1", aEntry, twinTags("a1", "u1"), 0), true, 0},
		{"a writes the twins' entry", update("a", tEntry, ownTags(idA, "a"), 0), true, 0},
		{"an update for a version the run never saw", &write{inst: "a", at: t0, method: methodUpdate, id: "ea", expected: v("7"),
			req: &pb.UpdateHostRequest{Id: "ea"}, after: &pb.HostEntry{Id: "ea", Version: "8", Tags: ownTags(idA, "a")}}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel()
			ck := testChecker(m, t0)
			m.rename = &renaming{inst: "b", from: "b", to: "b-renamed", at: t0}
			m.renamed("b", "b-renamed")
			l := newLedger()
			for _, e := range []*pb.HostEntry{aEntry, nEntry, hand, adopted, cEntry, tEntry, {Id: "eb", Version: "1", Tags: ownTags(idB, "b")}} {
				l.saw(e)
			}
			l.write(tc.w)
			_, unseenWrites := ck.checkWrites(l)
			unseen := len(unseenWrites)
			failed := slices.ContainsFunc(ck.Failures(), func(f Failure) bool { return f.Invariant == InvOwnWrites })
			if failed != tc.fail || unseen != tc.unseen {
				t.Fatalf("failures %v, unseen %d; want a failure: %v, unseen %d", ck.Failures(), unseen, tc.fail, tc.unseen)
			}
		})
	}
}

// TestRenameKeepsIDs: the renamed installation's entries keep their IDs and take the new name
// alone.
func TestRenameKeepsIDs(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	was := &pb.HostEntry{Id: "eb", Hostname: "b-1.lan", IpAddress: "10.0.2.1", Version: "3", Tags: ownTags(idB, "b")}
	for _, tc := range []struct {
		name string
		now  []*pb.HostEntry
		fail bool
	}{
		{"renamed in place", []*pb.HostEntry{{Id: "eb", Hostname: "b-1.lan", IpAddress: "10.0.2.1", Version: "4", Tags: ownTags(idB, "b-renamed")}}, false},
		{"not renamed", []*pb.HostEntry{was}, true},
		{"both names", []*pb.HostEntry{{Id: "eb", Hostname: "b-1.lan", IpAddress: "10.0.2.1", Version: "4", Tags: ownTags(idB, "b-renamed", "cluster:b")}}, true},
		{"deleted and added again", []*pb.HostEntry{{Id: "eb2", Hostname: "b-1.lan", IpAddress: "10.0.2.1", Version: "1", Tags: ownTags(idB, "b-renamed")}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ck := testChecker(newModel(), t0)
			got := ck.checkRename(newView(tc.now), &renaming{inst: "b", from: "b", to: "b-renamed", at: t0, snapshot: []*pb.HostEntry{was}})
			if (len(got) > 0) != tc.fail {
				t.Fatalf("failures %v, want a failure: %v", got, tc.fail)
			}
			for _, f := range got {
				if f.Invariant != InvRename {
					t.Fatalf("failure %v names %s, want %s", f, f.Invariant, InvRename)
				}
			}
		})
	}
}

// TestRenameWaitsForDeletionsSeen: the rename waits while the installation has an unmarked
// entry that names no object of it (one deleted while its kube-apiserver was away): renamed, it
// would leave the entry to nobody. A marked one goes as marked, and a handed-over line names
// no object but is wanted by its address. Soak seed 467 found this.
func TestRenameWaitsForDeletionsSeen(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := newModel()
	m.add(&Object{Cluster: "b", Namespace: "a1", Name: "web", Kind: KindHostMapping, addressing: bySpec, UID: "u1", Hosts: []string{"b-1.lan"}, IPs: []string{"10.0.2.1"}}, t0)
	handed := []string{"k8s-operator", "cluster:b", "cluster-id:" + idB, "shared:true"}
	for _, tc := range []struct {
		name  string
		entry *pb.HostEntry
		waits bool
	}{
		{"wanted", &pb.HostEntry{Id: "e1", Hostname: "b-1.lan", IpAddress: "10.0.2.1", Tags: ownTags(idB, "b")}, false},
		{"its object gone", &pb.HostEntry{Id: "e2", Hostname: "b-2.lan", IpAddress: "10.0.2.2", Tags: append(ownTags(idB, "b")[:5], "source:u2")}, true},
		{"its object gone, marked", &pb.HostEntry{Id: "e3", Hostname: "b-2.lan", IpAddress: "10.0.2.2", Tags: append(ownTags(idB, "b")[:5], "source:u2", "pending-deletion:2026-01-01T00:00:00Z")}, false},
		{"handed over, wanted", &pb.HostEntry{Id: "e4", Hostname: "b-1.lan", IpAddress: "10.0.2.1", Tags: handed}, false},
		{"handed over, not wanted", &pb.HostEntry{Id: "e5", Hostname: "b-1.lan", IpAddress: "10.0.2.9", Tags: handed}, true},
		{"another installation's", &pb.HostEntry{Id: "e6", Hostname: "a-1.lan", IpAddress: "10.0.1.1", Tags: ownTags(idA, "a")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ck := testChecker(m, t0)
			got := ck.renameUnsettled(newView([]*pb.HostEntry{tc.entry}), "b")
			if (len(got) > 0) != tc.waits {
				t.Fatalf("unsettled %v, want the rename to wait: %v", got, tc.waits)
			}
		})
	}
}

// TestQuietWindow: any write once the world has settled is a failure, one an entry.
func TestQuietWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ck := testChecker(newModel(), t0)
	l := newLedger()
	if got := ck.checkQuiet(nil, l, quietWindow(30*time.Second)); len(got) != 0 {
		t.Fatalf("failures without a write: %v", got)
	}
	before := &pb.HostEntry{Id: "ea", Hostname: "web.lan", IpAddress: "10.0.0.1", Version: "1", Tags: ownTags(idA, "a")}
	l.saw(before)
	v := "1"
	ws := []*write{
		{inst: "n", at: t0, method: methodUpdate, id: "ea", expected: &v, after: &pb.HostEntry{Id: "ea", Hostname: "web.lan", Version: "2", Tags: ownTags(idN, "a")}},
		{inst: "a", at: t0.Add(10 * time.Second), method: methodUpdate, id: "ea", expected: proto.String("2"),
			after: &pb.HostEntry{Id: "ea", Hostname: "web.lan", Version: "3", Tags: ownTags(idA, "a")}},
	}
	got := ck.checkQuiet(ws, l, quietWindow(30*time.Second))
	if len(got) != 1 || got[0].Invariant != InvQuiet || !slices.Equal(got[0].Hosts, []string{"web.lan"}) {
		t.Fatalf("failures %v, want one %s failure for web.lan", got, InvQuiet)
	}
}

// TestNamesakesOnRouter counts the other identities under an installation's name.
func TestNamesakesOnRouter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := newModel()
	ck := testChecker(m, t0)
	v := newView([]*pb.HostEntry{
		{Id: "1", Hostname: "a.lan", Tags: ownTags(idA, "a")},
		{Id: "2", Hostname: "n.lan", Tags: ownTags(idN, "a")},
		{Id: "3", Hostname: "n2.lan", Tags: ownTags(idN, "a")},
		{Id: "4", Hostname: "b.lan", Tags: ownTags(idB, "b")},
		{Id: "5", Hostname: "c.lan", Tags: []string{"k8s-operator", "cluster:a"}},
	})
	if got := ck.namesakesOnRouter(v, "a"); got != 1 {
		t.Errorf("a: %d namesakes, want 1", got)
	}
	if got := ck.namesakesOnRouter(v, "b"); got != 0 {
		t.Errorf("b: %d namesakes, want 0", got)
	}
	m.renamed("b", "a")
	if got := ck.namesakesOnRouter(v, "b"); got != 2 {
		t.Errorf("b renamed a: %d namesakes, want 2", got)
	}
}
