package registry

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Parsed is what the operator reads from one entry's tags: the view of its own block and
// whose the entry is, as far as its tags alone say.
type Parsed struct {
	v     view
	class endpoint.Owner
}

// parse reads rec's tags.
func (r *Registry) parse(rec *endpoint.Record) *Parsed {
	v := viewOf(rec)
	return &Parsed{v: v, class: r.classOf(&v)}
}

// Namesake is the identity of the other installation writing this cluster's name that wrote
// the entry, "" when it is not such an entry.
func (p *Parsed) Namesake() string {
	if p.class != endpoint.OwnerNamesake {
		return ""
	}
	id, _ := p.v.clusterID()
	return id
}

// Shared reports whether the operator wrote TagShared on the entry: its cluster's consent to
// share the hostname. On an adopted entry only the operator's block counts.
func (p *Parsed) Shared() bool { return p.v.has(TagShared) }

// Marked reports whether the entry carries a pending-deletion mark the operator wrote.
func (p *Parsed) Marked() bool {
	_, marked := p.v.value(PrefixPending)
	return marked
}

// tagParser parses entries' tags, from a cache of its own when an entry's tags are those it
// parsed before (the registry's own parse when there is none).
type tagParser interface {
	parse(rec *endpoint.Record) *Parsed
}

// State is the server's entries sorted by who owns them. classify makes it; every later step
// only reads it.
type State struct {
	// Owned entries carry k8s-operator and this installation's identity (or, written by an
	// earlier version, no identity and one of the claims' UIDs or this cluster's name), all
	// written by the operator.
	Owned []endpoint.Record
	// Foreign entries carry k8s-operator and another cluster's tag or another installation's
	// identity; they are never written. Keyed by lowercase hostname.
	Foreign map[string][]endpoint.Record
	// Namesakes are the other installations that write this cluster's name, by identity,
	// sorted. Unclaimed counts the entries an earlier version wrote under this cluster's name
	// that no object here wants while a namesake shows: they may be the namesake's, and are
	// left alone.
	Namesakes []Namesake
	Unclaimed int
	// Former are the identities this installation had before (the same cluster name, every
	// object their entries name lives here, and nothing seen writing them): their entries are
	// this cluster's, taken up in place, by identity, sorted.
	Former []Namesake
	// Unowned entries lack k8s-operator; they may only be adopted. Keyed by lowercase
	// hostname, because DNS names compare without case.
	Unowned map[string][]endpoint.Record
	// CoOwned are the other clusters' lines that carry this cluster's co-owner tag (share.go).
	CoOwned []endpoint.Record
	// beats is what the entries say of the installations' heartbeats (heartbeat.go).
	beats heartbeats

	parser  tagParser
	witness writers
}

// view is the view of an entry some operator wrote (every owned entry is one); the zero view
// for a hand-made or another cluster's.
func (s *State) view(rec *endpoint.Record) view {
	if p := s.parser.parse(rec); p.class == endpoint.OwnerThis || p.class == endpoint.OwnerEarlierVersion || p.class == endpoint.OwnerRenamed || p.class == endpoint.OwnerNamesake {
		return p.v
	}
	return view{}
}

// ForeignCount is the number of entries owned by other clusters.
func (s *State) ForeignCount() int {
	n := 0
	for _, rs := range s.Foreign {
		n += len(rs)
	}
	return n
}

// classify sorts the records of one read by owner, their tags parsed by parser (nil: parsed
// afresh), with what witness saw other writers do (nil: nothing). Only tags the operator wrote
// count: a tag an adopted entry carried before adoption (recorded in its loan) never makes it
// another cluster's, nor marks it for deletion. The entries the tags leave open (an earlier
// version's, this identity's under another name, this name's under another identity) are
// decided by claims, the sources' endpoints (resolveOpen).
func (r *Registry) classify(records []endpoint.Record, claims []*endpoint.Endpoint, parser tagParser, witness writers) *State {
	if parser == nil {
		parser = r
	}
	if witness == nil {
		witness = noWitness{}
	}
	st := &State{Foreign: map[string][]endpoint.Record{}, Unowned: map[string][]endpoint.Record{},
		Owned: make([]endpoint.Record, 0, len(records)), parser: parser, witness: witness}
	var open []endpoint.Record
	marks := r.cfg.SilentClusterAfter > 0
	for i := range records {
		rec := &records[i]
		key := strings.ToLower(rec.Hostname)
		p := parser.parse(rec)
		switch p.class {
		case endpoint.OwnerHandMade:
			st.Unowned[key] = append(st.Unowned[key], *rec)
		case endpoint.OwnerThis:
			st.Owned = append(st.Owned, *rec)
			if marks {
				st.beats.own(rec, &p.v)
			}
		case endpoint.OwnerEarlierVersion, endpoint.OwnerRenamed, endpoint.OwnerNamesake:
			open = append(open, *rec)
		default:
			st.Foreign[key] = append(st.Foreign[key], *rec)
			if marks {
				st.beats.other(&p.v)
			}
			if r.hasOwnCoOwner(p.v.op) {
				st.CoOwned = append(st.CoOwned, *rec)
			}
		}
	}
	if len(open) > 0 {
		uids := make(map[string]bool, len(claims))
		for _, ep := range claims {
			for _, s := range ep.Sources {
				uids[s.UID] = true
			}
		}
		var wanted map[string]bool // "hostname address" of every claim, built at first need
		wants := func(rec *endpoint.Record) bool {
			if wanted == nil {
				wanted = map[string]bool{}
				for _, ep := range claims {
					for _, ip := range ep.Targets {
						wanted[strings.ToLower(ep.Hostname)+" "+ip] = true
					}
				}
			}
			return wanted[strings.ToLower(rec.Hostname)+" "+rec.IP]
		}
		r.resolveOpen(st, open, func(uid string) bool { return uids[uid] }, wants)
	}
	return st
}

// Marked reports whether one of these entries carries a pending-deletion mark the operator
// wrote.
func (s *State) Marked(owned []*endpoint.Record) bool {
	return slices.ContainsFunc(owned, s.marked)
}

// marked reports whether rec carries a pending-deletion mark the operator wrote.
func (s *State) marked(rec *endpoint.Record) bool {
	v := s.view(rec)
	_, marked := v.value(PrefixPending)
	return marked
}

// foreignHolder is the entry by which another cluster holds a hostname against this one, nil
// when none does: theirs are the other clusters' entries of the hostname, ours this cluster's,
// and consent whether this cluster consents to share it (its claims share it and its entries
// carry TagShared). Where both consent, neither holds it against the other. A cluster with
// entries of a hostname holds it against one without. Where both have some, as when two
// clusters wrote it in one moment or one withdrew its consent, the one that consents holds it
// against the one that does not, so a withdrawal never wins a name; between two that do not,
// the cluster of the oldest entry does. Entry IDs are ULIDs, which sort by the time the server
// made them, so both clusters, reading the same entries, decide alike: one keeps the name, and
// the other gives it up.
func (s *State) foreignHolder(theirs []endpoint.Record, ours []*endpoint.Record, consent bool) *endpoint.Record {
	holder := oldest(theirs)
	if holder == nil {
		return nil
	}
	they := s.consents(theirs)
	switch {
	case bothConsent(consent, they):
		return nil
	case len(ours) == 0 || they:
		return holder
	case consent:
		return nil
	}
	for _, rec := range ours {
		if rec.ID < holder.ID {
			return nil
		}
	}
	return holder
}

// yielded reports whether this cluster's entry rec is on a hostname another cluster holds
// against it (foreignHolder), its consent read from its entries of the hostname. Such an entry
// goes without a grace period, since the name keeps answering through that cluster's entries;
// so an entry of a cluster whose entries of the name all carry TagShared never yields.
func yielded(st *State, rec *endpoint.Record) bool {
	h := strings.ToLower(rec.Hostname)
	theirs := st.Foreign[h]
	if len(theirs) == 0 {
		return false
	}
	var ours []*endpoint.Record
	for i := range st.Owned {
		if strings.EqualFold(st.Owned[i].Hostname, h) {
			ours = append(ours, &st.Owned[i])
		}
	}
	return st.foreignHolder(theirs, ours, st.consentsOwn(ours)) != nil
}

// oldest is the entry of recs with the smallest ID, nil when there is none.
func oldest(recs []endpoint.Record) *endpoint.Record {
	var out *endpoint.Record
	for i := range recs {
		if out == nil || recs[i].ID < out.ID {
			out = &recs[i]
		}
	}
	return out
}
