package preview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/explain"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func ref(name, uid string) endpoint.SourceRef {
	return endpoint.SourceRef{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Namespace: "apps", Name: name, UID: uid}
}

func claim(host, uid, name string, targets ...string) *endpoint.Endpoint {
	return &endpoint.Endpoint{Hostname: host, Targets: targets, Sources: []endpoint.SourceRef{ref(name, uid)}}
}

// decision is a report of one decision: the objects' claims, what won, the writes and holds.
func decision(objs map[string][]*endpoint.Endpoint, desired []*endpoint.Endpoint, changes []plan.Change, held []registry.Held, conflicts []registry.Conflict) *explain.Input {
	rep := &controller.Report{Objects: map[string]controller.Object{}, Desired: desired, Changes: changes, Held: held, Conflicts: conflicts, Started: now, State: &registry.State{}}
	for uid, eps := range objs {
		rep.Objects[uid] = controller.Object{Endpoints: eps}
	}
	return &explain.Input{Report: rep, Now: now}
}

func TestMake(t *testing.T) {
	web := claim("web.lan", "u-web", "web", "10.0.0.1")
	taken := claim("taken.lan", "u-taker", "taker", "10.0.0.1")
	old := claim("old.lan", "u-old", "old", "10.0.0.1")
	conflict := registry.Conflict{Hostname: "taken.lan", Loser: ref("taker", "u-taker"), Winner: "namespace media", Reason: registry.ReasonHostnameConflict}
	oldConflict := registry.Conflict{Hostname: "old.lan", Loser: ref("old", "u-old"), Winner: "namespace media", Reason: registry.ReasonHostnameConflict}
	gone := &endpoint.Record{ID: "e1", Hostname: "gone.lan", IP: "10.0.0.3", Tags: []string{registry.PrefixSource + "u-gone"}}
	marked := *gone
	marked.Tags = append(marked.Tags, registry.PrefixPending+now.Format(time.RFC3339))
	cases := []struct {
		name          string
		before, after *explain.Input
		manifest      []Touched
		want          []string // "title|sign line" per line
		wantGroups    []string // the titles, when given
		summary       Summary
		exit          int
	}{
		{name: "a new object's create, under it",
			after:    decision(map[string][]*endpoint.Endpoint{"u-web": {web}}, []*endpoint.Endpoint{web}, []plan.Change{{Action: plan.Create, New: &endpoint.Record{Hostname: "web.lan", IP: "10.0.0.1"}}}, nil, nil),
			manifest: []Touched{{Object: explain.Object{Kind: "Ingress", Namespace: "apps", Name: "web", UID: "u-web"}, Change: "added", Origin: "f#1"}},
			want:     []string{"Ingress apps/web (added, f#1)|+ web.lan → 10.0.0.1"}, summary: Summary{Creates: 1}, exit: 1},
		{name: "a mark says when the entry goes",
			before:   decision(map[string][]*endpoint.Endpoint{"u-gone": {claim("gone.lan", "u-gone", "gone", "10.0.0.3")}}, nil, nil, nil, nil),
			after:    decision(nil, nil, []plan.Change{{Action: plan.Mark, Old: gone, New: &marked, Due: now.Add(time.Hour)}}, nil, nil),
			manifest: []Touched{{Object: explain.Object{Kind: "Ingress", Namespace: "apps", Name: "gone", UID: "u-gone"}, Change: "pruned"}},
			want:     []string{"Ingress apps/gone (pruned)|- gone.lan 10.0.0.3: marked now, deleted at 2026-12-02T13:00:00Z after its grace period"}, summary: Summary{Deletes: 1}, exit: 1},
		{name: "a refusal the manifests cause is shown; one of today they leave alone is counted",
			before:   decision(map[string][]*endpoint.Endpoint{"u-old": {old}}, nil, nil, nil, []registry.Conflict{oldConflict}),
			after:    decision(map[string][]*endpoint.Endpoint{"u-taker": {taken}, "u-old": {old}}, nil, nil, nil, []registry.Conflict{conflict, oldConflict}),
			manifest: []Touched{{Object: explain.Object{Kind: "Ingress", Namespace: "apps", Name: "taker", UID: "u-taker"}, Change: "added"}},
			want:     []string{"Ingress apps/taker (added)|! taken.lan: HostnameConflict: the name is held by namespace media; fix: remove the claim from one side, or have the holder let go; the older claim holds the name until it lets go (then this one takes it after the holder's grace period)"},
			summary:  Summary{Refusals: 1, Existing: 1}, exit: 3},
		{name: "a refusal the manifests newly cause for an object they leave alone is shown",
			before:  decision(map[string][]*endpoint.Endpoint{"u-old": {old}}, []*endpoint.Endpoint{old}, nil, nil, nil),
			after:   decision(map[string][]*endpoint.Endpoint{"u-old": {old}}, nil, nil, nil, []registry.Conflict{oldConflict}),
			want:    []string{"Ingress apps/old|! old.lan: HostnameConflict: the name is held by namespace media; fix: remove the claim from one side, or have the holder let go; the older claim holds the name until it lets go (then this one takes it after the holder's grace period)"},
			summary: Summary{Refusals: 1}, exit: 3},
		{name: "a brake hold is a refusal",
			after:   decision(nil, nil, nil, []registry.Held{{Change: plan.Change{Action: plan.Mark, Old: gone, New: &marked}, Reason: registry.ReasonMassDeletionHeld, Token: "tok"}}, nil),
			want:    []string{"|! gone.lan: MassDeletionHeld: held: mark gone.lan; fix: set spec.deletion.brake.confirm: tok on the RouterHostsConfig (or --confirm-mass-deletion=tok), or bring the objects back"},
			summary: Summary{Refusals: 1}, exit: 3},
		{name: "nothing to do", after: decision(nil, nil, nil, nil, nil), summary: Summary{}, exit: 0},
		{name: "a heartbeat's renewal is counted, not a change",
			after: decision(nil, nil, []plan.Change{{Action: plan.Update, Old: &endpoint.Record{ID: "e2", Hostname: "h.lan", IP: "10.0.0.4", Tags: []string{registry.PrefixAlive + "2026-11-20T00:00:00Z"}},
				New: &endpoint.Record{ID: "e2", Hostname: "h.lan", IP: "10.0.0.4", Tags: []string{registry.PrefixAlive + "2026-12-02T12:00:00Z"}}}}, nil, nil),
			summary: Summary{Heartbeats: 1}, exit: 0},
		{name: "an object already as it wants is counted; a new one that claims a name is shown",
			after: decision(map[string][]*endpoint.Endpoint{"u-web": {web}, "u-old": {old}}, []*endpoint.Endpoint{web, old}, nil, nil, nil),
			manifest: []Touched{{Object: explain.Object{Kind: "Ingress", Namespace: "apps", Name: "web", UID: "u-web"}, Change: "added"},
				{Object: explain.Object{Kind: "Ingress", Namespace: "apps", Name: "old", UID: "u-old"}, Change: "replaced"},
				{Object: explain.Object{Kind: "Namespace", Name: "apps", UID: "u-ns"}, Change: "added"}},
			wantGroups: []string{"Ingress apps/web (added)"}, summary: Summary{Unchanged: 2}, exit: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Make(&Input{Before: tc.before, After: tc.after, Manifest: tc.manifest})
			var got []string
			for _, g := range p.Groups {
				title := ""
				if g.Object != nil {
					title = g.Title()
				}
				for _, l := range g.Lines {
					got = append(got, title+"|"+l.Sign+" "+l.String())
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.wantGroups != nil {
				var titles []string
				for _, g := range p.Groups {
					titles = append(titles, g.Title())
				}
				if strings.Join(titles, "|") != strings.Join(tc.wantGroups, "|") {
					t.Errorf("groups %q, want %q", titles, tc.wantGroups)
				}
			}
			if p.Summary != tc.summary {
				t.Errorf("summary %+v, want %+v", p.Summary, tc.summary)
			}
			if p.Exit() != tc.exit {
				t.Errorf("exit %d, want %d", p.Exit(), tc.exit)
			}
		})
	}
}

// TestWriters: the text starts each change with its sign and ends with the summary; the
// markdown is a heading, the summary and a diff block per object; the JSON names its version.
func TestWriters(t *testing.T) {
	web := claim("web.lan", "u-web", "web", "10.0.0.1")
	p := Make(&Input{After: decision(map[string][]*endpoint.Endpoint{"u-web": {web}}, []*endpoint.Endpoint{web},
		[]plan.Change{{Action: plan.Create, New: &endpoint.Record{Hostname: "web.lan", IP: "10.0.0.1"}}}, nil, nil),
		Manifest: []Touched{{Object: explain.Object{Kind: "Ingress", Namespace: "apps", Name: "web", UID: "u-web"}, Change: "added"}},
		Config:   []ConfigChange{{Field: "spec.domainFilter", Old: "[a.lan, b.lan]", New: "[a.lan]"}}})
	var text, md, js bytes.Buffer
	if err := WriteText(&text, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Ingress apps/web (added)\n  + web.lan → 10.0.0.1\n", "  ~ spec.domainFilter: [a.lan, b.lan] → [a.lan]\n", "Plan: 1 to create, 0 to update, 0 to delete; 0 refused or held.\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"### router-hosts plan\n", "**Plan: 1 to create", "#### Ingress apps/web (added)\n\n```diff\n+ web.lan → 10.0.0.1\n```"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(js.String(), `"version": "`+Version+`"`) || !strings.Contains(js.String(), `"sign": "+"`) {
		t.Errorf("json:\n%s", js.String())
	}
}
