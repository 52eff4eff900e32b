package model

import (
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// person is the party name of the person editing the router by hand.
const person = "person"

// life is what the simulation knows of one entry beyond what the router says: who made it,
// who wrote it last, and what the person wrote on it.
type life struct {
	// creator is the key of the cluster whose installation made the entry (or was handed its
	// line), or person.
	creator string
	// lastWriter is the party that wrote it last.
	lastWriter string
	// userTags and comment are what the person wrote, on an entry the person made: the
	// operator's block aside, the entry must carry exactly these.
	userTags []string
	comment  *string
	// ip and hostname are the person's, on an entry the person made: a loan given back
	// returns them.
	ip, hostname string
	// unwanted is when the entry was first seen unwanted by its writer's cluster, while its
	// writer was the last to write it; zero while it is wanted.
	unwanted time.Time
	// otherWrote is when a party other than its creator's installation last wrote it;
	// creatorWrote when its creator's installation did.
	otherWrote, creatorWrote time.Time
	// pastDue counts its writer's syncs, an interval apart, since its grace period ended;
	// pastDueAt is when the last was counted.
	pastDue   int
	pastDueAt time.Time
	// last is the entry as the router last showed it: a deleted one's, before the deletion.
	last *pb.HostEntry
}

// write is one write a step made, as the router's state before and after shows it: a create
// (before nil), an update, or a delete (after nil).
type write struct {
	id            string
	before, after *pb.HostEntry
}

// history is what the invariants remember of the router's past.
type history struct {
	life map[string]*life
	// writes are the times of the writes each installation made for each object, by
	// "<installation>/<uid>".
	writes map[string][]time.Time
}

func newHistory() history {
	return history{life: map[string]*life{}, writes: map[string][]time.Time{}}
}

// diff is every write between two states of the router, in ID order.
func diff(before, after map[string]*pb.HostEntry) []write {
	var out []write
	for _, id := range sortedIDs(before) {
		if a, ok := after[id]; !ok {
			out = append(out, write{id: id, before: before[id]})
		} else if !proto.Equal(a, before[id]) {
			out = append(out, write{id: id, before: before[id], after: a})
		}
	}
	for _, id := range sortedIDs(after) {
		if _, ok := before[id]; !ok {
			out = append(out, write{id: id, after: after[id]})
		}
	}
	return out
}

// sources are the objects an entry's source: tags name.
func sources(e *pb.HostEntry) []string {
	var out []string
	for _, t := range e.GetTags() {
		if v, ok := strings.CutPrefix(t, registry.PrefixSource); ok {
			out = append(out, v)
		}
	}
	return out
}

// userTags are the tags of an entry outside the operator's block: on an adopted entry the
// block opens with pre-existing:true and is closed by the loan record's original-ip: tag
// (docs/ownership.md, "Adoption is a loan"); on any other entry the person made, every tag.
func userTags(e *pb.HostEntry) []string {
	tags := e.GetTags()
	open := slices.Index(tags, registry.TagPreExisting)
	if open < 0 {
		return slices.Clone(tags)
	}
	for j := open + 1; j < len(tags); j++ {
		if strings.HasPrefix(tags[j], registry.PrefixOriginalIP) {
			return append(slices.Clone(tags[:open]), tags[j+1:]...)
		}
	}
	return slices.Clone(tags[:open])
}

// causes are the objects a write is for: those whose source: tag it adds or takes off, or,
// when it changes none, every object the entry names.
func causes(wr write) []string {
	before, after := sources(wr.before), sources(wr.after)
	var changed []string
	for _, u := range before {
		if !slices.Contains(after, u) {
			changed = append(changed, u)
		}
	}
	for _, u := range after {
		if !slices.Contains(before, u) {
			changed = append(changed, u)
		}
	}
	if len(changed) == 0 {
		changed = append(before, after...)
	}
	return slices.Compact(slices.Sorted(slices.Values(changed)))
}

// record keeps what a step's writes by party teach: a create names its creator; a line whose
// tags pass from one cluster to another (a hand-over) is the receiver's from then on.
func (w *World) record(party string, ws []write) {
	for _, wr := range ws {
		if wr.after != nil {
			// A write under a former identity says that identity runs somewhere.
			id := tagValue(&pb.HostEntry{Tags: operatorTags(wr.after)}, registry.PrefixClusterID)
			for _, in := range w.insts {
				if id != in.id && slices.Contains(in.ids, id) {
					in.heard[id] = true
				}
			}
		}
		switch {
		case wr.after == nil:
			// Kept: the invariants judge the deletion after this.
			continue
		case wr.before == nil:
			l := &life{creator: person}
			if in := w.installation(party); in != nil {
				l.creator = in.cluster.key
			} else {
				l.userTags, l.ip, l.hostname = slices.Clone(wr.after.GetTags()), wr.after.GetIpAddress(), wr.after.GetHostname()
				if wr.after.Comment != nil {
					l.comment = proto.String(wr.after.GetComment())
				}
			}
			w.history.life[wr.id] = l
		}
		l := w.history.life[wr.id]
		l.last = wr.after
		// A mark another writer put on, lifted, is not the object's doing (O5).
		lifted := wr.before != nil && tagValue(wr.before, registry.PrefixPending) != "" && tagValue(wr.after, registry.PrefixPending) == "" && l.lastWriter != party
		l.lastWriter = party
		if in := w.installation(party); in == nil || in.cluster.key != l.creator {
			l.otherWrote = w.clock.Now()
		} else {
			l.creatorWrote = w.clock.Now()
		}
		if party == person && l.creator == person {
			// While on loan, the address and hostname the person gave are in the loan record:
			// a change of them is the operator's to correct.
			if !slices.Contains(wr.after.GetTags(), registry.TagPreExisting) {
				l.ip, l.hostname = wr.after.GetIpAddress(), wr.after.GetHostname()
			}
			l.userTags = userTags(wr.after)
			if wr.after.Comment != nil {
				l.comment = proto.String(wr.after.GetComment())
			}
		}
		if wr.before != nil && l.creator != person {
			if to := w.owner(wr.after); to != nil && to.cluster.key != l.creator && w.owner(wr.before) != to {
				l.creator = to.cluster.key
			}
		}
		if in := w.installation(party); in != nil && !lifted {
			now := w.clock.Now()
			for _, uid := range causes(wr) {
				k := in.name + "/" + uid
				w.history.writes[k] = append(w.history.writes[k], now)
			}
		}
	}
}
