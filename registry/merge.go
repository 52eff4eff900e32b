package registry

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// merge merges the claims of each hostname (mergeHost), reusing a merge made before from the
// same claims and entries unless a stage before it changed them.
func (r *Registry) merge(in *claimsIn, eps []*endpoint.Endpoint) verdicts {
	byHost := make(map[string][]*endpoint.Endpoint, len(eps))
	// In the order the hostnames first came: sources list theirs sorted, so the sort below
	// mostly finds them in order.
	hosts := make([]string, 0, len(eps))
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
		if in.merges != nil && !in.changed[h] {
			if m, ok := in.merges.Merged(h, claims, owned); ok {
				if m != nil {
					v.endpoints = append(v.endpoints, m)
				}
				v.reused = append(v.reused, h)
				continue
			}
		}
		// mergeHost sorts its claims: a merge kept is keyed by the claims as they came.
		key := claims
		if in.merges != nil {
			key = slices.Clone(claims)
		}
		m, lost := r.mergeHost(in.now, h, claims, owned, in.st)
		if m != nil {
			v.endpoints = append(v.endpoints, m)
		}
		v.conflicts = append(v.conflicts, lost...)
		if in.merges != nil {
			v.merges = append(v.merges, Merge{Host: h, Claims: key, Owned: owned, Out: m, Marked: in.st.Marked(owned)})
		}
	}
	return v
}

// holder is the namespace that holds a hostname: the one named on its owned entries, "" when
// there is none. The operator writes one namespace on all of a hostname's entries; should they
// disagree (hand edits), the first in order decides, so every replica decides the same. A
// namespace that no longer wants an address of the hostname (no claim has one, none with no
// address keeps an entry of its own), and whose entries are all past their grace period, has let go of
// it: the hostname goes to the next claim (taker), and the plan makes that claim's entries of
// the old ones in place, so the name never stops resolving.
func (r *Registry) holder(now time.Time, owned []*endpoint.Record, claims []*endpoint.Endpoint, st *State) string {
	best := ""
	for _, rec := range owned {
		v := st.view(rec)
		if ns, ok := v.value(PrefixNamespace); ok && (best == "" || ns < best) {
			best = ns
		}
	}
	if best == "" || slices.ContainsFunc(claims, func(c *endpoint.Endpoint) bool {
		return c.Sources[0].Namespace == best && r.wants(c, owned, st)
	}) {
		return best
	}
	for _, rec := range owned {
		v := st.view(rec)
		if due, marked := r.due(&v); !marked || now.Before(due) {
			return best
		}
	}
	return ""
}

// taker is the claim that takes a hostname nobody holds: the oldest that wants an address (a
// claim with no address and no entry of its own cannot write one, and must not keep the name
// from the others), else the oldest. claims are sorted oldest first.
func (r *Registry) taker(claims []*endpoint.Endpoint, owned []*endpoint.Record, st *State) *endpoint.Endpoint {
	for _, c := range claims {
		if r.wants(c, owned, st) {
			return c
		}
	}
	return claims[0]
}

// wants reports whether a claim asks for an address: one it resolves, or, with none, an entry
// of its own it keeps.
func (r *Registry) wants(c *endpoint.Endpoint, owned []*endpoint.Record, st *State) bool {
	return !c.NoAddress() || len(r.keptTargets(c, owned, st)) > 0
}

// mergeHost combines the claims on one hostname into the endpoint the plan sees, nil when every
// claim lost to the holding namespace, and returns the claims of other namespaces as lost.
func (r *Registry) mergeHost(now time.Time, host string, claims []*endpoint.Endpoint, owned []*endpoint.Record, st *State) (merged *endpoint.Endpoint, lost []Conflict) {
	sort.SliceStable(claims, func(i, j int) bool { return olderClaim(claims[i], claims[j]) })
	winner := r.holder(now, owned, claims, st)
	winnerText := "namespace " + winner
	if winner == "" {
		t := r.taker(claims, owned, st)
		winner = t.Sources[0].Namespace
		winnerText = winner + "/" + t.Sources[0].Name
	}
	m := &endpoint.Endpoint{Hostname: host, Sources: make([]endpoint.SourceRef, 0, len(claims))}
	var (
		targets, aliases, tags, kinds []string
		wishes                        []wish
	)
	m.Shared = true
	for _, c := range claims {
		src := c.Sources[0]
		if src.Namespace != winner {
			lost = append(lost, Conflict{Hostname: host, Loser: src, Winner: winnerText})
			continue
		}
		// The hostname is shared only when every claim that makes it shares it.
		m.Shared = m.Shared && c.Shared
		want := c.Targets
		if c.NoAddress() {
			want = r.keptTargets(c, owned, st)
		}
		for _, ip := range want {
			wishes = append(wishes, wish{ip, c.GracePeriod, c.Sources, c.Shared})
		}
		targets = append(targets, want...)
		aliases = append(aliases, c.Aliases...)
		for _, t := range c.Tags {
			if !Reserved(t) {
				tags = append(tags, t)
			}
		}
		m.Sources = append(m.Sources, c.Sources...)
		for _, s := range c.Sources {
			kinds = append(kinds, PrefixKind+s.Kind)
		}
	}
	if len(m.Sources) == 0 {
		return nil, lost
	}
	m.Targets = endpoint.SortedUnique(targets)
	m.TargetTags = r.targetTags(m.Targets, wishes)
	m.Aliases = endpoint.SortedUnique(aliases)
	if len(m.Aliases) > endpoint.MaxAliases {
		m.Aliases = m.Aliases[:endpoint.MaxAliases]
	}
	m.Tags = endpoint.SortedUnique(append(tags, r.cfg.DefaultTags...))
	m.OwnerTags = endpoint.SortedUnique(append(append(kinds, r.ownerTags...), PrefixNamespace+winner))
	m.Comment = comment(m.Sources)
	m.TargetComments = targetComments(m.Targets, wishes, m.Comment)
	return m, lost
}

// comment is the provenance of an entry the objects srcs (oldest first) want.
func comment(srcs []endpoint.SourceRef) string {
	c := commentPrefix + srcs[0].String()
	if len(srcs) > 1 {
		c += fmt.Sprintf(" (+%d more)", len(srcs)-1)
	}
	return c
}

// targetComments are the comments of each address's entry that differ from all's (the
// endpoint's own, which CommentAt falls back to): the objects that want that address, oldest
// first, in the order of wishes. Most hostnames have one address that every object wants, and
// need no map.
func targetComments(targets []string, wishes []wish, all string) map[string]string {
	var out map[string]string
	for _, ip := range targets {
		var srcs []endpoint.SourceRef
		for _, w := range wishes {
			if w.ip != ip {
				continue
			}
			for _, s := range w.sources {
				if !slices.ContainsFunc(srcs, func(o endpoint.SourceRef) bool { return o.UID == s.UID }) {
					srcs = append(srcs, s)
				}
			}
		}
		if len(srcs) == 0 {
			continue
		}
		if c := comment(srcs); c != all {
			if out == nil {
				out = make(map[string]string, len(targets))
			}
			out[ip] = c
		}
	}
	return out
}

// wish is one claim's wish for one address: whose it is, how long its grace, and whether it
// shares the hostname.
type wish struct {
	ip      string
	grace   *time.Duration
	sources []endpoint.SourceRef
	shared  bool
}

// targetTags are the tags of each address, which only the objects that want it decide (so an
// object coming and going at another address rewrites no other entry's consent): their source:
// tags, the longest of their grace periods, and shared:true when every one shares the
// hostname. The hostname is shared only when every entry of it is.
func (r *Registry) targetTags(targets []string, wishes []wish) map[string][]string {
	out := make(map[string][]string, len(targets))
	for _, ip := range targets {
		var (
			ts     []string
			graces []*time.Duration // nil = the default
			shared = true
		)
		for _, w := range wishes {
			if w.ip != ip {
				continue
			}
			for _, s := range w.sources {
				ts = append(ts, PrefixSource+s.UID)
			}
			graces = append(graces, w.grace)
			shared = shared && w.shared
		}
		if shared {
			ts = append(ts, TagShared)
		}
		if g := r.graceTag(graces); g != "" {
			ts = append(ts, g)
		}
		out[ip] = endpoint.SortedUnique(ts)
	}
	return out
}

// keptTargets are the addresses a claim with no address keeps: those of the hostname's
// entries that carry its source tag and are not already on their way out.
func (r *Registry) keptTargets(c *endpoint.Endpoint, owned []*endpoint.Record, st *State) []string {
	var out []string
	for _, rec := range owned {
		v := st.view(rec)
		if _, marked := v.value(PrefixPending); marked {
			continue
		}
		for _, s := range c.Sources {
			if v.has(PrefixSource + s.UID) {
				out = append(out, rec.IP)
				break
			}
		}
	}
	return out
}

// graceTag is the grace-period tag of an address wanted by objects with these grace periods
// (nil for an object without the annotation, which counts as the default): the longest wins,
// and no tag is written when that is the default of an object without the annotation.
func (r *Registry) graceTag(gs []*time.Duration) string {
	var (
		longest    time.Duration
		anyDefault bool
		anySet     bool
	)
	for _, g := range gs {
		d := r.cfg.GracePeriod
		if g == nil {
			anyDefault = true
		} else {
			d, anySet = *g, true
		}
		if d > longest {
			longest = d
		}
	}
	if !anySet || (anyDefault && longest == r.cfg.GracePeriod) {
		return ""
	}
	return PrefixGracePeriod + strconv.FormatInt(int64(longest/time.Second), 10)
}

// olderClaim orders claims by their oldest source: creation time, then UID.
func olderClaim(a, b *endpoint.Endpoint) bool {
	sa, sb := a.Sources[0], b.Sources[0]
	if !sa.CreationTimestamp.Equal(sb.CreationTimestamp) {
		return sa.CreationTimestamp.Before(sb.CreationTimestamp)
	}
	return sa.UID < sb.UID
}
