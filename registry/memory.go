package registry

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Memory is what the registry keeps of its work from one decision to the next: the entries'
// parsed tags (parses), the merges and the hostnames settled (merges), what this process saw
// and wrote of its entries, from which twins are found (witness), and the heartbeats. The
// caller keeps it between syncs and hands it to Decide and Record, which alone read and write
// it; the zero Memory is empty. It is not safe for concurrent use.
type Memory struct {
	parses  parses
	merges  merges
	witness witness
	beats   beatMemo
	// gen is the registry's configuration it was made under, and sync the caller's sync it
	// last decided (Given.Sync).
	gen, sync uint64
}

// parses caches the registry's reading of each entry's tags, by entry ID, so that the syncs
// between two writes to an entry parse its tags once. A reading stands while the entry's tags
// are the ones it was made from; those of entries a sync does not meet are swept at its end.
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

// merges keeps the registry's merge of each hostname with what it was made from. The rules:
//   - a merge is handed back while its hostname's claims (the same endpoints, in the same
//     order) and owned entries (the same ID, version, address and tags) are those it was made
//     from; a merge that turned claims down is never kept, so that every sync reports them;
//     merges of hostnames a sync no longer meets are swept;
//   - a hostname is settled, left out of the plan, when a sync planning from the known state
//     reused its merge, none of its entries is marked, no other cluster's entry or adoption
//     candidate shares it, and neither the last sync's plan nor this one's changed it: the
//     plan, being pure, would find nothing again.
type merges struct {
	byHost map[string]*kept
	pass   uint64
	// noisy are the hostnames the last sync's plan changed; planned those this sync's plan
	// changed so far (a sync may plan twice).
	noisy, planned map[string]bool
}

type kept struct {
	claims []*endpoint.Endpoint
	owned  []entryKey
	out    *endpoint.Endpoint
	marked bool
	pass   uint64 // the last sync that met it
}

// entryKey is what of an entry a merge depends on.
type entryKey struct {
	id, version, ip string
	tags            []string
}

// wrote takes what became of a sync's writes: results[i] is what became of sent[i].
func (m *Memory) wrote(sent []plan.Change, results []plan.Result) {
	m.witness.wrote(sent, results)
	m.beats.wrote(sent, results)
}

// end closes a sync: what it planned is the next sync's noise, and what it did not meet is
// forgotten.
func (m *Memory) end() {
	m.merges.noisy, m.merges.planned = m.merges.planned, nil
	maps.DeleteFunc(m.merges.byHost, func(_ string, k *kept) bool { return k.pass != m.merges.pass })
	maps.DeleteFunc(m.parses.byID, func(_ string, p *parsedTags) bool { return p.pass != m.parses.pass })
}

// knownBeat is the newest heartbeat of this installation the memory holds, after taking
// the one the read st found, and when this process made its first decision (at now, if this
// is it).
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

// begin starts one decision at now of records (a sync may decide twice): a memory of another
// registry or of settings since changed starts afresh, the first decision of a sync closes the
// last, and a whole read is observed.
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

// parser is the memory's reading of entries' tags, or r's own without a memory.
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

func (m *Memory) mergeSource() mergeSource {
	if m == nil {
		return nil
	}
	return &m.merges
}

// othersBeats are the other installations' newest heartbeats: st's, merged with those this
// process read before. A heartbeat once read proves life until it is overdue, even if a person
// or a twin deletes the entry that carried it before its installation renews it elsewhere.
// Installations a whole read finds no entry of are forgotten.
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

// learn takes what one decision saw: the former identities its read proved this cluster's (the
// proof outlives the entries that gave it), the merges its claim stages made afresh or found no
// longer hold, and the changes its plan made (on a whole read, the entries they do not delete
// are wanted here).
func (m *Memory) learn(st *State, w *Wanted, changes []plan.Change, read Read) {
	if m == nil {
		return
	}
	if m.witness.seen != nil && len(st.Former) > 0 {
		if m.witness.proven == nil {
			m.witness.proven = map[string]bool{}
		}
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
	}
}

// settled are the hostnames of w the plan need not look at (merges), none unless the sync
// plans from the known state.
func (m *Memory) settled(w *Wanted, st *State, read Read) map[string]bool {
	if m == nil || !read.Partial {
		return nil
	}
	var out map[string]bool
	for _, h := range w.reused {
		if k := m.merges.byHost[h]; k == nil || k.marked || m.merges.noisy[h] || m.merges.planned[h] || len(st.Unowned[h]) > 0 || len(st.Foreign[h]) > 0 {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[h] = true
	}
	return out
}

// parse is the parser: the entry's parsed tags, from the memory while they hold.
func (v *parses) parse(rec *endpoint.Record) *Parsed {
	if v.byID == nil {
		v.byID = map[string]*parsedTags{}
	}
	p := v.byID[rec.ID]
	if p == nil || !slices.Equal(p.tags, rec.Tags) {
		p = &parsedTags{tags: rec.Tags, parsed: v.reg.parse(rec)}
		v.byID[rec.ID] = p
	}
	// The entry's own slice from now on: after a whole read every entry's tags are new
	// strings, and comparing the same strings again is a pointer check, not their bytes.
	p.tags, p.pass = rec.Tags, v.pass
	return p.parsed
}

// Merged is the mergeSource desired reads. A merge handed back is this sync's: it is not swept,
// and its entries' own tag slices are kept from now on, as parses keeps them.
func (m *merges) Merged(host string, claims []*endpoint.Endpoint, owned []*endpoint.Record) (*endpoint.Endpoint, bool) {
	k := m.byHost[host]
	if k == nil || !slices.Equal(k.claims, claims) || len(k.owned) != len(owned) || slices.ContainsFunc(owned, func(rec *endpoint.Record) bool {
		return !slices.ContainsFunc(k.owned, func(o entryKey) bool {
			return o.id == rec.ID && o.version == rec.Version && o.ip == rec.IP && slices.Equal(o.tags, rec.Tags)
		})
	}) {
		return nil, false
	}
	k.pass, k.owned = m.pass, keysOf(k.owned[:0], owned)
	return k.out, true
}

func keysOf(keys []entryKey, owned []*endpoint.Record) []entryKey {
	for _, rec := range owned {
		keys = append(keys, entryKey{rec.ID, rec.Version, rec.IP, rec.Tags})
	}
	return keys
}
