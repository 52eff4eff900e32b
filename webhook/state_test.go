package webhook

import (
	"reflect"
	"strings"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

func TestPublishedAndRecords(t *testing.T) {
	recs := []endpoint.Record{
		{ID: "1", Hostname: "a.lan", IP: "10.0.0.1", Tags: []string{"mine"}},
		{ID: "2", Hostname: "a.lan", IP: "fd00::1", Tags: []string{"mine"}},
		{ID: "3", Hostname: "b.lan", IP: "10.0.0.2", Tags: []string{"mine", "marked"}},
		{ID: "4", Hostname: "c.lan", IP: "10.0.0.3", Tags: []string{"theirs"}},
		{ID: "5", Hostname: "D.LAN", IP: "FD00:0::5", Tags: []string{"mine"}},
	}
	has := func(tag string) func(*endpoint.Record) bool {
		return func(r *endpoint.Record) bool { return r.HasTag(tag) }
	}
	got := publishedOf(recs, has("mine"), has("marked")).records()
	want := []*WireEndpoint{{DNSName: "a.lan", Targets: []string{"10.0.0.1"}, RecordType: "A"}, {DNSName: "a.lan", Targets: []string{"fd00::1"}, RecordType: "AAAA"},
		{DNSName: "d.lan", Targets: []string{"fd00::5"}, RecordType: "AAAA"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records = %+v, want %+v (not another's, not a marked one)", got, want)
	}
}

func TestApply(t *testing.T) {
	a := func(name string, ips ...string) *WireEndpoint {
		return &WireEndpoint{DNSName: name, Targets: ips, RecordType: "A"}
	}
	for _, tc := range []struct {
		name string
		ch   Changes
		want map[string][]string
		err  string
	}{
		{name: "create", ch: Changes{Create: []*WireEndpoint{a("new.lan", "10.0.0.9")}}, want: map[string][]string{"old.lan": {"10.0.0.1"}, "new.lan": {"10.0.0.9"}}},
		{name: "update keeps what both sides have", ch: Changes{UpdateOld: []*WireEndpoint{a("old.lan", "10.0.0.1")}, UpdateNew: []*WireEndpoint{a("old.lan", "10.0.0.1", "10.0.0.2")}},
			want: map[string][]string{"old.lan": {"10.0.0.1", "10.0.0.2"}}},
		{name: "delete", ch: Changes{Delete: []*WireEndpoint{a("old.lan", "10.0.0.1")}}, want: map[string][]string{}},
		{name: "names and addresses as router-hosts writes them", ch: Changes{Create: []*WireEndpoint{{DNSName: "New.LAN", Targets: []string{"FD00:0::9"}, RecordType: "AAAA"}}},
			want: map[string][]string{"old.lan": {"10.0.0.1"}, "new.lan": {"fd00::9"}}},
		{name: "a CNAME", ch: Changes{Create: []*WireEndpoint{{DNSName: "x.lan", Targets: []string{"y.lan"}, RecordType: "CNAME"}}}, err: "create[0]: x.lan CNAME: router-hosts holds only A and AAAA"},
		{name: "a hostname target", ch: Changes{UpdateNew: []*WireEndpoint{a("old.lan", "lb.example.com")}}, err: "updateNew[0]: old.lan A: target \"lb.example.com\" is not an address"},
		{name: "an IPv6 address in an A record", ch: Changes{Create: []*WireEndpoint{a("x.lan", "fd00::1")}}, err: "not an address of an A record"},
		{name: "a bad name", ch: Changes{Delete: []*WireEndpoint{a("-bad-.lan", "10.0.0.1")}}, err: "delete[0]"},
		{name: "a null endpoint", ch: Changes{Create: []*WireEndpoint{nil}}, err: "null endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := published{}
			h.add("old.lan", "10.0.0.1")
			err := h.apply(&tc.ch)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if len(h) != 1 || !h["old.lan"]["10.0.0.1"] {
					t.Fatalf("an invalid change applied something: %v", h)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, e := range h.endpoints("ns") {
				got[e.Hostname] = e.Targets
				if e.Sources[0].Kind != SourceKind || e.Sources[0].UID != refOf("ns", e.Hostname).UID || !strings.HasPrefix(e.Sources[0].UID, "edns-") {
					t.Errorf("source %+v", e.Sources[0])
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("published %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAdjust(t *testing.T) {
	in := []*WireEndpoint{
		{DNSName: "Web.LAN.", Targets: []string{"10.0.0.2", "10.0.0.1", "lb.example.com"}, RecordType: "A", RecordTTL: 300,
			ProviderSpecific: []Property{{Name: "webhook/x", Value: "y"}}, Labels: map[string]string{"resource": "ingress/ns/web"}},
		{DNSName: "alias.lan", Targets: []string{"web.lan"}, RecordType: "CNAME"},
		{DNSName: "txt.lan", Targets: []string{"\"heritage=external-dns\""}, RecordType: "TXT"},
		{DNSName: "v6.lan", Targets: []string{"FD00::1"}, RecordType: "AAAA"},
		{DNSName: "only-host.lan", Targets: []string{"lb.example.com"}, RecordType: "A"},
	}
	out, drops := adjust(in)
	want := []*WireEndpoint{
		{DNSName: "web.lan", Targets: []string{"10.0.0.1", "10.0.0.2"}, RecordType: "A", Labels: map[string]string{"resource": "ingress/ns/web"}},
		{DNSName: "v6.lan", Targets: []string{"fd00::1"}, RecordType: "AAAA"},
	}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("adjusted %+v, want %+v", out, want)
	}
	var said []string
	for _, d := range drops {
		said = append(said, d.name+" "+d.recordType)
	}
	if !reflect.DeepEqual(said, []string{"Web.LAN. A", "alias.lan CNAME", "txt.lan TXT", "only-host.lan A"}) {
		t.Fatalf("dropped %v", said)
	}
}
