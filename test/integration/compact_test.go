package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
)

// TestTheOperatorCompactsItsOwnEntries: the operator run with --compact-own-entries folds the
// event log of its own entry once it passes 100 events, after its sync, through the real gRPC
// and mTLS of the test server: one event left, the entry and its version as they were, the
// metrics counting what it folded; a hand-made entry with a longer history is left as it is.
func TestTheOperatorCompactsItsOwnEntries(t *testing.T) {
	h := newHarness(t, options{})
	store := h.srv.Store()
	bump := func(id string, n int) {
		t.Helper()
		for range n {
			e, err := store.Get(id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.Update(&pb.UpdateHostRequest{Id: id, ExpectedVersion: proto.String(e.GetVersion()), Tags: &pb.TagsUpdate{Values: e.GetTags()}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	hand, err := store.Add(&pb.AddHostRequest{Hostname: "printer.home.lan", IpAddress: "10.63.0.9", Tags: []string{"manual"}})
	if err != nil {
		t.Fatal(err)
	}
	bump(hand.GetId(), 200)
	h.create(ingress(h.ns, "app", enabled("ip-address", "10.63.0.1"), "app.home.lan"))
	p := startOperator(t, h, kubeconfig, "--interval=1s", "--compact-own-entries")
	var own string
	waitFor(t, 30*time.Second, func() bool {
		es := store.Lookup("app.home.lan")
		if len(es) == 1 {
			own = es[0].GetId()
		}
		return own != ""
	})
	bump(own, 120)
	listed := func() []*pb.HostEntry {
		es := store.List()
		slices.SortFunc(es, func(a, b *pb.HostEntry) int { return strings.Compare(a.GetId(), b.GetId()) })
		return es
	}
	before := listed()
	waitFor(t, 30*time.Second, func() bool { return store.EventsOf(own) == 1 })
	if after := listed(); !slices.EqualFunc(before, after, func(a, b *pb.HostEntry) bool { return proto.Equal(a, b) }) {
		t.Errorf("ListHosts answered\n%v\nbefore the compaction, and\n%v\nafter", before, after)
	}
	if n := store.EventsOf(hand.GetId()); n != 201 {
		t.Errorf("the hand-made entry's log holds %d events, want its 201", n)
	}
	waitFor(t, 30*time.Second, func() bool { return p.metric(t, "router_hosts_operator_largest_own_aggregate_events") == 1 })
	if v := p.metric(t, "router_hosts_operator_compacted_events_total"); v < 120 {
		t.Errorf("compacted_events_total %v, want the 120 events folded at least", v)
	}
	if calls := h.srv.Service().CallCounts(); calls[inmemory.MethodCompact] < 1 {
		t.Errorf("calls %v: no CompactAggregates", calls)
	}
}
