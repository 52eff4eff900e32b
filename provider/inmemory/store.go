// Package inmemory implements the router-hosts server's semantics in memory: validation,
// (ip, hostname) uniqueness, versions that count field events, and Aborted on a stale version.
// It backs --provider=inmemory and the router-hosts test server, so both behave as the real
// server does wherever the operator could tell the difference.
package inmemory

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Store holds live entries keyed by ID.
type Store struct {
	mu      sync.Mutex
	entries map[string]*pb.HostEntry
	events  int
	now     func() time.Time
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{entries: map[string]*pb.HostEntry{}, now: time.Now}
}

// Events is the number of events the server's log would hold: one per AddHost, one per field
// sent in an UpdateHost, one per DeleteHost. Benchmarks use it to show writes stay minimal.
func (s *Store) Events() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events
}

// Len is the number of live entries.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Add creates an entry, as AddHost does.
func (s *Store) Add(req *pb.AddHostRequest) (*pb.HostEntry, error) {
	if err := validate(req.GetIpAddress(), req.GetHostname(), req.GetAliases()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		// Uniqueness is the exact, case-sensitive pair, as on the server.
		if e.GetIpAddress() == req.GetIpAddress() && e.GetHostname() == req.GetHostname() {
			return nil, status.Errorf(codes.AlreadyExists, "host entry %s %s already exists", req.GetIpAddress(), req.GetHostname())
		}
	}
	now := timestamppb.New(s.now())
	e := &pb.HostEntry{
		Id: newULID(s.now()), IpAddress: req.GetIpAddress(), Hostname: req.GetHostname(), Comment: req.Comment,
		Tags: append([]string(nil), req.GetTags()...), Aliases: append([]string(nil), req.GetAliases()...),
		CreatedAt: now, UpdatedAt: now, Version: "1",
	}
	s.entries[e.Id] = e
	s.events++
	return proto.Clone(e).(*pb.HostEntry), nil
}

// Get returns one entry, as GetHost does.
func (s *Store) Get(id string) (*pb.HostEntry, error) {
	if err := validateID(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "host %s not found", id)
	}
	return proto.Clone(e).(*pb.HostEntry), nil
}

// Update applies an UpdateHost: a missing expected_version counts as "0", every field present
// is one event (even when its value is unchanged), and uniqueness is not checked.
func (s *Store) Update(req *pb.UpdateHostRequest) (*pb.HostEntry, error) {
	if err := validateID(req.GetId()); err != nil {
		return nil, err
	}
	expected := "0"
	if req.ExpectedVersion != nil {
		expected = req.GetExpectedVersion()
	}
	if _, err := strconv.ParseUint(expected, 10, 64); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "invalid expected_version %q", expected)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[req.GetId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "host %s not found", req.GetId())
	}
	if e.GetVersion() != expected {
		return nil, status.Errorf(codes.Aborted, "version conflict: expected %s, current %s", expected, e.GetVersion())
	}
	n := proto.Clone(e).(*pb.HostEntry)
	events := 0
	if req.IpAddress != nil {
		n.IpAddress, events = req.GetIpAddress(), events+1
	}
	if req.Hostname != nil {
		n.Hostname, events = req.GetHostname(), events+1
	}
	if req.Comment != nil {
		n.Comment, events = proto.String(req.GetComment()), events+1
	}
	if req.Aliases != nil {
		n.Aliases, events = append([]string(nil), req.GetAliases().GetValues()...), events+1
	}
	if req.Tags != nil {
		n.Tags, events = append([]string(nil), req.GetTags().GetValues()...), events+1
	}
	if err := validate(n.GetIpAddress(), n.GetHostname(), n.GetAliases()); err != nil {
		return nil, err
	}
	v, _ := strconv.ParseUint(e.GetVersion(), 10, 64)
	n.Version = strconv.FormatUint(v+uint64(events), 10)
	if events > 0 {
		n.UpdatedAt = timestamppb.New(s.now())
	}
	s.entries[n.Id] = n
	s.events += events
	return proto.Clone(n).(*pb.HostEntry), nil
}

// Delete removes an entry; a missing expected_version deletes unconditionally.
func (s *Store) Delete(id string, expectedVersion *string) error {
	if err := validateID(id); err != nil {
		return err
	}
	if expectedVersion != nil {
		if _, err := strconv.ParseUint(*expectedVersion, 10, 64); err != nil {
			return status.Errorf(codes.InvalidArgument, "invalid expected_version %q", *expectedVersion)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if !ok {
		return status.Errorf(codes.NotFound, "host %s not found", id)
	}
	if expectedVersion != nil && *expectedVersion != e.GetVersion() {
		return status.Errorf(codes.Aborted, "version conflict: expected %s, current %s", *expectedVersion, e.GetVersion())
	}
	delete(s.entries, id)
	s.events++
	return nil
}

// List returns every live entry in no particular order (map order), as the server guarantees
// none; callers must not depend on it.
func (s *Store) List() []*pb.HostEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*pb.HostEntry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, proto.Clone(e).(*pb.HostEntry))
	}
	return out
}

// validate applies the server's field rules; tags and comments are not validated, as there.
func validate(ip, hostname string, aliases []string) error {
	if _, err := endpoint.ParseIP(ip); err != nil {
		return status.Errorf(codes.InvalidArgument, "invalid ip_address: %v", err)
	}
	if err := endpoint.ValidateHostname(hostname); err != nil {
		return status.Errorf(codes.InvalidArgument, "invalid hostname: %v", err)
	}
	if err := endpoint.ValidateAliases(hostname, aliases); err != nil {
		return status.Errorf(codes.InvalidArgument, "invalid aliases: %v", err)
	}
	return nil
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// newULID returns a ULID: 48 bits of milliseconds and 80 random bits in Crockford base32.
func newULID(t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	out := make([]byte, 26)
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out)
}

// validateID refuses text that is not a ULID, as the server does.
func validateID(id string) error {
	if len(id) != 26 || id[0] > '7' {
		return status.Errorf(codes.InvalidArgument, "invalid id %q: not a ULID", id)
	}
	for i := 0; i < len(id); i++ {
		ok := false
		for j := 0; j < len(crockford); j++ {
			if id[i] == crockford[j] {
				ok = true
				break
			}
		}
		if !ok {
			return status.Errorf(codes.InvalidArgument, "invalid id %q: not a ULID", id)
		}
	}
	return nil
}

// String renders an entry for test failure messages.
func String(e *pb.HostEntry) string {
	return fmt.Sprintf("%s %s %s v%s tags=%v aliases=%v", e.GetId(), e.GetIpAddress(), e.GetHostname(), e.GetVersion(), e.GetTags(), e.GetAliases())
}
