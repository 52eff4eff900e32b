package inmemory

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// The RPC names Service counts, as in the method's full name; tests pass them to Calls and
// SetFault.
const (
	MethodAdd       = "AddHost"
	MethodGet       = "GetHost"
	MethodUpdate    = "UpdateHost"
	MethodDelete    = "DeleteHost"
	MethodList      = "ListHosts"
	MethodSearch    = "SearchHosts"
	MethodCompact   = "CompactAggregates"
	MethodLiveness  = "Liveness"
	MethodReadiness = "Readiness"
	MethodHealth    = "Health"
)

// Service serves a Store as router_hosts.v1.HostsService and counts calls per RPC, so tests can
// assert exactly how many reads and writes a sync made, and can inject faults.
type Service struct {
	pb.UnimplementedHostsServiceServer
	store *Store
	// calls is filled once by NewService and never changed, so reading it needs no lock.
	calls map[string]*atomic.Int64

	mu     sync.Mutex
	faults map[string]*fault
	before func(method string) error
}

// fault is an error injected into a method's next calls; left < 0 means every call.
type fault struct {
	err  error
	left int
}

// NewService serves store; several services may share one store.
func NewService(store *Store) *Service {
	s := &Service{store: store, calls: map[string]*atomic.Int64{}, faults: map[string]*fault{}}
	for _, m := range []string{MethodAdd, MethodGet, MethodUpdate, MethodDelete, MethodList, MethodSearch, MethodCompact, MethodLiveness, MethodReadiness, MethodHealth} {
		s.calls[m] = &atomic.Int64{}
	}
	return s
}

// Store is the store behind the service, for tests that edit data behind the operator's back.
func (s *Service) Store() *Store { return s.store }

// Calls is the number of calls of one RPC (e.g. "AddHost") since the last ResetCalls,
// including calls that failed; an unknown name counts 0.
func (s *Service) Calls(method string) int64 {
	if c, ok := s.calls[method]; ok {
		return c.Load()
	}
	return 0
}

// CallCounts returns every RPC's count, for failure messages and whole-sync assertions.
func (s *Service) CallCounts() map[string]int64 {
	out := make(map[string]int64, len(s.calls))
	for m, c := range s.calls {
		out[m] = c.Load()
	}
	return out
}

// WriteCalls is the number of AddHost, UpdateHost and DeleteHost calls: the figure that must
// stay zero when a sync finds nothing to change. CompactAggregates is not among them: it
// changes no entry, and Calls(MethodCompact) counts it.
func (s *Service) WriteCalls() int64 {
	return s.Calls(MethodAdd) + s.Calls(MethodUpdate) + s.Calls(MethodDelete)
}

// ResetCalls zeroes every count, so a test can measure one sync in isolation.
func (s *Service) ResetCalls() {
	for _, c := range s.calls {
		c.Store(0)
	}
}

// SetFault makes the next n calls of method fail with err before they reach the store (n <= 0:
// every call until cleared); a nil err clears the fault. Tests use it to play a failing or
// unreachable server, e.g. status.Error(codes.Unavailable, "...").
func (s *Service) SetFault(method string, err error, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		delete(s.faults, method)
		return
	}
	if n <= 0 {
		n = -1
	}
	s.faults[method] = &fault{err: err, left: n}
}

// SetBefore installs a hook run at the start of every RPC, after SetFault's faults (nil
// removes it). It is how a test plays a concurrent writer: the hook edits the Store when the
// method is MethodUpdate and returns nil, so the operator's UpdateHost meets a newer version
// and gets Aborted. A non-nil error from the hook fails the call with it.
func (s *Service) SetBefore(hook func(method string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before = hook
}

// WinUpdatesOf plays another writer that wins the race for hostname's entry: before each of the
// next n UpdateHosts, n the counter it returns (zero at first), it edits the entry's comment, so
// that the operator's update meets a newer version and gets Aborted.
func (s *Service) WinUpdatesOf(hostname string) *atomic.Int64 {
	wins := &atomic.Int64{}
	s.SetBefore(func(m string) error {
		if m != MethodUpdate || wins.Add(-1) < 0 {
			return nil
		}
		e := s.Store().Lookup(hostname)[0]
		_, err := s.Store().Update(&pb.UpdateHostRequest{Id: e.GetId(), ExpectedVersion: proto.String(e.GetVersion()), Comment: proto.String("edited")})
		return err
	})
	return wins
}

// enter counts a call and applies the injected fault or hook, if any.
func (s *Service) enter(method string) error {
	s.calls[method].Add(1)
	s.mu.Lock()
	var err error
	if f := s.faults[method]; f != nil {
		err = f.err
		if f.left > 0 {
			if f.left--; f.left == 0 {
				delete(s.faults, method)
			}
		}
	}
	hook := s.before
	s.mu.Unlock()
	if err != nil {
		return err
	}
	// The hook runs without s.mu held, so it may call SetFault, SetBefore or the Store.
	if hook != nil {
		return hook(method)
	}
	return nil
}

// AddHost implements the RPC on Store.Add.
func (s *Service) AddHost(_ context.Context, req *pb.AddHostRequest) (*pb.AddHostResponse, error) {
	if err := s.enter(MethodAdd); err != nil {
		return nil, err
	}
	e, err := s.store.Add(req)
	if err != nil {
		return nil, err
	}
	return &pb.AddHostResponse{Id: e.GetId(), Entry: e}, nil
}

// GetHost implements the RPC on Store.Get.
func (s *Service) GetHost(_ context.Context, req *pb.GetHostRequest) (*pb.GetHostResponse, error) {
	if err := s.enter(MethodGet); err != nil {
		return nil, err
	}
	e, err := s.store.Get(req.GetId())
	if err != nil {
		return nil, err
	}
	return &pb.GetHostResponse{Entry: e}, nil
}

// UpdateHost implements the RPC on Store.Update.
func (s *Service) UpdateHost(_ context.Context, req *pb.UpdateHostRequest) (*pb.UpdateHostResponse, error) {
	if err := s.enter(MethodUpdate); err != nil {
		return nil, err
	}
	e, err := s.store.Update(req)
	if err != nil {
		return nil, err
	}
	return &pb.UpdateHostResponse{Entry: e}, nil
}

// DeleteHost implements the RPC on Store.Delete; success is always true when there is no error.
func (s *Service) DeleteHost(_ context.Context, req *pb.DeleteHostRequest) (*pb.DeleteHostResponse, error) {
	if err := s.enter(MethodDelete); err != nil {
		return nil, err
	}
	if err := s.store.Delete(req.GetId(), req.ExpectedVersion); err != nil {
		return nil, err
	}
	return &pb.DeleteHostResponse{Success: true}, nil
}

// ListHosts streams every entry and, like the real server, ignores filter, limit and offset.
func (s *Service) ListHosts(_ *pb.ListHostsRequest, stream grpc.ServerStreamingServer[pb.ListHostsResponse]) error {
	if err := s.enter(MethodList); err != nil {
		return err
	}
	for _, e := range s.store.List() {
		if err := stream.Send(&pb.ListHostsResponse{Entry: e}); err != nil {
			return fmt.Errorf("sending entry: %w", err)
		}
	}
	return nil
}

// SearchHosts streams the entries whose address, hostname, comment or any tag contains the
// query, without regard to case (aliases are not searched); an empty query matches every
// entry. As on the real server it replays the whole log, as ListHosts does: it saves only
// what is sent.
func (s *Service) SearchHosts(req *pb.SearchHostsRequest, stream grpc.ServerStreamingServer[pb.SearchHostsResponse]) error {
	if err := s.enter(MethodSearch); err != nil {
		return err
	}
	for _, e := range s.store.Search(req.GetQuery()) {
		if err := stream.Send(&pb.SearchHostsResponse{Entry: e}); err != nil {
			return fmt.Errorf("sending entry: %w", err)
		}
	}
	return nil
}

// CompactAggregates implements the RPC on Store.CompactAggregates. An older server (before
// 0.10.7) answers it Unimplemented, and one that refuses the caller PermissionDenied: SetFault
// plays either.
func (s *Service) CompactAggregates(_ context.Context, req *pb.CompactAggregatesRequest) (*pb.CompactAggregatesResponse, error) {
	if err := s.enter(MethodCompact); err != nil {
		return nil, err
	}
	return s.store.CompactAggregates(req)
}

// Liveness implements the server's own health RPC (there is no grpc.health.v1).
func (s *Service) Liveness(context.Context, *pb.LivenessRequest) (*pb.LivenessResponse, error) {
	if err := s.enter(MethodLiveness); err != nil {
		return nil, err
	}
	return &pb.LivenessResponse{Alive: true}, nil
}

// Readiness implements the server's own readiness RPC; an in-memory store is always ready.
func (s *Service) Readiness(context.Context, *pb.ReadinessRequest) (*pb.ReadinessResponse, error) {
	if err := s.enter(MethodReadiness); err != nil {
		return nil, err
	}
	return &pb.ReadinessResponse{Ready: true}, nil
}

// Version is the server version the in-memory service reports in Health.
const Version = "inmemory-test"

// Health reports the service healthy, with Version.
func (s *Service) Health(context.Context, *pb.HealthRequest) (*pb.HealthResponse, error) {
	if err := s.enter(MethodHealth); err != nil {
		return nil, err
	}
	return &pb.HealthResponse{Healthy: true, Server: &pb.ServerInfo{Version: Version}}, nil
}

// Dial serves svc on an in-process bufconn listener and returns a plaintext client connection
// to it, for --provider=inmemory and unit tests: real gRPC framing, but no socket and no TLS.
// stop closes the connection and the server.
func Dial(svc *Service) (conn *grpc.ClientConn, stop func(), err error) {
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	pb.RegisterHostsServiceServer(srv, svc)
	go func() { _ = srv.Serve(lis) }()
	conn, err = grpc.NewClient("passthrough:///inmemory",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		return nil, nil, fmt.Errorf("dialing the in-memory server: %w", err)
	}
	return conn, func() { _ = conn.Close(); srv.Stop() }, nil
}

// TB is the part of testing.TB that DialTest uses.
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// DialTest serves a fresh, empty server for a test and connects to it (Dial); both go when the
// test ends.
func DialTest(tb TB) (*Service, *grpc.ClientConn) {
	tb.Helper()
	svc := NewService(NewStore())
	conn, stop, err := Dial(svc)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return svc, conn
}
