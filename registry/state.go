package registry

import (
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Parsed is what the operator reads from one entry's tags: its view and class (classOf).
type Parsed struct {
	v     view
	class endpoint.Owner
}

func (r *Registry) parse(rec *endpoint.Record) *Parsed {
	v := viewOf(rec)
	return &Parsed{v: v, class: r.classOf(&v)}
}

// Shared reports whether the operator wrote TagShared on the entry: its cluster's consent.
func (p *Parsed) Shared() bool { return p.v.has(TagShared) }

// Marked reports whether the entry carries a pending-deletion mark the operator wrote.
func (p *Parsed) Marked() bool { return p.v.marked() }

// tagParser parses entries' tags: the memory's cache, or the registry's own parse.
type tagParser interface {
	parse(rec *endpoint.Record) *Parsed
}

// State is the server's entries by owner, maps by lowercase hostname; read-only after classify.
type State struct {
	Owned     []endpoint.Record            // this installation's (classOf, resolveOpen)
	Foreign   map[string][]endpoint.Record // another's, never written
	Namesakes []Namesake                   // other installations of this name, by identity
	Unclaimed int                          // the entries left alone that may be this cluster's
	Former    []Namesake                   // former identities, taken up in place; by identity
	Unowned   map[string][]endpoint.Record // those without TagOwner: only adoptable
	CoOwned   []endpoint.Record            // other clusters' lines with this one's co-owner tag
	beats     heartbeats
	parser    tagParser
	witness   writers
}

// view is the view of an entry of this cluster's name or identity; the zero view for another.
func (s *State) view(rec *endpoint.Record) view {
	if p := s.parser.parse(rec); p.class != endpoint.OwnerHandMade && p.class != endpoint.OwnerOtherCluster {
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

// classify sorts one read's records by owner (parser nil: afresh; seen nil: no other writer).
func (r *Registry) classify(records []endpoint.Record, claims []*endpoint.Endpoint, parser tagParser, seen writers) *State {
	if parser == nil {
		parser = r
	}
	if seen == nil {
		seen = &witness{}
	}
	st := &State{Foreign: map[string][]endpoint.Record{}, Unowned: map[string][]endpoint.Record{},
		Owned: make([]endpoint.Record, 0, len(records)), parser: parser, witness: seen}
	var open []endpoint.Record
	for i := range records {
		rec := &records[i]
		switch p := parser.parse(rec); p.class {
		case endpoint.OwnerHandMade:
			key := strings.ToLower(rec.Hostname)
			st.Unowned[key] = append(st.Unowned[key], *rec)
		case endpoint.OwnerEarlierVersion, endpoint.OwnerRenamed, endpoint.OwnerNamesake:
			open = append(open, *rec)
		default:
			r.file(st, rec, &p.v, p.class == endpoint.OwnerThis)
			if p.class != endpoint.OwnerThis && r.cfg.SilentClusterAfter > 0 {
				st.beats.other(&p.v)
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

// Marked reports whether one of owned carries a pending-deletion mark the operator wrote.
func (s *State) Marked(owned []*endpoint.Record) bool { return slices.ContainsFunc(owned, s.marked) }
func (s *State) marked(rec *endpoint.Record) bool {
	v := s.view(rec)
	return v.marked()
}

// foreignHolder is the entry by which another cluster holds a hostname against this one (nil:
// none): none where both consent to share, else the side with entries, the one that consents (a
// withdrawal never wins a name), the oldest entry's (ULIDs: both sides decide alike).
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
	case consent || slices.ContainsFunc(ours, func(rec *endpoint.Record) bool { return rec.ID < holder.ID }):
		return nil
	}
	return holder
}

// yielded reports whether this cluster's rec is on a hostname another cluster holds against it
// (foreignHolder): it goes without a grace period, as the name answers through the holder's.
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

// Ownership is whose an entry is and what its tags say: for people (explain, list), not rules.
type Ownership struct {
	Class              endpoint.Owner
	Cluster, ClusterID string    // as the owner's tags name it (empty: hand-made)
	Sources            []string  // the UIDs of the objects that want the address
	Namespace          string    // holding the name
	Kinds              []string  // claiming the name
	Marked             bool      // the entry carries a deletion mark
	Due                time.Time // when the mark falls due (zero: unreadable)
	UserTags           []string  // the tags not the operator's, verbatim
	Shared             bool      // TagShared
	CoOwners           []string  // the other clusters wanting the line, as their co-owner tags say
	LastSeen           time.Time // a silent owner's newest heartbeat
	Release            string    // the command that lets a silent owner go
}

// Ownerships says whose each of st's entries is, by ID, as decided; silent: those found silent.
func (r *Registry) Ownerships(st *State, silent []SilentCluster) map[string]Ownership {
	bySilent := map[string]SilentCluster{}
	for _, s := range silent {
		bySilent[s.Cluster+IdentitySeparator+s.ClusterID] = s
	}
	out := make(map[string]Ownership, len(st.Owned)+len(st.Foreign)+len(st.Unowned))
	for i := range st.Owned {
		v := st.view(&st.Owned[i])
		o := r.ownership(&v)
		o.Class = endpoint.OwnerThis
		if v.has(TagPreExisting) {
			o.Class = endpoint.OwnerAdopted
		}
		o.Marked = v.marked()
		o.Due, _ = r.due(&v)
		out[st.Owned[i].ID] = o
	}
	for _, recs := range st.Foreign {
		for i := range recs {
			v := viewOf(&recs[i])
			o := r.ownership(&v)
			switch s, silent := bySilent[o.Cluster+IdentitySeparator+o.ClusterID]; {
			case silent:
				o.Class, o.LastSeen, o.Release = endpoint.OwnerSilentCluster, s.LastSeen, s.ReleaseCommand()
			case r.hasOwnCoOwner(recs[i].Tags):
				o.Class = endpoint.OwnerCoOwned
			case r.classOf(&v) == endpoint.OwnerNamesake:
				o.Class = endpoint.OwnerNamesake
			default:
				o.Class = endpoint.OwnerOtherCluster
			}
			out[recs[i].ID] = o
		}
	}
	for _, recs := range st.Unowned {
		for i := range recs {
			out[recs[i].ID] = Ownership{Class: endpoint.OwnerHandMade, UserTags: recs[i].Tags}
		}
	}
	return out
}

// ownership is what the operator's tags in v name.
func (r *Registry) ownership(v *view) Ownership {
	o := Ownership{Sources: v.values(PrefixSource), Kinds: v.values(PrefixKind), UserTags: v.user, Shared: v.has(TagShared)}
	for _, t := range r.coOwners(v) {
		o.CoOwners = append(o.CoOwners, strings.TrimPrefix(t, PrefixCoOwner))
	}
	o.Namespace, _ = v.value(PrefixNamespace)
	if names := v.clusterNames(); len(names) > 0 {
		o.Cluster = names[0]
	}
	o.ClusterID, _ = v.clusterID()
	return o
}
