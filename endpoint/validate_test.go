package endpoint

import (
	"reflect"
	"strings"
	"testing"
)

func TestNormalizeHostname(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"web.example.com", "web.example.com", true},
		{"Web.Example.COM", "web.example.com", true},
		{"web.example.com.", "web.example.com", true},
		{"  nas.lan ", "nas.lan", true},
		{"single", "single", true},
		{"bücher.example", "xn--bcher-kva.example", true},
		{"ÉCOLE.fr", "xn--cole-9oa.fr", true},
		{"a-b.c-d.lan", "a-b.c-d.lan", true},
		{"*.example.com", "", false},
		{"foo_bar.lan", "", false},
		{"-lead.lan", "", false},
		{"trail-.lan", "", false},
		{".lead.dot", "", false},
		{"double..dot", "", false},
		{"", "", false},
		{".", "", false},
		{strings.Repeat("a", 64) + ".lan", "", false},
		{strings.Repeat("a", 63) + ".lan", strings.Repeat("a", 63) + ".lan", true},
		{strings.Repeat("abcdefghi.", 25) + "abcd", "", false}, // 254 bytes
		{strings.Repeat("abcdefghi.", 25) + "abc", strings.Repeat("abcdefghi.", 25) + "abc", true}, // 253 bytes
		{"has space.lan", "", false},
		{"10.0.0.1", "10.0.0.1", true}, // all-digit labels are valid hostnames to the server
	}
	for _, tc := range tests {
		got, err := NormalizeHostname(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("NormalizeHostname(%q) = %q, %v; want %q, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestNormalizeIP(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"10.0.0.1", "10.0.0.1", true},
		{" 10.0.0.1 ", "10.0.0.1", true},
		{"0::1", "::1", true},
		{"FD00:0:0::0001", "fd00::1", true},
		{"::ffff:192.168.1.5", "192.168.1.5", true},
		{"010.0.0.1", "", false},
		{"fe80::1%eth0", "", false},
		{"10.0.0", "", false},
		{"256.0.0.1", "", false},
		{"nas.lan", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, err := NormalizeIP(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("NormalizeIP(%q) = %q, %v; want %q, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestNormalizeAliases(t *testing.T) {
	got, errs := NormalizeAliases("web.lan", []string{"B.lan", "a.lan.", "b.lan", "web.lan", "10.0.0.1", "bad_one", " ", "*.x"})
	if want := []string{"a.lan", "b.lan"}; !reflect.DeepEqual(got, want) {
		t.Errorf("aliases = %q, want %q", got, want)
	}
	if len(errs) != 4 {
		t.Errorf("want 4 errors (hostname itself, IP, underscore, wildcard), got %v", errs)
	}
	many := make([]string, 60)
	for i := range many {
		many[i] = "a" + strings.Repeat("x", i) + ".lan"
	}
	got, errs = NormalizeAliases("web.lan", many)
	if len(got) != MaxAliases || len(errs) != 1 {
		t.Errorf("60 aliases: kept %d with %d errors; want %d kept and one error", len(got), len(errs), MaxAliases)
	}
	if err := ValidateAliases("web.lan", got); err != nil {
		t.Errorf("normalised aliases fail validation: %v", err)
	}
}

func TestValidateAliases(t *testing.T) {
	for _, tc := range []struct {
		aliases []string
		ok      bool
	}{
		{[]string{"a.lan", "b.lan"}, true},
		{[]string{"a.lan", "A.lan"}, false},
		{[]string{"WEB.lan"}, false},
		{[]string{"::1"}, false},
		{[]string{"a_b"}, false},
	} {
		if err := ValidateAliases("web.lan", tc.aliases); (err == nil) != tc.ok {
			t.Errorf("ValidateAliases(%q) = %v, want ok=%v", tc.aliases, err, tc.ok)
		}
	}
}

func TestValidateTagAndComment(t *testing.T) {
	for _, tc := range []struct {
		tag string
		ok  bool
	}{
		{"team-a", true}, {"cluster:home", true}, {"pending-deletion:2026-01-01T00:00:00Z", true},
		{"", false}, {"two words", false}, {"a,b", false}, {"new\nline", false}, {"ünï", false}, {strings.Repeat("x", 301), false},
	} {
		if err := ValidateTag(tc.tag); (err == nil) != tc.ok {
			t.Errorf("ValidateTag(%q) = %v, want ok=%v", tc.tag, err, tc.ok)
		}
	}
	if err := ValidateComment("router-hosts-operator: Ingress default/web"); err != nil {
		t.Error(err)
	}
	if err := ValidateComment("line\nbreak"); err == nil {
		t.Error("a comment with a newline was accepted")
	}
}

func TestDiffComparesAliasesAsSetsAndTagsAsMultisets(t *testing.T) {
	a := &Record{IP: "10.0.0.1", Hostname: "a.lan", Tags: []string{"x", "y"}, Aliases: []string{"p.lan", "q.lan"}}
	b := &Record{IP: "10.0.0.1", Hostname: "a.lan", Tags: []string{"y", "x"}, Aliases: []string{"q.lan", "p.lan", "p.lan"}}
	if d := Diff(a, b); d != 0 {
		t.Fatalf("Diff of reordered lists = %s, want none", d)
	}
	// A tag the user and the operator both carry is there twice; losing one copy is a change.
	b.Tags = []string{"y", "x", "x"}
	if d := Diff(a, b); d.String() != "tags" {
		t.Fatalf("Diff with a tag repeated = %s, want tags", d)
	}
	b.IP, b.Tags = "10.0.0.2", nil
	if d := Diff(a, b); d.String() != "ip,tags" {
		t.Fatalf("Diff = %s, want ip,tags", d)
	}
}

func TestDomainFilter(t *testing.T) {
	f, err := NewDomainFilter([]string{"Home.LAN.", ".example.com"}, []string{"private.home.lan"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"home.lan": true, "nas.home.lan": true, "a.b.example.com": true, "example.com": true,
		"private.home.lan": false, "x.private.home.lan": false, "otherhome.lan": false, "lan": false, "example.org": false,
	} {
		if got := f.Match(host); got != want {
			t.Errorf("Match(%q) = %v, want %v", host, got, want)
		}
	}
	if !(DomainFilter{}).Match("anything.lan") {
		t.Error("an empty filter must match everything")
	}
	if _, err := NewDomainFilter([]string{"bad_domain"}, nil); err == nil {
		t.Error("an invalid domain was accepted")
	}
	if got := f.ExcludedBy("x.private.home.lan"); got != "private.home.lan" {
		t.Errorf("ExcludedBy(x.private.home.lan) = %q, want private.home.lan", got)
	}
	if got := f.ExcludedBy("nas.home.lan"); got != "" {
		t.Errorf("ExcludedBy(nas.home.lan) = %q, want none", got)
	}
}

// TestDomainFilterString: the filter prints as its flags are written, normalised, one flag per
// domain.
func TestDomainFilterString(t *testing.T) {
	for _, tc := range []struct {
		include, exclude []string
		want             string
	}{
		{nil, nil, ""},
		{[]string{"Home.LAN.", "lab.internal"}, nil, "--domain-filter=home.lan --domain-filter=lab.internal"},
		{nil, []string{"guest.home.lan"}, "--exclude-domains=guest.home.lan"},
		{[]string{"home.lan"}, []string{"guest.home.lan"}, "--domain-filter=home.lan --exclude-domains=guest.home.lan"},
	} {
		f, err := NewDomainFilter(tc.include, tc.exclude)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.String(); got != tc.want {
			t.Errorf("%v %v: %q, want %q", tc.include, tc.exclude, got, tc.want)
		}
	}
}

func TestValidateUpdateChecksOnlyWhatItWrites(t *testing.T) {
	have := &Record{IP: "10.0.0.1", Hostname: "NAS.lan", Tags: []string{"has space", "line\nbreak"}, Comment: "bad\ncomment"}
	for _, tc := range []struct {
		name string
		want Record
		ok   bool
	}{
		{"the user's odd tags are carried", Record{IP: "10.0.0.2", Hostname: "nas.lan", Tags: []string{"has space", "line\nbreak", "k8s-operator"}, Comment: "bad\ncomment"}, true},
		{"an odd tag the operator adds is refused", Record{IP: "10.0.0.1", Hostname: "NAS.lan", Tags: []string{"has space", "line\nbreak", "new space"}, Comment: "bad\ncomment"}, false},
		{"a second copy of an odd tag is the operator's and refused", Record{IP: "10.0.0.1", Hostname: "NAS.lan", Tags: []string{"has space", "has space", "line\nbreak"}, Comment: "bad\ncomment"}, false},
		{"a new comment is checked", Record{IP: "10.0.0.1", Hostname: "NAS.lan", Tags: have.Tags, Comment: "x\ny"}, false},
		{"a new IP is checked", Record{IP: "10.0.0.01", Hostname: "NAS.lan", Tags: have.Tags, Comment: "bad\ncomment"}, false},
		{"a new hostname is checked", Record{IP: "10.0.0.1", Hostname: "nas_lan", Tags: have.Tags, Comment: "bad\ncomment"}, false},
	} {
		if err := ValidateUpdate(have, &tc.want); (err == nil) != tc.ok {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}
