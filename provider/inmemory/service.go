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

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// The RPC names Service counts, as in the method's full name.
const (
	MethodAdd    = "AddHost"
	MethodGet    = "GetHost"
	MethodUpdate = "UpdateHost"
	MethodDelete = "DeleteHost"
	MethodList   = "ListHosts"
)

// Service serves a Store as router_hosts.v1.HostsService and counts calls per RPC, so tests can
// assert exactly how many writes a sync made.
type Service struct {
	pb.UnimplementedHostsServiceServer
	store *Store

	mu     sync.Mutex
	calls  map[string]*atomic.Int64
	before func(method string) error
}

// NewService serves store.
func NewService(store *Store) *Service {
	s := &Service{store: store, calls: map[string]*atomic.Int64{}}
	for _, m := range []string{MethodAdd, MethodGet, MethodUpdate, MethodDelete, MethodList, "Liveness", "Readiness"} {
		s.calls[m] = &atomic.Int64{}
	}
	return s
}

// Store is the store behind the service.
func (s *Service) Store() *Store { return s.store }

// Calls is the number of calls of one RPC since the last ResetCalls.
func (s *Service) Calls(method string) int64 {
	if c, ok := s.calls[method]; ok {
		return c.Load()
	}
	return 0
}

// CallCounts returns every RPC's count.
func (s *Service) CallCounts() map[string]int64 {
	out := make(map[string]int64, len(s.calls))
	for m, c := range s.calls {
		out[m] = c.Load()
	}
	return out
}

// WriteCalls is the number of AddHost, UpdateHost and DeleteHost calls.
func (s *Service) WriteCalls() int64 {
	return s.Calls(MethodAdd) + s.Calls(MethodUpdate) + s.Calls(MethodDelete)
}

// ResetCalls zeroes every count.
func (s *Service) ResetCalls() {
	for _, c := range s.calls {
		c.Store(0)
	}
}

// SetBefore installs a hook run at the start of every RPC (nil removes it). A test uses it to
// inject a fault (return an error) or to play a concurrent writer (edit the store, return nil).
func (s *Service) SetBefore(hook func(method string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before = hook
}

func (s *Service) enter(method string) error {
	s.calls[method].Add(1)
	s.mu.Lock()
	hook := s.before
	s.mu.Unlock()
	if hook != nil {
		return hook(method)
	}
	return nil
}

// AddHost implements the RPC.
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

// GetHost implements the RPC.
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

// UpdateHost implements the RPC.
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

// DeleteHost implements the RPC.
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

// Liveness implements the RPC.
func (s *Service) Liveness(context.Context, *pb.LivenessRequest) (*pb.LivenessResponse, error) {
	if err := s.enter("Liveness"); err != nil {
		return nil, err
	}
	return &pb.LivenessResponse{Alive: true}, nil
}

// Readiness implements the RPC.
func (s *Service) Readiness(context.Context, *pb.ReadinessRequest) (*pb.ReadinessResponse, error) {
	if err := s.enter("Readiness"); err != nil {
		return nil, err
	}
	return &pb.ReadinessResponse{Ready: true}, nil
}

// Dial serves svc on an in-process listener and returns a client connection to it, for
// --provider=inmemory; no socket is opened. stop ends both.
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
