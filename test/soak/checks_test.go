package soak

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// The identities of the unit tests' installations.
const (
	idA = "0000000a"
	idB = "0000000b"
	idN = "0000000e"
	// idT is the identity twins t1 and t2 share.
	idT = "0000000f"
)

// world0 is a small settled world: cluster a's Ingress web in a1 wants web.lan at 10.0.0.1
// with an alias and a tag; the person has a free entry (p.lan) and an adopted one (hand-2.lan,
// claimed by a's HostMapping nas in a2); cluster c has c.lan.
func world0(t0 time.Time) (*Model, []*pb.HostEntry) {
	m := newModel()
	web := &Object{Cluster: "a", Namespace: "a1", Name: "web", Kind: KindIngress, UID: "u-web", Created: t0, Hosts: []string{"web.lan"},
		IPs: []string{"10.0.0.1"}, Aliases: []string{"x.lan"}, Tags: []string{"team-web", "cluster:z"}}
	nas := &Object{Cluster: "a", Namespace: "a2", Name: "nas", Kind: KindHostMapping, addressing: bySpec, UID: "u-nas", Created: t0,
		Hosts: []string{"hand-2.lan"}, IPs: []string{"10.0.0.2"}}
	handFree := &pb.HostEntry{Id: "h-free", IpAddress: "192.168.1.1", Hostname: "P.lan", Tags: []string{"manual"}, Comment: proto.String("mine"), Version: "3"}
	handAdopt := &pb.HostEntry{Id: "h-adopt", IpAddress: "192.168.1.2", Hostname: "Hand-2.lan", Aliases: []string{"old.lan"}, Tags: []string{"kind:printer"},
		Comment: proto.String("the nas"), Version: "1"}
	foreign := &pb.HostEntry{Id: "c1", IpAddress: "10.9.9.9", Hostname: "c.lan", Tags: []string{"k8s-operator", "cluster:c"}, Version: "1"}
	m.add(web, t0)
	m.add(nas, t0)
	m.hand["h-free"] = &HandEntry{Entry: handFree}
	m.hand["h-adopt"] = &HandEntry{Entry: handAdopt, Adoptable: true, Claimed: true}
	m.foreign["c1"] = foreign
	entries := []*pb.HostEntry{
		{Id: "e-web", IpAddress: "10.0.0.1", Hostname: "web.lan", Aliases: []string{"x.lan"}, Version: "1", Comment: proto.String("router-hosts-operator: Ingress a1/web"),
			Tags: []string{"cluster:a", "cluster-id:" + idA, "k8s-operator", "kind:Ingress", "namespace:a1", "source:u-web", "team-web"}},
		{Id: "h-adopt", IpAddress: "10.0.0.2", Hostname: "hand-2.lan", Version: "2", Comment: proto.String("the nas"),
			Tags: []string{"kind:printer", "pre-existing:true", "cluster:a", "cluster-id:" + idA, "k8s-operator", "kind:HostMapping", "namespace:a2", "source:u-nas",
				"original-hostname:Hand-2.lan", "original-alias:old.lan", "original-ip:192.168.1.2"}},
		proto.Clone(handFree).(*pb.HostEntry),
		proto.Clone(foreign).(*pb.HostEntry),
	}
	return m, entries
}

// nShared is n's entry for shared.lan, which shareNames has n hold.
var nShared = &pb.HostEntry{Id: "n-shared", IpAddress: "10.0.14.7", Hostname: "shared.lan", Version: "1", Comment: proto.String("router-hosts-operator: HostMapping a1/pin"),
	Tags: []string{"cluster:a", "cluster-id:" + idN, "k8s-operator", "kind:HostMapping", "namespace:a1", "source:u-n-pin"}}

// shareNames has a's namesake n hold shared.lan, which both claim from a namespace a1 of
// their own.
func shareNames(m *Model) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.add(&Object{Cluster: "n", Namespace: "a1", Name: "pin", Kind: KindHostMapping, addressing: bySpec, UID: "u-n-pin", Hosts: []string{"shared.lan"},
		IPs: []string{"10.0.14.7"}, pinned: true}, t0)
	m.add(&Object{Cluster: "a", Namespace: "a1", Name: "pin", Kind: KindHostMapping, addressing: bySpec, UID: "u-a-pin", Hosts: []string{"shared.lan"},
		IPs: []string{"10.0.0.7"}, pinned: true}, t0)
	m.heldBy["shared.lan"] = "n"
}

func entryByID(es []*pb.HostEntry, id string) *pb.HostEntry {
	for _, e := range es {
		if e.GetId() == id {
			return e
		}
	}
	return nil
}

func testChecker(m *Model, t0 time.Time) *checker {
	return newChecker(m, operatorFacts{clusters: map[string]time.Duration{"a": 4 * time.Second, "b": 4 * time.Second, "n": 4 * time.Second, "t": twinGrace},
		ids: map[string]string{"a": idA, "b": idB, "n": idN, "t1": idT, "t2": idT, "t": idT}, slack: time.Second}, t0)
}

// twinTags are the tags of the twins' entry for an object of theirs in namespace ns.
func twinTags(ns, uid string, more ...string) []string {
	return append([]string{"cluster:t", "cluster-id:" + idT, "k8s-operator", "kind:HostMapping", "namespace:" + ns, "source:" + uid}, more...)
}

// twinWorld adds settled twins to a world: t1's pinned name and t2's, each with its entry,
// and the name both read, which t2 holds at its own address (10.0.20.202) while t1 wants it at
// 10.0.20.201; t1's t1-0 was dropped while they held, and its entry stays.
func twinWorld(m *Model, t0 time.Time, es []*pb.HostEntry) []*pb.HostEntry {
	m.add(&Object{Cluster: "t1", Namespace: "t1", Name: "pin", Kind: KindHostMapping, addressing: bySpec, UID: "u-t1", Hosts: []string{"t1-pin.lan"},
		IPs: []string{"10.0.20.101"}, pinned: true}, t0)
	m.add(&Object{Cluster: "t2", Namespace: "t2", Name: "pin", Kind: KindHostMapping, addressing: bySpec, UID: "u-t2", Hosts: []string{"t2-pin.lan"},
		IPs: []string{"10.0.20.102"}, pinned: true}, t0)
	m.add(&Object{Cluster: "t", Namespace: "t0", Name: "shared", Kind: KindIngress, addressing: byChain, UID: "u-ts", Hosts: []string{"ts.lan"},
		IPs: []string{"10.0.20.201", "10.0.20.202"}, pinned: true}, t0)
	gone := &Object{Cluster: "t1", Namespace: "t1", Name: "web", Kind: KindHostMapping, addressing: bySpec, UID: "u-t1-web", Hosts: []string{"t1-0.lan"},
		IPs: []string{"10.0.20.5"}}
	m.add(gone, t0)
	m.remove(gone, t0.Add(time.Second))
	return append(es,
		&pb.HostEntry{Id: "t1-pin", IpAddress: "10.0.20.101", Hostname: "t1-pin.lan", Version: "5", Tags: twinTags("t1", "u-t1")},
		&pb.HostEntry{Id: "t2-pin", IpAddress: "10.0.20.102", Hostname: "t2-pin.lan", Version: "5", Tags: twinTags("t2", "u-t2")},
		&pb.HostEntry{Id: "ts", IpAddress: "10.0.20.202", Hostname: "ts.lan", Version: "9", Tags: twinTags("t0", "u-ts")},
		&pb.HostEntry{Id: "t1-0", IpAddress: "10.0.20.5", Hostname: "t1-0.lan", Version: "1", Tags: twinTags("t1", "u-t1-web")})
}

// TestEveryInvariantCanFail breaks each invariant in a settled world and expects the checker
// to name it, and nothing in the world as it is.
func TestEveryInvariantCanFail(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		break_ func(m *Model, es []*pb.HostEntry) []*pb.HostEntry
		want   string // "" for no failure
	}{
		{"settled world", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry { return es }, ""},
		{"wanted entry missing", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			return slices.DeleteFunc(es, func(e *pb.HostEntry) bool { return e.GetId() == "e-web" })
		}, InvWanted},
		{"wanted entry still marked", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			e := entryByID(es, "e-web")
			e.Tags = append(e.Tags, "pending-deletion:2026-01-01T00:00:00Z")
			return es
		}, InvWanted},
		{"wanted entry lacks an alias", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			entryByID(es, "e-web").Aliases = nil
			return es
		}, InvWanted},
		{"wanted entry lacks the object's tag", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			e := entryByID(es, "e-web")
			e.Tags = slices.DeleteFunc(e.Tags, func(t string) bool { return t == "team-web" })
			return es
		}, InvWanted},
		{"wanted entry names a second source", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			e := entryByID(es, "e-web")
			e.Tags = append(e.Tags, "source:u-gone")
			return es
		}, InvWanted},
		{"entry at an address nobody wants", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			entryByID(es, "e-web").IpAddress = "10.0.0.9"
			return es
		}, InvUnwanted},
		{"entry of a hostname nobody claims", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			return append(es, &pb.HostEntry{Id: "e-old", IpAddress: "10.0.0.3", Hostname: "old.lan", Version: "2",
				Tags: []string{"cluster:a", "cluster-id:" + idA, "k8s-operator", "kind:Ingress", "namespace:a1", "source:u-old", "pending-deletion:2026-01-01T00:00:00Z"}})
		}, InvUnwanted},
		{"entries name a namespace that let go", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			e := entryByID(es, "e-web")
			for i, tag := range e.Tags {
				if tag == "namespace:a1" {
					e.Tags[i] = "namespace:a3"
				}
			}
			return es
		}, InvUnwanted},
		{"held object keeps an address it never had", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			web := m.objects["a/a1/web"]
			web.addressing, web.IPs = byStatus, nil
			entryByID(es, "e-web").IpAddress = "10.0.0.7"
			return es
		}, InvWanted},
		{"hand-made entry written by someone else", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			e := entryByID(es, "h-free")
			e.Version, e.Tags = "4", []string{"manual", "k8s-operator"}
			return es
		}, InvHandMade},
		{"hand-made entry written back as it was (version bumped)", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			entryByID(es, "h-free").Version = "5"
			return es
		}, InvHandMade},
		{"hand-made entry deleted", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			return slices.DeleteFunc(es, func(e *pb.HostEntry) bool { return e.GetId() == "h-free" })
		}, InvHandMade},
		{"another cluster's entry written", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			entryByID(es, "c1").Version = "2"
			return es
		}, InvForeign},
		{"adopted entry lost the person's tags", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			e := entryByID(es, "h-adopt")
			e.Tags = e.Tags[1:]
			return es
		}, InvAdopted},
		{"adopted entry's comment changed", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			entryByID(es, "h-adopt").Comment = proto.String("router-hosts-operator: HostMapping a2/nas")
			return es
		}, InvAdopted},
		{"adopted entry lacks its loan", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			e := entryByID(es, "h-adopt")
			e.Tags = slices.DeleteFunc(e.Tags, func(t string) bool { return strings.HasPrefix(t, "original-ip:") })
			return es
		}, InvAdopted},
		{"released entry not as the person had it", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			m.remove(m.objects["a/a2/nas"], t0)
			e := entryByID(es, "h-adopt")
			e.IpAddress, e.Hostname, e.Aliases, e.Tags = "10.0.0.2", "hand-2.lan", []string{"old.lan"}, []string{"kind:printer"}
			return es
		}, InvReleased},
		{"released entry exactly as the person had it", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			m.remove(m.objects["a/a2/nas"], t0)
			e := entryByID(es, "h-adopt")
			e.IpAddress, e.Hostname, e.Aliases, e.Tags = "192.168.1.2", "Hand-2.lan", []string{"old.lan"}, []string{"kind:printer"}
			return es
		}, ""},
		{"an entry nobody made", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			return append(es, &pb.HostEntry{Id: "x", IpAddress: "10.0.0.5", Hostname: "web.lan", Tags: []string{"k8s-operator", "cluster:a-typo"}, Version: "1"})
		}, InvNobodyMade},
		{"an alias another namespace's entry carries too", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			entryByID(es, "h-adopt").Aliases = []string{"x.lan"}
			return es
		}, InvOneHolder},
		{"an alias the person's entry carries too", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			entryByID(es, "h-free").Aliases = []string{"x.lan"}
			return es
		}, InvOneHolder},
		{"an alias another namespace holds, not written", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			m.objects["a/a2/nas"].Aliases = []string{"x.lan"}
			return es
		}, ""},
		{"two entries for one hostname and address", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			return append(es, &pb.HostEntry{Id: "dup", IpAddress: "10.0.0.1", Hostname: "WEB.lan", Version: "1"})
		}, InvDuplicate},
		{"an entry of a's name without its identity", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			e := entryByID(es, "e-web")
			e.Tags = slices.DeleteFunc(e.Tags, func(t string) bool { return strings.HasPrefix(t, "cluster-id:") })
			return es
		}, InvNobodyMade},
		{"an entry of a's identity under a name a never ran as", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			e := entryByID(es, "e-web")
			e.Tags[slices.Index(e.Tags, "cluster:a")] = "cluster:zz"
			return es
		}, InvNobodyMade},
		{"the namesake keeps an entry for a name only a claims", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			return append(es, &pb.HostEntry{Id: "n-web", IpAddress: "10.0.14.1", Hostname: "web.lan", Version: "1", Comment: proto.String("router-hosts-operator: Ingress a1/web"),
				Tags: []string{"cluster:a", "cluster-id:" + idN, "k8s-operator", "kind:Ingress", "namespace:a1", "source:u-n-web"}})
		}, InvUnwanted},
		{"a name the namesake holds: a's claim is refused", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			shareNames(m)
			return append(es, nShared)
		}, ""},
		{"a name the namesake holds, written by a too", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			shareNames(m)
			return append(es, nShared, &pb.HostEntry{Id: "a-shared", IpAddress: "10.0.0.7", Hostname: "shared.lan", Version: "1",
				Comment: proto.String("router-hosts-operator: HostMapping a1/pin"),
				Tags:    []string{"cluster:a", "cluster-id:" + idA, "k8s-operator", "kind:HostMapping", "namespace:a1", "source:u-a-pin"}})
		}, InvUnwanted},
		{"a name the namesake holds, taken over by a", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			shareNames(m)
			e := proto.Clone(nShared).(*pb.HostEntry)
			e.IpAddress, e.Tags = "10.0.0.7", []string{"cluster:a", "cluster-id:" + idA, "k8s-operator", "kind:HostMapping", "namespace:a1", "source:u-a-pin"}
			return append(es, e)
		}, InvUnwanted},
		{"twins holding: a shared name at either twin's address, a dropped name kept, a mark left", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			es = twinWorld(m, t0, es)
			e := entryByID(es, "t1-0")
			e.Tags = append(e.Tags, "pending-deletion:2026-01-01T00:00:00Z")
			return append(es, &pb.HostEntry{Id: "ts-2", IpAddress: "10.0.20.201", Hostname: "ts.lan", Version: "1", Tags: twinTags("t0", "u-ts")})
		}, ""},
		{"a name a twin's object wants has no entry", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			es = twinWorld(m, t0, es)
			return slices.DeleteFunc(es, func(e *pb.HostEntry) bool { return e.GetId() == "t2-pin" })
		}, InvWanted},
		{"a twin's entry at an address nobody asked for on its name", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			es = twinWorld(m, t0, es)
			entryByID(es, "ts").IpAddress = "10.0.20.101"
			return es
		}, InvUnwanted},
		{"an entry of the twins' identity under a name they never ran as", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			es = twinWorld(m, t0, es)
			e := entryByID(es, "t1-pin")
			e.Tags[0] = "cluster:a"
			return es
		}, InvNobodyMade},
		{"the twins write a name of a's", func(m *Model, es []*pb.HostEntry) []*pb.HostEntry {
			es = twinWorld(m, t0, es)
			return append(es, &pb.HostEntry{Id: "t-web", IpAddress: "10.0.0.9", Hostname: "web.lan", Version: "1", Tags: twinTags("a1", "u-web")})
		}, InvUnwanted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, es := world0(t0)
			es = tc.break_(m, es)
			ck := testChecker(m, t0)
			v := newView(es)
			ck.continuous(v, t0.Add(time.Minute))
			got := append(ck.Failures(), ck.final(v)...)
			var names []string
			for _, f := range got {
				names = append(names, f.Invariant)
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Fatalf("failures in a world that holds: %v", got)
			case tc.want != "" && !slices.Contains(names, tc.want):
				t.Fatalf("got %v, want a %s failure", got, tc.want)
			}
		})
	}
}

// TestStickyNamespace: a cluster's entries move from one namespace to another only once the
// first has let go and every entry it had was marked for its whole grace period (4 s).
func TestStickyNamespace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	entry := func(ns string, marked time.Duration) *view {
		tags := []string{"cluster:a", "cluster-id:" + idA, "k8s-operator", "namespace:" + ns}
		if marked >= 0 {
			tags = append(tags, "pending-deletion:"+t0.Add(marked).Format(time.RFC3339))
		}
		return newView([]*pb.HostEntry{{Id: "e", IpAddress: "10.0.0.1", Hostname: "web.lan", Version: "1", Tags: tags}})
	}
	for _, tc := range []struct {
		name string
		// letGo is when a1 stops claiming web.lan; negative for never.
		letGo time.Duration
		// first is a1's entry at 11 s, marked at that offset (negative: not marked); then
		// a2's entry is listed at moved.
		marked, moved time.Duration
		fail          bool
	}{
		{"handed over once a1's mark is past its grace period", 10 * time.Second, 10 * time.Second, 15 * time.Second, false},
		{"moved before a1's grace period could end", 10 * time.Second, 10 * time.Second, 12 * time.Second, true},
		{"moved while a1 claimed it all along", -1, 0, 15 * time.Second, true},
		{"handed over though no listing saw the mark", 10 * time.Second, -1, 20 * time.Second, false},
		{"moved sooner than any mark could have ended", 10 * time.Second, -1, 13 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel()
			a1 := &Object{Cluster: "a", Namespace: "a1", Name: "one", Hosts: []string{"web.lan"}, IPs: []string{"10.0.0.1"}}
			a2 := &Object{Cluster: "a", Namespace: "a2", Name: "two", Hosts: []string{"web.lan"}, IPs: []string{"10.0.0.1"}}
			m.add(a1, t0)
			m.add(a2, t0)
			ck := testChecker(m, t0)
			if tc.letGo >= 0 {
				m.remove(a1, t0.Add(tc.letGo))
			}
			ck.continuous(entry("a1", tc.marked), t0.Add(11*time.Second))
			ck.continuous(entry("a2", -1), t0.Add(tc.moved))
			if got := len(ck.Failures()) > 0; got != tc.fail {
				t.Fatalf("failures %v, want a failure: %v", ck.Failures(), tc.fail)
			}
		})
	}
}

// TestAvailability: a claimed hostname that stops resolving is a failure with its duration,
// unless its claim ended or the router was restarting.
func TestAvailability(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	up := map[string][]hostsLine{"web.lan": {{IP: "10.0.0.1", Hostname: "web.lan", Tags: []string{"source:u1"}}}}
	down := map[string][]hostsLine{}
	for _, tc := range []struct {
		name string
		// between runs between the poll that sees the name and the one that does not.
		between func(m *Model, o *Object, at time.Time)
		held    bool
		want    time.Duration // the vanishing's duration; 0 for none
	}{
		{"gone while claimed", func(*Model, *Object, time.Time) {}, false, 150 * time.Millisecond},
		{"gone while a held object claims it", func(*Model, *Object, time.Time) {}, true, 150 * time.Millisecond},
		{"gone after its claim ended", func(m *Model, o *Object, at time.Time) { m.remove(o, at) }, false, 0},
		{"gone while the router restarts", func(m *Model, o *Object, at time.Time) { m.down(&m.routerDown, at) }, false, 0},
		{"handed to a claim the operators cannot have seen yet", func(m *Model, o *Object, at time.Time) {
			m.add(&Object{Cluster: "a", Namespace: "a2", Name: "new", UID: "u2", Hosts: []string{"web.lan"}, IPs: []string{"10.0.0.2"}}, at.Add(-time.Second))
			m.remove(o, at)
		}, false, 0},
		{"handed to a claim the operators have seen", func(m *Model, o *Object, at time.Time) {
			m.add(&Object{Cluster: "a", Namespace: "a2", Name: "new", UID: "u2", Hosts: []string{"web.lan"}, IPs: []string{"10.0.0.2"}}, at.Add(-5*time.Second))
			m.remove(o, at)
		}, false, 150 * time.Millisecond},
		{"handed to a claim made while the apiserver was away", func(m *Model, o *Object, at time.Time) {
			m.down(&m.apiDown, at.Add(-20*time.Second))
			m.up(&m.apiDown, at.Add(-10*time.Second))
			m.add(&Object{Cluster: "a", Namespace: "a2", Name: "new", UID: "u2", Hosts: []string{"web.lan"}, IPs: []string{"10.0.0.2"}}, at.Add(-9*time.Second))
			m.remove(o, at)
		}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel()
			o := &Object{Cluster: "a", Namespace: "a1", Name: "web", UID: "u1", Hosts: []string{"web.lan"}, IPs: []string{"10.0.0.1"}}
			if tc.held {
				o.addressing, o.IPs = byStatus, nil
			}
			m.add(o, t0.Add(-time.Minute))
			ck := testChecker(m, t0)
			ck.pollHosts(up, t0.Add(50*time.Millisecond))
			ck.pollHosts(up, t0.Add(100*time.Millisecond))
			tc.between(m, o, t0.Add(120*time.Millisecond))
			ck.pollHosts(down, t0.Add(150*time.Millisecond))
			ck.pollHosts(down, t0.Add(200*time.Millisecond))
			ck.pollHosts(up, t0.Add(300*time.Millisecond))
			var got time.Duration
			for _, v := range ck.Vanishes {
				got += v.Duration
			}
			if got != tc.want {
				t.Fatalf("vanished for %v (%v), want %v", got, ck.Failures(), tc.want)
			}
		})
	}
}

// TestHostsFileRoundTrip: the test server's hosts file reads back as the entries it renders,
// tags included (a held object is known by its source tag there).
func TestHostsFileRoundTrip(t *testing.T) {
	es := []*pb.HostEntry{
		{IpAddress: "10.0.0.1", Hostname: "Web.lan", Aliases: []string{"b.lan", "a.lan"}, Comment: proto.String("router-hosts-operator: Ingress a1/web"),
			Tags: []string{"k8s-operator", "source:u1"}},
		{IpAddress: "10.0.0.2", Hostname: "bare.lan"},
		{IpAddress: "10.0.0.3", Hostname: "tagged.lan", Tags: []string{"iot"}},
	}
	got := parseHostsFile([]byte(rhtestserver.FormatHostsFile(es)))
	want := map[string][]hostsLine{
		"web.lan":    {{IP: "10.0.0.1", Hostname: "Web.lan", Aliases: []string{"a.lan", "b.lan"}, Tags: []string{"k8s-operator", "source:u1"}}},
		"bare.lan":   {{IP: "10.0.0.2", Hostname: "bare.lan", Aliases: []string{}}},
		"tagged.lan": {{IP: "10.0.0.3", Hostname: "tagged.lan", Aliases: []string{}, Tags: []string{"iot"}}},
	}
	for h, w := range want {
		g := got[h]
		if len(g) != 1 || g[0].IP != w[0].IP || g[0].Hostname != w[0].Hostname || !slices.Equal(g[0].Aliases, w[0].Aliases) || !slices.Equal(g[0].Tags, w[0].Tags) {
			t.Errorf("%s: got %+v, want %+v", h, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d hostnames, want %d", len(got), len(want))
	}
}

// TestGrowthIsJudgedOnTheLongestLivedLeader: the resources invariant fits the longest-lived
// process, its first minute left out, and fails one that grows with the work, or too short a
// span to judge.
func TestGrowthIsJudgedOnTheLongestLivedLeader(t *testing.T) {
	series := func(proc string, minutes int, rssPerMin float64) []sample {
		var out []sample
		for s := 0; s <= minutes*60; s += 5 {
			age := time.Duration(s) * time.Second
			// Warm-up in the first minute, then steady (or growing), with the collector's sawtooth.
			rss := 40*1024 + rssPerMin*1024*age.Minutes() + float64(s%30)*20
			if age < time.Minute {
				rss = 20 * 1024
			}
			out = append(out, sample{proc: proc, age: age, rssKiB: rss, goroutines: 120, fds: 30})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		samples []sample
		fail    bool
	}{
		{"steady for 12 minutes", append(series("a-0#3", 12, 0), series("a-1#2", 3, 5)...), false},
		{"4 MiB a minute for 12 minutes", series("a-0#3", 12, 4), true},
		{"followed for 3 minutes only", series("a-0#3", 3, 0), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := fitGrowth(tc.samples)
			if f := g.failure(0); (f != nil) != tc.fail {
				t.Fatalf("result %v on %s, want a failure: %v", f, g, tc.fail)
			}
		})
	}
}

// TestGoroutineCensus counts a stack dump's goroutines by the first function of ours (or a
// library's) they are in.
func TestGoroutineCensus(t *testing.T) {
	dump := "SIGQUIT: quit\nPC=0x1 m=0 sigcode=0\n\n" +
		"goroutine 1 [select]:\nruntime.gopark(0x1)\n\t/go/src/runtime/proc.go:1\nk8s.io/client-go/tools/cache.(*Reflector).watch(0x2)\n\t/x.go:2\n\n" +
		"goroutine 7 [IO wait]:\ninternal/poll.runtime_pollWait(0x1)\n\t/y.go:1\nnet/http.(*persistConn).readLoop(0x3)\n\t/z.go:3\n\n" +
		"goroutine 9 [select]:\nruntime.gopark(0x1)\n\t/go/src/runtime/proc.go:1\nk8s.io/client-go/tools/cache.(*Reflector).watch(0x4)\n\t/x.go:2\n"
	got := goroutineCensus(dump)
	want := []string{"    2 k8s.io/client-go/tools/cache.(*Reflector).watch", "    1 net/http.(*persistConn).readLoop"}
	if !slices.Equal(got, want) {
		t.Fatalf("census %q, want %q", got, want)
	}
}

// A run directory is one run's: a second run on it is refused until the first lets go.
func TestARunDirectoryIsOneRuns(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDir(dir)
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	if _, err := lockDir(dir); err == nil {
		t.Fatal("a second run took the directory the first is using")
	}
	unlock()
	again, err := lockDir(dir)
	if err != nil {
		t.Fatalf("after the first run let go: %v", err)
	}
	again()
}
