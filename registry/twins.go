package registry

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Twins, two writers of one identity, undo each other's writes (docs/ownership.md, "Twins").
const (
	contestedAt  = 2                // strikes that make an entry contested: only an unmark goes to it
	strikeMemory = 30 * time.Minute // how long a strike counts: a twin's recur, a person's seldom
	markReads    = 3                // whole reads a mark not vouched for waits: a twin lifts it first
)

// Contested reports whether an entry with this many strikes is contested.
func Contested(strikes int) bool { return strikes >= contestedAt }

// Twin is another writer of this installation's identity, as the sync found it.
type Twin struct {
	Disputed  int    // the contested entries this sync would have written
	ClusterID string // the identity both write
}

// Message is what the user is told, with the fix and no count, so it is said once per fight.
func (t *Twin) Message() string {
	return fmt.Sprintf("another writer undoes this installation's writes to entries of its identity cluster-id %s, "+
		"which it holds without writing them: a copy of this cluster (restored from an etcd backup, a cloned VM), a second "+
		"installation on the same Lease, or a script runs with the same identity; the entries it contests are left as they are meanwhile. "+
		"Pin --cluster-id (chart: clusterId) to an identity of its own on one of them; renaming the cluster does not help",
		t.ClusterID)
}

// twins holds the writes to contested entries but a mark lifted; nothing else is held.
func (r *Registry) twins(in *changesIn, changes []plan.Change) changed {
	contested := func(c *plan.Change) bool {
		return c.Old != nil && c.Action != plan.Unmark && Contested(in.st.witness.Strikes(c.Old.ID))
	}
	if !slices.ContainsFunc(changes, func(c plan.Change) bool { return contested(&c) }) {
		return changed{changes: changes}
	}
	out := changed{changes: make([]plan.Change, 0, len(changes)), twin: &Twin{ClusterID: r.cfg.ClusterID}}
	for _, c := range changes {
		switch {
		case contested(&c):
			out.twin.Disputed++
			out.held = append(out.held, Held{Change: c, Reason: ReasonTwinInstallation, Contested: true})
		case mutation == "cluster-freeze" && (c.Action == plan.Mark || retiring(&c) || beatOnly(&c)):
			out.held = append(out.held, Held{Change: c, Reason: ReasonTwinInstallation})
		default:
			out.changes = append(out.changes, c)
		}
	}
	return out
}

// writers is what this process saw other writers do on the router (witness).
type writers interface {
	Strikes(id string) int
	Alive(identity string) bool
	Waits(id string) bool
	Quiet(identity string, fallback time.Duration) bool
	Proven(identity string) bool
}

// witness is what this process saw and wrote of the entries of its identity or name, by ID: on
// a whole read, a version moved without its write is a namesake alive, or may be a twin's strike.
type witness struct {
	seen    map[string]*seenEntry
	alive   map[string]bool
	since   map[string]time.Time     // when a whole read first saw each other identity (Quiet)
	period  map[string]time.Duration // the longest beatPeriodOf its entries
	now     time.Time                // of the last whole read
	proven  map[string]bool          // former identities of this cluster (Proven)
	doubted map[string]*seenEntry    // neither written nor kept by a whole read's plan
	read    bool                     // a whole read was taken
	pass    uint64
}

// seenEntry is one entry as last seen: ours, the version is this process's write; foreign, when
// another writer last wrote it; markPass, the whole read that first saw its mark (or its write).
type seenEntry struct {
	version               string
	ours, marked, vouched bool
	sig                   uint64
	strikes               int
	struck, foreign       time.Time
	pass, markPass        uint64
}

// observe takes a whole read, at now, its entries' tags parsed by parse.
func (w *witness) observe(records []endpoint.Record, parse tagParser, now time.Time) {
	if w.seen == nil {
		w.seen, w.alive, w.doubted = map[string]*seenEntry{}, map[string]bool{}, map[string]*seenEntry{}
		w.since, w.period, w.proven = map[string]time.Time{}, map[string]time.Duration{}, map[string]bool{}
	}
	w.pass, w.now = w.pass+1, now
	for i := range records {
		rec := &records[i]
		p := parse.parse(rec)
		ns := ""
		if p.class == endpoint.OwnerNamesake {
			ns, _ = p.v.clusterID()
			if _, ok := w.since[ns]; !ok {
				w.since[ns] = now
			}
			w.period[ns] = max(w.period[ns], beatPeriodOf(&p.v))
		} else if p.class != endpoint.OwnerThis {
			continue
		}
		e := w.seen[rec.ID]
		if e == nil {
			e = &seenEntry{sig: othersBlind(rec), vouched: ns != ""} // a namesake's is never ours to mark
			w.seen[rec.ID] = e
			if ns == "" {
				w.doubted[rec.ID] = e
			}
			if w.read && ns != "" {
				w.alive[ns] = true // a new entry of another identity: something writes it
			} else if w.read {
				e.foreign = now // created since the last whole read, not by this process
			}
		}
		if e.strikes > 0 && now.Sub(e.struck) > strikeMemory {
			e.strikes = 0
		}
		if e.version != rec.Version && e.version != "" && w.read {
			sig := othersBlind(rec)
			same := sig == e.sig
			e.sig = sig
			switch {
			case ns != "":
				w.alive[ns] = true
			case !same:
				// Any rewrite keeps a dispute alive; one of others' tags alone (same) is nothing.
				if e.ours || p.Marked() != e.marked {
					e.strikes, e.struck = e.strikes+1, now
				} else if Contested(e.strikes) {
					e.struck = now
				}
				e.foreign = now
			}
			e.ours = e.ours && same
		}
		if marked := p.Marked(); marked && (!e.marked || e.markPass == 0) {
			e.markPass = w.pass
		}
		e.version, e.marked, e.pass = rec.Version, p.Marked(), w.pass
	}
	for id, e := range w.seen {
		if e.pass != w.pass {
			delete(w.seen, id)
			delete(w.doubted, id)
		}
	}
	w.read = true
}

// wrote takes this process's writes (results[i]: sent[i]'s); all but a mark or release vouch.
func (w *witness) wrote(sent []plan.Change, results []plan.Result) {
	for i := range results {
		r := &results[i]
		switch {
		case r.Err != nil || w.seen == nil:
		case sent[i].New == nil:
			delete(w.seen, sent[i].Old.ID)
			delete(w.doubted, sent[i].Old.ID)
		case r.Stored != nil && r.Stored.ID != "":
			e := w.seen[r.Stored.ID]
			if e == nil {
				e = &seenEntry{pass: w.pass, vouched: true}
				w.seen[r.Stored.ID] = e
			}
			switch sent[i].Action {
			case plan.Create, plan.Adopt, plan.Update, plan.Unmark:
				e.vouched = true
				delete(w.doubted, r.Stored.ID)
			}
			marked := Marked(r.Stored)
			if marked && !e.marked {
				e.markPass = w.pass
			}
			e.version, e.ours, e.marked, e.sig = r.Stored.Version, true, marked, othersBlind(r.Stored)
		}
	}
}

// kept vouches for each doubted entry a whole read's planned changes do not delete.
func (w *witness) kept(planned []plan.Change) {
	if len(w.doubted) == 0 {
		return
	}
	deleting := map[string]bool{}
	for i := range planned {
		if c := &planned[i]; c.Action == plan.Delete && c.Old != nil {
			deleting[c.Old.ID] = true
		}
	}
	for id, e := range w.doubted {
		if !deleting[id] {
			e.vouched = true
			delete(w.doubted, id)
		}
	}
}

// Waits is writers: whether a mark on the entry id still waits for a twin (markReads).
func (w *witness) Waits(id string) bool {
	e := w.doubted[id]
	if e == nil {
		return false
	}
	atWork := !e.foreign.IsZero() && w.now.Sub(e.foreign) < strikeMemory && mutation != "twin-away-forgotten"
	return !e.marked || w.pass-e.markPass < markReads || atWork
}

// Strikes is writers: the strikes against the entry id.
func (w *witness) Strikes(id string) int {
	if e := w.seen[id]; e != nil {
		return e.strikes
	}
	return 0
}

// Alive is writers: whether another installation was seen writing entries with identity.
func (w *witness) Alive(identity string) bool { return w.alive[identity] }

// Proven is writers: whether identity was proven a former one of this cluster and is not alive.
func (w *witness) Proven(identity string) bool { return w.proven[identity] && !w.alive[identity] }

// Quiet is writers: whether whole reads saw identity, never writing, for longer than its
// heartbeats' period (fallback without one): a running installation would have renewed one.
func (w *witness) Quiet(identity string, fallback time.Duration) bool {
	since, ok := w.since[identity]
	if !ok || w.alive[identity] {
		return false
	}
	period := cmp.Or(w.period[identity], fallback)
	return period > 0 && w.now.Sub(since) > period
}

// othersBlind hashes an entry but for the co-owner and probe tags, whose rewrite is no twin's.
func othersBlind(rec *endpoint.Record) uint64 {
	h := fnv.New64a()
	for _, part := range [...]string{rec.IP, rec.Hostname, rec.Comment} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	for _, a := range rec.Aliases {
		h.Write([]byte(a))
		h.Write([]byte{1})
	}
	for _, t := range rec.Tags {
		if !strings.HasPrefix(t, PrefixCoOwner) && !strings.HasPrefix(t, PrefixReleaseProbe) {
			h.Write([]byte(t))
			h.Write([]byte{2})
		}
	}
	return h.Sum64()
}
