package registry

import (
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// merge merges each hostname's claims, or reuses a merge of the same ones no stage changed.
func (r *Registry) merge(in *claimsIn, eps []*endpoint.Endpoint) verdicts {
	byHost := make(map[string][]*endpoint.Endpoint, len(eps))
	hosts := make([]string, 0, len(eps)) // as first met: sources list theirs sorted, so the sort is quick
	for _, ep := range eps {
		claims, seen := byHost[ep.Hostname]
		if !seen {
			hosts = append(hosts, ep.Hostname)
		}
		byHost[ep.Hostname] = append(claims, ep)
	}
	slices.Sort(hosts)
	v := verdicts{endpoints: make([]*endpoint.Endpoint, 0, len(hosts)), grouped: byHost}
	for _, h := range hosts {
		claims, owned := byHost[h], in.owned[h]
		m, reused := (*endpoint.Endpoint)(nil), false
		if in.merges != nil && !in.changed[h] {
			m, reused = in.merges.Merged(h, claims, owned)
		}
		switch {
		case reused:
		case in.merges == nil:
			m = r.mergeHost(in.now, h, claims, owned, in.st, &v.conflicts)
		default:
			key := slices.Clone(claims) // as they came: mergeHost sorts claims
			m = r.mergeHost(in.now, h, claims, owned, in.st, &v.conflicts)
			v.merges = append(v.merges, Merge{Host: h, Claims: key, Owned: owned, Out: m, Marked: in.st.Marked(owned)})
		}
		if m != nil {
			v.endpoints = append(v.endpoints, m)
		}
	}
	return v
}

// holder is the namespace a hostname's owned entries name, "" when none or it is letting go.
func (r *Registry) holder(now time.Time, owned []*endpoint.Record, claims []*endpoint.Endpoint, st *State) string {
	best := firstNamespace(owned, st)
	if best == "" || slices.ContainsFunc(claims, func(c *endpoint.Endpoint) bool {
		return c.Sources[0].Namespace == best && r.wants(c, owned, st)
	}) || slices.ContainsFunc(owned, func(rec *endpoint.Record) bool {
		v := st.view(rec)
		due, marked := r.due(&v)
		return !marked || now.Before(due)
	}) {
		return best
	}
	return ""
}

// wants reports whether a claim asks for an address: one it resolves, or one of its own entries'.
func (r *Registry) wants(c *endpoint.Endpoint, owned []*endpoint.Record, st *State) bool {
	return !c.NoAddress() || len(r.keptTargets(c, owned, st)) > 0
}

// mergeHost is the endpoint the plan sees of a hostname's claims (nil if all lose); losers go to lost.
func (r *Registry) mergeHost(now time.Time, host string, claims []*endpoint.Endpoint, owned []*endpoint.Record, st *State, lost *[]Conflict) *endpoint.Endpoint {
	sort.SliceStable(claims, func(i, j int) bool { return olderClaim(claims[i], claims[j]) })
	winner := r.holder(now, owned, claims, st)
	winnerText := "namespace " + winner
	if winner == "" { // the taker: the oldest claim that wants an address, else the oldest
		t := claims[0].Sources[0]
		if i := slices.IndexFunc(claims, func(c *endpoint.Endpoint) bool { return r.wants(c, owned, st) }); i >= 0 {
			t = claims[i].Sources[0]
		}
		winner, winnerText = t.Namespace, t.Namespace+"/"+t.Name
	}
	m := &endpoint.Endpoint{Hostname: host, Shared: true, Sources: make([]endpoint.SourceRef, 0, len(claims))}
	var targets, aliases, tags, kinds []string
	var wishes []wish
	for _, c := range claims {
		if c.Sources[0].Namespace != winner {
			*lost = append(*lost, Conflict{Hostname: host, Loser: c.Sources[0], Winner: winnerText})
			continue
		}
		m.Shared = m.Shared && c.Shared
		want := c.Targets
		if c.NoAddress() {
			want = r.keptTargets(c, owned, st)
		}
		for _, ip := range want {
			wishes = append(wishes, wish{ip, c})
		}
		targets = append(targets, want...)
		aliases = append(aliases, c.Aliases...)
		tags = append(tags, c.Tags...)
		m.Sources = append(m.Sources, c.Sources...)
		for _, s := range c.Sources {
			kinds = append(kinds, PrefixKind+s.Kind)
		}
	}
	if len(m.Sources) == 0 {
		return nil
	}
	m.Targets = endpoint.SortedUnique(targets)
	m.Aliases = endpoint.SortedUnique(aliases)
	m.Aliases = m.Aliases[:min(len(m.Aliases), endpoint.MaxAliases)]
	m.Tags = endpoint.SortedUnique(append(slices.DeleteFunc(tags, Reserved), r.cfg.DefaultTags...))
	m.OwnerTags = endpoint.SortedUnique(append(append(kinds, r.ownerTags...), PrefixNamespace+winner))
	m.Comment = comment(m.Sources)
	m.TargetTags, m.TargetComments = r.perTarget(m.Targets, wishes, m.Comment)
	return m
}

// comment is the provenance of an entry the objects srcs (oldest first) want.
func comment(srcs []endpoint.SourceRef) string {
	c := commentPrefix + srcs[0].String()
	if len(srcs) > 1 {
		c += " (+" + strconv.Itoa(len(srcs)-1) + " more)"
	}
	return c
}

type wish struct {
	ip    string
	claim *endpoint.Endpoint
}

// perTarget are each address's tags and comment, by the objects that want it alone (so no other
// entry is rewritten); a comment only where it differs from all, CommentAt's fallback.
func (r *Registry) perTarget(targets []string, wishes []wish, all string) (map[string][]string, map[string]string) {
	tags := make(map[string][]string, len(targets))
	var comments map[string]string
	for _, ip := range targets {
		var ts []string
		var graces []*time.Duration // nil: the default
		var srcs []endpoint.SourceRef
		shared := true
		for _, w := range wishes {
			if w.ip != ip {
				continue
			}
			for _, s := range w.claim.Sources {
				ts = append(ts, PrefixSource+s.UID)
				if !slices.ContainsFunc(srcs, func(o endpoint.SourceRef) bool { return o.UID == s.UID }) {
					srcs = append(srcs, s)
				}
			}
			graces = append(graces, w.claim.GracePeriod)
			shared = shared && w.claim.Shared
		}
		if shared {
			ts = append(ts, TagShared)
		}
		tags[ip] = endpoint.SortedUnique(append(ts, r.graceTag(graces))) // which drops an empty tag
		if c := comment(srcs); c != all {
			lazy(&comments)[ip] = c
		}
	}
	return tags, comments
}

// keptTargets are the addresses a claim with none keeps: its entries' (source tag), unmarked.
func (r *Registry) keptTargets(c *endpoint.Endpoint, owned []*endpoint.Record, st *State) []string {
	var out []string
	for _, rec := range owned {
		v := st.view(rec)
		if _, marked := v.value(PrefixPending); !marked && slices.ContainsFunc(c.Sources, func(s endpoint.SourceRef) bool {
			return v.has(PrefixSource + s.UID)
		}) {
			out = append(out, rec.IP)
		}
	}
	return out
}

// graceTag is the tag of the longest of grace periods gs (nil: the default), none when it is the
// default and an object asked none.
func (r *Registry) graceTag(gs []*time.Duration) string {
	longest, anyDefault, anySet := time.Duration(0), false, false
	for _, g := range gs {
		if g == nil {
			anyDefault, longest = true, max(longest, r.cfg.GracePeriod)
		} else {
			anySet, longest = true, max(longest, *g)
		}
	}
	if !anySet || (anyDefault && longest == r.cfg.GracePeriod) {
		return ""
	}
	return PrefixGracePeriod + strconv.FormatInt(int64(longest/time.Second), 10)
}

func olderClaim(a, b *endpoint.Endpoint) bool {
	ta, tb := a.Sources[0].CreationTimestamp, b.Sources[0].CreationTimestamp
	return ta.Before(tb) || ta.Equal(tb) && a.Sources[0].UID < b.Sources[0].UID
}
