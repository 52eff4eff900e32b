// Package planner owns everything between "these endpoints are wanted" and "these writes go
// out": what it reads of the server (the state known from earlier syncs, one hostname searched,
// or the whole server), the registry's decision over it, and what it keeps between syncs (the
// known server state, refused writes, the write-rate allowances and the registry's Memory),
// each with its invalidation rule in a file of its own. Its two calls are Plan and Learn; the
// controller keeps scheduling, the writes and the report.
package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// Mode is the kind of sync.
type Mode uint8

const (
	// Full reads the whole server, plans every hostname and tries again what was refused: at
	// start, every interval, when a deletion falls due, after a failure, a reconfiguration or
	// new certificate files, and for external-dns's requests.
	Full Mode = iota + 1
	// Event follows a change of the cluster: it plans from the known state when there is one,
	// reads the one hostname it would create, and skips what was refused until the interval.
	Event
)

func (m Mode) String() string {
	if m == Event {
		return "event"
	}
	return "full"
}

// ReadKind says what a sync read of the server.
type ReadKind uint8

const (
	// ReadServer: the whole server (ListHosts).
	ReadServer ReadKind = iota + 1
	// ReadKnown: nothing; the known state.
	ReadKnown
	// ReadHost: the known state, and the one hostname it creates (SearchHosts).
	ReadHost
)

func (r ReadKind) String() string {
	switch r {
	case ReadKnown:
		return "known"
	case ReadHost:
		return "host"
	}
	return "server"
}

// Reader reads the router-hosts server: every entry, or the entries of one hostname in any
// case. The slices it returns are the planner's from then on (the known state is kept in
// Records' own).
type Reader interface {
	Records(ctx context.Context) ([]endpoint.Record, error)
	Search(ctx context.Context, hostname string) ([]endpoint.Record, error)
}

// Planner plans syncs. It is not safe for concurrent use: the controller runs one sync at a
// time.
type Planner struct {
	reg  *registry.Registry
	read Reader
	clk  clock.PassiveClock

	known   known
	ahead   ahead
	refused refused
	// stale: the last sync's writes met entries newer than it planned from.
	stale bool
	// mem is the registry's memory of its decisions, which only Decide and Record read and
	// write; syncs counts the syncs, which Decide's memory tells apart by it.
	mem   registry.Memory
	syncs uint64
	// rates are the write-rate allowances of the objects and namespaces that wrote lately, as
	// the registry's Record left them: it owns their rules, the planner keeps them.
	rates registry.Rates
}

// New returns a planner for reg's policy, reading through read, taking each sync's time from
// clk.
func New(reg *registry.Registry, read Reader, clk clock.PassiveClock) *Planner {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Planner{reg: reg, read: read, clk: clk}
}

// Reset forgets everything learnt: the registry's settings changed.
func (p *Planner) Reset() {
	p.known.forget()
	p.mem = registry.Memory{}
	p.refused = refused{}
	p.stale = false
	p.rates = nil
}

// Sync is one sync's plan.
type Sync struct {
	Mode Mode
	Read ReadKind
	// Decision is the registry's: the entries by owner, the endpoints wanted and the claims
	// refused, the plan, and the writes to send (Changes, less those the planner then skips,
	// leaves to a whole read, paces or defers) with those held back and why. NextExpiry is
	// when the earliest pending deletion falls due, or a write the write-rate budgets held may
	// go.
	registry.Decision
	// Refused are the hostnames whose changes an event sync did not send, since the very same
	// change was refused before (with these errors): the interval's full sync tries it again.
	Refused map[string]error
	// Entries is the number of entries planned from.
	Entries int
	// ReadDuration is the time spent reading the server.
	ReadDuration time.Duration
	// NeedFresh: the sync left out what only a read of the whole server may send (a delete, a
	// release, a hostname whose duplicate waits, creates of several hostnames): Learn forgets
	// the known state, and the caller runs a sync at once.
	NeedFresh bool

	records  []endpoint.Record // a whole read, which Learn keeps as the known state
	searched string            // the hostname searched (ReadHost), lowercase
	ahead    bool              // the search was started before the decision (ahead)
	plans    int               // the times the registry and the plan ran
}

// Plan reads what mode calls for and plans eps (the sources' endpoints) under the registry's
// policy. A read that fails returns its error, and nothing is planned: a server that answered
// nothing must never look like "delete everything".
//
// An event sync plans from the known state. A new hostname (a create) must not double a line
// someone added by hand meanwhile, which the known state may not have: a create of one
// hostname searches the server for it (beside the decision, when the endpoints told which
// hostname it would be: ahead) and plans again; creates of several read the whole server.
// Deletes and releases wait for a read of the whole server, since the entry may no longer be
// the operator's to remove.
func (p *Planner) Plan(ctx context.Context, eps []*endpoint.Endpoint, mode Mode) (*Sync, error) {
	p.syncs++
	s := &Sync{Mode: mode, Read: ReadKnown}
	var early *search
	if mode == Full || !p.known.valid {
		if err := p.readServer(ctx, s); err != nil {
			return nil, err
		}
	} else {
		early = p.ahead.start(ctx, p.read, p.clk, &p.known, eps)
	}
	defer early.drop()
	p.ahead.remember(eps)
	p.plan(s, eps)
	if s.Read == ReadKnown {
		// A lone hostname's creates went on the promise of a search (Read.SearchesLone);
		// creates of several were held for a whole read, and so was a lone hostname's that
		// an event sync skips the other creates of.
		hosts, held := creates(s.Changes), false
		if len(hosts) == 0 {
			hosts, held = p.unread(s), true
		}
		switch {
		case len(hosts) == 1:
			found, err := p.search(ctx, s, hosts[0], early)
			if err != nil {
				return nil, fmt.Errorf("searching router-hosts for %s: %w", hosts[0], err)
			}
			s.Read, s.searched = ReadHost, hosts[0]
			// The plan is a function of the known state: when the search found what was
			// known of the hostname (most often nothing), planning again would find the same.
			if p.known.searched(hosts[0], found) || held {
				p.plan(s, eps)
			}
		case len(hosts) > 1:
			if err := p.readServer(ctx, s); err != nil {
				return nil, err
			}
			p.plan(s, eps)
		}
	}
	for _, c := range s.WholeRead {
		s.NeedFresh = s.NeedFresh || !p.skipped(s, c)
	}
	return s, nil
}

// search reads the entries of host: the answer of the search started ahead, if it was of host,
// or a search now, the guess thrown away.
func (p *Planner) search(ctx context.Context, s *Sync, host string, early *search) ([]endpoint.Record, error) {
	if early != nil && early.host == host {
		found, took, err := early.wait()
		s.ReadDuration += took
		s.ahead = true
		return found, err
	}
	early.drop()
	start := p.clk.Now()
	found, err := p.read.Search(ctx, host)
	s.ReadDuration += p.clk.Since(start)
	return found, err
}

// readServer reads every entry.
func (p *Planner) readServer(ctx context.Context, s *Sync) error {
	start := p.clk.Now()
	records, err := p.read.Records(ctx)
	s.ReadDuration += p.clk.Since(start)
	if err != nil {
		return fmt.Errorf("listing router-hosts entries: %w", err)
	}
	s.Read, s.records = ReadServer, records
	return nil
}

// plan runs the registry's decision over what s read.
func (p *Planner) plan(s *Sync, eps []*endpoint.Endpoint) {
	s.plans++
	records := s.records
	if s.Read != ReadServer {
		records = p.known.records()
	}
	s.Decision = p.reg.Decide(p.clk.Now(), records, eps, registry.Given{Memory: &p.mem, Sync: p.syncs,
		Read: registry.Read{Partial: s.Read != ReadServer, Searched: s.searched, SearchesLone: true}, Rates: p.rates})
	s.Entries = len(records)
	if s.Mode == Event {
		s.Changes, s.Refused = p.refused.skip(s.Changes)
	}
}

// creates are the hostnames changes create, lowercase.
func creates(changes []plan.Change) []string {
	var out []string
	for i := range changes {
		if h := strings.ToLower(changes[i].Hostname()); changes[i].Action == plan.Create && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// unread are the hostnames, lowercase, of the creates the whole-read stage held in a sync planned
// from the known state, but for those an event sync skips as refused before.
func (p *Planner) unread(s *Sync) []string {
	var out []string
	for _, c := range s.WholeRead {
		if c.Action != plan.Create || p.skipped(s, c) {
			continue
		}
		if host := strings.ToLower(c.Hostname()); !slices.Contains(out, host) {
			out = append(out, host)
		}
	}
	return out
}

// skipped reports whether an event sync leaves c out as refused before (refused), whatever a
// stage made of it.
func (p *Planner) skipped(s *Sync, c plan.Change) bool {
	return s.Mode == Event && p.refused.has(c)
}

// Learn takes what became of s's writes, results[i] being the provider's result for
// s.Changes[i], and of the compactions of s.Compact the caller sent (compacted, by ID; none
// when it sent none), and reports whether a sync should follow at once: s left changes to it, or a
// write met an entry newer than s planned from (stale), which only a read of the whole server
// plans again. A failed write forgets the known state, so the sync that follows reads it.
func (p *Planner) Learn(s *Sync, results []plan.Result, compacted []registry.Compacted) (again bool) {
	p.rates = p.reg.Record(&s.Decision, results, compacted, &p.mem, p.rates, s.Read == ReadServer)
	failures := plan.Failures(results)
	switch {
	case len(failures) > 0 || s.NeedFresh || s.DeferredCreates:
		p.known.forget()
	case s.Read == ReadServer:
		p.known.read(s.records)
		p.known.wrote(s.Changes, results)
	default:
		p.known.wrote(s.Changes, results)
	}
	p.refused.learn(s.Mode == Full, failures)
	// One sync at once per run of syncs that meet newer entries: a writer that keeps winning
	// the race waits for the next sync instead of driving one after another.
	stale := slices.ContainsFunc(failures, func(ce *plan.ChangeError) bool { return ce.Stale })
	again = s.NeedFresh || s.Deferred > 0 || stale && !p.stale
	p.stale = stale
	return again
}
