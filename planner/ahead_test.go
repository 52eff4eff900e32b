package planner

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestTheGuessOfALoneNewHostname: which hostname an event sync searches ahead of the decision.
func TestTheGuessOfALoneNewHostname(t *testing.T) {
	web := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.1")
	nas := claim("nas.lan", "default", "nas", "uid-2", time.Hour, "10.0.0.5")
	nasUpper := claim("NAS.lan", "other", "nas", "uid-4", time.Hour, "10.0.0.5")
	db := claim("db.lan", "default", "db", "uid-3", time.Hour, "10.0.0.6")
	cases := []struct {
		name  string
		seen  []*endpoint.Endpoint // the last sync's endpoints; nil: no sync came before
		known []string             // hostnames of the known entries; nil: the known state is in doubt
		eps   []*endpoint.Endpoint
		want  string
	}{
		{name: "one new hostname", seen: []*endpoint.Endpoint{web}, known: []string{"web.lan"}, eps: []*endpoint.Endpoint{web, nas}, want: "nas.lan"},
		{name: "one new hostname claimed twice", seen: []*endpoint.Endpoint{web}, known: []string{"web.lan"}, eps: []*endpoint.Endpoint{web, nas, nasUpper}, want: "nas.lan"},
		{name: "nothing new", seen: []*endpoint.Endpoint{web, nas}, known: []string{"web.lan"}, eps: []*endpoint.Endpoint{web, nasUpper}},
		{name: "two new hostnames read the whole server instead", seen: []*endpoint.Endpoint{web}, known: []string{"web.lan"}, eps: []*endpoint.Endpoint{web, nas, db}},
		{name: "a new hostname with a known entry creates nothing", seen: []*endpoint.Endpoint{web}, known: []string{"web.lan", "NAS.lan"}, eps: []*endpoint.Endpoint{web, nas}},
		{name: "no sync came before", known: []string{"web.lan"}, eps: []*endpoint.Endpoint{web, nas}},
		{name: "the known state is in doubt", seen: []*endpoint.Endpoint{web}, eps: []*endpoint.Endpoint{web, nas}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var a ahead
			if tc.seen != nil {
				a.remember(tc.seen)
			}
			var k known
			if tc.known != nil {
				var recs []endpoint.Record
				for i, h := range tc.known {
					recs = append(recs, owned(string(rune('a'+i)), h, "10.0.0.9"))
				}
				k.read(recs)
			}
			if got := a.guess(&k, tc.eps); got != tc.want {
				t.Errorf("guess %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAGuessCostsOneSearchAtMost: a new hostname the decision does not create is searched once,
// when it first appears, and not at every sync after; a guess the decision does not confirm is
// thrown away, and the hostname it creates is searched as before.
func TestAGuessCostsOneSearchAtMost(t *testing.T) {
	web := claim("web.lan", "default", "web", "uid-1", time.Hour, "10.0.0.1")
	waiting := claim("nas.lan", "default", "nas", "uid-2", time.Hour) // no address yet
	nas := claim("nas.lan", "default", "nas", "uid-2", time.Hour, "10.0.0.5")
	empty := claim("empty.lan", "default", "empty", "uid-3", time.Hour)
	spare := claim("spare.lan", "default", "spare", "uid-4", time.Hour)
	db := claim("db.lan", "default", "db", "uid-5", time.Hour, "10.0.0.6")
	s := newServer(t)
	r := &countingReader{Reader: s.prov}
	p := New(newReg(t), r, testingclock.NewFakeClock(t0))
	s.sync(t, p, Full, web, waiting)
	steps := []struct {
		eps      []*endpoint.Endpoint
		searches int64
		ahead    bool
		sent     []string
	}{
		// empty.lan is new and guessed; the decision creates nothing of it.
		{eps: []*endpoint.Endpoint{web, waiting, empty}, searches: 1},
		// It is not guessed again.
		{eps: []*endpoint.Endpoint{web, waiting, empty}},
		// nas.lan gets its address (not new, so not guessed) as spare.lan appears without one
		// (guessed): the guess is thrown away, and nas.lan searched after the decision.
		{eps: []*endpoint.Endpoint{web, nas, empty, spare}, searches: 2, sent: []string{"create nas.lan"}},
		// A lone new hostname with an address is searched beside the decision, once.
		{eps: []*endpoint.Endpoint{web, nas, empty, spare, db}, searches: 1, ahead: true, sent: []string{"create db.lan"}},
	}
	for i, st := range steps {
		r.searches.Store(0)
		sy, err := p.Plan(context.Background(), st.eps, Event)
		if err != nil {
			t.Fatal(err)
		}
		// Counted as the planner asks, since a guess thrown away may be cancelled before the
		// server sees it.
		if q := r.searches.Load(); q != st.searches || sy.ahead != st.ahead {
			t.Errorf("step %d: SearchHosts %d, ahead %v; want %d, %v (read %s)", i, q, sy.ahead, st.searches, st.ahead, sy.Read)
		}
		if got := actions(sy.Changes); !slices.Equal(got, st.sent) {
			t.Errorf("step %d: sent %v, want %v", i, got, st.sent)
		}
		p.Learn(sy, s.prov.ApplyChanges(context.Background(), sy.Changes), nil)
	}
}

// countingReader counts the searches the planner asks for.
type countingReader struct {
	Reader
	searches atomic.Int64
}

func (r *countingReader) Search(ctx context.Context, hostname string) ([]endpoint.Record, error) {
	r.searches.Add(1)
	return r.Reader.Search(ctx, hostname)
}
