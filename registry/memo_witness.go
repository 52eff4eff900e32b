package registry

import (
	"hash/fnv"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// witness is what this process saw and wrote of the entries its identity or its cluster's name
// carries, by entry ID: the version it last saw and whether that was its own write. The rules:
// a whole read compares each such entry with what was seen; a version that moved without this
// process writing it is another writer's, whose identity is alive (a namesake's entry), or
// whose rewrite earns strikes (Strike) against an entry of this identity. A strike
// older than strikeMemory is forgotten, unless the entry is contested by then; the write
// results are seen as this process's own; entries a whole read no longer returns are swept;
// a reconfiguration forgets everything, as does a new process: before its first whole read
// nothing is another's.
type witness struct {
	seen  map[string]*seenEntry
	alive map[string]bool
	// read: a whole read was taken since the last reset.
	read bool
	pass uint64
}

type seenEntry struct {
	version      string
	ours, marked bool
	// sig is the entry as last seen but for co-owner tags (coOwnerBlind), which another
	// cluster writes on a line it wants too: such a rewrite is no twin's.
	sig     uint64
	strikes int
	struck  time.Time
	pass    uint64
}

// strikeMemory is how long a strike counts towards a contest: a twin's strikes come at every
// interval of the other, a person's hand edits seldom.
const strikeMemory = 30 * time.Minute

// observe takes a whole read, at now, its entries' tags parsed by parse.
func (w *witness) observe(records []endpoint.Record, parse tagParser, now time.Time) {
	if w.seen == nil {
		w.seen, w.alive = map[string]*seenEntry{}, map[string]bool{}
	}
	w.pass++
	for i := range records {
		rec := &records[i]
		p := parse.Parse(rec)
		ns := p.Namesake()
		if !p.Own() && ns == "" {
			continue
		}
		e := w.seen[rec.ID]
		if e == nil {
			e = &seenEntry{sig: coOwnerBlind(rec)}
			w.seen[rec.ID] = e
		} else if e.version != rec.Version && w.read {
			sig := coOwnerBlind(rec)
			coOwnersOnly := sig == e.sig
			e.sig = sig
			switch {
			case ns != "":
				w.alive[ns] = true
			case p.Own():
				if !Contested(e.strikes) && now.Sub(e.struck) > strikeMemory {
					e.strikes = 0
				}
				if n := Strike(e.marked, e.ours, p); n > 0 && !coOwnersOnly {
					e.strikes, e.struck = e.strikes+n, now
				}
			}
			e.ours = false
		}
		e.version, e.marked, e.pass = rec.Version, p.Marked(), w.pass
	}
	for id, e := range w.seen {
		if e.pass != w.pass {
			delete(w.seen, id)
		}
	}
	w.read = true
}

// wrote takes the results of this process's writes: results[i] is what became of sent[i].
func (w *witness) wrote(sent []plan.Change, results []plan.Result) {
	for i := range results {
		r := &results[i]
		switch {
		case r.Err != nil || w.seen == nil:
		case sent[i].New == nil:
			delete(w.seen, sent[i].Old.ID)
		case r.Stored != nil && r.Stored.ID != "":
			e := w.seen[r.Stored.ID]
			if e == nil {
				e = &seenEntry{pass: w.pass}
				w.seen[r.Stored.ID] = e
			}
			e.version, e.ours, e.marked, e.sig = r.Stored.Version, true, Marked(r.Stored), coOwnerBlind(r.Stored)
		}
	}
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

func (w *witness) reset() { *w = witness{} }

// coOwnerBlind hashes what an entry is but for its co-owner tags.
func coOwnerBlind(rec *endpoint.Record) uint64 {
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
		if !strings.HasPrefix(t, PrefixCoOwner) {
			h.Write([]byte(t))
			h.Write([]byte{2})
		}
	}
	return h.Sum64()
}
