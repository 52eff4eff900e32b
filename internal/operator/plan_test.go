package operator

import (
	"strings"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

func TestPlanFlags(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		err   string
		files []string
	}{
		{args: []string{"plan"}, err: "give the manifests with -f"},
		{args: []string{"plan", "-f", "x.yaml", "--prune"}, err: "--prune needs -l SELECTOR"},
		{args: []string{"plan", "-f", "x.yaml", "-l", "a=b"}, err: "give --prune too"},
		{args: []string{"plan", "-f", "x.yaml", "--prune", "-l", "a=b", "--offline"}, err: "--offline reads none"},
		{args: []string{"plan", "-f", "x.yaml", "--prune", "-l", "a in ("}, err: "-l:"},
		{args: []string{"plan", "-f", "-", "-f", "dir"}, files: []string{"-", "dir"}},
		{args: []string{"explain", "web.lan", "-o", "markdown"}, err: "markdown is plan's"},
	} {
		cfg, err := ParseFlags(tc.args, Build{})
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: err %v, want one saying %q", tc.args, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.err == "" && strings.Join(cfg.Plan.Files, "|") != strings.Join(tc.files, "|"):
			t.Errorf("%q: files %q, want %q", tc.args, cfg.Plan.Files, tc.files)
		case tc.err == "" && (!cfg.DryRun || !cfg.Once):
			t.Errorf("%q: a plan writes nothing and decides once", tc.args)
		}
	}
}

func TestIdentityIn(t *testing.T) {
	rec := func(tags ...string) endpoint.Record { return endpoint.Record{Tags: tags} }
	home := registry.ClusterTag("home")
	for _, tc := range []struct {
		name    string
		records []endpoint.Record
		want    string
		err     string
	}{
		{name: "the cluster's one identity", records: []endpoint.Record{rec(home, registry.IdentityTag("0123abcd")), rec(registry.ClusterTag("lab"), registry.IdentityTag("ffffffff"))}, want: "0123abcd"},
		{name: "none", records: []endpoint.Record{rec(registry.ClusterTag("lab"), registry.IdentityTag("ffffffff"))}, err: "give --cluster-id"},
		{name: "two namesakes", records: []endpoint.Record{rec(home, registry.IdentityTag("0123abcd")), rec(home, registry.IdentityTag("0123abce"))}, err: "2 identities"},
	} {
		got, err := identityIn(tc.records, "home")
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %q %v, want %q %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestSpecDiff(t *testing.T) {
	old := map[string]any{"domainFilter": []any{"a.lan", "b.lan"}, "deletion": map[string]any{"gracePeriodSeconds": int64(300)}, "policy": "sync"}
	cur := map[string]any{"domainFilter": []any{"a.lan"}, "deletion": map[string]any{"gracePeriodSeconds": int64(300), "brake": map[string]any{"confirm": "t"}}, "policy": "sync"}
	got := specDiff("spec", old, cur)
	var words []string
	for _, c := range got {
		words = append(words, c.Field+": "+c.Old+" → "+c.New)
	}
	want := []string{"spec.deletion.brake.confirm: (unset) → t", "spec.domainFilter: [a.lan, b.lan] → [a.lan]"}
	if strings.Join(words, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", words, want)
	}
}
