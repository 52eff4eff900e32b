package soak

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// shareTags are the tags of an installation's entry for the shared name.
func shareTags(id, cluster, ns, uid string, more ...string) []string {
	return append([]string{"cluster:" + cluster, "cluster-id:" + id, "k8s-operator", "kind:HostMapping", "namespace:" + ns, "shared:true", "source:" + uid}, more...)
}

// TestSharingWrites: on a shared line of another installation, an installation writes its
// own co-owner tag and nothing else; a line of its own it hands over to its first co-owner.
func TestSharingWrites(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	aLine := &pb.HostEntry{Id: "sa", Hostname: shareHost, IpAddress: "10.0.0.9", Version: "1", Tags: shareTags(idA, "a", shareNamespace("a"), "u-a")}
	coOwned := &pb.HostEntry{Id: "sa", Hostname: shareHost, IpAddress: "10.0.0.9", Version: "2",
		Tags: shareTags(idA, "a", shareNamespace("a"), "u-a", "co-owner:b@"+idB)}
	unshared := &pb.HostEntry{Id: "ua", Hostname: "web.lan", IpAddress: "10.0.0.1", Version: "1", Tags: ownTags(idA, "a")}
	v := func(s string) *string { return &s }
	update := func(inst string, before *pb.HostEntry, tags []string) *write {
		after := proto.Clone(before).(*pb.HostEntry)
		after.Version += "+"
		after.Tags = tags
		return &write{inst: inst, at: t0, method: methodUpdate, id: before.GetId(), expected: v(before.GetVersion()),
			req: &pb.UpdateHostRequest{Id: before.GetId(), Tags: &pb.TagsUpdate{Values: tags}}, after: after}
	}
	handedToB := []string{"k8s-operator", "cluster:b", "cluster-id:" + idB, "shared:true"}
	for _, tc := range []struct {
		name string
		w    *write
		fail bool
	}{
		{"b co-owns a's shared line", update("b", aLine, coOwned.GetTags()), false},
		{"b withdraws from a's line", update("b", coOwned, aLine.GetTags()), false},
		{"b co-owns a line a did not share", update("b", unshared, append(slices.Clone(unshared.GetTags()), "co-owner:b@"+idB)), true},
		{"b co-owns and marks a's line", update("b", aLine, append(slices.Clone(coOwned.GetTags()), "pending-deletion:2026-01-01T00:00:00Z")), true},
		{"b writes n's co-owner tag", update("b", aLine, append(slices.Clone(aLine.GetTags()), "co-owner:a@"+idN)), true},
		{"b co-owns under a name it does not run under", update("b", aLine, append(slices.Clone(aLine.GetTags()), "co-owner:b-typo@"+idB)), true},
		{"b co-owns and re-points a's line", func() *write {
			w := update("b", aLine, coOwned.GetTags())
			w.after.IpAddress = "10.0.0.10"
			return w
		}(), true},
		{"a hands its line over to its co-owner b", update("a", coOwned, handedToB), false},
		{"a gives its line to b, which does not co-own it", update("a", aLine, handedToB), true},
		{"a hands over to b without shared:true", update("a", coOwned, handedToB[:3]), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel()
			ck := testChecker(m, t0)
			l := newLedger()
			for _, e := range []*pb.HostEntry{aLine, coOwned, unshared} {
				l.saw(e)
			}
			l.write(tc.w)
			ck.checkWrites(l)
			failed := slices.ContainsFunc(ck.Failures(), func(f Failure) bool { return f.Invariant == InvOwnWrites })
			if failed != tc.fail {
				t.Fatalf("failures %v; want a failure: %v", ck.Failures(), tc.fail)
			}
		})
	}
}

// TestSharedAvailable: the shared name may lose a line only when another wanted address
// stands in its place, or when no cluster that still wants the line's address had its tag on
// it.
func TestSharedAvailable(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	line := func(ip string, tags ...string) hostsLine { return hostsLine{IP: ip, Hostname: shareHost, Tags: tags} }
	aOwn := line("10.0.0.9", shareTags(idA, "a", shareNamespace("a"), "u-a")...)
	aCoOwnedByB := line("10.0.0.9", shareTags(idA, "a", shareNamespace("a"), "u-a", "co-owner:b@"+idB)...)
	bHandedOver := line("10.0.0.9", "k8s-operator", "cluster:b", "cluster-id:"+idB, "shared:true")
	bOwn := line("10.0.1.9", shareTags(idB, "b", shareNamespace("b"), "u-b")...)
	for _, tc := range []struct {
		name string
		// bIP is b's address; aGoes whether a's object goes between the polls.
		bIP         string
		aGoes       bool
		first, then []hostsLine
		fail        bool
	}{
		{"a goes, b's own line stays", "10.0.1.9", true, []hostsLine{aOwn, bOwn}, []hostsLine{bOwn}, false},
		{"a's line handed over to b", "10.0.0.9", true, []hostsLine{aCoOwnedByB}, []hostsLine{bHandedOver}, false},
		{"a's line b co-owns deleted", "10.0.0.9", true, []hostsLine{aCoOwnedByB}, nil, true},
		{"b's own line gone while a's stays", "10.0.1.9", false, []hostsLine{aOwn, bOwn}, []hostsLine{aOwn}, false},
		{"a's line b never co-owned goes", "10.0.0.9", true, []hostsLine{aOwn, bOwn}, []hostsLine{bOwn}, false},
		{"every line gone", "10.0.1.9", false, []hostsLine{aOwn, bOwn}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel()
			a := shareObject("a", "10.0.0.9")
			b := shareObject("b", tc.bIP)
			m.add(a, t0.Add(-time.Minute))
			m.add(b, t0.Add(-time.Minute))
			ck := testChecker(m, t0)
			poll := func(at time.Duration, lines []hostsLine) {
				ck.pollHosts(map[string][]hostsLine{shareHost: lines}, t0.Add(at))
			}
			poll(0, tc.first)
			if tc.aGoes {
				m.remove(a, t0.Add(10*time.Millisecond))
			}
			poll(5*time.Second, tc.first)
			poll(5*time.Second+50*time.Millisecond, tc.then)
			poll(5*time.Second+100*time.Millisecond, tc.then)
			ck.closeShareGap(t0.Add(6 * time.Second))
			failed := slices.ContainsFunc(ck.Failures(), func(f Failure) bool { return f.Invariant == InvSharedAvailable })
			if failed != tc.fail {
				t.Fatalf("failures %v; want a failure: %v", ck.Failures(), tc.fail)
			}
		})
	}
}

// TestSharedAtRest: at rest, a line a cluster co-owns serves that cluster's address, and a
// co-owner tag stands only for a cluster that wants the line's address, under the name it runs
// as.
func TestSharedAtRest(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	line := func(tags ...string) *pb.HostEntry {
		return &pb.HostEntry{Id: "sa", Hostname: shareHost, IpAddress: "10.0.0.9", Version: "3", Comment: proto.String("router-hosts-operator: HostMapping a-share/share-a"),
			Tags: tags}
	}
	for _, tc := range []struct {
		name string
		// bIP is b's address ("" for no object of b's); aWants whether a's object is there.
		bIP    string
		aWants bool
		e      *pb.HostEntry
		want   string
	}{
		{"b co-owns a's line", "10.0.0.9", true, line(shareTags(idA, "a", shareNamespace("a"), "u-a", "co-owner:b@"+idB)...), ""},
		{"b wants a's address and does not co-own it", "10.0.0.9", true, line(shareTags(idA, "a", shareNamespace("a"), "u-a")...), InvWanted},
		{"b co-owns a's line it no longer wants", "", true, line(shareTags(idA, "a", shareNamespace("a"), "u-a", "co-owner:b@"+idB)...), InvUnwanted},
		{"b's co-owner tag under its old name", "10.0.0.9", true, line(shareTags(idA, "a", shareNamespace("a"), "u-a", "co-owner:b-old@"+idB)...), InvWanted},
		{"b's co-owner tag twice", "10.0.0.9", true, line(shareTags(idA, "a", shareNamespace("a"), "u-a", "co-owner:b@"+idB, "co-owner:b@"+idB)...), InvWanted},
		{"a's line not handed over", "10.0.0.9", false, line(shareTags(idA, "a", shareNamespace("a"), "u-a", "co-owner:b@"+idB)...), InvUnwanted},
		{"a's entry without shared:true", "", true, line("cluster:a", "cluster-id:"+idA, "k8s-operator", "kind:HostMapping", "namespace:"+shareNamespace("a"), "source:u-a"), InvWanted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel()
			if tc.aWants {
				a := shareObject("a", "10.0.0.9")
				a.UID = "u-a"
				m.add(a, t0)
			}
			if tc.bIP != "" {
				b := shareObject("b", tc.bIP)
				b.UID = "u-b"
				m.add(b, t0)
			}
			fs := testChecker(m, t0).final(newView([]*pb.HostEntry{tc.e}))
			if tc.want == "" && len(fs) > 0 || tc.want != "" && !slices.ContainsFunc(fs, func(f Failure) bool { return f.Invariant == tc.want }) {
				t.Fatalf("failures %v, want %q", fs, tc.want)
			}
		})
	}
}
