package registry

import (
	"slices"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// memoryOf is an empty memory of r's decisions, ready for a read to be observed before the
// first.
func memoryOf(r *Registry) *Memory { return &Memory{parses: parses{reg: r}, gen: r.gen} }

// sawRead observes a whole read at now with no decision, as one the caller made beside them.
func (m *Memory) sawRead(records []endpoint.Record, now time.Time) {
	m.witness.observe(records, &m.parses, now)
}

// decideOnce is one decision over a whole read, with the memory kept, as a sync makes it.
func decideOnce(r *Registry, m *Memory, eps []*endpoint.Endpoint, records ...endpoint.Record) Decision {
	d := r.Decide(t0, records, eps, Given{Memory: m})
	m.end()
	return d
}

func byHost(eps []*endpoint.Endpoint) map[string]*endpoint.Endpoint {
	out := map[string]*endpoint.Endpoint{}
	for _, e := range eps {
		out[e.Hostname] = e
	}
	return out
}

// TestViewsAreKeptWhileTagsHold: an entry's tags are parsed once while they hold, again when
// they change, and forgotten when a read no longer returns the entry.
func TestViewsAreKeptWhileTagsHold(t *testing.T) {
	r := newRegWith(t, func(*Config) {})
	m := memoryOf(r)
	e := owned("e1", "web.lan", "10.0.0.1")
	first := m.parses.parse(&e)
	if m.parses.parse(&e) != first {
		t.Error("the same tags were parsed again")
	}
	retagged := e
	retagged.Tags = append(slices.Clone(e.Tags), "mine")
	if m.parses.parse(&retagged) == first {
		t.Error("changed tags were not parsed again")
	}
	decideOnce(r, m, nil, owned("e2", "other.lan", "10.0.0.2"))
	if _, ok := m.parses.byID["e1"]; ok {
		t.Error("an entry no read returns is still cached")
	}
}

// TestAMergeReusedThenChangedIsForgotten: a hostname whose merge is handed back, but whose
// endpoint a later step changes (an alias a hand-made entry now carries), is no longer kept,
// so that it is planned, not settled, and its refusal reported by every sync.
func TestAMergeReusedThenChangedIsForgotten(t *testing.T) {
	r := newRegWith(t, func(*Config) {})
	m := memoryOf(r)
	web := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.1")
	web.Aliases = []string{"files.lan"}
	recs := []endpoint.Record{owned("e1", "web.lan", "10.0.0.1", "source:uid-1")}
	recs[0].Aliases = []string{"files.lan"}
	decideOnce(r, m, []*endpoint.Endpoint{web}, recs...)
	if m.merges.byHost["web.lan"] == nil {
		t.Fatal("web.lan's merge was not kept")
	}
	hand := endpoint.Record{ID: "h1", Hostname: "nas.lan", IP: "10.0.0.5", Version: "1", Aliases: []string{"files.lan"}}
	for i := 0; i < 2; i++ {
		s := decideOnce(r, m, []*endpoint.Endpoint{web}, recs[0], hand)
		if got := byHost(s.Desired)["web.lan"]; got == nil || len(got.Aliases) != 0 {
			t.Fatalf("sync %d: web.lan %+v, want it without files.lan", i, got)
		}
		if len(s.Conflicts) != 1 || s.Conflicts[0].Hostname != "files.lan" || !s.Conflicts[0].Alias {
			t.Fatalf("sync %d: conflicts %+v, want files.lan's", i, s.Conflicts)
		}
		if m.merges.byHost["web.lan"] != nil {
			t.Fatalf("sync %d: web.lan's merge is kept though its endpoint lost an alias", i)
		}
	}
}
