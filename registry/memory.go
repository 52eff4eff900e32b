package registry

import (
	"maps"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Memory is what the registry keeps of its work from one decision to the next: the entries'
// parsed tags (memo_parses.go), the merges and the hostnames settled (memo_merges.go), and what
// this process saw and wrote of its entries, from which twins are found (memo_witness.go),
// each with its rule beside it. Decide reads and updates it; the caller, who keeps it between
// syncs, tells it what only the caller sees: each whole read (Observe), the writes (Record), the
// end of a sync (End) and a reconfiguration (Reset). It is not safe for concurrent use.
type Memory struct {
	parses  parses
	merges  merges
	witness witness
	beats   beatMemo
}

// NewMemory returns an empty memory for r's decisions.
func (r *Registry) NewMemory() *Memory {
	return &Memory{parses: parses{reg: r}}
}

// Observe takes a whole read of the server at now.
func (m *Memory) Observe(records []endpoint.Record, now time.Time) {
	m.witness.observe(records, &m.parses, now)
}

// wrote takes what became of a sync's writes: results[i] is what became of sent[i].
func (m *Memory) wrote(sent []plan.Change, results []plan.Result) {
	m.witness.wrote(sent, results)
	m.beats.wrote(sent, results)
}

// End closes a sync: what it did not meet is forgotten.
func (m *Memory) End() {
	m.merges.end()
	m.parses.sweep()
}

// Reset forgets everything: the registry's settings changed.
func (m *Memory) Reset() {
	m.parses.reset()
	m.merges.reset()
	m.witness.reset()
	m.beats = beatMemo{}
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

// begin starts one decision (a sync may decide twice).
func (m *Memory) begin() {
	if m != nil {
		m.parses.begin()
		m.merges.begin()
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
		return noWitness{}
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
	seen := make(map[string]beatSeen, len(st.beats.others))
	if read.Partial {
		maps.Copy(seen, m.beats.others)
	}
	for key, s := range st.beats.others {
		c := *s
		if old, ok := m.beats.others[key]; ok && old.newest > c.newest {
			c.newest, c.settings = old.newest, old.settings
		}
		seen[key] = c
	}
	m.beats.others = seen
	out := make(map[string]*beatSeen, len(seen))
	for key := range seen {
		s := seen[key]
		out[key] = &s
	}
	return out
}

// learn takes what one decision saw: the former identities its read proved this cluster's (the
// proof stands after their entries that gave it are taken up), the merges its claim stages
// made or found no longer hold, and the changes its plan made (on a whole read, the entries
// they do not delete are wanted here).
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
	m.merges.Keep(w.Merges)
	m.merges.changed(changes)
	if !read.Partial {
		m.witness.kept(changes)
	}
}

// settled are the hostnames of w the plan need not look at (merges.settled), none unless the
// sync plans from the known state.
func (m *Memory) settled(w *Wanted, st *State, read Read) map[string]bool {
	if m == nil || !read.Partial {
		return nil
	}
	return m.merges.settled(w.reused, st)
}
