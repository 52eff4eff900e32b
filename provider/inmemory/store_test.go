package inmemory

import (
	cryptorand "crypto/rand"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

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

func TestULID(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	id := newULID(at, cryptorand.Reader)
	if _, err := parseID(id); err != nil || len(id) != 26 {
		t.Fatalf("newULID = %q: %v", id, err)
	}
	// The first 10 characters are the 48-bit millisecond timestamp, most significant first.
	var ms uint64
	for i := 0; i < 10; i++ {
		ms = ms<<5 | uint64(strings.IndexByte(crockford, id[i]))
	}
	if ms != 1_700_000_000_123 {
		t.Fatalf("timestamp of %s = %d", id, ms)
	}
	if other := newULID(at, cryptorand.Reader); other == id {
		t.Fatalf("two ULIDs in the same millisecond are equal: %s", id)
	}
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"01ARZ3NDEKTSV4RRFFQ69G5FAV", true},
		{"01arz3ndektsv4rrffq69g5fav", true}, // ULID parsers ignore case
		{"7ZZZZZZZZZZZZZZZZZZZZZZZZZ", true},
		{"8ZZZZZZZZZZZZZZZZZZZZZZZZZ", false}, // overflows 128 bits
		{"01ARZ3NDEKTSV4RRFFQ69G5FA", false},
		{"01ARZ3NDEKTSV4RRFFQ69G5FAVX", false},
		{"01ARZ3NDEKTSV4RRFFQ69G5FAU", false}, // U, I, L, O are not Crockford digits
		{"01ARZ3NDEKTSV4RRFFQ69G5FAI", false},
		{"", false},
		{"nope", false},
	} {
		if _, err := parseID(tc.id); (err == nil) != tc.ok || (err != nil && status.Code(err) != codes.InvalidArgument) {
			t.Errorf("parseID(%q) = %v, want ok=%v", tc.id, err, tc.ok)
		}
	}
}

func TestAdd(t *testing.T) {
	long := strings.Repeat("a", 63)
	name253 := strings.Join([]string{long, long, long, strings.Repeat("b", 61)}, ".")
	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprintf("a%d.lan", i)
	}
	tests := []struct {
		name string
		req  *pb.AddHostRequest
		code codes.Code
	}{
		{"same pair", &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "nas.lan"}, codes.AlreadyExists},
		{"same pair, other tags", &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "nas.lan", Tags: []string{"x"}}, codes.AlreadyExists},
		{"hostname case differs: another entry", &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "NAS.lan"}, codes.OK},
		{"same hostname, other ip", &pb.AddHostRequest{IpAddress: "10.0.0.2", Hostname: "nas.lan"}, codes.OK},
		{"::1 exists", &pb.AddHostRequest{IpAddress: "::1", Hostname: "six.lan"}, codes.AlreadyExists},
		{"0::1 is other text: another entry", &pb.AddHostRequest{IpAddress: "0::1", Hostname: "six.lan"}, codes.OK},
		{"single label", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "router"}, codes.OK},
		{"253 bytes", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: name253}, codes.OK},
		{"254 bytes", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: name253 + "b"}, codes.InvalidArgument},
		{"label of 64", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: long + "a.lan"}, codes.InvalidArgument},
		{"not an ip", &pb.AddHostRequest{IpAddress: "nas", Hostname: "x.lan"}, codes.InvalidArgument},
		{"empty ip", &pb.AddHostRequest{IpAddress: "", Hostname: "x.lan"}, codes.InvalidArgument},
		{"leading-zero octet", &pb.AddHostRequest{IpAddress: "010.0.0.1", Hostname: "x.lan"}, codes.InvalidArgument},
		{"zone", &pb.AddHostRequest{IpAddress: "fe80::1%eth0", Hostname: "x.lan"}, codes.InvalidArgument},
		{"empty hostname", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: ""}, codes.InvalidArgument},
		{"trailing dot", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x.lan."}, codes.InvalidArgument},
		{"leading dot", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: ".x.lan"}, codes.InvalidArgument},
		{"empty label", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x..lan"}, codes.InvalidArgument},
		{"label starts with -", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "-x.lan"}, codes.InvalidArgument},
		{"underscore", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x_y.lan"}, codes.InvalidArgument},
		{"wildcard", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "*.lan"}, codes.InvalidArgument},
		{"non-ascii", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "bücher.lan"}, codes.InvalidArgument},
		{"alias equals hostname, other case", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x.lan", Aliases: []string{"X.lan"}}, codes.InvalidArgument},
		{"alias is an ip", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x.lan", Aliases: []string{"10.0.0.3"}}, codes.InvalidArgument},
		{"alias repeated, other case", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x.lan", Aliases: []string{"a.lan", "A.LAN"}}, codes.InvalidArgument},
		{"alias invalid hostname", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x.lan", Aliases: []string{"a_b.lan"}}, codes.InvalidArgument},
		{"51 aliases", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x.lan", Aliases: many}, codes.InvalidArgument},
		{"50 aliases", &pb.AddHostRequest{IpAddress: "10.0.0.3", Hostname: "x.lan", Aliases: many[:50]}, codes.OK},
		{"tags and comment are not validated", &pb.AddHostRequest{IpAddress: "10.0.0.4", Hostname: "x.lan",
			Tags: []string{"any thing\n", "", "a,b"}, Comment: proto.String("two\nlines")}, codes.OK},
	}
	s := NewStore()
	add(t, s, "10.0.0.1", "nas.lan")
	add(t, s, "::1", "six.lan")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Len()
			e, err := s.Add(tc.req)
			if status.Code(err) != tc.code {
				t.Fatalf("code %v (%v), want %v", status.Code(err), err, tc.code)
			}
			if err != nil {
				if s.Len() != before {
					t.Fatalf("a failed AddHost changed the store")
				}
				return
			}
			// Stored as sent: no case folding, no canonical IP, lists in order.
			got, gerr := s.Get(e.GetId())
			if gerr != nil || got.GetIpAddress() != tc.req.GetIpAddress() || got.GetHostname() != tc.req.GetHostname() ||
				got.GetVersion() != "1" || strings.Join(got.GetTags(), "|") != strings.Join(tc.req.GetTags(), "|") ||
				strings.Join(got.GetAliases(), "|") != strings.Join(tc.req.GetAliases(), "|") ||
				got.Comment == nil != (tc.req.Comment == nil) || got.GetComment() != tc.req.GetComment() ||
				got.GetCreatedAt() == nil || !proto.Equal(got.GetCreatedAt(), got.GetUpdatedAt()) {
				t.Fatalf("stored %s (comment %q) for %v: %v", String(got), got.GetComment(), tc.req, gerr)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	v := proto.String
	tests := []struct {
		name    string
		req     func(id string) *pb.UpdateHostRequest
		code    codes.Code
		version string // after the update; the entry starts at "1" with tags [t1 t2], alias al.lan, comment "c"
		check   func(e *pb.HostEntry) bool
	}{
		{"missing expected_version is 0: Aborted",
			func(id string) *pb.UpdateHostRequest { return &pb.UpdateHostRequest{Id: id, Comment: v("x")} }, codes.Aborted, "1", nil},
		{"stale version: Aborted",
			func(id string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("2"), Comment: v("x")}
			}, codes.Aborted, "1", nil},
		{"expected_version not decimal",
			func(id string) *pb.UpdateHostRequest { return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("v1")} }, codes.InvalidArgument, "1", nil},
		{"expected_version empty text",
			func(id string) *pb.UpdateHostRequest { return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("")} }, codes.InvalidArgument, "1", nil},
		{"malformed id",
			func(string) *pb.UpdateHostRequest { return &pb.UpdateHostRequest{Id: "nope", ExpectedVersion: v("1")} }, codes.InvalidArgument, "1", nil},
		{"unknown id",
			func(string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: "01ARZ3NDEKTSV4RRFFQ69G5FAV", ExpectedVersion: v("1")}
			}, codes.NotFound, "1", nil},
		{"unchanged comment, tags and aliases still bump three times",
			func(id string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("1"), Comment: v("c"),
					Tags: &pb.TagsUpdate{Values: []string{"t1", "t2"}}, Aliases: &pb.AliasesUpdate{Values: []string{"al.lan"}}}
			}, codes.OK, "4", nil},
		{"unchanged ip and hostname bump too",
			func(id string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("1"), IpAddress: v("10.0.0.1"), Hostname: v("a.lan")}
			}, codes.OK, "3", nil},
		{"no field: no event",
			func(id string) *pb.UpdateHostRequest { return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("1")} }, codes.OK, "1", nil},
		{"empty wrappers clear, absent comment kept",
			func(id string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("1"), Tags: &pb.TagsUpdate{}, Aliases: &pb.AliasesUpdate{}}
			}, codes.OK, "3", func(e *pb.HostEntry) bool {
				return len(e.GetTags()) == 0 && len(e.GetAliases()) == 0 && e.GetComment() == "c"
			}},
		{"tags replaced in the order sent, aliases kept",
			func(id string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("1"), Tags: &pb.TagsUpdate{Values: []string{"z", "a"}}}
			}, codes.OK, "2", func(e *pb.HostEntry) bool {
				return strings.Join(e.GetTags(), ",") == "z,a" && strings.Join(e.GetAliases(), ",") == "al.lan"
			}},
		{"ip stored as sent",
			func(id string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("1"), IpAddress: v("0::1")}
			}, codes.OK, "2", func(e *pb.HostEntry) bool { return e.GetIpAddress() == "0::1" }},
		{"no uniqueness check: becomes b.lan's pair",
			func(id string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("1"), Hostname: v("b.lan")}
			}, codes.OK, "2", func(e *pb.HostEntry) bool { return e.GetHostname() == "b.lan" }},
		{"invalid new hostname",
			func(id string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("1"), Hostname: v("b_b.lan")}
			}, codes.InvalidArgument, "1", nil},
		{"invalid new ip",
			func(id string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("1"), IpAddress: v("10.0.0.01")}
			}, codes.InvalidArgument, "1", nil},
		{"new hostname equals an existing alias",
			func(id string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("1"), Hostname: v("AL.lan")}
			}, codes.InvalidArgument, "1", nil},
		{"new alias is an ip",
			func(id string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("1"), Aliases: &pb.AliasesUpdate{Values: []string{"::1"}}}
			}, codes.InvalidArgument, "1", nil},
		{"alias valid against the new hostname",
			func(id string) *pb.UpdateHostRequest {
				return &pb.UpdateHostRequest{Id: id, ExpectedVersion: v("1"), Hostname: v("c.lan"), Aliases: &pb.AliasesUpdate{Values: []string{"a.lan"}}}
			}, codes.OK, "3", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore()
			e, err := s.Add(&pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "a.lan", Comment: v("c"),
				Tags: []string{"t1", "t2"}, Aliases: []string{"al.lan"}})
			if err != nil {
				t.Fatal(err)
			}
			add(t, s, "10.0.0.1", "b.lan")
			before := s.Events()
			_, err = s.Update(tc.req(e.GetId()))
			if status.Code(err) != tc.code {
				t.Fatalf("code %v (%v), want %v", status.Code(err), err, tc.code)
			}
			got, _ := s.Get(e.GetId())
			if got.GetVersion() != tc.version {
				t.Fatalf("version %s, want %s", got.GetVersion(), tc.version)
			}
			// The event log grows by exactly the version bump.
			if bump := s.Events() - before; fmt.Sprint(1+bump) != tc.version {
				t.Fatalf("events grew by %d, version is %s", bump, tc.version)
			}
			if got.GetUpdatedAt().AsTime().Before(got.GetCreatedAt().AsTime()) {
				t.Fatalf("updated_at %v before created_at %v", got.GetUpdatedAt(), got.GetCreatedAt())
			}
			if tc.check != nil && !tc.check(got) {
				t.Fatalf("entry after update: %s comment=%q", String(got), got.GetComment())
			}
		})
	}
}

func TestUpdateSequence(t *testing.T) {
	s := NewStore()
	e := add(t, s, "10.0.0.1", "a.lan")
	u, err := s.Update(&pb.UpdateHostRequest{Id: e.GetId(), ExpectedVersion: proto.String("1"), Comment: proto.String("x")})
	if err != nil || u.GetVersion() != "2" {
		t.Fatalf("first update: %v, %v", u, err)
	}
	// The version read before the first update is now stale.
	if _, err := s.Update(&pb.UpdateHostRequest{Id: e.GetId(), ExpectedVersion: proto.String("1"), Comment: proto.String("y")}); status.Code(err) != codes.Aborted {
		t.Fatalf("stale update: %v, want Aborted", err)
	}
	// Lower-case ULIDs name the same entry.
	if _, err := s.Update(&pb.UpdateHostRequest{Id: strings.ToLower(e.GetId()), ExpectedVersion: proto.String("2"), Comment: proto.String("y")}); err != nil {
		t.Fatalf("update by lower-case id: %v", err)
	}
}

func TestDelete(t *testing.T) {
	v := proto.String
	tests := []struct {
		name     string
		id       func(id string) string
		expected *string
		code     codes.Code
	}{
		{"stale version", func(id string) string { return id }, v("2"), codes.Aborted},
		{"version not decimal", func(id string) string { return id }, v("one"), codes.InvalidArgument},
		{"malformed id", func(string) string { return "x" }, nil, codes.InvalidArgument},
		{"unknown id", func(string) string { return "01ARZ3NDEKTSV4RRFFQ69G5FAV" }, nil, codes.NotFound},
		{"matching version", func(id string) string { return id }, v("1"), codes.OK},
		{"unconditional", func(id string) string { return id }, nil, codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore()
			e := add(t, s, "10.0.0.1", "a.lan")
			err := s.Delete(tc.id(e.GetId()), tc.expected)
			if status.Code(err) != tc.code {
				t.Fatalf("code %v (%v), want %v", status.Code(err), err, tc.code)
			}
			if wantLen := map[bool]int{true: 0, false: 1}[err == nil]; s.Len() != wantLen {
				t.Fatalf("len %d, want %d", s.Len(), wantLen)
			}
			if err != nil {
				return
			}
			// Deleted is gone for every operation, and the pair may be added again.
			if _, err := s.Get(e.GetId()); status.Code(err) != codes.NotFound {
				t.Fatalf("get after delete: %v", err)
			}
			if err := s.Delete(e.GetId(), nil); status.Code(err) != codes.NotFound {
				t.Fatalf("second delete: %v, want NotFound", err)
			}
			if _, err := s.Update(&pb.UpdateHostRequest{Id: e.GetId(), ExpectedVersion: v("1")}); status.Code(err) != codes.NotFound {
				t.Fatalf("update after delete: %v, want NotFound", err)
			}
			add(t, s, "10.0.0.1", "a.lan")
			if s.Events() != 3 {
				t.Fatalf("events %d, want add+delete+add", s.Events())
			}
		})
	}
}

func TestStoredStateIsIsolated(t *testing.T) {
	s := NewStore()
	req := &pb.AddHostRequest{IpAddress: "10.0.0.1", Hostname: "a.lan", Tags: []string{"t"}, Comment: proto.String("c")}
	e, err := s.Add(req)
	if err != nil {
		t.Fatal(err)
	}
	// Changing the request or a returned entry must not reach the store.
	req.Tags[0], *req.Comment = "changed", "changed"
	e.Tags[0] = "changed"
	for _, l := range s.List() {
		l.Hostname = "changed"
	}
	got, _ := s.Get(e.GetId())
	if got.GetTags()[0] != "t" || got.GetComment() != "c" || got.GetHostname() != "a.lan" {
		t.Fatalf("store shares memory with callers: %s comment=%q", String(got), got.GetComment())
	}
}

// TestReplayMatchesState checks the two views of the store against each other after a random
// mix of writes: what a read replays from the log must be the state the writes checked against.
func TestReplayMatchesState(t *testing.T) {
	s := NewStore()
	rng := rand.New(rand.NewPCG(1, 2))
	var ids []string
	for i := 0; i < 2000; i++ {
		switch op := rng.IntN(4); {
		case op < 2 || len(ids) == 0:
			e, err := s.Add(&pb.AddHostRequest{IpAddress: fmt.Sprintf("10.0.%d.%d", rng.IntN(4), rng.IntN(250)+1), Hostname: fmt.Sprintf("h%d.lan", rng.IntN(50))})
			if err == nil {
				ids = append(ids, e.GetId())
			} else if status.Code(err) != codes.AlreadyExists {
				t.Fatal(err)
			}
		case op == 2:
			id := ids[rng.IntN(len(ids))]
			if cur, err := s.Get(id); err == nil {
				_, err = s.Update(&pb.UpdateHostRequest{Id: id, ExpectedVersion: proto.String(cur.GetVersion()),
					IpAddress: proto.String(fmt.Sprintf("10.1.0.%d", rng.IntN(250)+1)), Tags: &pb.TagsUpdate{Values: []string{"x"}}})
				if err != nil {
					t.Fatal(err)
				}
			}
		default:
			_ = s.Delete(ids[rng.IntN(len(ids))], nil) // NotFound for an ID deleted before is fine
		}
	}
	listed := map[string]string{}
	for _, e := range s.List() {
		listed[e.GetId()] = String(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(listed) != len(s.entries) {
		t.Fatalf("replay has %d entries, state %d", len(listed), len(s.entries))
	}
	for id, e := range s.entries {
		if listed[id] != String(e) {
			t.Fatalf("replayed %q, state %q", listed[id], String(e))
		}
	}
}

// TestReplayCostGrowsWithTheLog pins the cost model: a read costs the replay cost times the
// events in the log, deletes and field updates included, so per-hostname reads go quadratic.
func TestReplayCostGrowsWithTheLog(t *testing.T) {
	s := NewStore()
	s.SetReplayCost(2 * time.Millisecond)
	a := add(t, s, "10.0.0.1", "a.lan") // 1 event, replayed by the duplicate check of the next add
	add(t, s, "10.0.0.2", "b.lan")
	if _, err := s.Update(&pb.UpdateHostRequest{Id: a.GetId(), ExpectedVersion: proto.String("1"),
		Comment: proto.String("c"), Tags: &pb.TagsUpdate{Values: []string{"t"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(a.GetId(), nil); err != nil {
		t.Fatal(err)
	}
	if s.Events() != 5 {
		t.Fatalf("%d events, want add, add, 2 field updates, delete", s.Events())
	}
	start := time.Now()
	if n := len(s.List()); n != 1 {
		t.Fatalf("listed %d entries, want 1", n)
	}
	// A lower bound only: a sleep is never shorter than asked.
	if took := time.Since(start); took < 10*time.Millisecond {
		t.Fatalf("a list over 5 events took %v, want at least 5 × 2ms", took)
	}
	if got := s.Lookup("b.lan"); len(got) != 1 || got[0].GetIpAddress() != "10.0.0.2" {
		t.Fatalf("Lookup(b.lan) = %v", got)
	}
}
