package inmemory

import (
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

func dial(t *testing.T) (*Service, pb.HostsServiceClient) {
	t.Helper()
	svc, conn := DialTest(t)
	return svc, pb.NewHostsServiceClient(conn)
}

func list(t *testing.T, c pb.HostsServiceClient, req *pb.ListHostsRequest) []*pb.HostEntry {
	t.Helper()
	stream, err := c.ListHosts(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var out []*pb.HostEntry
	for {
		r, err := stream.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("ListHosts: %v", err)
		}
		out = append(out, r.GetEntry())
	}
}

func TestListHostsOverGRPC(t *testing.T) {
	svc, c := dial(t)
	ctx := context.Background()
	var want []string
	for _, h := range []string{"a.lan", "b.lan", "c.lan"} {
		r, err := c.AddHost(ctx, &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: h, Tags: []string{"k8s"}})
		if err != nil {
			t.Fatal(err)
		}
		if r.GetId() != r.GetEntry().GetId() || r.GetEntry().GetVersion() != "1" {
			t.Fatalf("AddHost response %v", r)
		}
		want = append(want, h)
	}
	tests := []struct {
		name string
		req  *pb.ListHostsRequest
	}{
		{"no filter", &pb.ListHostsRequest{}},
		// Filter, limit and offset are ignored, as on the real server.
		{"filter, limit and offset ignored", &pb.ListHostsRequest{Filter: proto.String("a.lan"), Limit: proto.Int32(1), Offset: proto.Int32(2)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range list(t, c, tc.req) {
				got = append(got, e.GetHostname())
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("listed %v, want %v", got, want)
			}
		})
	}
	if c := svc.CallCounts(); c[MethodAdd] != 3 || c[MethodList] != 2 || svc.WriteCalls() != 3 || svc.Calls("Nope") != 0 {
		t.Fatalf("counts %v, writes %d", c, svc.WriteCalls())
	}
	svc.ResetCalls()
	for m, n := range svc.CallCounts() {
		if n != 0 {
			t.Fatalf("%s = %d after ResetCalls", m, n)
		}
	}
}

// TestListOrderIsNotFixed guards against sorting the list: callers must not depend on order.
func TestListOrderIsNotFixed(t *testing.T) {
	s := NewStore()
	for _, h := range strings.Split("a b c d e f g h i j k l m n o p q r s t", " ") {
		add(t, s, "10.0.0.1", h+".lan")
	}
	first := String(s.List()[0])
	for i := 0; i < 100; i++ {
		if String(s.List()[0]) != first {
			return
		}
	}
	t.Fatal("100 lists started with the same entry; List must not impose an order")
}

func TestErrorsCrossTheWire(t *testing.T) {
	svc, c := dial(t)
	ctx := context.Background()
	r, err := c.AddHost(ctx, &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "a.lan"})
	if err != nil {
		t.Fatal(err)
	}
	id := r.GetId()
	tests := []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"duplicate", func() error {
			_, err := c.AddHost(ctx, &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "a.lan"})
			return err
		}, codes.AlreadyExists},
		{"invalid", func() error {
			_, err := c.AddHost(ctx, &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "a.lan."})
			return err
		}, codes.InvalidArgument},
		{"get", func() error {
			g, err := c.GetHost(ctx, &pb.GetHostRequest{Id: id})
			if err == nil && g.GetEntry().GetHostname() != "a.lan" {
				return errors.New("wrong entry")
			}
			return err
		}, codes.OK},
		{"update without expected_version", func() error {
			_, err := c.UpdateHost(ctx, &pb.UpdateHostRequest{Id: id, Comment: proto.String("x")})
			return err
		}, codes.Aborted},
		{"update", func() error {
			u, err := c.UpdateHost(ctx, &pb.UpdateHostRequest{Id: id, ExpectedVersion: proto.String("1"), Comment: proto.String("x")})
			if err == nil && u.GetEntry().GetVersion() != "2" {
				return errors.New("version not bumped")
			}
			return err
		}, codes.OK},
		{"stale delete", func() error {
			_, err := c.DeleteHost(ctx, &pb.DeleteHostRequest{Id: id, ExpectedVersion: proto.String("1")})
			return err
		}, codes.Aborted},
		{"delete", func() error {
			d, err := c.DeleteHost(ctx, &pb.DeleteHostRequest{Id: id, ExpectedVersion: proto.String("2")})
			if err == nil && !d.GetSuccess() {
				return errors.New("success=false")
			}
			return err
		}, codes.OK},
		{"delete again", func() error {
			_, err := c.DeleteHost(ctx, &pb.DeleteHostRequest{Id: id})
			return err
		}, codes.NotFound},
		{"liveness", func() error {
			l, err := c.Liveness(ctx, &pb.LivenessRequest{})
			if err == nil && !l.GetAlive() {
				return errors.New("not alive")
			}
			return err
		}, codes.OK},
		{"readiness", func() error {
			l, err := c.Readiness(ctx, &pb.ReadinessRequest{})
			if err == nil && !l.GetReady() {
				return errors.New("not ready")
			}
			return err
		}, codes.OK},
	}
	for _, tc := range tests {
		if err := tc.call(); status.Code(err) != tc.code {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.code)
		}
	}
	// Failed calls count too: 3 adds, 2 updates, 3 deletes.
	if svc.WriteCalls() != 8 || svc.Calls(MethodGet) != 1 || svc.Calls(MethodLiveness) != 1 || svc.Calls(MethodReadiness) != 1 {
		t.Fatalf("counts %v", svc.CallCounts())
	}
}

func TestFaults(t *testing.T) {
	svc, c := dial(t)
	ctx := context.Background()
	addHost := func(h string) error {
		_, err := c.AddHost(ctx, &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: h})
		return err
	}
	down := status.Error(codes.Unavailable, "injected")

	svc.SetFault(MethodAdd, down, 2)
	for i, want := range []codes.Code{codes.Unavailable, codes.Unavailable, codes.OK} {
		if err := addHost("a.lan"); status.Code(err) != want {
			t.Fatalf("call %d: %v, want %v", i, err, want)
		}
	}
	if svc.Store().Len() != 1 || svc.Calls(MethodAdd) != 3 {
		t.Fatalf("len %d, calls %d: faulted calls must count but not reach the store", svc.Store().Len(), svc.Calls(MethodAdd))
	}

	svc.SetFault(MethodList, status.Error(codes.Internal, "internal error"), 0)
	for i := 0; i < 3; i++ {
		stream, err := c.ListHosts(ctx, &pb.ListHostsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); status.Code(err) != codes.Internal {
			t.Fatalf("permanent fault, call %d: %v", i, err)
		}
	}
	if err := addHost("b.lan"); err != nil {
		t.Fatalf("a fault on ListHosts reached AddHost: %v", err)
	}
	svc.SetFault(MethodList, nil, 0)
	if n := len(list(t, c, &pb.ListHostsRequest{})); n != 2 {
		t.Fatalf("after clearing the fault: %d entries", n)
	}
}

// TestConcurrentWriter plays another writer that edits the entry just before the client's
// UpdateHost is processed, which must then fail with Aborted.
func TestConcurrentWriter(t *testing.T) {
	svc, c := dial(t)
	ctx := context.Background()
	r, err := c.AddHost(ctx, &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "a.lan"})
	if err != nil {
		t.Fatal(err)
	}
	svc.SetBefore(func(m string) error {
		if m != MethodUpdate {
			return nil
		}
		svc.SetBefore(nil) // once
		_, err := svc.Store().Update(&pb.UpdateHostRequest{Id: r.GetId(), ExpectedVersion: proto.String("1"), Comment: proto.String("theirs")})
		return err
	})
	req := &pb.UpdateHostRequest{Id: r.GetId(), ExpectedVersion: proto.String("1"), Comment: proto.String("ours")}
	if _, err := c.UpdateHost(ctx, req); status.Code(err) != codes.Aborted {
		t.Fatalf("update racing a writer: %v, want Aborted", err)
	}
	// Re-read and retry, as a client must.
	g, err := c.GetHost(ctx, &pb.GetHostRequest{Id: r.GetId()})
	if err != nil || g.GetEntry().GetComment() != "theirs" {
		t.Fatalf("re-read: %v, %v", g, err)
	}
	req.ExpectedVersion = proto.String(g.GetEntry().GetVersion())
	if u, err := c.UpdateHost(ctx, req); err != nil || u.GetEntry().GetVersion() != "3" || u.GetEntry().GetComment() != "ours" {
		t.Fatalf("retry: %v, %v", u, err)
	}
}

// TestSearchHostsOverGRPC: the query is a case-insensitive substring of the address, the
// hostname, the comment or a tag, never of an alias; empty matches everything.
func TestSearchHostsOverGRPC(t *testing.T) {
	svc, c := dial(t)
	ctx := context.Background()
	for _, req := range []*pb.AddHostRequest{
		{IpAddress: "10.0.0.1", Hostname: "NAS.lan", Comment: proto.String("the attic")},
		{IpAddress: "10.0.0.2", Hostname: "nas.lan.example", Tags: []string{"Team-A"}},
		{IpAddress: "10.0.0.3", Hostname: "web.lan", Aliases: []string{"nas-old.lan"}},
		{IpAddress: "192.168.1.7", Hostname: "printer.lan", Tags: []string{"source:abc"}},
	} {
		if _, err := c.AddHost(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ query, want string }{
		{"nas.lan", "NAS.lan,nas.lan.example"},
		{"NAS", "NAS.lan,nas.lan.example"},
		{"attic", "NAS.lan"},
		{"team-a", "nas.lan.example"},
		{"nas-old", ""},
		{"192.168", "printer.lan"},
		{"", "NAS.lan,nas.lan.example,printer.lan,web.lan"},
	} {
		stream, err := c.SearchHosts(ctx, &pb.SearchHostsRequest{Query: tc.query})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			r, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.GetEntry().GetHostname())
		}
		sort.Strings(got)
		if g := strings.Join(got, ","); g != tc.want {
			t.Errorf("SearchHosts(%q) = %s, want %s", tc.query, g, tc.want)
		}
	}
	if n := svc.Calls(MethodSearch); n != 7 {
		t.Fatalf("%d SearchHosts counted, want 7", n)
	}
}
