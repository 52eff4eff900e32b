package registry

import (
	"hash/fnv"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// witness is what this process saw and wrote of the entries its identity or its cluster's name
// carries, by entry ID: the version it last saw, whether that was its own write, and whether it
// vouches for the entry (wrote it, or a decision on a whole read planned no deletion of it: an
// object here wants it). The rules: a whole read compares each such entry with what was seen;
// a version that moved without this process writing it is another writer's, whose identity is
// alive (a namesake's entry), or whose rewrite earns strikes (Strike) against an entry of this
// identity. Strikes older than strikeMemory are forgotten, a contest's too, but any rewrite of
// a contested entry renews them; the write results
// are seen as this process's own; entries a whole read no longer returns are swept; a
// reconfiguration forgets everything, as does a new process: before its first whole read
// nothing is another's.
type witness struct {
	seen  map[string]*seenEntry
	alive map[string]bool
	// since is when a whole read first saw each other identity, and period the longest
	// renewal period plus two intervals its heartbeats carried: an identity seen all that
	// long and never writing renews no mark, so no installation of it runs (Quiet).
	since  map[string]time.Time
	period map[string]time.Duration
	// now is the time of the last whole read.
	now time.Time
	// proven are the identities a read proved this cluster's former ones (Proven).
	proven map[string]bool
	// doubted are the entries of this identity this process does not vouch for.
	doubted map[string]*seenEntry
	// read: a whole read was taken since the last reset.
	read bool
	pass uint64
}

type seenEntry struct {
	version               string
	ours, marked, vouched bool
	// sig is the entry as last seen but for the tags others put on it without taking it
	// (othersBlind): such a rewrite is no twin's.
	sig     uint64
	strikes int
	struck  time.Time
	// foreign is when another writer was last seen creating or rewriting the entry.
	foreign time.Time
	// pass is the whole read that last saw the entry; markPass the one that first saw its
	// mark (or the pass of the write that put it on).
	pass, markPass uint64
}

// markReads is the number of whole reads after its mark that a mark on an entry this process
// does not vouch for waits: a twin that wants the entry, syncing as often, lifts it meanwhile.
// One that another writer of this identity created or rewrote while this process ran is a
// twin's at work: its mark waits strikeMemory after that write too, so a twin away for a while
// (a restart, an eviction) comes back to its names, and one that stopped leaves them.
const markReads = 3

// strikeMemory is how long a strike counts towards a contest: a twin's strikes come at every
// interval of the other, a person's hand edits seldom.
const strikeMemory = 30 * time.Minute

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
		ns := p.Namesake()
		if p.class != endpoint.OwnerThis && ns == "" {
			continue
		}
		if ns != "" {
			if _, ok := w.since[ns]; !ok {
				w.since[ns] = now
			}
			if d := beatPeriodOf(&p.v); d > w.period[ns] {
				w.period[ns] = d
			}
		}
		e := w.seen[rec.ID]
		if e == nil && ns != "" && w.read {
			// A new entry of another identity: something writes it.
			w.alive[ns] = true
		}
		if e == nil {
			// A namesake's entry is never this process's to mark: vouching for it is moot.
			e = &seenEntry{sig: othersBlind(rec), vouched: ns != ""}
			w.seen[rec.ID] = e
			if !e.vouched {
				w.doubted[rec.ID] = e
				if w.read {
					// Created since the last whole read, and not by this process.
					e.foreign = now
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
			case p.class == endpoint.OwnerThis:
				// Any rewrite of a contested entry keeps the dispute alive.
				if n := Strike(e.marked, e.ours, same, p); n > 0 || (Contested(e.strikes) && !same) {
					e.strikes, e.struck = e.strikes+n, now
				}
				if !same {
					e.foreign = now
				}
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
// write, for longer than the renewal period its heartbeats carried plus two of its
// intervals (fallback when none carried one): a running installation of it would have renewed
// its mark meanwhile.
func (w *witness) Quiet(identity string, fallback time.Duration) bool {
	since, ok := w.since[identity]
	if !ok || w.alive[identity] {
		return false
	}
	period := w.period[identity]
	if period == 0 {
		period = fallback
	}
	return period > 0 && w.now.Sub(since) > period
}

// beatPeriodOf is how long after its heartbeat on v an installation running writes again:
// the renewal period the mark carries plus two of its intervals; zero for an entry without one.
func beatPeriodOf(v *view) time.Duration {
	every, _ := v.value(PrefixAliveEvery)
	d := duration(every)
	if d == 0 {
		return 0
	}
	interval, _ := v.value(PrefixAliveInterval)
	return d + 2*duration(interval)
}

func (w *witness) reset() { *w = witness{} }

// othersBlind hashes what an entry is but for the tags others put on it without taking it: the
// co-owner tags another cluster writes on a line it wants too, and the probe `release` puts on
// to ask whether the operator runs.
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
