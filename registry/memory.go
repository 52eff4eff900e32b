package registry

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Memory is what Decide and Record keep between decisions (zero: empty); not for concurrent use.
type Memory struct {
	parses    parses
	merges    merges
	witness   witness
	beats     beatMemo
	folds     folds
	gen, sync uint64 // the registry configuration it was made under; the last Given.Sync decided
}

// parses caches each entry's parsed tags by ID while its tags hold; a sync sweeps those unmet.
type parses struct {
	reg  *Registry
	byID map[string]*parsedTags
	pass uint64
}
type parsedTags struct {
	tags   []string
	parsed *Parsed
	pass   uint64
}

// merges keeps each hostname's merge while its claims and owned entries hold, unless it turned
// claims down (each sync reports them). A hostname is settled, out of a known-state plan, when
// its merge is reused and no entry of it is marked, another's, hand-made or planned (noisy too).
type merges struct {
	byHost         map[string]*kept
	pass           uint64
	noisy, planned map[string]bool
}
type kept struct {
	claims []*endpoint.Endpoint
	owned  []entryKey // what of each owned entry the merge depends on
	out    *endpoint.Endpoint
	marked bool
	// pass is the last decision that met it, reused the last that handed it back.
	pass, reused uint64
}
type entryKey struct {
	id, version, ip string
	tags            []string
}

// wrote takes what became of a sync's writes (results[i]: sent[i]'s).
func (m *Memory) wrote(sent []plan.Change, results []plan.Result) {
	m.witness.wrote(sent, results)
	m.beats.wrote(sent, results)
}

// end closes a sync: what it planned is the next one's noise; what it did not meet, forgotten.
func (m *Memory) end() {
	m.merges.noisy, m.merges.planned = m.merges.planned, nil
	maps.DeleteFunc(m.merges.byHost, func(_ string, k *kept) bool { return k.pass != m.merges.pass })
	maps.DeleteFunc(m.parses.byID, func(_ string, p *parsedTags) bool { return p.pass != m.parses.pass })
}

// knownBeat is the newest heartbeat of its own known, st's too, and this process's first decision.
func (m *Memory) knownBeat(st *State, now time.Time) (known, began string) {
	if m == nil {
		return "", ""
	}
	if m.beats.began == "" {
		m.beats.began = now.UTC().Format(time.RFC3339)
	}
	m.beats.saw(st.beats.newest)
	m.beats.saw(st.beats.leaving)
	if m.beats.knew {
		return m.beats.newest, ""
	}
	return m.beats.newest, m.beats.began
}

// begin starts a decision: afresh for another registry or configuration, closing the last sync.
func (m *Memory) begin(r *Registry, g *Given, records []endpoint.Record, now time.Time) {
	if m == nil {
		return
	}
	switch {
	case m.parses.reg == nil:
		m.parses.reg, m.gen = r, r.gen
	case m.parses.reg != r || m.gen != r.gen:
		*m = Memory{parses: parses{reg: r}, gen: r.gen}
	case m.sync != g.Sync:
		m.end()
	}
	m.sync = g.Sync
	m.parses.pass++
	m.merges.pass++
	if !g.Read.Partial {
		m.witness.observe(records, &m.parses, now)
	}
}

// parser, writers, foldsOf and mergeSource are the memory's parts, or stand-ins without a memory.
func (m *Memory) parser(r *Registry) tagParser {
	if m == nil {
		return r
	}
	return &m.parses
}
func (m *Memory) writers() writers {
	if m == nil {
		return &witness{}
	}
	return &m.witness
}
func (m *Memory) foldsOf() *folds {
	if m == nil {
		return nil
	}
	return &m.folds
}
func (m *Memory) mergeSource() mergeSource {
	if m == nil {
		return nil
	}
	return &m.merges
}

// othersBeats are the others' newest heartbeats, st's or read before: proof of life until overdue.
func (m *Memory) othersBeats(st *State, read Read) map[string]*beatSeen {
	if m == nil {
		return st.beats.others
	}
	seen := make(map[string]*beatSeen, len(st.beats.others))
	if read.Partial {
		maps.Copy(seen, m.beats.others)
	}
	for key, s := range st.beats.others {
		c := *s
		if old, ok := m.beats.others[key]; ok && old.newest > c.newest {
			c.newest, c.settings = old.newest, old.settings
		}
		seen[key] = &c
	}
	m.beats.others = seen // its entries are never written again, so the stages may read them
	return seen
}

// learn takes what a decision saw: former identities proven, merges made or broken, changes.
func (m *Memory) learn(st *State, w *Wanted, changes []plan.Change, read Read) {
	if m == nil {
		return
	}
	if m.witness.seen != nil {
		for _, f := range st.Former {
			m.witness.proven[f.ID] = true
		}
	}
	if m.merges.byHost == nil {
		m.merges.byHost = make(map[string]*kept, len(w.Merges))
	}
	for i := range w.Merges {
		if r := &w.Merges[i]; r.Conflicted {
			delete(m.merges.byHost, r.Host)
		} else {
			m.merges.byHost[r.Host] = &kept{claims: r.Claims, owned: keysOf(make([]entryKey, 0, len(r.Owned)), r.Owned),
				out: r.Out, marked: r.Marked, pass: m.merges.pass}
		}
	}
	if m.merges.planned == nil {
		m.merges.planned = make(map[string]bool, len(changes))
	}
	for i := range changes {
		m.merges.planned[strings.ToLower(changes[i].Hostname())] = true
	}
	if !read.Partial {
		m.witness.kept(changes)
		m.folds.sweep(st)
	}
}

// settled are the hostnames of w the plan need not look at (merges), on a known state only.
func (m *Memory) settled(w *Wanted, st *State, read Read) map[string]bool {
	if m == nil || !read.Partial {
		return nil
	}
	var out map[string]bool
	for _, ep := range w.Endpoints {
		h := ep.Hostname
		if k := m.merges.byHost[h]; k == nil || k.reused != m.merges.pass || w.changed[h] || k.marked || m.merges.noisy[h] || m.merges.planned[h] ||
			len(st.Unowned[h]) > 0 || len(st.Foreign[h]) > 0 {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[h] = true
	}
	return out
}

func (v *parses) parse(rec *endpoint.Record) *Parsed {
	if v.byID == nil {
		v.byID = map[string]*parsedTags{}
	}
	p := v.byID[rec.ID]
	if p == nil || !slices.Equal(p.tags, rec.Tags) {
		p = &parsedTags{tags: rec.Tags, parsed: v.reg.parse(rec)}
		v.byID[rec.ID] = p
	}
	// Keep the entry's own slice: a whole read makes new strings, and equal pointers compare fast.
	p.tags, p.pass = rec.Tags, v.pass
	return p.parsed
}

// Merged is the mergeSource desired reads; a merge handed back is this sync's, not swept.
func (m *merges) Merged(host string, claims []*endpoint.Endpoint, owned []*endpoint.Record) (*endpoint.Endpoint, bool) {
	k := m.byHost[host]
	if k == nil || !slices.Equal(k.claims, claims) || len(k.owned) != len(owned) || slices.ContainsFunc(owned, func(rec *endpoint.Record) bool {
		return !slices.ContainsFunc(k.owned, func(o entryKey) bool {
			return o.id == rec.ID && o.version == rec.Version && o.ip == rec.IP && slices.Equal(o.tags, rec.Tags)
		})
	}) {
		return nil, false
	}
	k.pass, k.reused, k.owned = m.pass, m.pass, keysOf(k.owned[:0], owned)
	return k.out, true
}
func keysOf(keys []entryKey, owned []*endpoint.Record) []entryKey {
	for _, rec := range owned {
		keys = append(keys, entryKey{rec.ID, rec.Version, rec.IP, rec.Tags})
	}
	return keys
}
