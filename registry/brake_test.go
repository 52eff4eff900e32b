package registry

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// brakeWorld is one installation with the default brake, claims of its own in the namespaces
// named, and the router as its first sync left it.
type brakeWorld struct {
	srv *server
	in  *installation
}

func newBrakeWorld(t *testing.T, counts map[string]int) *brakeWorld {
	t.Helper()
	w := &brakeWorld{srv: &server{}, in: newInstallation(t, "home", "aaaaaaaa")}
	cfg := w.in.r.cfg
	cfg.Brake = DefaultBrake()
	if err := w.in.r.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	for _, ns := range slices.Sorted(maps.Keys(counts)) {
		for i := 0; i < counts[ns]; i++ {
			name := fmt.Sprintf("%s-%02d", ns, i)
			w.in.eps = append(w.in.eps, claim(name+".lan", ns, name, "uid-"+name, time.Hour, "10.0.0.1"))
		}
	}
	if res, _ := w.srv.syncAs(w.in, t0); len(res.Changes) != len(w.in.eps) {
		t.Fatalf("first sync: %v", actions(res))
	}
	return w
}

// drop removes the first n claims of namespace ns: their objects are deleted.
func (w *brakeWorld) drop(ns string, n int) {
	var out []*endpoint.Endpoint
	dropped := 0
	for _, ep := range w.in.eps {
		if ep.Sources[0].Namespace == ns && dropped < n {
			dropped++
			continue
		}
		out = append(out, ep)
	}
	w.in.eps = out
}

// rename gives n claims of namespace ns a new hostname, the objects staying the same (a values
// typo, a domain move, a HostMapping's spec.hostname).
func (w *brakeWorld) rename(ns string, n int, suffix string) {
	renamed := 0
	for i, ep := range w.in.eps {
		if ep.Sources[0].Namespace != ns || renamed == n {
			continue
		}
		c := *ep
		c.Hostname = strings.TrimSuffix(ep.Hostname, ".lan") + suffix
		w.in.eps[i] = &c
		renamed++
	}
}

func count(res Verdict, a plan.Action) int {
	n := 0
	for _, c := range res.Changes {
		if c.Action == a {
			n++
		}
	}
	return n
}

// TestAReplacedNameIsANameLeaving: twenty names replaced by others in one apply (the same
// objects, new hostnames) is twenty names leaving: the brake holds the marks and the new names,
// sync after sync, so that the share never drops to half by counting the new names; confirmed,
// both go; undone, nothing is left to do.
func TestAReplacedNameIsANameLeaving(t *testing.T) {
	t.Run("held until confirmed", func(t *testing.T) {
		w := newBrakeWorld(t, map[string]int{"apps": 20})
		w.rename("apps", 20, ".typo.lan")
		var token string
		for i := 1; i <= 4; i++ {
			res, _ := w.srv.syncAs(w.in, t0.Add(time.Duration(i)*time.Minute))
			if res.Braked == nil || res.Braked.Leaving != 20 || res.Braked.Owned != 20 || len(res.Changes) != 0 {
				t.Fatalf("sync %d after the replacement: braked %+v, changes %v; want all held", i, res.Braked, actions(res))
			}
			if token != "" && res.Braked.Token != token {
				t.Fatalf("sync %d: token %s, was %s", i, res.Braked.Token, token)
			}
			token = res.Braked.Token
			if len(w.srv.entries) != 20 {
				t.Fatalf("sync %d: %d entries on the router, want the 20 before the replacement", i, len(w.srv.entries))
			}
		}
		cfg := w.in.r.cfg
		cfg.Brake.Confirm = token
		if err := w.in.r.Reconfigure(cfg); err != nil {
			t.Fatal(err)
		}
		res, _ := w.srv.syncAs(w.in, t0.Add(5*time.Minute))
		if res.Braked != nil || count(res, plan.Mark) != 20 || count(res, plan.Create) != 20 {
			t.Fatalf("confirmed: braked %+v, %v", res.Braked, actions(res))
		}
		res, _ = w.srv.syncAs(w.in, t0.Add(11*time.Minute))
		if res.Braked != nil || count(res, plan.Delete) != 20 || len(w.srv.entries) != 20 {
			t.Fatalf("after the grace period: braked %+v, %v; %d entries", res.Braked, actions(res), len(w.srv.entries))
		}
	})
	t.Run("undone", func(t *testing.T) {
		w := newBrakeWorld(t, map[string]int{"apps": 20})
		before := slices.Clone(w.srv.entries)
		all := slices.Clone(w.in.eps)
		w.rename("apps", 20, ".typo.lan")
		if res, _ := w.srv.syncAs(w.in, t0.Add(time.Minute)); res.Braked == nil {
			t.Fatal("not held")
		}
		w.in.eps = all
		if res, _ := w.srv.syncAs(w.in, t0.Add(2*time.Minute)); res.Braked != nil || len(res.Changes) != 0 {
			t.Fatalf("undone: braked %+v, %v", res.Braked, actions(res))
		}
		if !slices.EqualFunc(before, w.srv.entries, func(a, b endpoint.Record) bool { return a.ID == b.ID && a.Version == b.Version }) {
			t.Fatalf("the router changed: %v", w.srv.entries)
		}
	})
	t.Run("a few replaced are everyday churn", func(t *testing.T) {
		w := newBrakeWorld(t, map[string]int{"apps": 20})
		w.rename("apps", 3, ".new.lan")
		res, _ := w.srv.syncAs(w.in, t0.Add(time.Minute))
		if res.Braked != nil || count(res, plan.Mark) != 3 || count(res, plan.Create) != 3 {
			t.Fatalf("braked %+v, %v", res.Braked, actions(res))
		}
	})
}

// TestTheNamespacesBrake: a namespace that loses most of its entries is held however small a
// part of the cluster it is; one namespace's mass deletion neither holds another's everyday
// deletion nor is shielded by another's growth.
func TestTheNamespacesBrake(t *testing.T) {
	t.Run("a namespace deleted in a large cluster", func(t *testing.T) {
		w := newBrakeWorld(t, map[string]int{"big": 100, "media": 12})
		w.drop("media", 12)
		res, _ := w.srv.syncAs(w.in, t0.Add(time.Minute))
		if res.Braked == nil || res.Braked.Cluster || len(res.Braked.Namespaces) != 1 || res.Braked.Namespaces[0] != (BrakedNamespace{Name: "media", Leaving: 12, Owned: 12, Tripped: true}) {
			t.Fatalf("braked %+v, %v", res.Braked, actions(res))
		}
		if len(res.Changes) != 0 || !strings.Contains(res.Braked.Message(), "12 of namespace media's 12 entries") {
			t.Fatalf("changes %v, message %q", actions(res), res.Braked.Message())
		}
	})
	t.Run("another's mass deletion does not hold an everyday one", func(t *testing.T) {
		w := newBrakeWorld(t, map[string]int{"a": 20, "b": 20})
		w.drop("a", 1)
		w.drop("b", 15)
		res, _ := w.srv.syncAs(w.in, t0.Add(time.Minute))
		if res.Braked == nil || res.Braked.Cluster || len(res.Braked.Namespaces) != 1 || res.Braked.Namespaces[0].Name != "b" {
			t.Fatalf("braked %+v", res.Braked)
		}
		if got := actions(res); !slices.Equal(got, []string{"mark a-00.lan n001"}) {
			t.Fatalf("changes %v, want a's one mark alone", got)
		}
		// a's entry goes after its grace period while b's stay held.
		res, _ = w.srv.syncAs(w.in, t0.Add(7*time.Minute))
		if got := actions(res); !slices.Equal(got, []string{"delete a-00.lan n001"}) || res.Braked == nil {
			t.Fatalf("after the grace period: %v, braked %+v", got, res.Braked)
		}
	})
	t.Run("another's everyday deletion does not spend a small namespace's minimum", func(t *testing.T) {
		// tenant loses all 9 of its entries, under its own minimum of 10; infra replaces one
		// name of its 10. The 10 leaving are more than half of the cluster's 19, but infra's
		// one is everyday churn: it counts for nothing, and nothing is held.
		w := newBrakeWorld(t, map[string]int{"infra": 10, "tenant": 9})
		w.drop("tenant", 9)
		w.rename("infra", 1, ".new.lan")
		res, _ := w.srv.syncAs(w.in, t0.Add(time.Minute))
		if res.Braked != nil || count(res, plan.Mark) != 10 || count(res, plan.Create) != 1 {
			t.Fatalf("braked %+v, %v; want tenant's 9 marks, infra's mark and its new name", res.Braked, actions(res))
		}
	})
	t.Run("the cluster holds only the namespaces losing most of theirs", func(t *testing.T) {
		// A source dropped: a, b and c each lose all of their entries, too few to trip on
		// their own but more than half of the cluster together; infra's everyday deletion
		// and its new name go all the same.
		w := newBrakeWorld(t, map[string]int{"a": 5, "b": 5, "c": 5, "infra": 10})
		w.drop("a", 5)
		w.drop("b", 5)
		w.drop("c", 5)
		w.rename("infra", 1, ".new.lan")
		res, _ := w.srv.syncAs(w.in, t0.Add(time.Minute))
		if res.Braked == nil || !res.Braked.Cluster || res.Braked.Leaving != 15 || res.Braked.Owned != 25 {
			t.Fatalf("braked %+v, %v", res.Braked, actions(res))
		}
		var names []string
		for _, n := range res.Braked.Namespaces {
			names = append(names, n.Name)
		}
		if !slices.Equal(names, []string{"a", "b", "c"}) {
			t.Fatalf("held %v, want a, b and c", names)
		}
		if got := actions(res); len(got) != 2 || count(res, plan.Mark) != 1 || count(res, plan.Create) != 1 {
			t.Fatalf("changes %v, want infra's mark and new name alone", got)
		}
	})
	t.Run("another's growth does not shield a mass deletion", func(t *testing.T) {
		w := newBrakeWorld(t, map[string]int{"a": 20, "b": 200})
		w.drop("a", 15) // 15 of the cluster's 220: far below half
		res, _ := w.srv.syncAs(w.in, t0.Add(time.Minute))
		if res.Braked == nil || len(res.Braked.Namespaces) != 1 || res.Braked.Namespaces[0].Name != "a" || len(res.Changes) != 0 {
			t.Fatalf("braked %+v, %v", res.Braked, actions(res))
		}
	})
	t.Run("a namespace's threshold is its own", func(t *testing.T) {
		w := newBrakeWorld(t, map[string]int{"a": 20, "b": 200})
		cfg := w.in.r.cfg
		cfg.Brake.NamespaceShare, cfg.Brake.NamespaceMinimum = 0.8, 5
		if err := w.in.r.Reconfigure(cfg); err != nil {
			t.Fatal(err)
		}
		w.drop("a", 15) // 75 %: under 80 %
		if res, _ := w.srv.syncAs(w.in, t0.Add(time.Minute)); res.Braked != nil || count(res, plan.Mark) != 15 {
			t.Fatalf("braked %+v, %v", res.Braked, actions(res))
		}
		w.drop("b", 6) // 6 of 200
		w.drop("a", 5) // all 20 of a's, 15 of them marked already
		res, _ := w.srv.syncAs(w.in, t0.Add(2*time.Minute))
		if res.Braked == nil || len(res.Braked.Namespaces) != 1 || res.Braked.Namespaces[0] != (BrakedNamespace{Name: "a", Leaving: 20, Owned: 20, Tripped: true}) {
			t.Fatalf("braked %+v", res.Braked)
		}
		if count(res, plan.Mark) != 6 {
			t.Fatalf("b's marks: %v", actions(res))
		}
	})
	t.Run("off", func(t *testing.T) {
		w := newBrakeWorld(t, map[string]int{"big": 100, "media": 12})
		cfg := w.in.r.cfg
		cfg.Brake.NamespaceShare = 0
		if err := w.in.r.Reconfigure(cfg); err != nil {
			t.Fatal(err)
		}
		w.drop("media", 12)
		if res, _ := w.srv.syncAs(w.in, t0.Add(time.Minute)); res.Braked != nil || count(res, plan.Mark) != 12 {
			t.Fatalf("braked %+v, %v", res.Braked, actions(res))
		}
	})
}

// TestTheBrakeStage: a sync that would mark more than the brake's share of a namespace's
// entries, and at least its minimum, holds (MassDeletionHeld, with the token) every mark and
// deletion of that namespace, its new names, and every renewal of the heartbeat; the other
// namespaces' changes go on. Confirmed by its token, the set goes.
func TestTheBrakeStage(t *testing.T) {
	var records []endpoint.Record
	for _, ns := range []string{"a", "b"} {
		for i := range 12 {
			records = append(records, owned(fmt.Sprintf("%s%02d", ns, i), fmt.Sprintf("%s%02d.lan", ns, i), "10.0.0.1", PrefixNamespace+ns, PrefixSource+"u-"+ns))
		}
	}
	mark := func(rec endpoint.Record) plan.Change { return plan.Change{Action: plan.Mark, Old: &rec, New: &rec} }
	create := func(host, ns string) plan.Change {
		return plan.Change{Action: plan.Create, New: &endpoint.Record{Hostname: host, IP: "10.0.0.2", Tags: []string{TagOwner, PrefixNamespace + ns}}}
	}
	renewal := func(rec endpoint.Record) plan.Change {
		n := rec
		n.Tags = append(slices.Clone(rec.Tags), PrefixAlive+t0.Format(time.RFC3339))
		return plan.Change{Action: plan.Update, Old: &rec, New: &n}
	}
	var most []plan.Change // ten of a's twelve
	var ids []string
	for _, rec := range records[:10] {
		most = append(most, mark(rec))
		ids = append(ids, rec.ID)
	}
	token := brakeToken(slices.Clone(ids))
	burst := append(slices.Clone(most), create("new.lan", "a"), create("other.lan", "b"), mark(records[12]), renewal(records[23]))
	var heldBurst []string
	for _, rec := range records[:10] {
		heldBurst = append(heldBurst, "mark "+rec.Hostname+" "+rec.ID+" MassDeletionHeld")
	}
	heldBurst = append(heldBurst, "create new.lan MassDeletionHeld", "update b11.lan b11 MassDeletionHeld")
	for _, tc := range []struct {
		name       string
		confirm    string
		changes    []plan.Change
		sent, held []string
	}{
		{name: "no mark", changes: []plan.Change{create("new.lan", "a"), renewal(records[0])}, sent: []string{"create new.lan", "update a00.lan a00"}},
		{name: "a few marks", changes: []plan.Change{mark(records[0]), mark(records[1]), create("new.lan", "a")},
			sent: []string{"mark a00.lan a00", "mark a01.lan a01", "create new.lan"}},
		{name: "most of a namespace", changes: burst, sent: []string{"create other.lan", "mark b00.lan b00"}, held: heldBurst},
		{name: "confirmed", confirm: token, changes: burst, sent: wordsOfChanged(changed{changes: burst}).sent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegWith(t, func(c *Config) { c.Brake = DefaultBrake(); c.Brake.Confirm = tc.confirm })
			v := r.brake(changesAt(r, records, nil, nil), tc.changes)
			if got := wordsOfChanged(v); !reflect.DeepEqual(got, changeWords{tc.sent, tc.held}) {
				t.Errorf("sent %q\nheld %q\nwant %q\nand  %q", got.sent, got.held, tc.sent, tc.held)
			}
			if len(tc.held) == 0 {
				if v.braked != nil {
					t.Errorf("braked %+v", v.braked)
				}
				return
			}
			if v.braked == nil || v.braked.Token != token || v.braked.Stopped != len(tc.held) || len(v.braked.Namespaces) != 1 || v.braked.Namespaces[0].Name != "a" {
				t.Fatalf("braked %+v, want namespace a's %d held under %s", v.braked, len(tc.held), token)
			}
			for _, h := range v.held {
				if h.Token != token {
					t.Errorf("held %s without the token", changeText(&h.Change))
				}
			}
		})
	}
}
