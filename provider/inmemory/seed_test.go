package inmemory_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
)

// seeded are entries as a router's snapshot gives them: this cluster's with tags and a
// comment, a hand-made one with none, versions well past 1, and two of one (ip, hostname).
var seeded = []endpoint.Record{
	{ID: "01J0000000000000000000000A", IP: "10.0.0.1", Hostname: "web.home.arpa", Aliases: []string{"www.home.arpa"},
		Tags: []string{"k8s-operator", "cluster:home", "source:u1"}, Comment: "router-hosts-operator: Ingress apps/web", Version: "4"},
	{ID: "01J0000000000000000000000B", IP: "192.168.1.10", Hostname: "nas.home.arpa", Version: "1"},
	{ID: "01J0000000000000000000000C", IP: "10.0.0.2", Hostname: "twice.home.arpa", Tags: []string{"mine"}, Version: "12"},
	{ID: "01J0000000000000000000000D", IP: "10.0.0.2", Hostname: "twice.home.arpa", Comment: "made by an update", Version: "3"},
}

// TestNewStoreWithServesTheEntries: a store seeded with a router's entries answers ListHosts,
// SearchHosts and GetHost with exactly those entries, IDs and versions kept, and takes a write
// whose expected_version is the seeded version, as that router would, and no other.
func TestNewStoreWithServesTheEntries(t *testing.T) {
	store, err := inmemory.NewStoreWith(seeded)
	if err != nil {
		t.Fatal(err)
	}
	conn, stop, err := inmemory.Dial(inmemory.NewService(store))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	p := routerhosts.NewFromConn(conn, routerhosts.Options{Timeout: 5 * time.Second, Log: log})
	ctx := context.Background()

	got, err := p.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b endpoint.Record) int { return strings.Compare(a.ID, b.ID) })
	if !reflect.DeepEqual(got, seeded) {
		t.Errorf("ListHosts gave\n%+v\nwant\n%+v", got, seeded)
	}
	found, err := p.Search(ctx, "twice.home.arpa")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 {
		t.Errorf("SearchHosts twice.home.arpa gave %+v, want the two seeded", found)
	}
	c := pb.NewHostsServiceClient(conn)
	for _, want := range seeded {
		r, err := c.GetHost(ctx, &pb.GetHostRequest{Id: want.ID})
		if err != nil {
			t.Fatalf("GetHost %s: %v", want.ID, err)
		}
		if e := r.GetEntry(); e.GetVersion() != want.Version || e.GetHostname() != want.Hostname || e.GetComment() != want.Comment {
			t.Errorf("GetHost %s: %s, want %+v", want.ID, inmemory.String(e), want)
		}
	}

	web := seeded[0]
	_, err = c.UpdateHost(ctx, &pb.UpdateHostRequest{Id: web.ID, ExpectedVersion: proto.String("1"), Comment: proto.String("stale")})
	if status.Code(err) != codes.Aborted {
		t.Errorf("an update expecting version 1 of a version-%s entry: %v, want Aborted", web.Version, err)
	}
	r, err := c.UpdateHost(ctx, &pb.UpdateHostRequest{Id: web.ID, ExpectedVersion: proto.String(web.Version), Comment: proto.String("new")})
	if err != nil {
		t.Fatalf("an update expecting the seeded version: %v", err)
	}
	if v := r.GetEntry().GetVersion(); v != "5" {
		t.Errorf("version %s after one field of a version-4 entry, want 5", v)
	}
}

// TestNewStoreWithRefuses: entries the server could not hold are refused, naming the entry.
func TestNewStoreWithRefuses(t *testing.T) {
	ok := seeded[1]
	with := func(f func(r *endpoint.Record)) []endpoint.Record {
		r := ok
		f(&r)
		return []endpoint.Record{r}
	}
	for _, tc := range []struct {
		desc    string
		entries []endpoint.Record
		err     string
	}{
		{"an ID twice", []endpoint.Record{ok, ok}, "the ID comes twice"},
		{"an ID twice in another case", append([]endpoint.Record{ok}, with(func(r *endpoint.Record) { r.ID = strings.ToLower(r.ID) })...), "the ID comes twice"},
		{"no ID", with(func(r *endpoint.Record) { r.ID = "" }), "not a ULID"},
		{"an ID that is not a ULID", with(func(r *endpoint.Record) { r.ID = "42" }), "not a ULID"},
		{"no version", with(func(r *endpoint.Record) { r.Version = "" }), "not a positive decimal counter"},
		{"version 0", with(func(r *endpoint.Record) { r.Version = "0" }), "not a positive decimal counter"},
		{"a version that is not a counter", with(func(r *endpoint.Record) { r.Version = "v2" }), "not a positive decimal counter"},
		{"a bad address", with(func(r *endpoint.Record) { r.IP = "10.0.0" }), "invalid ip_address"},
		{"a bad hostname", with(func(r *endpoint.Record) { r.Hostname = "bad_name.lan" }), "invalid hostname"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if _, err := inmemory.NewStoreWith(tc.entries); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want one with %q", err, tc.err)
			}
		})
	}
	if s, err := inmemory.NewStoreWith(nil); err != nil {
		t.Errorf("no entries: %v, want an empty store", err)
	} else if s.Len() != 0 {
		t.Errorf("no entries: %d entries, want an empty store", s.Len())
	}
}
