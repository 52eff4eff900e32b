package registry

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// world is a server's entries as the property test keeps them, with the ground truth the
// registry must never contradict: which entries this cluster created or adopted, and what each
// adopted entry was when it was taken.
type world struct {
	entries map[string]endpoint.Record
	nextID  int
	ours    map[string]bool
	found   map[string]endpoint.Record // adopted ID → the entry as found
	added   map[string][]string        // adopted ID → tags the user appended during the loan
}

func (w *world) records() []endpoint.Record {
	out := make([]endpoint.Record, 0, len(w.entries))
	for _, r := range w.entries {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (w *world) add(r endpoint.Record) (string, bool) {
	for _, e := range w.entries {
		if e.IP == r.IP && e.Hostname == r.Hostname {
			return "", false // AddHost's uniqueness check
		}
	}
	w.nextID++
	r.ID, r.Version = fmt.Sprintf("%04d", w.nextID), "1"
	r.Tags, r.Aliases = append([]string(nil), r.Tags...), append([]string(nil), r.Aliases...)
	w.entries[r.ID] = r
	return r.ID, true
}

var (
	propHosts = []string{"nas.lan", "shop.lan", "pay.lan"}
	propIPs   = []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}
	propTags  = []string{"manual", "kind:printer", "source:hand", "cluster:proxmox", "namespace:iot", "pending-deletion:2099-01-01T00:00:00Z",
		"grace-period:0", "has space", "pre-existing:true", "original-ip:9.9.9.9", "original-hostname:x.lan", "cluster:home"}
	// loanEdits are tags a user may append to an adopted entry: anything but the loan's own
	// closing tag or the ownership marker, including other clusters' tags.
	loanEdits = append(slices.DeleteFunc(slices.Clone(propTags), func(t string) bool { return strings.HasPrefix(t, PrefixOriginalIP) }),
		"cluster:other")
)

func pick[T any](rnd *rand.Rand, xs []T) T { return xs[rnd.Intn(len(xs))] }

// handMade is an entry a person adds: any spelling of a hostname, any of the test's tags.
func handMade(rnd *rand.Rand) endpoint.Record {
	h := pick(rnd, propHosts)
	if rnd.Intn(3) == 0 {
		h = "NAS.lan"
	}
	r := endpoint.Record{Hostname: h, IP: pick(rnd, propIPs), Comment: pick(rnd, []string{"", "by hand", "printer room"})}
	for i := rnd.Intn(4); i > 0; i-- {
		r.Tags = append(r.Tags, pick(rnd, propTags))
	}
	if rnd.Intn(3) == 0 {
		r.Aliases = []string{"alias-" + pick(rnd, []string{"a", "b"}) + ".lan"}
	}
	if rnd.Intn(5) == 0 {
		r.Tags = append(r.Tags, "k8s-operator", "cluster:other") // another cluster's
	}
	return r
}

// claims is a random cluster state: objects in two namespaces claiming the hostnames, some
// without an address, some with their own grace period.
func claims(rnd *rand.Rand, age map[string]time.Duration) []*endpoint.Endpoint {
	var out []*endpoint.Endpoint
	for i := 0; i < 4; i++ {
		if rnd.Intn(2) == 0 {
			continue
		}
		uid := fmt.Sprintf("uid-%d", i)
		ns := []string{"team-a", "team-b"}[i%2]
		ep := &endpoint.Endpoint{Hostname: pick(rnd, propHosts),
			Sources: []endpoint.SourceRef{{Kind: "Ingress", Namespace: ns, Name: uid, UID: uid, CreationTimestamp: t0.Add(-age[uid])}}}
		if rnd.Intn(5) != 0 { // else: no address (its entries are kept)
			for _, ip := range propIPs {
				if rnd.Intn(2) == 0 {
					ep.Targets = append(ep.Targets, ip)
				}
			}
		}
		if rnd.Intn(3) == 0 {
			g := time.Duration(rnd.Intn(600)) * time.Second
			ep.GracePeriod = &g
		}
		if rnd.Intn(3) == 0 {
			ep.Tags = []string{pick(rnd, propTags)}
		}
		if rnd.Intn(3) == 0 {
			ep.Aliases = []string{"www." + ep.Hostname}
		}
		out = append(out, ep)
	}
	return out
}

// TestPropertyOwnership runs random sequences of cluster states and hand edits through the
// registry and plan and checks, after every sync, that no entry this cluster does not own was
// written except by adoption, that nothing foreign or hand-made was deleted, and that every
// released entry equals what was found when it was adopted, plus the tags the user added to
// it meanwhile.
func TestPropertyOwnership(t *testing.T) {
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	for seed := int64(1); seed <= 400; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		r, err := New(Config{ClusterName: "home", GracePeriod: 5 * time.Minute, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		w := &world{entries: map[string]endpoint.Record{}, ours: map[string]bool{}, found: map[string]endpoint.Record{}, added: map[string][]string{}}
		age := map[string]time.Duration{}
		for i := 0; i < 4; i++ {
			age[fmt.Sprintf("uid-%d", i)] = time.Duration(rnd.Intn(1000)) * time.Hour
		}
		now := t0
		for step := 0; step < 25; step++ {
			// Hand edits: new entries, tags added to entries that are not ours, and tags the
			// user appends to an adopted entry while it is on loan, which are theirs whatever
			// they look like (short of the loan record's own closing tag).
			for i := rnd.Intn(2); i > 0; i-- {
				w.add(handMade(rnd))
			}
			if rnd.Intn(3) == 0 {
				for id := range w.found {
					e := w.entries[id]
					tag := pick(rnd, loanEdits)
					e.Tags = append(slices.Clone(e.Tags), tag)
					e.Version += "u"
					w.entries[id] = e
					w.added[id] = append(w.added[id], tag)
					break
				}
			}
			if rnd.Intn(4) == 0 {
				for id, e := range w.entries {
					if !w.ours[id] {
						e.Tags = append(e.Tags, pick(rnd, propTags))
						e.Version = fmt.Sprint(len(e.Tags) + 10)
						w.entries[id] = e
						break
					}
				}
			}
			before := map[string]endpoint.Record{}
			for id, e := range w.entries {
				before[id] = e
			}
			cl := claims(rnd, age)
			res := r.Decide(now, w.records(), cl, Given{})
			for _, c := range res.Changes {
				where := fmt.Sprintf("seed %d step %d: %s", seed, step, c.String())
				switch c.Action {
				case plan.Create:
					if id, ok := w.add(*c.New); ok {
						w.ours[id] = true
					}
					continue
				case plan.Adopt:
					if v := viewOf(c.Old); w.ours[c.Old.ID] || v.has(TagOwner) {
						t.Fatalf("%s: adopted an entry that was not free", where)
					}
					w.ours[c.Old.ID], w.found[c.Old.ID] = true, before[c.Old.ID]
				default:
					if !w.ours[c.Old.ID] {
						t.Fatalf("%s: wrote an entry this cluster does not own: %+v", where, before[c.Old.ID])
					}
				}
				switch c.Action {
				case plan.Delete:
					if _, adopted := w.found[c.Old.ID]; adopted {
						t.Fatalf("%s: deleted an adopted entry instead of releasing it", where)
					}
					delete(w.entries, c.Old.ID)
					delete(w.ours, c.Old.ID)
				case plan.Release:
					got := *c.New
					want := w.found[c.Old.ID]
					want.Tags = append(slices.Clone(want.Tags), w.added[c.Old.ID]...)
					got.Version, want.Version = "", ""
					// The server returns an empty list for nil and empty alike.
					if len(got.Aliases) == 0 && len(want.Aliases) == 0 {
						got.Aliases, want.Aliases = nil, nil
					}
					if len(got.Tags) == 0 && len(want.Tags) == 0 {
						got.Tags, want.Tags = nil, nil
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("%s: released\n  %+v\nfound\n  %+v", where, got, want)
					}
					w.entries[c.Old.ID] = *c.New
					delete(w.ours, c.Old.ID)
					delete(w.found, c.Old.ID)
					delete(w.added, c.Old.ID)
				default:
					n := *c.New
					n.Version = c.Old.Version + "+"
					w.entries[c.Old.ID] = n
				}
			}
			for id, e := range before {
				if _, still := w.entries[id]; !still && !w.ours[id] && !wasOurs(res.Changes, id) {
					t.Fatalf("seed %d step %d: entry %+v that was not ours disappeared", seed, step, e)
				}
			}
			now = now.Add(time.Duration(rnd.Intn(400)) * time.Second)
		}
	}
}

func wasOurs(changes []plan.Change, id string) bool {
	for _, c := range changes {
		if c.Old != nil && c.Old.ID == id && c.Action == plan.Delete {
			return true
		}
	}
	return false
}
