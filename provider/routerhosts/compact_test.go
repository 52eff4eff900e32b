package routerhosts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
)

// compactRequests is a connection that keeps every CompactAggregatesRequest sent on it.
type compactRequests struct {
	grpc.ClientConnInterface
	mu   sync.Mutex
	sent []*pb.CompactAggregatesRequest
}

func (c *compactRequests) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if r, ok := args.(*pb.CompactAggregatesRequest); ok {
		c.mu.Lock()
		c.sent = append(c.sent, proto.Clone(r).(*pb.CompactAggregatesRequest))
		c.mu.Unlock()
	}
	return c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
}

// TestCompact: one CompactAggregates by ID for each ID, never by threshold nor as a dry run,
// at most WriteConcurrency at once, each observed; one answer per ID at its index. A server
// without the RPC or refusing it is told apart (ErrCompactionUnsupported) and asked no more;
// another failure stops nothing.
func TestCompact(t *testing.T) {
	const unknown = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	// outcome is a Compaction as the table spells it: the aggregate by name, its counts, and
	// what its error is.
	type outcome struct {
		name                   string
		before, after, version int64
		code                   codes.Code
		unsupported, unstarted bool
	}
	tests := []struct {
		name        string
		ids         []string // by the names below, or as sent
		concurrency int
		fault       error
		faults      int // calls the fault lasts, 0 all
		cancelled   bool
		want        []outcome
		err         string // "", "unsupported" or "other"
		calls       int64
		observed    map[string]int
	}{
		{name: "each ID", ids: []string{"bloated", "single", "deleted", unknown, "two"}, concurrency: 2,
			want: []outcome{
				{name: "bloated", before: 4, after: 1, version: 4}, {name: "single", before: 1, after: 1, version: 1},
				{name: "deleted", before: 3, after: 1, version: 3}, {name: unknown}, {name: "two", before: 2, after: 1, version: 2},
			},
			calls: 5, observed: map[string]int{"CompactAggregates OK": 5}},
		{name: "a malformed ID fails alone", ids: []string{"not-a-ulid", "bloated"}, concurrency: 1,
			want:  []outcome{{name: "not-a-ulid", code: codes.InvalidArgument}, {name: "bloated", before: 4, after: 1, version: 4}},
			err:   "other",
			calls: 2, observed: map[string]int{"CompactAggregates InvalidArgument": 1, "CompactAggregates OK": 1}},
		{name: "a server without the RPC", ids: []string{"bloated", "two", "deleted"}, concurrency: 1,
			fault: status.Error(codes.Unimplemented, "unknown method CompactAggregates"),
			want: []outcome{
				{name: "bloated", code: codes.Unimplemented, unsupported: true},
				{name: "two", unsupported: true, unstarted: true}, {name: "deleted", unsupported: true, unstarted: true},
			},
			err: "unsupported", calls: 1, observed: map[string]int{"CompactAggregates Unimplemented": 1}},
		{name: "a server that refuses it", ids: []string{"bloated", "two"}, concurrency: 1,
			fault: status.Error(codes.PermissionDenied, "not for this client"),
			want: []outcome{
				{name: "bloated", code: codes.PermissionDenied, unsupported: true},
				{name: "two", unsupported: true, unstarted: true},
			},
			err: "unsupported", calls: 1, observed: map[string]int{"CompactAggregates PermissionDenied": 1}},
		{name: "an outage stops nothing", ids: []string{"bloated", "two"}, concurrency: 1,
			fault: status.Error(codes.Unavailable, "going down"), faults: 1,
			want:  []outcome{{name: "bloated", code: codes.Unavailable}, {name: "two", before: 2, after: 1, version: 2}},
			err:   "other",
			calls: 2, observed: map[string]int{"CompactAggregates Unavailable": 1, "CompactAggregates OK": 1}},
		{name: "after the context ended", ids: []string{"bloated", "two"}, concurrency: 1, cancelled: true,
			want:  []outcome{{name: "bloated", unstarted: true}, {name: "two", unstarted: true}},
			err:   "other",
			calls: 0, observed: map[string]int{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc, conn := inmemory.DialTest(t)
			ids := compactHistory(t, svc.Store())
			names := map[string]string{}
			var send []string
			for _, n := range tc.ids {
				id := n
				if v, ok := ids[n]; ok {
					id = v
				}
				names[id] = n
				send = append(send, id)
			}
			var mu sync.Mutex
			observed := map[string]int{}
			observe := func(method string, code codes.Code, _ time.Duration) {
				mu.Lock()
				observed[method+" "+code.String()]++
				mu.Unlock()
			}
			rec := &compactRequests{ClientConnInterface: conn}
			log := logrus.New()
			log.SetLevel(logrus.WarnLevel)
			p := NewFromConn(rec, Options{Timeout: 5 * time.Second, WriteConcurrency: tc.concurrency, Observe: observe, Log: log})
			if tc.fault != nil {
				svc.SetFault(inmemory.MethodCompact, tc.fault, tc.faults)
			}
			// The calls in flight at once, at most.
			var inFlight, most atomic.Int64
			svc.SetBefore(func(m string) error {
				if m == inmemory.MethodCompact {
					n := inFlight.Add(1)
					defer inFlight.Add(-1)
					for cur := most.Load(); n > cur; cur = most.Load() {
						if most.CompareAndSwap(cur, n) {
							break
						}
					}
					time.Sleep(10 * time.Millisecond)
				}
				return nil
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelled {
				cancel()
			}

			got, err := p.Compact(ctx, send)
			switch {
			case tc.err == "" && err != nil,
				tc.err == "unsupported" && !errors.Is(err, provider.ErrCompactionUnsupported),
				tc.err == "other" && (err == nil || errors.Is(err, provider.ErrCompactionUnsupported)):
				t.Fatalf("err = %v, want %s", err, tc.err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d answers, want %d", len(got), len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if names[g.ID] != w.name || g.EventsBefore != w.before || g.EventsAfter != w.after || g.Version != w.version {
					t.Errorf("answer %d = %+v, want %+v", i, g, w)
				}
				if code := status.Code(g.Err); w.code != codes.OK && code != w.code {
					t.Errorf("answer %d: err %v, want %v", i, g.Err, w.code)
				}
				if errors.Is(g.Err, provider.ErrCompactionUnsupported) != w.unsupported || errors.Is(g.Err, plan.ErrNotStarted) != w.unstarted {
					t.Errorf("answer %d: err %v, want unsupported %v, not started %v", i, g.Err, w.unsupported, w.unstarted)
				}
				if w.code == codes.OK && !w.unsupported && !w.unstarted && g.Err != nil {
					t.Errorf("answer %d: err %v, want none", i, g.Err)
				}
			}
			if n := svc.Calls(inmemory.MethodCompact); n != tc.calls {
				t.Errorf("%d CompactAggregates, want %d", n, tc.calls)
			}
			if m := most.Load(); m > int64(tc.concurrency) {
				t.Errorf("%d calls at once, WriteConcurrency %d", m, tc.concurrency)
			}
			if fmt.Sprint(observed) != fmt.Sprint(tc.observed) {
				t.Errorf("observed %v, want %v", observed, tc.observed)
			}
			for _, r := range rec.sent {
				if _, ok := r.GetTarget().(*pb.CompactAggregatesRequest_AggregateId); !ok || r.GetDryRun() {
					t.Errorf("sent %v, want an aggregate by ID, not a dry run", r)
				}
			}
			if svc.WriteCalls() != 0 {
				t.Errorf("%d entry writes", svc.WriteCalls())
			}
		})
	}
}

// TestCompactIsBoundedByTheRequestTimeout: a server that does not answer fails the call at
// the request timeout, as any write.
func TestCompactIsBoundedByTheRequestTimeout(t *testing.T) {
	svc, conn := inmemory.DialTest(t)
	id := compactHistory(t, svc.Store())["bloated"]
	release := make(chan struct{})
	defer close(release)
	svc.SetBefore(func(string) error { <-release; return nil })
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	p := NewFromConn(conn, Options{Timeout: 50 * time.Millisecond, Log: log})
	start := time.Now()
	got, err := p.Compact(context.Background(), []string{id})
	if status.Code(got[0].Err) != codes.DeadlineExceeded || err == nil || errors.Is(err, provider.ErrCompactionUnsupported) {
		t.Fatalf("Compact = %+v, %v; want DeadlineExceeded", got, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v with a 50ms timeout", d)
	}
}

// compactHistory writes aggregates of known lengths into store and returns their IDs by name:
// bloated 4 events (version 4), two 2, single 1, deleted 3 (its tombstone's version 3).
func compactHistory(t *testing.T, store *inmemory.Store) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for name, comments := range map[string]int{"bloated": 3, "two": 1, "single": 0, "deleted": 1} {
		e, err := store.Add(&pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: name + ".lan"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range comments {
			if e, err = store.Update(&pb.UpdateHostRequest{Id: e.GetId(), ExpectedVersion: proto.String(e.GetVersion()), Comment: proto.String(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
		if name == "deleted" {
			if err := store.Delete(e.GetId(), nil); err != nil {
				t.Fatal(err)
			}
		}
		ids[name] = e.GetId()
	}
	return ids
}
