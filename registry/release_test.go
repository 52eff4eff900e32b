package registry

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

const (
	idA = "aaaaaaaa"
	idB = "bbbbbbbb"
)

// The entries of the release tests: cluster home, written by installations A and B and by an
// earlier version, beside other clusters' entries and hand-made ones.
var (
	// adoptedA is a hand-made entry A adopted: the user's tags before the operator's block
	// (one of them a look-alike of a cluster tag) and one added during the loan after it.
	adoptedA = endpoint.Record{ID: "01adopted", Hostname: "nas.lan", IP: "10.5.0.1", Aliases: []string{"storage.lan"}, Comment: "by hand", Version: "7",
		Tags: []string{"zeta", "kind:printer", "has space", "cluster:elsewhere",
			"pre-existing:true", "cluster:home@" + idA, "k8s-operator", "kind:Ingress", "namespace:d", "source:u1",
			"original-hostname:NAS.lan", "original-alias:old-nas.lan", "original-alias:files.lan", "original-ip:192.168.1.5",
			"added-later"}}
	// adoptedAGivenBack is adoptedA as the user had it: the loan's address, spelling and
	// aliases, the user's tags verbatim and in order, the comment untouched.
	adoptedAGivenBack = endpoint.Record{ID: "01adopted", Hostname: "NAS.lan", IP: "192.168.1.5", Aliases: []string{"old-nas.lan", "files.lan"}, Comment: "by hand", Version: "7",
		Tags: []string{"zeta", "kind:printer", "has space", "cluster:elsewhere", "added-later"}}
	// adoptedNoLoan was adopted by a version that kept no loan record.
	adoptedNoLoan = endpoint.Record{ID: "02noloan", Hostname: "printer.lan", IP: "10.5.0.2", Comment: "printer", Version: "4",
		Tags: []string{"manual", "pre-existing:true", "k8s-operator", "cluster:home@" + idA}}
	createdA = endpoint.Record{ID: "03created", Hostname: "web.lan", IP: "10.5.0.3", Version: "1", Comment: "router-hosts-operator: Ingress d/web",
		Tags: []string{"cluster:home@" + idA, "k8s-operator", "kind:Ingress", "namespace:d", "source:u3"}}
	// renamedA carries A's identity under another name: a rename's entry no object claims
	// any more, or a second installation's sharing the identity. renamedAMarked is one on its
	// way out.
	renamedA = endpoint.Record{ID: "04renamed", Hostname: "old.lan", IP: "10.5.0.4", Version: "1",
		Tags: []string{"cluster:old-name@" + idA, "k8s-operator"}}
	renamedAMarked = endpoint.Record{ID: "11renamedmarked", Hostname: "gone.lan", IP: "10.5.0.11", Version: "2",
		Tags: []string{"cluster:old-name@" + idA, "k8s-operator", "pending-deletion:2026-11-22T11:58:00Z"}}
	createdB = endpoint.Record{ID: "05namesake", Hostname: "b.lan", IP: "10.5.0.5", Version: "1",
		Tags: []string{"cluster:home@" + idB, "k8s-operator"}}
	// legacyHome was written by an earlier version: the name, no identity.
	legacyHome = endpoint.Record{ID: "06legacy", Hostname: "legacy.lan", IP: "10.5.0.6", Version: "2",
		Tags: []string{"cluster:home", "k8s-operator", "source:u6"}}
	otherCluster = endpoint.Record{ID: "07foreign", Hostname: "x.lan", IP: "10.5.0.7", Version: "1", Tags: []string{"cluster:other@cccccccc", "k8s-operator"}}
	otherLegacy  = endpoint.Record{ID: "08foreign", Hostname: "y.lan", IP: "10.5.0.8", Version: "1", Tags: []string{"cluster:other", "k8s-operator"}}
	// byHand carries the cluster's tag, written by hand without k8s-operator.
	byHand = endpoint.Record{ID: "09hand", Hostname: "router.lan", IP: "192.168.1.1", Version: "1", Tags: []string{"manual", "cluster:home"}}
	// twoNames names two clusters: a hand edit, nobody's.
	twoNames = endpoint.Record{ID: "10two", Hostname: "z.lan", IP: "10.5.0.10", Version: "1", Tags: []string{"cluster:home", "cluster:other", "k8s-operator"}}
)

func releaseReg(t *testing.T, id string) *Registry {
	t.Helper()
	return releaseRegNamed(t, "home", id)
}

func releaseRegNamed(t *testing.T, name, id string) *Registry {
	t.Helper()
	r, err := New(Config{ClusterName: name, ClusterID: id, Log: logrus.New()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRelease(t *testing.T) {
	bystanders := []endpoint.Record{otherCluster, otherLegacy, byHand, twoNames}
	tests := []struct {
		name    string
		id      string // --cluster-id
		cluster string // --cluster-name; home when empty
		records []endpoint.Record
		// want are the changes, "action id"; given the released entries as given back.
		want      []string
		given     []endpoint.Record
		clusterID string
		left      []string
		renamed   []string
		namesakes []Namesake
		ambiguous *AmbiguousError
	}{
		{name: "by name: the one installation's entries and the earlier version's go; its identity's under another name only when marked",
			records: append([]endpoint.Record{adoptedA, adoptedNoLoan, createdA, renamedA, renamedAMarked, legacyHome}, bystanders...),
			want:    []string{"delete 11renamedmarked", "delete 06legacy", "release 01adopted", "release 02noloan", "delete 03created"},
			given: []endpoint.Record{adoptedAGivenBack, {ID: "02noloan", Hostname: "printer.lan", IP: "10.5.0.2", Comment: "printer", Version: "4",
				Tags: []string{"manual"}}},
			clusterID: idA, renamed: []string{"04renamed"}},
		{name: "by name: only an earlier version's entries", records: append([]endpoint.Record{legacyHome}, bystanders...),
			want: []string{"delete 06legacy"}},
		{name: "by name: two installations write it", records: append([]endpoint.Record{adoptedA, createdA, createdB, legacyHome}, bystanders...),
			ambiguous: &AmbiguousError{ClusterName: "home", Identities: []Namesake{{ID: idA, Entries: 2}, {ID: idB, Entries: 1}}, Legacy: 1}},
		{name: "by identity among two: its entries; the earlier version's are left", id: idA,
			records:   append([]endpoint.Record{adoptedA, createdA, renamedA, renamedAMarked, createdB, legacyHome}, bystanders...),
			want:      []string{"delete 11renamedmarked", "release 01adopted", "delete 03created"},
			given:     []endpoint.Record{adoptedAGivenBack},
			clusterID: idA, left: []string{"06legacy"}, renamed: []string{"04renamed"}, namesakes: []Namesake{{ID: idB, Entries: 1}}},
		{name: "by the old name of a rename: its entries there, not those under the new name", cluster: "old-name",
			records: []endpoint.Record{createdA, renamedA, renamedAMarked},
			want:    []string{"delete 11renamedmarked", "delete 04renamed"}, clusterID: idA, renamed: []string{"03created"}},
		{name: "by the other identity", id: idB, records: append([]endpoint.Record{adoptedA, createdA, createdB, legacyHome}, bystanders...),
			want: []string{"delete 05namesake"}, clusterID: idB, left: []string{"06legacy"}, namesakes: []Namesake{{ID: idA, Entries: 2}}},
		{name: "by identity, alone on its name: the earlier version's go too", id: idA,
			records: append([]endpoint.Record{createdA, legacyHome}, bystanders...),
			want:    []string{"delete 06legacy", "delete 03created"}, clusterID: idA},
		{name: "by an identity the router does not hold, beside another: nothing goes", id: idA,
			records:   append([]endpoint.Record{createdB, legacyHome}, bystanders...),
			clusterID: idA, left: []string{"06legacy"}, namesakes: []Namesake{{ID: idB, Entries: 1}}},
		{name: "nothing of the cluster", records: bystanders},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			records := slices.Clone(tc.records)
			before := cloneRecords(records)
			r := releaseReg(t, tc.id)
			if tc.cluster != "" {
				r = releaseRegNamed(t, tc.cluster, tc.id)
			}
			l, err := r.Release(records)
			if !reflect.DeepEqual(records, before) {
				t.Fatalf("Release changed its input")
			}
			if tc.ambiguous != nil {
				var amb *AmbiguousError
				if !errors.As(err, &amb) || !reflect.DeepEqual(amb, tc.ambiguous) {
					t.Fatalf("error %#v, want %#v", err, tc.ambiguous)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			var given []endpoint.Record
			for _, c := range l.Changes {
				got = append(got, string(c.Action)+" "+c.Old.ID)
				switch c.Action {
				case plan.Release:
					given = append(given, *c.New)
				case plan.Delete:
					if c.New != nil || c.Duplicate {
						t.Errorf("delete %s: %+v", c.Old.ID, c)
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("changes %q\nwant    %q", got, tc.want)
			}
			if !reflect.DeepEqual(given, tc.given) {
				t.Errorf("given back %+v\nwant       %+v", given, tc.given)
			}
			var left, renamed []string
			for _, r := range l.Left {
				left = append(left, r.ID)
			}
			for _, r := range l.Renamed {
				renamed = append(renamed, r.ID)
			}
			if l.ClusterID != tc.clusterID || !slices.Equal(left, tc.left) || !slices.Equal(renamed, tc.renamed) || !reflect.DeepEqual(l.Namesakes, tc.namesakes) {
				t.Errorf("identity %q left %q renamed %q namesakes %v; want %q %q %q %v", l.ClusterID, left, renamed, l.Namesakes, tc.clusterID, tc.left, tc.renamed, tc.namesakes)
			}
		})
	}
}

func cloneRecords(in []endpoint.Record) []endpoint.Record {
	out := make([]endpoint.Record, len(in))
	for i, r := range in {
		r.Tags, r.Aliases = slices.Clone(r.Tags), slices.Clone(r.Aliases)
		out[i] = r
	}
	return out
}

func TestAmbiguousErrorSaysWhatToDo(t *testing.T) {
	_, err := releaseReg(t, "").Release([]endpoint.Record{createdA, createdB, adoptedA, legacyHome})
	want := "cluster home: the router holds entries of this name from 2 installations: cluster-id aaaaaaaa (2 entries), " +
		"cluster-id bbbbbbbb (1 entries), and 1 entries of an earlier version without a cluster-id; pass --cluster-id to say which installation to release"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant  %s", err, want)
	}
}

// TestProbe: where the probe goes, which entry carries it, and that releasing the probed entry
// gives back what releasing it unprobed would.
func TestProbe(t *testing.T) {
	at := time.Date(2026, 11, 25, 17, 4, 5, 0, time.FixedZone("CET", 3600))
	probe := "release-probe:2026-11-25T16:04:05Z"
	marked := func(r endpoint.Record) endpoint.Record {
		r.Tags = append(slices.Clone(r.Tags), PrefixPending+t0.Format(time.RFC3339))
		return r
	}
	withID := func(r endpoint.Record, id string) endpoint.Record { r.ID = id; return r }
	tests := []struct {
		name    string
		id      string
		records []endpoint.Record
		// on is the entry probed, tags its tags with the probe.
		on   string
		tags []string
	}{
		{name: "a created entry: at the end", records: []endpoint.Record{createdA},
			on: "03created", tags: append(slices.Clone(createdA.Tags), probe)},
		{name: "an adopted entry: inside the block, right after pre-existing:true", records: []endpoint.Record{adoptedA},
			on: "01adopted", tags: []string{"zeta", "kind:printer", "has space", "cluster:elsewhere",
				"pre-existing:true", probe, "cluster:home@" + idA, "k8s-operator", "kind:Ingress", "namespace:d", "source:u1",
				"original-hostname:NAS.lan", "original-alias:old-nas.lan", "original-alias:files.lan", "original-ip:192.168.1.5",
				"added-later"}},
		{name: "a probe left by an interrupted release is replaced; a user's look-alike outside the block stays",
			records: []endpoint.Record{func() endpoint.Record {
				r := adoptedA
				r.Tags = slices.Insert(slices.Clone(r.Tags), 5, "release-probe:old")
				r.Tags = slices.Insert(r.Tags, 0, "release-probe:the-users")
				return r
			}()},
			on: "01adopted", tags: []string{"release-probe:the-users", "zeta", "kind:printer", "has space", "cluster:elsewhere",
				"pre-existing:true", probe, "cluster:home@" + idA, "k8s-operator", "kind:Ingress", "namespace:d", "source:u1",
				"original-hostname:NAS.lan", "original-alias:old-nas.lan", "original-alias:files.lan", "original-ip:192.168.1.5",
				"added-later"}},
		{name: "created beats adopted", records: []endpoint.Record{adoptedA, withID(createdA, "99created")},
			on: "99created", tags: append(slices.Clone(createdA.Tags), probe)},
		{name: "one with the identity beats an earlier version's", records: []endpoint.Record{legacyHome, withID(createdA, "99created")},
			on: "99created", tags: append(slices.Clone(createdA.Tags), probe)},
		{name: "an unmarked adopted entry beats a marked created one", records: []endpoint.Record{marked(createdA), withID(adoptedNoLoan, "99adopted")},
			on: "99adopted", tags: append(slices.Clone(adoptedNoLoan.Tags), probe)},
		{name: "a marked entry when there is nothing else", records: []endpoint.Record{marked(createdA)},
			on: "03created", tags: append(marked(createdA).Tags, probe)},
		{name: "among equals, the lowest ID", records: []endpoint.Record{withID(createdA, "2"), withID(createdA, "1")},
			on: "1", tags: append(slices.Clone(createdA.Tags), probe)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := releaseReg(t, tc.id)
			l, err := r.Release(tc.records)
			if err != nil {
				t.Fatal(err)
			}
			p := l.Probe(at)
			if p == nil || p.Action != ActionProbe || p.Old.ID != tc.on || !slices.Equal(p.New.Tags, tc.tags) {
				t.Fatalf("probe %+v\nwant on %s with %q", p, tc.on, tc.tags)
			}
			if p.Fields() != endpoint.Fields(endpoint.FieldTags) || Probed(p.New) != "2026-11-25T16:04:05Z" {
				t.Fatalf("the probe changes more than the tags, or is not read back: %+v", p)
			}
			// Released from a read that shows the probe, the entry becomes what it would have
			// become without it.
			probed := slices.Clone(tc.records)
			for i := range probed {
				if probed[i].ID == tc.on {
					probed[i] = *p.New
				}
			}
			after, err := r.Release(probed)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range after.Changes {
				b := l.Changes[i]
				if c.Action != b.Action || c.Old.ID != b.Old.ID || (c.New != nil && !reflect.DeepEqual(c.New.Tags, b.New.Tags)) {
					t.Errorf("probed: %s, unprobed: %s", c.String(), b.String())
				}
			}
		})
	}
	if p := (&Letting{}).Probe(at); p != nil {
		t.Fatalf("a probe with nothing to release: %+v", p)
	}
}

// TestARunningOperatorTakesTheProbeOff: the sync of an operator of the cluster rewrites a
// probed entry it wants as it wants it, which takes the probe off, whether it created or
// adopted the entry; a probed entry it writes nothing else to (marked, wanted by no object
// under upsert-only, any entry under create-only) it answers: the probe alone taken off.
func TestARunningOperatorTakesTheProbeOff(t *testing.T) {
	r, err := New(Config{ClusterName: "home", ClusterID: idA, DefaultTags: []string{"homelab"}, GracePeriod: 5 * time.Minute, Log: logrus.New()})
	if err != nil {
		t.Fatal(err)
	}
	web := claim("web.lan", "d", "web", "u-web", time.Hour, "10.0.0.1")
	nas := claim("nas.lan", "d", "nas", "u-nas", time.Hour, "10.0.0.5")
	hand := endpoint.Record{ID: "h1", Hostname: "NAS.lan", IP: "192.168.1.5", Tags: []string{"manual"}, Comment: "mine", Version: "1"}
	// The operator's entries, as its first sync writes them.
	var synced []endpoint.Record
	for _, c := range run(r, t0, []endpoint.Record{hand}, web, nas).Changes {
		n := *c.New
		if c.Action == plan.Create {
			n.ID, n.Version = "c1", "1"
		}
		synced = append(synced, n)
	}
	if len(synced) != 2 {
		t.Fatalf("first sync wrote %d entries", len(synced))
	}
	if res := run(r, t0, synced, web, nas); len(res.Changes) != 0 {
		t.Fatalf("the entries are not in step: %v", actions(res))
	}
	gone := run(r, t0, synced, web) // nas.lan no longer wanted: its entry is marked
	if len(gone.Changes) != 1 || gone.Changes[0].Action != plan.Mark {
		t.Fatalf("want nas.lan marked: %v", actions(gone))
	}
	markedNAS := *gone.Changes[0].New
	webEntry := synced[slices.IndexFunc(synced, func(r endpoint.Record) bool { return r.ID == "c1" })]
	policy := func(p plan.Policy) *Registry {
		cfg := r.cfg
		cfg.Policy = p
		reg, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	for _, tc := range []struct {
		name    string
		r       *Registry
		records []endpoint.Record
		eps     []*endpoint.Endpoint
		probeOn string
		// want is the write that takes the probe off: the sync's own update, or an answer.
		want plan.Action
	}{
		{name: "created", r: r, records: synced, eps: []*endpoint.Endpoint{web, nas}, probeOn: "c1", want: plan.Update},
		{name: "adopted", r: r, records: synced, eps: []*endpoint.Endpoint{web, nas}, probeOn: "h1", want: plan.Update},
		{name: "marked, not yet due", r: r, records: []endpoint.Record{webEntry, markedNAS}, eps: []*endpoint.Endpoint{web}, probeOn: "h1", want: ActionAnswer},
		{name: "upsert-only, wanted by no object", r: policy(plan.UpsertOnly), records: synced, eps: []*endpoint.Endpoint{nas}, probeOn: "c1", want: ActionAnswer},
		{name: "create-only", r: policy(plan.CreateOnly), records: synced, eps: []*endpoint.Endpoint{web, nas}, probeOn: "c1", want: ActionAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			records := cloneRecords(tc.records)
			i := slices.IndexFunc(records, func(r endpoint.Record) bool { return r.ID == tc.probeOn })
			v := viewOf(&records[i])
			want := records[i].Tags
			records[i].Tags = withOwnTag(records[i].Tags, &v, PrefixReleaseProbe, PrefixReleaseProbe+t0.Format(time.RFC3339))
			res := run(tc.r, t0.Add(time.Minute), records, tc.eps...)
			if len(res.Changes) != 1 || res.Changes[0].Old.ID != tc.probeOn || res.Changes[0].Action != tc.want ||
				!endpoint.SameMultiset(res.Changes[0].New.Tags, want) || Probed(res.Changes[0].New) != "" {
				t.Fatalf("changes %v, want the probe taken off %s by %s", actions(res), tc.probeOn, tc.want)
			}
			if tc.want == ActionAnswer && !slices.Equal(res.Changes[0].New.Tags, want) {
				t.Fatalf("the answer left %v, want the tags before the probe %v", res.Changes[0].New.Tags, want)
			}
		})
	}
}
