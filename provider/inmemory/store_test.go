package inmemory

import (
	"context"
	"io"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

func add(t *testing.T, s *Store, ip, host string) *pb.HostEntry {
	t.Helper()
	e, err := s.Add(&pb.AddHostRequest{IpAddress: ip, Hostname: host})
	if err != nil {
		t.Fatalf("add %s %s: %v", ip, host, err)
	}
	return e
}

func TestAddValidationAndUniqueness(t *testing.T) {
	s := NewStore()
	base := add(t, s, "10.0.0.1", "nas.lan")
	if base.GetVersion() != "1" || len(base.GetId()) != 26 || validateID(base.GetId()) != nil {
		t.Fatalf("new entry = %s", String(base))
	}
	tests := []struct {
		name string
		req  *pb.AddHostRequest
		code codes.Code
	}{
		{"same pair", &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "nas.lan"}, codes.AlreadyExists},
		{"case differs: another entry", &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "NAS.lan"}, codes.OK},
		{"ip text differs: another entry", &pb.AddHostRequest{IpAddress: "::1", Hostname: "six.lan"}, codes.OK},
		{"ip text differs again", &pb.AddHostRequest{IpAddress: "0::1", Hostname: "six.lan"}, codes.OK},
		{"same hostname, other ip", &pb.AddHostRequest{IpAddress: "10.0.0.2", Hostname: "nas.lan"}, codes.OK},
		{"leading zero", &pb.AddHostRequest{IpAddress: "010.0.0.1", Hostname: "x.lan"}, codes.InvalidArgument},
		{"zone", &pb.AddHostRequest{IpAddress: "fe80::1%eth0", Hostname: "x.lan"}, codes.InvalidArgument},
		{"trailing dot", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x.lan."}, codes.InvalidArgument},
		{"underscore", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x_y.lan"}, codes.InvalidArgument},
		{"wildcard", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "*.lan"}, codes.InvalidArgument},
		{"alias equals hostname", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x.lan", Aliases: []string{"X.lan"}}, codes.InvalidArgument},
		{"alias is an ip", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x.lan", Aliases: []string{"10.0.0.3"}}, codes.InvalidArgument},
		{"alias repeated", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x.lan", Aliases: []string{"a.lan", "A.LAN"}}, codes.InvalidArgument},
		{"tags are not validated", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x.lan", Tags: []string{"any thing\n"}}, codes.OK},
	}
	for _, tc := range tests {
		_, err := s.Add(tc.req)
		if status.Code(err) != tc.code {
			t.Errorf("%s: code %v (%v), want %v", tc.name, status.Code(err), err, tc.code)
		}
	}
}

func TestUpdateVersionsAndConflicts(t *testing.T) {
	s := NewStore()
	e := add(t, s, "10.0.0.1", "a.lan")
	// No expected_version is "0": a conflict.
	if _, err := s.Update(&pb.UpdateHostRequest{Id: e.Id, IpAddress: proto.String("10.0.0.2")}); status.Code(err) != codes.Aborted {
		t.Fatalf("missing expected_version: %v, want Aborted", err)
	}
	if _, err := s.Update(&pb.UpdateHostRequest{Id: e.Id, ExpectedVersion: proto.String("v1")}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad expected_version text: %v", err)
	}
	// Comment, tags and aliases count as events even when unchanged: 3 fields, version 1 → 4.
	u, err := s.Update(&pb.UpdateHostRequest{Id: e.Id, ExpectedVersion: proto.String("1"),
		Comment: proto.String(""), Tags: &pb.TagsUpdate{}, Aliases: &pb.AliasesUpdate{}})
	if err != nil || u.GetVersion() != "4" {
		t.Fatalf("update = %v, %v; want version 4", u, err)
	}
	if _, err := s.Update(&pb.UpdateHostRequest{Id: e.Id, ExpectedVersion: proto.String("1"), Tags: &pb.TagsUpdate{}}); status.Code(err) != codes.Aborted {
		t.Fatalf("stale version: %v, want Aborted", err)
	}
	// Tags replace the list in order; an absent wrapper keeps it.
	u, _ = s.Update(&pb.UpdateHostRequest{Id: e.Id, ExpectedVersion: proto.String("4"), Tags: &pb.TagsUpdate{Values: []string{"b", "a"}}})
	u, _ = s.Update(&pb.UpdateHostRequest{Id: e.Id, ExpectedVersion: proto.String(u.GetVersion()), IpAddress: proto.String("10.0.0.9")})
	if got := u.GetTags(); len(got) != 2 || got[0] != "b" || u.GetIpAddress() != "10.0.0.9" || u.GetVersion() != "6" {
		t.Fatalf("after updates: %s", String(u))
	}
	// Update does not check uniqueness but does validate.
	add(t, s, "10.0.0.1", "b.lan")
	if _, err := s.Update(&pb.UpdateHostRequest{Id: e.Id, ExpectedVersion: proto.String("6"), Hostname: proto.String("b_b")}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("invalid hostname update: %v", err)
	}
	if _, err := s.Update(&pb.UpdateHostRequest{Id: "nope"}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad id: %v", err)
	}
	if _, err := s.Update(&pb.UpdateHostRequest{Id: "01ARZ3NDEKTSV4RRFFQ69G5FAV", ExpectedVersion: proto.String("1")}); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestDelete(t *testing.T) {
	s := NewStore()
	e := add(t, s, "10.0.0.1", "a.lan")
	if err := s.Delete(e.Id, proto.String("2")); status.Code(err) != codes.Aborted {
		t.Fatalf("stale delete: %v", err)
	}
	if err := s.Delete(e.Id, proto.String("1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(e.Id, nil); status.Code(err) != codes.NotFound {
		t.Fatalf("second delete: %v, want NotFound", err)
	}
	if s.Len() != 0 || s.Events() != 2 {
		t.Fatalf("len %d events %d", s.Len(), s.Events())
	}
}

func TestServiceOverGRPC(t *testing.T) {
	svc := NewService(NewStore())
	conn, stop, err := Dial(svc)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c := pb.NewHostsServiceClient(conn)
	ctx := context.Background()
	for _, h := range []string{"a.lan", "b.lan", "c.lan"} {
		if _, err := c.AddHost(ctx, &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: h}); err != nil {
			t.Fatal(err)
		}
	}
	// Filters are ignored, as on the real server.
	stream, err := c.ListHosts(ctx, &pb.ListHostsRequest{Filter: proto.String("a.lan"), Limit: proto.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err := stream.Recv(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 || svc.Calls(MethodAdd) != 3 || svc.Calls(MethodList) != 1 || svc.WriteCalls() != 3 {
		t.Fatalf("listed %d, counts %v", n, svc.CallCounts())
	}
	svc.SetBefore(func(m string) error {
		if m == MethodAdd {
			return status.Error(codes.Unavailable, "injected")
		}
		return nil
	})
	if _, err := c.AddHost(ctx, &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "d.lan"}); status.Code(err) != codes.Unavailable {
		t.Fatalf("injected fault: %v", err)
	}
}
