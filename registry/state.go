package registry

import (
	"slices"
	"strings"
	"time"

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

// Shared reports whether the operator wrote TagShared on the entry: its cluster's consent to
// share the hostname.
func (p *Parsed) Shared() bool { return p.v.has(TagShared) }

// Marked reports whether the entry carries a pending-deletion mark the operator wrote.
func (p *Parsed) Marked() bool {
	_, marked := p.v.value(PrefixPending)
	return marked
}

// tagParser parses entries' tags: the memory's cache, or the registry's own parse.
type tagParser interface {
	parse(rec *endpoint.Record) *Parsed
}

// State is the server's entries sorted by who owns them. classify makes it; every later step
// only reads it.
type State struct {
	// Owned entries are this installation's (classOf, resolveOpen), all written by the operator.
	Owned []endpoint.Record
	// Foreign entries are another cluster's or installation's, never written; by lowercase
	// hostname.
	Foreign map[string][]endpoint.Record
	// Namesakes are the other installations that write this cluster's name, by identity,
	// sorted. Unclaimed counts the entries left alone that may be this cluster's (resolveOpen).
	Namesakes []Namesake
	Unclaimed int
	// Former are the identities this installation had before, whose entries are taken up in
	// place, by identity, sorted.
	Former []Namesake
	// Unowned entries lack k8s-operator; they may only be adopted. By lowercase hostname, as
	// DNS names compare without case.
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

// classify sorts the records of one read by owner, their tags parsed by parser (nil: parsed
// afresh), with what seen says other writers did (nil: nothing). Only the operator's tags
// count: a tag an adopted entry carried before adoption never makes it another's, nor marks
// it. The claims, the sources' endpoints, decide what the tags leave open (resolveOpen).
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
	_, marked := v.value(PrefixPending)
	return marked
}

// foreignHolder is the entry by which another cluster holds a hostname against this one, nil
// when none does: theirs are the other clusters' entries of the hostname, ours this cluster's,
// consent whether this cluster consents to share it. Where both consent, neither holds it; a
// cluster with entries of it holds it against one without; where both have some, the one that
// consents holds it, so a withdrawal never wins a name, and between two that do not, the
// cluster of the oldest entry does. Entry IDs are ULIDs, sorting by creation, so both clusters
// decide alike.
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

// yielded reports whether this cluster's entry rec is on a hostname another cluster holds
// against it (foreignHolder). Such an entry goes without a grace period, since the name keeps
// answering through the holder's entries; so an entry of a cluster whose entries of the name
// all carry TagShared never yields.
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

// Ownership is whose one entry is and what the operator's tags on it say, as a sync decided
// it: for people (explain, list), never for a rule.
type Ownership struct {
	Class endpoint.Owner
	// Cluster and ClusterID are the owning installation's, as its tags name them (empty for a
	// hand-made entry).
	Cluster, ClusterID string
	// Sources are the UIDs of the objects that want the entry's address; Namespace and Kinds
	// the namespace holding the name and the kinds claiming it.
	Sources   []string
	Namespace string
	Kinds     []string
	// Marked: the entry carries a deletion mark; it goes at Due (zero when the mark cannot be
	// read).
	Marked bool
	Due    time.Time
	// UserTags are the tags that are not the operator's, verbatim.
	UserTags []string
	// Shared: the entry's hostname is shared with other clusters (TagShared); CoOwners are the
	// other clusters that want its line too, as their co-owner tags name them.
	Shared   bool
	CoOwners []string
	// LastSeen is the owning installation's newest heartbeat, zero when none is read;
	// Release the command that lets a silent installation go.
	LastSeen time.Time
	Release  string
}

// Ownerships says whose each of st's entries is, by entry ID, as the decision that made st
// decided (st settles the open cases: an earlier version's entry, a rename, a namesake);
// silent are the installations it found silent.
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
		_, o.Marked = v.value(PrefixPending)
		o.Due, _ = r.due(&v)
		out[st.Owned[i].ID] = o
	}
	for _, recs := range st.Foreign {
		for i := range recs {
			v := viewOf(&recs[i])
			o := r.ownership(&v)
			s, silent := bySilent[o.Cluster+IdentitySeparator+o.ClusterID]
			switch {
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
