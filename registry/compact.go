package registry

import (
	"cmp"
	"maps"
	"slices"
	"strconv"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Compaction of this installation's share of the server's log (docs/ownership.md,
// "Compaction"): the server keeps every event of every entry and replays them on every call.
const (
	// DefaultCompactAbove is the events an entry of its own gathers before its log is folded,
	// unless Config.CompactAbove says otherwise: a hundred events take a router a few
	// milliseconds to replay, and an entry rewritten once a day gets there in three months.
	DefaultCompactAbove = 100
	// compactPerSync bounds the compactions one sync names, so that a backlog (the switch
	// turned on under a year of history) is folded over several intervals.
	compactPerSync = 10
	// goneRemembered bounds the deleted entries the memory keeps until they are compacted: a
	// server that never compacts must not grow the memory; one more delete is left long.
	goneRemembered = 1000
)

// Compacted is what became of one compaction a decision named (Verdict.Compact), for Record:
// the server's events of the entry before and after, and the version it answered, which
// compaction keeps; Err when it was not compacted.
type Compacted struct {
	ID                        string
	EventsBefore, EventsAfter int64
	Version                   int64
	Err                       error
}

// folds is what the memory keeps for compaction: the version each entry of this installation
// was last compacted at (its events since are its version less that, plus the one seed), and
// the entries this process deleted, until a whole read no longer shows them and they are
// compacted. A process that starts knows neither: an entry's version is its count until it
// is compacted once (a compaction of an entry already compacted answers events_before 1).
type folds struct {
	at   map[string]int64
	gone map[string]goneEntry
}

// goneEntry is an entry this process deleted: its events (its tombstone's version, less the
// version it was compacted at) and the write-rate budgets a compaction of it is charged to.
type goneEntry struct {
	events int64
	keys   [2]string
}

// events is the entry id's event count at version, as far as the memory knows.
func (f *folds) events(id string, version int64) int64 {
	if f != nil {
		if base, ok := f.at[id]; ok && base <= version {
			return version - base + 1
		}
	}
	return version
}

// versionOf reads an entry's version, the server's count of its events; 0 when unreadable.
func versionOf(rec *endpoint.Record) int64 {
	n, err := strconv.ParseInt(rec.Version, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// budgetKeys are the write-rate allowances a write of rec alone is charged to (turnOf's).
func budgetKeys(rec *endpoint.Record) [2]string {
	v := viewOf(rec)
	ns, _ := v.value(PrefixNamespace)
	obj, _ := v.value(PrefixSource)
	return [2]string{"object/" + obj, "namespace/" + ns}
}

// sole reports whether rec, an entry of st, is this installation's alone, whose log nobody
// else has a stake in: written under its name and identity (not an earlier version's, a
// former identity's or a namesake's, nor by name alone, which a namesake shares), not adopted
// (its history is the person's), not shared nor carrying another cluster's co-owner tag, and
// not rewritten by another writer of its identity (a twin's strike).
func (r *Registry) sole(st *State, rec *endpoint.Record) bool {
	if r.cfg.ClusterID == "" {
		return false
	}
	p := st.parser.parse(rec)
	return p.class == endpoint.OwnerThis && !p.v.has(TagPreExisting) && !p.v.has(TagShared) &&
		len(r.coOwners(&p.v)) == 0 && st.witness.Strikes(rec.ID) == 0
}

// compactAbove is the events past which an entry of its own is compacted.
func (r *Registry) compactAbove() int64 {
	if r.cfg.CompactAbove > 0 {
		return int64(r.cfg.CompactAbove)
	}
	return DefaultCompactAbove
}

// compact holds nothing: it names the entries whose logs the sync folds once its writes went
// through (Verdict.Compact), with --compact-own-entries, after a whole read: this
// installation's alone (sole), not marked, not written by this sync, past compactAbove events;
// and those it deleted that the read no longer shows. Each is one write of its object's and
// namespace's write-rate budgets, taken only from allowances nothing drew on lately (whole)
// and no change of this sync draws on; the largest first, compactPerSync at most, within what
// the writes per sync leave. It counts the largest own entry's events, switched on or not.
func (r *Registry) compact(in *changesIn, changes []plan.Change) changed {
	v := changed{changes: changes}
	above := r.compactAbove()
	on := r.cfg.CompactOwnEntries && !in.read.Partial
	room := compactPerSync
	if limit := r.cfg.Budgets.WritesPerSync; limit > 0 {
		room = min(room, limit-len(changes))
	}
	touched := map[string]bool{}
	drawn := map[string]bool{}
	for i := range changes {
		if c := &changes[i]; c.Old != nil {
			touched[c.Old.ID] = true
		}
		ns, obj := turnOf(&changes[i])
		drawn["object/"+obj], drawn["namespace/"+ns] = true, true
	}
	spare := func(keys [2]string) bool {
		for _, key := range keys {
			b := r.perMinute(key)
			if b == 0 {
				continue
			}
			if a, ok := in.rates[key]; drawn[key] || ok && a.Tokens+in.now.Sub(a.At).Minutes()*b < a.Cap {
				return false
			}
		}
		return true
	}
	type candidate struct {
		id     string
		events int64
		keys   [2]string
	}
	var cands []candidate
	consider := func(rec *endpoint.Record, events int64) {
		if !on || events <= above || touched[rec.ID] {
			return // before the tags are read: most entries are not candidates
		}
		if keys := budgetKeys(rec); spare(keys) {
			cands = append(cands, candidate{rec.ID, events, keys})
		}
	}
	for i := range in.st.Owned {
		rec := &in.st.Owned[i]
		events := in.folds.events(rec.ID, versionOf(rec))
		if events <= v.ownEvents && (!on || events <= above) && mutation != "compact-foreign" {
			continue // neither the largest yet nor a candidate: its tags need not be read
		}
		if !r.sole(in.st, rec) {
			if mutation == "compact-foreign" {
				consider(rec, versionOf(rec))
			}
			continue
		}
		v.ownEvents = max(v.ownEvents, events)
		if !in.st.marked(rec) {
			consider(rec, events)
		}
	}
	if mutation == "compact-foreign" {
		for _, m := range []map[string][]endpoint.Record{in.st.Foreign, in.st.Unowned} {
			for _, h := range slices.Sorted(maps.Keys(m)) {
				for i := range m[h] {
					consider(&m[h][i], versionOf(&m[h][i]))
				}
			}
		}
	}
	if on && in.folds != nil && len(in.folds.gone) > 0 {
		shown := in.st.ids()
		for id, g := range in.folds.gone {
			if !shown[id] && spare(g.keys) {
				cands = append(cands, candidate{id, g.events, g.keys})
			}
		}
	}
	slices.SortFunc(cands, func(a, b candidate) int { return cmp.Or(cmp.Compare(b.events, a.events), cmp.Compare(a.id, b.id)) })
	for _, c := range cands[:max(0, min(room, len(cands)))] {
		v.compact = append(v.compact, c.id)
		if v.compactKeys == nil {
			v.compactKeys = map[string][2]string{}
		}
		v.compactKeys[c.id] = c.keys
	}
	return v
}

// ids are the IDs of every entry of the read.
func (s *State) ids() map[string]bool {
	out := make(map[string]bool, len(s.Owned)+len(s.Foreign)+len(s.Unowned))
	for i := range s.Owned {
		out[s.Owned[i].ID] = true
	}
	for _, m := range []map[string][]endpoint.Record{s.Foreign, s.Unowned} {
		for _, recs := range m {
			for i := range recs {
				out[recs[i].ID] = true
			}
		}
	}
	return out
}

// folded takes what became of a decision's writes and compactions: an entry of its own this
// process deleted is remembered until it is compacted; a compaction's answer is the version
// the entry's count starts again from.
func (m *Memory) folded(r *Registry, d *Decision, results []plan.Result, compacted []Compacted) {
	if !r.cfg.CompactOwnEntries {
		return
	}
	f := &m.folds
	for i := range results {
		c := &d.Changes[i]
		if results[i].Err != nil || c.Action != plan.Delete || c.Old == nil || !r.sole(d.State, c.Old) {
			continue
		}
		if f.gone == nil {
			f.gone = map[string]goneEntry{}
		}
		if len(f.gone) < goneRemembered {
			f.gone[c.Old.ID] = goneEntry{events: f.events(c.Old.ID, versionOf(c.Old)+1), keys: budgetKeys(c.Old)}
		}
		delete(f.at, c.Old.ID)
	}
	for _, c := range compacted {
		if c.Err != nil {
			continue
		}
		if _, ok := f.gone[c.ID]; ok {
			delete(f.gone, c.ID)
			continue
		}
		if f.at == nil {
			f.at = map[string]int64{}
		}
		f.at[c.ID] = c.Version
	}
}

// sweep forgets, on a whole read, the compactions of entries it no longer shows.
func (f *folds) sweep(st *State) {
	if len(f.at) == 0 {
		return
	}
	owned := make(map[string]bool, len(st.Owned))
	for i := range st.Owned {
		owned[st.Owned[i].ID] = true
	}
	maps.DeleteFunc(f.at, func(id string, _ int64) bool { return !owned[id] })
}
