// Package inmemory implements the router-hosts server's semantics in memory: validation,
// (ip, hostname) uniqueness, versions that count field events, Aborted on a stale version, and
// the server's cost model (every read and every AddHost duplicate check replays the whole event
// log). It backs --provider=inmemory and the router-hosts test server, so both behave as the
// real server does wherever the operator could tell the difference, its speed included.
package inmemory

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/utils/clock"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Store is an event-sourced host database. The log is the truth, as on the real server: reads
// (ListHosts, GetHost) and AddHost's duplicate check rebuild the state by replaying it, so they
// cost O(events) and a client that makes one call per hostname goes quadratic here exactly as
// there. entries is the aggregate state the writes check versions against (the real server
// loads one entry's own events for that), and what the inspection helpers (Len, Lookup) read
// without a replay. Entries are cloned on the way in and out, so a caller can never change
// stored state except through the server's operations.
type Store struct {
	mu      sync.Mutex
	entries map[string]*pb.HostEntry
	// log holds one record per event; records are never changed once appended, so a reader may
	// replay a prefix of it without the lock.
	log []logRecord
	// replayCost is slept per event replayed, to play a server whose storage is slower than
	// memory (see SetReplayCost).
	replayCost time.Duration
	// scratch is the map AddHost's duplicate check replays into, reused under mu so that the
	// check costs time in proportion to the log but makes no garbage: a test server that
	// allocated megabytes per call would be slowed by its own GC, and by whatever else shares
	// the machine, in a way the real server is not.
	scratch map[string]*pb.HostEntry
	// onWrite is told the live entries after every write (SetOnWrite).
	onWrite func(live []*pb.HostEntry)
	// clk stamps new entries and entropy fills their IDs' random part; a simulation sets both
	// (NewStoreAt) so that a seed replays the same IDs in the same order.
	clk     clock.PassiveClock
	entropy io.Reader
	// ordered: List and Search answer in ID order rather than the map's random order, so that
	// a seeded simulation replays.
	ordered bool
}

// logRecord is one event: the entry as it stood after the event, or nil for a delete. An
// UpdateHost that sends k fields appends k records, as the server appends k field events.
type logRecord struct {
	id    string
	entry *pb.HostEntry
	// version is the aggregate's version after the event. A delete's is one past the entry's
	// last, as the server's tombstone event is, and only the log holds it: the deleted entry
	// is gone from entries, yet CompactAggregates still reports its version.
	version uint64
}

// NewStore returns an empty store, as a freshly initialised server database.
func NewStore() *Store {
	return &Store{entries: map[string]*pb.HostEntry{}, clk: clock.RealClock{}, entropy: rand.Reader}
}

// NewStoreAt returns an empty store for a seeded simulation: its entries are stamped by clk,
// their IDs take their random bits from entropy, and reads answer in ID order, so that the
// same seed writes the same entries in the same order.
func NewStoreAt(clk clock.PassiveClock, entropy io.Reader) *Store {
	return &Store{entries: map[string]*pb.HostEntry{}, clk: clk, entropy: entropy, ordered: true}
}

// NewStoreWith returns a store that holds entries exactly: their IDs, fields and versions as
// given, as the router a snapshot was taken of holds them (explain.ReadSnapshot), so that reads
// answer them as it would and a write's expected_version meets the version it had. The log
// holds one event per entry, as after CompactAggregates (Compact), and every entry is stamped
// now, since a snapshot has no times. An entry the server could not hold is refused: an ID that
// is not a ULID or that comes twice, a version that is not a positive decimal counter (a stored
// "0" would match the missing expected_version that must conflict), a field its rules refuse.
// Two entries of one (ip, hostname) are kept, as the server keeps those an UpdateHost made.
func NewStoreWith(entries []endpoint.Record) (*Store, error) {
	s := NewStore()
	now := s.clk.Now()
	for i := range entries {
		r := &entries[i]
		key, err := parseID(r.ID)
		if err != nil {
			return nil, fmt.Errorf("entry %d (%s %s): %w", i+1, r.Hostname, r.IP, err)
		}
		if _, ok := s.entries[key]; ok {
			return nil, fmt.Errorf("entry %s (%s %s): the ID comes twice", r.ID, r.Hostname, r.IP)
		}
		if v, err := strconv.ParseUint(r.Version, 10, 64); err != nil || v == 0 {
			return nil, fmt.Errorf("entry %s (%s %s): version %q is not a positive decimal counter", r.ID, r.Hostname, r.IP, r.Version)
		}
		if err := validate(r.IP, r.Hostname, r.Aliases); err != nil {
			return nil, fmt.Errorf("entry %s: %w", r.ID, err)
		}
		e := &pb.HostEntry{
			Id: r.ID, IpAddress: r.IP, Hostname: r.Hostname, Tags: slices.Clone(r.Tags), Aliases: slices.Clone(r.Aliases),
			CreatedAt: timestamppb.New(now), UpdatedAt: timestamppb.New(now), Version: r.Version,
		}
		if r.Comment != "" {
			e.Comment = proto.String(r.Comment)
		}
		s.entries[key] = e
		s.log = append(s.log, logRecord{id: key, entry: e, version: storedVersion(e)})
	}
	return s, nil
}

// Live returns every live entry, in ID order, without a replay: how a test or a simulation
// watches the server, not an RPC.
func (s *Store) Live() []*pb.HostEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*pb.HostEntry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, proto.Clone(e).(*pb.HostEntry))
	}
	sortByID(out)
	return out
}

// Compact collapses the log to one event per live entry at its version, as CompactAggregates
// does over every aggregate, and drops the deleted ones (the real server keeps one event for
// each): a long simulation's reads then cost what its live entries do.
func (s *Store) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	log := make([]logRecord, 0, len(s.entries))
	for id, e := range s.entries {
		log = append(log, logRecord{id: id, entry: e, version: storedVersion(e)})
	}
	s.log = log
}

func sortByID(es []*pb.HostEntry) {
	slices.SortFunc(es, func(a, b *pb.HostEntry) int { return strings.Compare(a.GetId(), b.GetId()) })
}

// SetReplayCost adds d of latency per event to every replay. Zero (the default) replays at
// memory speed; RouterReplayCost makes this store about as slow as a router running the real
// server 0.13, which replays its log from SQLite.
func (s *Store) SetReplayCost(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replayCost = d
}

// RouterReplayCost is the per-event replay cost that reproduces the real server's reference
// timings of sequential AddHost calls; docs/performance.md ("The test server's cost model")
// gives those timings and the fit.
const RouterReplayCost = 32 * time.Microsecond

// Events is the number of events in the log: one per AddHost, one per field sent in an
// UpdateHost, one per DeleteHost, until a compaction folds an aggregate's into one. Benchmarks
// use it to show writes stay minimal.
func (s *Store) Events() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log)
}

// EventsOf is the number of events in the log for the aggregate id, an entry's whether live
// or deleted (the ID in upper or lower case), 0 for one the log does not hold: what a test
// reads to see what a compaction folded.
func (s *Store) EventsOf(id string) int {
	key := strings.ToUpper(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.log {
		if r.id == key {
			n++
		}
	}
	return n
}

// EventCounts is the number of events in the log of each aggregate it holds, live or deleted,
// by ID in upper case: the log's size as a long simulation watches it grow.
func (s *Store) EventCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int)
	for _, r := range s.log {
		out[r.id]++
	}
	return out
}

// replay rebuilds the live entries from log into live (emptied first) and returns it, paying
// the replay cost; the map values are the log's own records, which callers must clone before
// handing out. A nil live gets a new map.
func replay(live map[string]*pb.HostEntry, log []logRecord, cost time.Duration) map[string]*pb.HostEntry {
	if live == nil {
		live = make(map[string]*pb.HostEntry)
	}
	clear(live)
	for _, r := range log {
		if r.entry == nil {
			delete(live, r.id)
		} else {
			live[r.id] = r.entry
		}
	}
	if cost > 0 {
		time.Sleep(cost * time.Duration(len(log)))
	}
	return live
}

// replayed is the state a read sees: the log as it stands, replayed without holding the lock,
// since the server's readers do not wait for its writer.
func (s *Store) replayed() map[string]*pb.HostEntry {
	s.mu.Lock()
	log, cost := s.log[:len(s.log):len(s.log)], s.replayCost
	s.mu.Unlock()
	return replay(nil, log, cost)
}

// record stores e as the entry's new state and appends n events for it; nil deletes it.
// The caller holds s.mu.
func (s *Store) record(id string, e *pb.HostEntry, n int) {
	// last is the version after the n events: e's own, or for a delete one past the entry's.
	var last uint64
	if e == nil {
		last = storedVersion(s.entries[id]) + uint64(n)
		delete(s.entries, id)
	} else {
		last = storedVersion(e)
		s.entries[id] = e
	}
	for i := 0; i < n; i++ {
		s.log = append(s.log, logRecord{id: id, entry: e, version: last - uint64(n-1-i)})
	}
	if s.onWrite != nil {
		live := make([]*pb.HostEntry, 0, len(s.entries))
		for _, e := range s.entries {
			live = append(live, proto.Clone(e).(*pb.HostEntry))
		}
		s.onWrite(live)
	}
}

// SetOnWrite calls fn with the live entries after every write, as the real server regenerates
// its hosts file after each one; nil stops it. fn runs inside the writer's critical section,
// so it sees every write, in order.
func (s *Store) SetOnWrite(fn func(live []*pb.HostEntry)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onWrite = fn
	if fn != nil {
		live := make([]*pb.HostEntry, 0, len(s.entries))
		for _, e := range s.entries {
			live = append(live, proto.Clone(e).(*pb.HostEntry))
		}
		fn(live)
	}
}

// Len is the number of live entries, so tests can check a sync's result without listing.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Add creates an entry as AddHost does: fields are stored exactly as sent (no case folding, no
// canonical IP text), and only an identical (ip_address, hostname) pair is a duplicate.
func (s *Store) Add(req *pb.AddHostRequest) (*pb.HostEntry, error) {
	if err := validate(req.GetIpAddress(), req.GetHostname(), req.GetAliases()); err != nil {
		return nil, err
	}
	// The duplicate check replays the log inside the writer's critical section: writes are
	// serialised, so concurrent AddHost calls queue behind each other's replays.
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scratch = replay(s.scratch, s.log, s.replayCost)
	for _, e := range s.scratch {
		if e.GetIpAddress() == req.GetIpAddress() && e.GetHostname() == req.GetHostname() {
			return nil, status.Errorf(codes.AlreadyExists, "host entry %s %s already exists", req.GetIpAddress(), req.GetHostname())
		}
	}
	now := s.clk.Now()
	ts := timestamppb.New(now)
	e := &pb.HostEntry{
		Id: newULID(now, s.entropy), IpAddress: req.GetIpAddress(), Hostname: req.GetHostname(),
		Tags: append([]string(nil), req.GetTags()...), Aliases: append([]string(nil), req.GetAliases()...),
		CreatedAt: ts, UpdatedAt: proto.Clone(ts).(*timestamppb.Timestamp), Version: "1",
	}
	if req.Comment != nil {
		e.Comment = proto.String(req.GetComment())
	}
	s.record(e.Id, e, 1)
	return proto.Clone(e).(*pb.HostEntry), nil
}

// Get returns one entry as GetHost does, replaying the log: InvalidArgument for text that is
// not a ULID, NotFound for an unknown or deleted ID.
func (s *Store) Get(id string) (*pb.HostEntry, error) {
	key, err := parseID(id)
	if err != nil {
		return nil, err
	}
	e, ok := s.replayed()[key]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "host %s not found", id)
	}
	return proto.Clone(e).(*pb.HostEntry), nil
}

// Update applies an UpdateHost. A missing expected_version counts as "0" (so it conflicts with
// every existing entry), every field present is one event even when its value is unchanged,
// and uniqueness is not checked, all as on the real server.
func (s *Store) Update(req *pb.UpdateHostRequest) (*pb.HostEntry, error) {
	key, err := parseID(req.GetId())
	if err != nil {
		return nil, err
	}
	expected := "0"
	if req.ExpectedVersion != nil {
		expected = req.GetExpectedVersion()
	}
	want, err := parseVersion(expected)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "host %s not found", req.GetId())
	}
	cur := storedVersion(e)
	if cur != want {
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
	// A present wrapper replaces the whole list (an empty one clears it); nil keeps it.
	if req.Aliases != nil {
		n.Aliases, events = append([]string(nil), req.GetAliases().GetValues()...), events+1
	}
	if req.Tags != nil {
		n.Tags, events = append([]string(nil), req.GetTags().GetValues()...), events+1
	}
	// The resulting entry is validated as a whole, so aliases are checked against the new
	// hostname even when only one of the two was sent.
	if err := validate(n.GetIpAddress(), n.GetHostname(), n.GetAliases()); err != nil {
		return nil, err
	}
	if events == 0 {
		return n, nil
	}
	n.Version = strconv.FormatUint(cur+uint64(events), 10)
	n.UpdatedAt = timestamppb.New(s.clk.Now())
	s.record(key, n, events)
	return proto.Clone(n).(*pb.HostEntry), nil
}

// Delete removes an entry as DeleteHost does: a nil expectedVersion deletes unconditionally, a
// mismatching one is Aborted, and an unknown or already-deleted ID is NotFound.
func (s *Store) Delete(id string, expectedVersion *string) error {
	key, err := parseID(id)
	if err != nil {
		return err
	}
	var want uint64
	if expectedVersion != nil {
		if want, err = parseVersion(*expectedVersion); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return status.Errorf(codes.NotFound, "host %s not found", id)
	}
	if expectedVersion != nil {
		if storedVersion(e) != want {
			return status.Errorf(codes.Aborted, "version conflict: expected %s, current %s", *expectedVersion, e.GetVersion())
		}
	}
	s.record(key, nil, 1)
	return nil
}

// List returns every live entry, replaying the log, in map order, which Go randomises: the
// server guarantees no order, and this makes a caller that depends on one fail early.
func (s *Store) List() []*pb.HostEntry {
	live := s.replayed()
	out := make([]*pb.HostEntry, 0, len(live))
	for _, e := range live {
		out = append(out, proto.Clone(e).(*pb.HostEntry))
	}
	if s.ordered {
		sortByID(out)
	}
	return out
}

// Search returns the live entries SearchHosts matches (see Service.SearchHosts), replaying
// the log.
func (s *Store) Search(query string) []*pb.HostEntry {
	q := strings.ToLower(query)
	has := func(v string) bool { return strings.Contains(strings.ToLower(v), q) }
	var out []*pb.HostEntry
	for _, e := range s.replayed() {
		match := q == "" || has(e.GetIpAddress()) || has(e.GetHostname()) || has(e.GetComment())
		for _, t := range e.GetTags() {
			match = match || has(t)
		}
		if match {
			out = append(out, proto.Clone(e).(*pb.HostEntry))
		}
	}
	if s.ordered {
		sortByID(out)
	}
	return out
}

// Lookup returns the live entries with this hostname without a replay (a scan of the entries
// under the store's lock): it is how a test or benchmark watches the server, not an RPC.
func (s *Store) Lookup(hostname string) []*pb.HostEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*pb.HostEntry
	for _, e := range s.entries {
		if e.GetHostname() == hostname {
			out = append(out, proto.Clone(e).(*pb.HostEntry))
		}
	}
	return out
}

// String renders an entry on one line, for test failure messages.
func String(e *pb.HostEntry) string {
	return fmt.Sprintf("%s %s %s v%s tags=%v aliases=%v", e.GetId(), e.GetIpAddress(), e.GetHostname(), e.GetVersion(), e.GetTags(), e.GetAliases())
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

// parseVersion reads an expected_version; text that is not a decimal counter is
// InvalidArgument, as on the server.
func parseVersion(v string) (uint64, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, status.Errorf(codes.InvalidArgument, "invalid expected_version %q", v)
	}
	return n, nil
}

// storedVersion reads the counter of a stored entry; this store only ever writes decimal text.
func storedVersion(e *pb.HostEntry) uint64 {
	n, _ := strconv.ParseUint(e.GetVersion(), 10, 64)
	return n
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// newULID returns a ULID: 48 bits of milliseconds then 80 random bits, as 26 characters of
// Crockford base32 (128 bits in 130, so the first character is at most '7').
func newULID(t time.Time, entropy io.Reader) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	_, _ = io.ReadFull(entropy, b[6:]) // crypto/rand never fails on supported platforms, nor a seeded source
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	out := make([]byte, 26)
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out)
}

// parseID refuses text that is not a ULID with InvalidArgument and returns the canonical
// (upper-case) key. ULID parsers accept either case, so a lower-case ID names the same entry.
func parseID(id string) (string, error) {
	u := strings.ToUpper(id)
	if len(u) != 26 || u[0] > '7' {
		return "", status.Errorf(codes.InvalidArgument, "invalid id %q: not a ULID", id)
	}
	for i := 0; i < len(u); i++ {
		if strings.IndexByte(crockford, u[i]) < 0 {
			return "", status.Errorf(codes.InvalidArgument, "invalid id %q: not a ULID", id)
		}
	}
	return u, nil
}
