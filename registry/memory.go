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
	life    lifeMemo
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
	m.life.wrote(sent, results)
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
	m.life = lifeMemo{}
}

// knownMark is the newest mark of life of this installation the memory holds, after taking
// the one the read st found, and when this process made its first decision (at now, if this
// is it).
func (m *Memory) knownMark(st *State, now time.Time) (known, began string) {
	if m == nil {
		return "", ""
	}
	if m.life.began == "" {
		m.life.began = now.UTC().Format(time.RFC3339)
	}
	m.life.saw(st.Life.newest)
	m.life.saw(st.Life.leaving)
	if m.life.knew {
		return m.life.newest, ""
	}
	return m.life.newest, m.life.began
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

// kept is told the changes one decision's plan made, before the change stages: on a whole
// read, the entries they do not delete are wanted here.
func (m *Memory) kept(changes []plan.Change, read Read) {
	if m != nil && !read.Partial {
		m.witness.kept(changes)
	}
}

// othersRead merges the marks of life of the other installations this process read before
// into st's: a mark once read proves life until it is overdue, even if a person or a twin
// deletes the entry that carried it before its installation renews it elsewhere. Installations
// a whole read finds no entry of are forgotten.
func (m *Memory) othersRead(st *State, read Read) {
	if m == nil {
		return
	}
	seen := make(map[string]lifeSeen, len(st.Life.others))
	if read.Partial {
		maps.Copy(seen, m.life.others)
	}
	for key, s := range st.Life.others {
		if old, ok := m.life.others[key]; ok && old.newest > s.newest {
			s.newest, s.settings = old.newest, old.settings
		}
		seen[key] = *s
	}
	m.life.others = seen
}

// proved is told the former identities one read proved this cluster's: the proof stands after
// their entries that gave it are taken up.
func (m *Memory) proved(former []Namesake) {
	if m == nil || m.witness.seen == nil {
		return
	}
	if m.witness.proven == nil {
		m.witness.proven = map[string]bool{}
	}
	for _, f := range former {
		m.witness.proven[f.ID] = true
	}
}

// planned is told the changes one decision's plan made.
func (m *Memory) planned(changes []plan.Change) {
	if m != nil {
		m.merges.changed(changes)
	}
}
