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

// Twins: two writers with one identity (a cluster restored from an etcd backup and its
// original, a cloned VM, two releases on one Lease) each take the other's entries for their
// own and undo each other's writes every interval. Nothing on the router tells them apart, so
// each process keeps what it saw and wrote of its entries (witness), and a rewrite by another
// writer of what this process wrote, or one that lifts or puts a mark, is a strike:
//   - an entry with contestedAt strikes is contested: no update, mark, deletion or release
//     goes to it, but a mark lifted still does (that keeps a name). It holds nothing else, and
//     only while the rewrites go on (strikeMemory);
//   - a mark on an entry this process neither wrote nor saw wanted waits markReads whole reads
//     beyond its grace period, so that a twin that wants it lifts it first;
//   - a person's one-off hand edit is one strike: corrected, as ever.
// The fix is an identity of each one's own: --cluster-id pinned on one of them.

// contestedAt is the number of strikes that make an entry contested.
const contestedAt = 2

// strikeMemory is how long a strike counts towards a contest: a twin's strikes come at every
// interval of the other, a person's hand edits seldom.
const strikeMemory = 30 * time.Minute

// markReads is how many whole reads after its mark a mark on an entry this process does not
// vouch for waits: a twin that wants the entry, syncing as often, lifts it meanwhile. One that
// another writer of this identity created or rewrote while this process ran waits strikeMemory
// after that write too, so a twin away for a while comes back to its names.
const markReads = 3

// Contested reports whether an entry with this many strikes is contested.
func Contested(strikes int) bool { return strikes >= contestedAt }

// Twin is another writer of this installation's identity, as the sync found it.
type Twin struct {
	// Disputed is the number of contested entries this sync would have written.
	Disputed int
	// ClusterID is the identity both write.
	ClusterID string
}

// Message is what the user is told, with the fix. It names no count (the twin_entries metric
// does), so that it is said once while the fight lasts, not at each of its turns.
func (t *Twin) Message() string {
	return fmt.Sprintf("another writer undoes this installation's writes to entries of its identity cluster-id %s, "+
		"which it holds without writing them: a copy of this cluster (restored from an etcd backup, a cloned VM), a second "+
		"installation on the same Lease, or a script runs with the same identity; the entries it contests are left as they are meanwhile. "+
		"Pin --cluster-id (chart: clusterId) to an identity of its own on one of them; renaming the cluster does not help",
		t.ClusterID)
}

// twins holds the writes to contested entries, but a mark lifted: a contested entry holds
// only itself.
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

// witness is what this process saw and wrote of the entries of its identity or its cluster's
// name, by entry ID. On a whole read, a version that moved without this process writing it is
// another writer's: a namesake's shows its identity alive, and a rewrite of this identity's may
// be a strike. Entries a whole read no longer returns are swept; a new process or a
// reconfiguration starts empty, and before its first whole read nothing is another's.
type witness struct {
	seen  map[string]*seenEntry
	alive map[string]bool
	// since is when a whole read first saw each other identity, period the longest of
	// beatPeriodOf its entries (Quiet).
	since  map[string]time.Time
	period map[string]time.Duration
	now    time.Time // of the last whole read
	// proven are the identities a read proved this cluster's former ones (Proven).
	proven map[string]bool
	// doubted are the entries of this identity this process does not vouch for: it neither
	// wrote them nor saw a decision on a whole read keep them.
	doubted map[string]*seenEntry
	read    bool // a whole read was taken
	pass    uint64
}

type seenEntry struct {
	version               string
	ours, marked, vouched bool // ours: the version is this process's write
	sig                   uint64
	strikes               int
	struck                time.Time
	// foreign is when another writer was last seen creating or rewriting the entry.
	foreign time.Time
	// pass is the whole read that last saw the entry; markPass the one that first saw its
	// mark (or the pass of the write that put it on).
	pass, markPass uint64
}

// observe takes a whole read, at now, its entries' tags parsed by parse.
func (w *witness) observe(records []endpoint.Record, parse tagParser, now time.Time) {
	if w.seen == nil {
		w.seen, w.alive, w.doubted = map[string]*seenEntry{}, map[string]bool{}, map[string]*seenEntry{}
		w.since, w.period = map[string]time.Time{}, map[string]time.Duration{}
	}
	w.pass++
	w.now = now
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
		if e == nil && ns != "" && w.read {
			w.alive[ns] = true // a new entry of another identity: something writes it
		}
		if e == nil {
			// A namesake's entry is never this process's to mark: vouching for it is moot.
			e = &seenEntry{sig: othersBlind(rec), vouched: ns != ""}
			w.seen[rec.ID] = e
			if !e.vouched {
				w.doubted[rec.ID] = e
				if w.read {
					e.foreign = now // created since the last whole read, not by this process
				}
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
				// Any rewrite of a contested entry keeps the dispute alive; one that only puts on
				// others' tags (a probe, a co-owner tag) is nothing.
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

// wrote takes the results of this process's writes: results[i] is what became of sent[i]. A
// create, adoption or update (a mark lifted too) is the process vouching for the entry; a mark
// starts its count of whole reads.
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

// kept is told the changes a decision on a whole read planned: each entry it doubted that they
// do not delete is wanted here, and vouched for.
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

// Proven is writers: whether a read of this process proved identity one this cluster had
// before (one of its entries named an object here, and nothing was seen writing it).
func (w *witness) Proven(identity string) bool { return w.proven[identity] && !w.alive[identity] }

// Quiet is writers: whether this process's whole reads have seen identity, and never seen it
// write, for longer than the period its heartbeats carried (fallback when none did): a
// running installation of it would have renewed its mark meanwhile.
func (w *witness) Quiet(identity string, fallback time.Duration) bool {
	since, ok := w.since[identity]
	if !ok || w.alive[identity] {
		return false
	}
	period := cmp.Or(w.period[identity], fallback)
	return period > 0 && w.now.Sub(since) > period
}

// othersBlind hashes an entry but for the tags others put on it without taking it (another
// cluster's co-owner tags, the probe `release` puts on): a rewrite of those is no twin's.
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
