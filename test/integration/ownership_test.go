package integration

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/planner"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// handMade writes an entry straight into the server's store, as a person with the router-hosts
// CLI would: any spelling, any tags (the server validates none), any comment.
func (h *harness) handMade(hostname, ip string, aliases, tags []string, comment string) endpoint.Record {
	h.t.Helper()
	req := &pb.AddHostRequest{IpAddress: ip, Hostname: hostname, Aliases: aliases, Tags: tags}
	if comment != "" {
		req.Comment = proto.String(comment)
	}
	e, err := h.srv.Store().Add(req)
	if err != nil {
		h.t.Fatalf("hand-made entry: %v", err)
	}
	return h.byID(e.GetId())
}

// byID returns the server's entry with id.
func (h *harness) byID(id string) endpoint.Record {
	h.t.Helper()
	recs, err := h.prov.Records(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID == id {
			return r
		}
	}
	h.t.Fatalf("no entry %s", id)
	return endpoint.Record{}
}

// quiet runs two syncs and fails if they write anything.
func (h *harness) quiet(when string) {
	h.t.Helper()
	h.srv.Service().ResetCalls()
	h.sync()
	h.sync()
	if n := h.writes(); n != 0 {
		h.t.Fatalf("%s: steady syncs wrote %d times", when, n)
	}
}

// sameAsFound compares what a user sees of an entry: everything but the version.
func sameAsFound(t *testing.T, got, found endpoint.Record) {
	t.Helper()
	norm := func(r endpoint.Record) endpoint.Record {
		r.Version = ""
		if len(r.Aliases) == 0 {
			r.Aliases = nil
		}
		if len(r.Tags) == 0 {
			r.Tags = nil
		}
		return r
	}
	if !reflect.DeepEqual(norm(got), norm(found)) {
		t.Fatalf("entry is\n  %+v\nwant it as found\n  %+v", got, found)
	}
}

func TestAdoptionIsAReversibleLoan(t *testing.T) {
	h := newHarness(t, options{grace: time.Minute})
	// A hand-made entry, spelled in capitals, whose tags look like the operator's and one of
	// which the operator would never write itself.
	userTags := []string{"manual", "kind:printer", "source:hand", "namespace:iot", "cluster:proxmox", "has space"}
	found := h.handMade("NAS.lan", "192.168.1.5", []string{"old-nas.lan"}, userTags, "by hand")

	ing := h.create(ingress(h.ns, "nas", enabled("ip-address", "10.5.0.1", "aliases", "storage.lan", "tags", "team-a"), "nas.lan"))
	h.waitHost("nas.lan", "10.5.0.1")
	out := h.sync()
	if len(out.Changes) != 1 || out.Changes[0].Action != plan.Adopt {
		t.Fatalf("changes = %v, want one adopt (no duplicate for the other spelling)", out.Changes)
	}
	a := h.byID(found.ID)
	if a.Hostname != "nas.lan" || a.IP != "10.5.0.1" || !reflect.DeepEqual(a.Aliases, []string{"storage.lan"}) || a.Comment != "by hand" {
		t.Fatalf("adopted = %+v; want the cluster's name, IP and aliases, the user's comment", a)
	}
	if !reflect.DeepEqual(a.Tags[:len(userTags)], userTags) {
		t.Fatalf("adopted tags = %q; want the user's %q first, verbatim and in order", a.Tags, userTags)
	}
	for _, tag := range []string{"k8s-operator", registry.ClusterTag("test"), registry.IdentityTag(out.ClusterID), "pre-existing:true", "source:" + string(ing.UID), "namespace:" + h.ns} {
		if !a.HasTag(tag) {
			t.Errorf("adopted entry lacks %q: %q", tag, a.Tags)
		}
	}
	if a.HasTag("team-a") {
		t.Errorf("the cluster's own tag was added to an adopted entry: %q", a.Tags)
	}
	if n := len(h.entries("nas.lan")) + len(h.entries("NAS.lan")); n != 1 {
		t.Fatalf("%d entries for nas.lan in any spelling, want 1", n)
	}
	h.quiet("after adoption")

	// The address changes: one field, in place; the user's tags stay as they are.
	h.update(ing, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/ip-address"] = "10.5.0.2" })
	h.waitHost("nas.lan", "10.5.0.2")
	h.sync()
	moved := h.byID(found.ID)
	if moved.IP != "10.5.0.2" || !reflect.DeepEqual(moved.Tags, a.Tags) || version(t, moved) != version(t, a)+1 {
		t.Fatalf("after the IP change = %+v; want only the IP changed (one event)", moved)
	}

	// A restart (or another replica) reads the loan from the entry itself.
	h.build(options{grace: time.Minute})
	h.waitHost("nas.lan", "10.5.0.2")
	h.quiet("after a restart")

	// The user tags the entry while it is on loan, with tags that look like the operator's:
	// they are the user's, left alone now and given back on release.
	cur := h.byID(found.ID)
	if _, err := h.srv.Store().Update(&pb.UpdateHostRequest{Id: cur.ID, ExpectedVersion: proto.String(cur.Version),
		Tags: &pb.TagsUpdate{Values: append(slices.Clone(cur.Tags), "kind:nas-box", "cluster:proxmox2")}}); err != nil {
		t.Fatal(err)
	}
	h.quiet("after the user tagged the adopted entry")
	found.Tags = append(slices.Clone(found.Tags), "kind:nas-box", "cluster:proxmox2")

	// The object goes: marked, then after the grace period given back exactly as found.
	h.delete(ing)
	h.waitGone("nas.lan")
	if out := h.sync(); len(out.Changes) != 1 || out.Changes[0].Action != plan.Mark {
		t.Fatalf("changes = %v, want one mark", out.Changes)
	}
	h.clock.Step(2 * time.Minute)
	if out := h.sync(); len(out.Changes) != 1 || out.Changes[0].Action != plan.Release {
		t.Fatalf("changes = %v, want one release", out.Changes)
	}
	sameAsFound(t, h.byID(found.ID), found)
	h.quiet("after release")
}

func TestAdoptionPairsEntriesByAddress(t *testing.T) {
	h := newHarness(t, options{grace: time.Minute})
	hand := h.handMade("nas.lan", "10.0.0.2", nil, []string{"manual"}, "")
	ing := h.create(ingress(h.ns, "nas", enabled("ip-address", "10.0.0.1,10.0.0.2"), "nas.lan"))
	h.waitHost("nas.lan", "10.0.0.1", "10.0.0.2")
	out := h.sync()
	var acts []string
	for _, c := range out.Changes {
		acts = append(acts, string(c.Action)+" "+ipOfChange(c))
	}
	if !reflect.DeepEqual(acts, []string{"adopt 10.0.0.2", "create 10.0.0.1"}) {
		t.Fatalf("changes = %q; the hand-made entry keeps its own address, the other is created", acts)
	}
	if a := h.byID(hand.ID); a.IP != "10.0.0.2" || !a.HasTag("pre-existing:true") {
		t.Fatalf("adopted = %+v", a)
	}
	var created string
	for _, e := range h.entries("nas.lan") {
		if e.ID != hand.ID {
			created = e.ID
		}
	}

	// The wanted set shrinks to the adopted address: the created entry goes, the adopted stays.
	h.update(ing, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/ip-address"] = "10.0.0.2" })
	h.waitHost("nas.lan", "10.0.0.2")
	if out := h.sync(); len(out.Changes) != 1 || out.Changes[0].Action != plan.Mark || out.Changes[0].Old.ID != created {
		t.Fatalf("changes = %v, want the created entry marked", out.Changes)
	}
	h.clock.Step(2 * time.Minute)
	h.sync()
	if got := h.entries("nas.lan"); len(got) != 1 || got[0].ID != hand.ID || !got[0].HasTag("k8s-operator") {
		t.Fatalf("entries = %+v; want only the adopted entry, still owned", got)
	}

	// A new address re-points the adopted entry instead of leaving a stale hand-made line.
	h.update(ing, func(i *networkingv1.Ingress) { i.Annotations["router-hosts.fzymgc.house/ip-address"] = "10.0.0.3" })
	h.waitHost("nas.lan", "10.0.0.3")
	h.sync()
	if got := h.entries("nas.lan"); len(got) != 1 || got[0].ID != hand.ID || got[0].IP != "10.0.0.3" {
		t.Fatalf("entries = %+v; want the adopted entry re-pointed", got)
	}
	h.quiet("after re-pointing")

	h.delete(ing)
	h.waitGone("nas.lan")
	h.sync()
	h.clock.Step(2 * time.Minute)
	h.sync()
	sameAsFound(t, h.byID(hand.ID), hand)
}

func ipOfChange(c plan.Change) string {
	if c.New != nil && c.Action != plan.Release {
		return c.New.IP
	}
	return c.Old.IP
}

// sharedClaims makes two Ingresses in one namespace claim shop.lan, addressed by their status.
func sharedClaims(h *harness, extraB ...string) (a, b *networkingv1.Ingress) {
	a = h.create(ingress(h.ns, "a", enabled(), "shop.lan"))
	b = h.create(ingress(h.ns, "b", enabled(extraB...), "shop.lan"))
	h.setStatus(a, "10.20.0.1")
	h.setStatus(b, "10.20.0.2")
	h.waitSource(func(eps []*endpoint.Endpoint) bool {
		return len(eps) == 2 && len(eps[0].Targets) == 1 && len(eps[1].Targets) == 1
	})
	h.sync()
	return a, b
}

func TestHeldClaimIsHeldOnASharedHostname(t *testing.T) {
	h := newHarness(t, options{})
	_, b := sharedClaims(h)
	byID := func(rs []endpoint.Record) []endpoint.Record {
		slices.SortFunc(rs, func(x, y endpoint.Record) int { return strings.Compare(x.ID, y.ID) })
		return rs
	}
	before := byID(h.entries("shop.lan"))
	if len(before) != 2 {
		t.Fatalf("entries = %v", before)
	}
	// A load balancer rollout: b briefly has no address. Its entry stays exactly as it is.
	h.setStatus(b)
	h.waitSource(func(eps []*endpoint.Endpoint) bool {
		return len(eps) == 2 && (len(eps[0].Targets) == 0) != (len(eps[1].Targets) == 0)
	})
	h.srv.Service().ResetCalls()
	h.sync()
	h.clock.Step(time.Hour)
	h.sync()
	if n := h.writes(); n != 0 {
		t.Fatalf("%d writes while b was held", n)
	}
	if after := byID(h.entries("shop.lan")); !reflect.DeepEqual(after, before) {
		t.Fatalf("entries changed while b was held:\n  %+v\n→ %+v", before, after)
	}
	// b gets a new address: its own entry moves, in place.
	var bID string
	for _, e := range before {
		if e.HasTag("source:" + string(b.UID)) {
			bID = e.ID
		}
	}
	h.setStatus(b, "10.20.0.3")
	h.waitSource(func(eps []*endpoint.Endpoint) bool {
		return len(eps) == 2 && slices.ContainsFunc(eps, func(e *endpoint.Endpoint) bool { return slices.Contains(e.Targets, "10.20.0.3") })
	})
	h.sync()
	if got := h.byID(bID); got.IP != "10.20.0.3" {
		t.Fatalf("b's entry = %+v, want it moved to 10.20.0.3", got)
	}
}

func TestGracePeriodIsPerClaim(t *testing.T) {
	h := newHarness(t, options{grace: 5 * time.Minute})
	a, b := sharedClaims(h, "grace-period", "2")
	for _, e := range h.entries("shop.lan") {
		_, tagged := e.TagValue("grace-period:")
		if want := e.IP == "10.20.0.2"; tagged != want || (want && !e.HasTag("grace-period:2")) {
			t.Fatalf("entry %s tags %q; only b's address carries b's grace period", e.IP, e.Tags)
		}
	}
	h.delete(a)
	h.delete(b)
	h.waitGone("shop.lan")
	h.sync() // both marked; the objects are gone, their grace periods live on the entries
	h.clock.Step(3 * time.Second)
	h.sync()
	if got := ipsOf(h.entries("shop.lan")); !reflect.DeepEqual(got, []string{"10.20.0.1"}) {
		t.Fatalf("after 3 s: %v; want b's address gone and a's waiting out the default", got)
	}
	h.clock.Step(5 * time.Minute)
	h.sync()
	if n := len(h.entries("shop.lan")); n != 0 {
		t.Fatalf("after the default grace period: %d entries", n)
	}
}

func TestHostnameStaysWithTheNamespaceHoldingIt(t *testing.T) {
	label := "sticky" + time.Now().Format("150405")
	w := &warnings{by: map[string][]string{}}
	rec := w.recorder()
	h := newHarness(t, options{allNS: true, labelFilter: "test=" + label, grace: 5 * time.Minute, reporters: []controller.Reporter{rec}, warner: rec})
	teamA, teamB := h.ns, createNamespace(t, cp)
	labelled := func(ns, name, ip, host string) *networkingv1.Ingress {
		ing := ingress(ns, name, enabled("ip-address", ip), host)
		ing.Labels = map[string]string{"test": label}
		return h.create(ing)
	}
	old := labelled(teamA, "old", "10.40.0.9", "other.lan")
	time.Sleep(1100 * time.Millisecond) // creation times have one-second resolution
	labelled(teamB, "pay", "10.40.0.2", "pay.lan")
	h.waitHost("pay.lan", "10.40.0.2")
	h.sync()
	held := h.one("pay.lan")

	// A year-old object in another namespace is edited to claim the hostname: refused.
	h.update(old, func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "pay.lan" })
	h.waitSource(func(eps []*endpoint.Endpoint) bool {
		n := 0
		for _, e := range eps {
			if e.Hostname == "pay.lan" {
				n++
			}
		}
		return n == 2
	})
	h.sync() // other.lan, which old no longer claims, is marked
	h.quiet("with a competing claim")
	if got := h.one("pay.lan"); !reflect.DeepEqual(got, held) {
		t.Fatalf("entry changed: %+v → %+v", held, got)
	}
	if !slices.Contains(w.reasons("old"), "HostnameConflict") {
		t.Fatalf("warnings on the competing object = %v, want HostnameConflict", w.reasons("old"))
	}

	// team-b deletes and recreates its object: during the grace period the hostname is still
	// team-b's, and the new object gets the same entry back.
	if err := cp.Client.NetworkingV1().Ingresses(teamB).Delete(context.Background(), "pay", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitSource(func(eps []*endpoint.Endpoint) bool { return len(eps) == 1 })
	h.sync()
	if got := h.one("pay.lan"); got.IP != "10.40.0.2" || got.HasTag("namespace:"+teamA) {
		t.Fatalf("during team-b's grace period: %+v", got)
	}
	labelled(teamB, "pay", "10.40.0.2", "pay.lan")
	h.waitSource(func(eps []*endpoint.Endpoint) bool { return len(eps) == 2 })
	h.sync()
	if got := h.one("pay.lan"); got.ID != held.ID {
		t.Fatalf("after recreating: %+v; want team-b's same entry", got)
	} else if _, marked := got.TagValue("pending-deletion:"); marked {
		t.Fatalf("after recreating the entry is still marked: %q", got.Tags)
	}

	// team-b lets it go for good: when its grace period ends, its entry is handed to the
	// waiting claim in place, one UpdateHost of the same entry, so pay.lan never stops
	// resolving (no sync leaves it without an entry).
	if err := cp.Client.NetworkingV1().Ingresses(teamB).Delete(context.Background(), "pay", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitSource(func(eps []*endpoint.Endpoint) bool { return len(eps) == 1 })
	h.sync()
	if got := h.one("pay.lan"); got.ID != held.ID || got.HasTag("namespace:"+teamA) {
		t.Fatalf("during team-b's grace period: %+v; want team-b's entry, marked", got)
	}
	h.clock.Step(6 * time.Minute)
	h.srv.Service().ResetCalls()
	h.sync()
	got := h.one("pay.lan")
	if got.ID != held.ID || got.IP != "10.40.0.9" || !got.HasTag("namespace:"+teamA) || got.HasTag("namespace:"+teamB) {
		t.Fatalf("after team-b's grace period: %+v; want its entry re-pointed to team-a's claim", got)
	}
	if _, marked := got.TagValue("pending-deletion:"); marked {
		t.Fatalf("the handed-over entry is still marked: %q", got.Tags)
	}
	// (The one DeleteHost of this sync is other.lan's, which old let go of at the same time.)
	if c := h.srv.Service().CallCounts(); c[inmemory.MethodUpdate] != 1 || c[inmemory.MethodAdd] != 0 {
		t.Fatalf("calls = %v, want the hand-over in one UpdateHost and nothing added", c)
	}
	if n := len(h.entries("other.lan")); n != 0 {
		t.Fatalf("other.lan has %d entries after its grace period", n)
	}
	h.quiet("after the hand-over")
}

// TestAnEntryHandedOverMeanwhileIsNotWritten: the server refuses the write at the version read
// (Aborted), the provider neither re-reads nor retries it, and the sync at once that follows
// reads the whole server, where the entry is another cluster's: nothing is written to it.
func TestAnEntryHandedOverMeanwhileIsNotWritten(t *testing.T) {
	h := newHarness(t, options{})
	app := h.movedAfterSync("app", "app.lan", "10.16.0.1", "10.16.0.2")
	// Between the operator's read and its write, the entry is handed to another cluster.
	h.editBeforeFirstUpdate(app, &pb.UpdateHostRequest{Tags: &pb.TagsUpdate{Values: []string{"k8s-operator", "cluster:other"}}})
	h.srv.Service().ResetCalls()
	if rep := h.sync(); !rep.Again || len(rep.Failed) != 0 {
		t.Fatalf("again %v, failed %v; want a sync at once and no failure reported", rep.Again, rep.Failed)
	}
	if c := h.srv.Service().CallCounts(); c["UpdateHost"] != 1 || c["GetHost"] != 0 {
		t.Fatalf("calls = %v, want the Aborted update alone: no re-read, no retry", c)
	}
	h.srv.Service().ResetCalls()
	if rep := h.sync(); rep.Read != planner.ReadServer {
		t.Fatalf("the sync after the conflict read %s, want the whole server", rep.Read)
	}
	got := h.one("app.lan")
	if got.IP != "10.16.0.1" || !reflect.DeepEqual(got.Tags, []string{"k8s-operator", "cluster:other"}) {
		t.Fatalf("entry = %+v; the other cluster's entry must not be written", got)
	}
	if n := h.writes(); n != 0 {
		t.Fatalf("%d writes after the fresh read, want none to the other cluster's entry", n)
	}
	h.quiet("once the entry is another cluster's")
}

func TestPoliciesLeaveExistingEntriesAlone(t *testing.T) {
	h := newHarness(t, options{grace: time.Minute})
	web := h.create(ingress(h.ns, "web", enabled("ip-address", "10.17.0.1"), "web.lan"))
	hand := h.handMade("nas.lan", "10.17.0.9", nil, []string{"manual"}, "")
	nas := h.create(ingress(h.ns, "nas", enabled("ip-address", "10.17.0.5"), "nas.lan"))
	h.waitHost("web.lan", "10.17.0.1")
	h.waitHost("nas.lan", "10.17.0.5")
	h.sync()
	h.delete(web)
	h.delete(nas)
	h.waitGone("web.lan")
	h.waitGone("nas.lan")
	h.sync() // both marked; nas.lan is an adopted entry
	marked := map[string]endpoint.Record{"web.lan": h.one("web.lan"), "nas.lan": h.byID(hand.ID)}

	// create-only: web.lan is wanted again, but unmarking is a write to an existing entry.
	h.build(options{grace: time.Minute, policy: plan.CreateOnly})
	h.create(ingress(h.ns, "web", enabled("ip-address", "10.17.0.1"), "web.lan"))
	h.waitHost("web.lan", "10.17.0.1")
	h.quiet("create-only")
	// upsert-only: past the grace period nothing is deleted or released.
	h.build(options{grace: time.Minute, policy: plan.UpsertOnly})
	h.clock.Step(time.Hour)
	h.srv.Service().ResetCalls()
	h.sync()
	if c := h.srv.Service().CallCounts(); c["DeleteHost"] != 0 {
		t.Fatalf("upsert-only deleted: %v", c)
	}
	if got := h.byID(hand.ID); !reflect.DeepEqual(got, marked["nas.lan"]) {
		t.Fatalf("upsert-only released the adopted entry: %+v", got)
	}
}
