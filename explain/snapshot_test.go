package explain

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestReadSnapshot: a list -o json document of this version, unfiltered, reads back as its
// entries; anything that cannot be the whole router as it is now is refused, saying why.
func TestReadSnapshot(t *testing.T) {
	const v = `"version": "` + Version + `"`
	for _, tc := range []struct {
		desc, doc string
		want      []endpoint.Record
		err       string // in the error; "" for none
	}{
		{desc: "an entry", doc: `{` + v + `, "entries": [{"id": "01A", "hostname": "web.home.arpa", "address": "10.0.0.1",
			"aliases": ["www.home.arpa"], "tags": ["k8s-operator", "cluster:home"], "comment": "c", "version": "3",
			"owner": {"class": "this", "words": "…"}, "state": "synced"}]}`,
			want: []endpoint.Record{{ID: "01A", Hostname: "web.home.arpa", IP: "10.0.0.1", Aliases: []string{"www.home.arpa"},
				Tags: []string{"k8s-operator", "cluster:home"}, Comment: "c", Version: "3"}}},
		{desc: "a hand-made entry has no tags", doc: `{` + v + `, "entries": [{"id": "01B", "hostname": "nas.home.arpa", "address": "192.168.1.10", "version": "1"}]}`,
			want: []endpoint.Record{{ID: "01B", Hostname: "nas.home.arpa", IP: "192.168.1.10", Version: "1"}}},
		{desc: "an empty router", doc: `{` + v + `, "entries": []}`, want: []endpoint.Record{}},
		{desc: "fields added later are read past", doc: `{` + v + `, "later": 1, "entries": [{"id": "01B", "hostname": "a.lan", "address": "10.0.0.1", "version": "1", "later": true}]}`,
			want: []endpoint.Record{{ID: "01B", Hostname: "a.lan", IP: "10.0.0.1", Version: "1"}}},
		{desc: "not JSON", doc: `id hostname`, err: "reading the router snapshot"},
		{desc: "two documents", doc: `{` + v + `, "entries": []} {}`, err: "more than one JSON document"},
		{desc: "no version", doc: `{"entries": []}`, err: "has no version"},
		{desc: "another version", doc: `{"version": "router-hosts-operator/explain/v9", "entries": []}`, err: `version is "router-hosts-operator/explain/v9"`},
		{desc: "explain's document", doc: `{` + v + `, "names": []}`, err: "has no entries"},
		{desc: "a filtered list", doc: `{` + v + `, "filtered": true, "entries": []}`, err: "filtered list"},
		{desc: "an older operator's list", doc: `{` + v + `, "entries": [{"id": "01A", "hostname": "a.lan", "address": "10.0.0.1"},
			{"id": "01B", "hostname": "b.lan", "address": "10.0.0.2"}]}`, err: "older than this one"},
		{desc: "an entry without an id", doc: `{` + v + `, "entries": [{"hostname": "a.lan", "address": "10.0.0.1", "version": "1"}]}`, err: "entry 1 (a.lan 10.0.0.1) has no id"},
		{desc: "an entry without a version", doc: `{` + v + `, "entries": [{"id": "01A", "hostname": "a.lan", "address": "10.0.0.1", "version": "1"},
			{"id": "01B", "hostname": "b.lan", "address": "10.0.0.2", "tags": ["x"]}]}`, err: "entry 01B (b.lan 10.0.0.2) has no version"},
		{desc: "an entry twice", doc: `{` + v + `, "entries": [{"id": "01A", "hostname": "a.lan", "address": "10.0.0.1", "version": "1"},
			{"id": "01A", "hostname": "a.lan", "address": "10.0.0.1", "version": "1"}]}`, err: "the entry 01A twice"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ReadSnapshot(strings.NewReader(tc.doc))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				if !strings.Contains(err.Error(), "list -o json") {
					t.Errorf("error %v does not say how to write a snapshot", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSnapshotRoundTrip: the entries of a router, listed as the list command writes them and
// read back, are the same entries, whoever owns them and whatever the registry decided of them
// (an entry outside the domain filter, one marked, one another cluster's).
func TestSnapshotRoundTrip(t *testing.T) {
	records := []endpoint.Record{
		ours("01A", "web.home.arpa", "10.0.0.1", "apps", "u1"),
		ours("01B", "old.home.arpa", "10.0.0.2", "tools", "gone", "pending-deletion:"+now.Format(time.RFC3339)),
		ours("01C", "tv.guest.home.arpa", "10.0.0.3", "apps", "u2"),
		{ID: "01D", Hostname: "nas.home.arpa", IP: "192.168.1.10", Version: "7", Aliases: []string{"files.home.arpa"}, Comment: "the NAS"},
		{ID: "01E", Hostname: "lab.home.arpa", IP: "10.9.9.9", Version: "2", Tags: []string{"k8s-operator", "cluster:lab", "cluster-id:fedcba98"}},
		{ID: "01F", Hostname: "printer.guest.home.arpa", IP: "192.168.1.20", Version: "1", Tags: []string{"mine"}},
	}
	records[0].Aliases = []string{"www.home.arpa"}
	in := decided(t, records, claim("apps", "web", "u1", "web.home.arpa", "10.0.0.1"), claim("apps", "tv", "u2", "tv.guest.home.arpa", "10.0.0.3"))
	var buf bytes.Buffer
	if err := WriteJSON(&buf, NewListJSON(List(in, Filter{}), Filter{})); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	byID := func(a, b endpoint.Record) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(got, byID)
	if !reflect.DeepEqual(got, records) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, records)
	}

	buf.Reset()
	if err := WriteJSON(&buf, NewListJSON(List(in, Filter{Owner: "this"}), Filter{Owner: "this"})); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSnapshot(&buf); err == nil || !strings.Contains(err.Error(), "filtered") {
		t.Errorf("a list with --owner read back as a snapshot: %v", err)
	}
}
