package inmemory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// history writes the aggregates the compaction tests fold, through the RPCs, and returns their
// IDs by name:
//
//	bloated  AddHost, a comment, then an address and tags in one UpdateHost: 4 events, version 4
//	two      AddHost, a comment: 2 events, version 2
//	single   AddHost: 1 event, version 1
//	deleted  AddHost, a comment, DeleteHost: 3 events, the tombstone's version 3
func history(t *testing.T, c pb.HostsServiceClient) map[string]string {
	t.Helper()
	ctx := context.Background()
	ids := map[string]string{}
	add := func(name string, updates ...*pb.UpdateHostRequest) {
		t.Helper()
		r, err := c.AddHost(ctx, &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: name + ".lan", Tags: []string{"k8s"}})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = r.GetId()
		version := r.GetEntry().GetVersion()
		for _, u := range updates {
			u.Id, u.ExpectedVersion = r.GetId(), proto.String(version)
			got, err := c.UpdateHost(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			version = got.GetEntry().GetVersion()
		}
	}
	add("bloated", &pb.UpdateHostRequest{Comment: proto.String("one")},
		&pb.UpdateHostRequest{IpAddress: proto.String("10.0.0.2"), Tags: &pb.TagsUpdate{Values: []string{"k8s", "two"}}})
	add("two", &pb.UpdateHostRequest{Comment: proto.String("one")})
	add("single")
	add("deleted", &pb.UpdateHostRequest{Comment: proto.String("one")})
	if _, err := c.DeleteHost(ctx, &pb.DeleteHostRequest{Id: ids["deleted"], ExpectedVersion: proto.String("2")}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// everything is what the server answers of its entries: ListHosts, and GetHost of each ID
// (the deleted one's NotFound included), one line each.
func everything(t *testing.T, c pb.HostsServiceClient, ids map[string]string) string {
	t.Helper()
	var lines []string
	for _, e := range list(t, c, &pb.ListHostsRequest{}) {
		lines = append(lines, "list "+e.String())
	}
	for name, id := range ids {
		g, err := c.GetHost(context.Background(), &pb.GetHostRequest{Id: id})
		lines = append(lines, fmt.Sprintf("get %s %v %v", name, g.GetEntry(), status.Code(err)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// row is a CompactedAggregate with the aggregate named as history names it.
type row struct {
	name                   string
	before, after, version int64
}

// TestCompactAggregatesOverGRPC: an aggregate is folded into one event at the same version, a
// deleted one into its tombstone, one of a single event is left alone; an unknown ID answers
// zeros; over_threshold folds only those above it; a dry run reports the same and changes
// nothing; no entry reads differently afterwards and the hosts file is not rewritten.
func TestCompactAggregatesOverGRPC(t *testing.T) {
	const unknown = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	byID := func(id string) *pb.CompactAggregatesRequest {
		return &pb.CompactAggregatesRequest{Target: &pb.CompactAggregatesRequest_AggregateId{AggregateId: id}}
	}
	over := func(n int64) *pb.CompactAggregatesRequest {
		return &pb.CompactAggregatesRequest{Target: &pb.CompactAggregatesRequest_OverThreshold{OverThreshold: n}}
	}
	dry := func(req *pb.CompactAggregatesRequest) *pb.CompactAggregatesRequest {
		req.DryRun = true
		return req
	}
	// The events each aggregate holds after history.
	initial := map[string]int{"bloated": 4, "two": 2, "single": 1, "deleted": 3}
	tests := []struct {
		name string
		// req names an aggregate of history by its name, which is replaced by its ID.
		req   *pb.CompactAggregatesRequest
		lower bool // the ID is sent in lower case
		code  codes.Code
		rows  []row
		// after is each aggregate's events afterwards, where it differs from initial.
		after map[string]int
	}{
		{name: "by ID", req: byID("bloated"), rows: []row{{"bloated", 4, 1, 4}}, after: map[string]int{"bloated": 1}},
		{name: "by ID in lower case", req: byID("bloated"), lower: true, rows: []row{{"bloated", 4, 1, 4}}, after: map[string]int{"bloated": 1}},
		{name: "deleted: one tombstone", req: byID("deleted"), rows: []row{{"deleted", 3, 1, 3}}, after: map[string]int{"deleted": 1}},
		{name: "one event: left alone", req: byID("single"), rows: []row{{"single", 1, 1, 1}}},
		{name: "unknown ID: zeros", req: byID(unknown), rows: []row{{unknown, 0, 0, 0}}},
		{name: "dry run by ID", req: dry(byID("bloated")), rows: []row{{"bloated", 4, 1, 4}}},
		{name: "over 2", req: over(2), rows: []row{{"bloated", 4, 1, 4}, {"deleted", 3, 1, 3}}, after: map[string]int{"bloated": 1, "deleted": 1}},
		{name: "over 1", req: over(1), rows: []row{{"bloated", 4, 1, 4}, {"deleted", 3, 1, 3}, {"two", 2, 1, 2}},
			after: map[string]int{"bloated": 1, "deleted": 1, "two": 1}},
		{name: "dry run over 1", req: dry(over(1)), rows: []row{{"bloated", 4, 1, 4}, {"deleted", 3, 1, 3}, {"two", 2, 1, 2}}},
		{name: "over every count", req: over(4)},
		{name: "malformed ID", req: byID("not-a-ulid"), code: codes.InvalidArgument},
		{name: "empty ID", req: byID(""), code: codes.InvalidArgument},
		{name: "no target", req: &pb.CompactAggregatesRequest{}, code: codes.InvalidArgument},
		{name: "dry run without a target", req: dry(&pb.CompactAggregatesRequest{}), code: codes.InvalidArgument},
		{name: "over 0", req: over(0), code: codes.InvalidArgument},
		{name: "over -1", req: over(-1), code: codes.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc, c := dial(t)
			ids := history(t, c)
			names := map[string]string{}
			for name, id := range ids {
				names[id] = name
				if n := svc.Store().EventsOf(id); n != initial[name] {
					t.Fatalf("%s holds %d events before, want %d", name, n, initial[name])
				}
			}
			writes := 0
			svc.Store().SetOnWrite(func([]*pb.HostEntry) { writes++ })
			before, events := everything(t, c, ids), svc.Store().Events()

			req := proto.Clone(tc.req).(*pb.CompactAggregatesRequest)
			if target, ok := req.GetTarget().(*pb.CompactAggregatesRequest_AggregateId); ok {
				if id, ok := ids[target.AggregateId]; ok {
					target.AggregateId = id
				}
				if tc.lower {
					target.AggregateId = strings.ToLower(target.AggregateId)
				}
			}
			resp, err := c.CompactAggregates(context.Background(), req)
			if status.Code(err) != tc.code {
				t.Fatalf("CompactAggregates: %v, want %v", err, tc.code)
			}
			var got []row
			var reclaimed int64
			for _, r := range resp.GetCompacted() {
				name := names[r.GetAggregateId()]
				if name == "" {
					name = r.GetAggregateId()
				}
				got = append(got, row{name, r.GetEventsBefore(), r.GetEventsAfter(), r.GetVersion()})
				reclaimed += r.GetEventsBefore() - r.GetEventsAfter()
			}
			sort.Slice(got, func(i, j int) bool { return got[i].name < got[j].name })
			if fmt.Sprint(got) != fmt.Sprint(tc.rows) {
				t.Errorf("rows %v, want %v", got, tc.rows)
			}
			if resp.GetTotalEventsReclaimed() != reclaimed {
				t.Errorf("total_events_reclaimed %d, the rows reclaim %d", resp.GetTotalEventsReclaimed(), reclaimed)
			}
			folded := 0
			for name, id := range ids {
				want := initial[name]
				if n, ok := tc.after[name]; ok {
					want, folded = n, folded+initial[name]-n
				}
				if n := svc.Store().EventsOf(id); n != want {
					t.Errorf("%s holds %d events after, want %d", name, n, want)
				}
			}
			if n := svc.Store().Events(); n != events-folded {
				t.Errorf("the log holds %d events after, want %d", n, events-folded)
			}
			if after := everything(t, c, ids); after != before {
				t.Errorf("the server answers differently after:\n%s\nbefore:\n%s", after, before)
			}
			// SetOnWrite's first call is its own, with the entries as they stand.
			if writes != 1 {
				t.Errorf("the hosts file was written %d times more", writes-1)
			}
			if n := svc.Calls(MethodCompact); n != 1 || svc.WriteCalls() != 9 {
				t.Errorf("%d CompactAggregates counted, writes %d; want 1 and history's 9", n, svc.WriteCalls())
			}
		})
	}
}

// TestCompactionKeepsTheVersion: a write after a compaction is checked against the version the
// entry had before it, and a second compaction of what one folded changes nothing.
func TestCompactionKeepsTheVersion(t *testing.T) {
	svc, c := dial(t)
	ctx := context.Background()
	id := history(t, c)["bloated"]
	compact := func() *pb.CompactedAggregate {
		t.Helper()
		resp, err := c.CompactAggregates(ctx, &pb.CompactAggregatesRequest{Target: &pb.CompactAggregatesRequest_AggregateId{AggregateId: id}})
		if err != nil || len(resp.GetCompacted()) != 1 {
			t.Fatalf("CompactAggregates: %v, %v", resp, err)
		}
		return resp.GetCompacted()[0]
	}
	if r := compact(); r.GetVersion() != 4 || r.GetEventsAfter() != 1 {
		t.Fatalf("first compaction %v", r)
	}
	if r := compact(); r.GetVersion() != 4 || r.GetEventsBefore() != 1 || r.GetEventsAfter() != 1 {
		t.Fatalf("second compaction %v, want the one event left alone", r)
	}
	tests := []struct {
		name, expected string
		code           codes.Code
		version        string
		events         int
	}{
		{"an older version", "3", codes.Aborted, "", 1},
		{"the version before the compaction", "4", codes.OK, "5", 2},
		{"that version again", "4", codes.Aborted, "", 2},
	}
	for _, tc := range tests {
		u, err := c.UpdateHost(ctx, &pb.UpdateHostRequest{Id: id, ExpectedVersion: proto.String(tc.expected), Comment: proto.String(tc.name)})
		if status.Code(err) != tc.code || u.GetEntry().GetVersion() != tc.version {
			t.Errorf("%s: UpdateHost at %s: %v, %v; want %v at version %q", tc.name, tc.expected, u.GetEntry(), err, tc.code, tc.version)
		}
		if n := svc.Store().EventsOf(id); n != tc.events {
			t.Errorf("%s: %d events, want %d", tc.name, n, tc.events)
		}
	}
	if _, err := c.DeleteHost(ctx, &pb.DeleteHostRequest{Id: id, ExpectedVersion: proto.String("5")}); err != nil {
		t.Fatalf("DeleteHost at the version after the compaction: %v", err)
	}
	if r := compact(); r.GetVersion() != 6 || r.GetEventsBefore() != 3 || r.GetEventsAfter() != 1 {
		t.Fatalf("compacting the deleted entry: %v, want 3 events into 1 at version 6", r)
	}
	counts := svc.Store().EventCounts()
	if counts[strings.ToUpper(id)] != 1 || len(counts) != 4 {
		t.Errorf("EventCounts %v: want the compacted entry's one event among the history's 4 aggregates, deleted ones too", counts)
	}
}

// TestCompactAggregatesFaults: SetFault plays a server without the RPC (before 0.10.7:
// Unimplemented) or one that refuses it (PermissionDenied); the call is counted and the log is
// not touched.
func TestCompactAggregatesFaults(t *testing.T) {
	for _, code := range []codes.Code{codes.Unimplemented, codes.PermissionDenied} {
		t.Run(code.String(), func(t *testing.T) {
			svc, c := dial(t)
			ids := history(t, c)
			events := svc.Store().Events()
			svc.SetFault(MethodCompact, status.Error(code, "injected"), 1)
			req := &pb.CompactAggregatesRequest{Target: &pb.CompactAggregatesRequest_AggregateId{AggregateId: ids["bloated"]}}
			if _, err := c.CompactAggregates(context.Background(), req); status.Code(err) != code {
				t.Fatalf("faulted call: %v, want %v", err, code)
			}
			if n := svc.Store().Events(); n != events {
				t.Fatalf("%d events after the faulted call, want %d", n, events)
			}
			if _, err := c.CompactAggregates(context.Background(), req); err != nil {
				t.Fatalf("after the fault: %v", err)
			}
			if n := svc.Calls(MethodCompact); n != 2 {
				t.Fatalf("%d calls counted, want 2", n)
			}
		})
	}
}
