package registry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Every name an entry carries, its hostname or an alias, obeys one rule:
//
//   - a name another cluster's entry carries is that cluster's, unless an entry of this cluster
//     carries it already;
//   - a name a hand-made entry carries as an alias is the user's, and nobody claims it; one it
//     carries as its hostname may only be adopted, by a namespace the tenancy rules let adopt,
//     and never when the entry is tagged no-adopt;
//   - within the cluster one namespace holds a name: the one whose entry carries it (as its
//     hostname first, then as an alias it still asks for, or on an entry on its way out, until
//     it is gone, as a hostname is held through its grace period); a name nobody holds goes to
//     a hostname claim before an alias, and among claims of one kind to the oldest.
//
// The merge applies the rule to hostnames among hostname claims. hostnames (before the merge)
// turns down hostname claims that an alias or a hand-made entry decides; aliases (after it)
// decides every alias of the merged endpoints, which then know which namespace won each
// hostname.

// carriers are the names entries carry as aliases, by lowercase name: the owned entries that
// carry each, another cluster's entry that does, the hostname of a hand-made entry. It also
// notes the hostnames of hand-made entries that must never be adopted.
type carriers struct {
	owned   map[string][]*endpoint.Record
	foreign map[string]*endpoint.Record // the one with the lowest ID
	hand    map[string]string
	noAdopt map[string]bool
}

func carriersOf(st *State) carriers {
	var c carriers
	for i := range st.Owned {
		rec := &st.Owned[i]
		for _, a := range rec.Aliases {
			if c.owned == nil {
				c.owned = map[string][]*endpoint.Record{}
			}
			k := strings.ToLower(a)
			c.owned[k] = append(c.owned[k], rec)
		}
	}
	for _, recs := range st.Foreign {
		for i := range recs {
			for _, a := range recs[i].Aliases {
				if c.foreign == nil {
					c.foreign = map[string]*endpoint.Record{}
				}
				if k := strings.ToLower(a); c.foreign[k] == nil || recs[i].ID < c.foreign[k].ID {
					c.foreign[k] = &recs[i]
				}
			}
		}
	}
	for host, recs := range st.Unowned {
		for i := range recs {
			for _, a := range recs[i].Aliases {
				if c.hand == nil {
					c.hand = map[string]string{}
				}
				c.hand[strings.ToLower(a)] = recs[i].Hostname
			}
			if recs[i].HasTag(TagNoAdopt) {
				if c.noAdopt == nil {
					c.noAdopt = map[string]bool{}
				}
				c.noAdopt[host] = true
			}
		}
	}
	return c
}

// hostnames turns down the hostname claims the rule above decides before the merge: on a
// hostname another cluster's or a hand-made entry carries as an alias, on one another
// namespace's entry carries as an alias it still asks for, and on a hand-made entry the
// claim's namespace may not adopt (or that says no-adopt), when no entry of this cluster holds
// the hostname.
func (r *Registry) hostnames(in *claimsIn, eps []*endpoint.Endpoint) verdicts {
	owned, car := in.owned, in.car
	adoptRules := r.ten.adopters != nil || len(car.noAdopt) > 0
	if car.owned == nil && car.foreign == nil && car.hand == nil && !adoptRules {
		return verdicts{endpoints: eps}
	}
	// asking are the namespaces that ask for each alias an entry of theirs carries.
	var asking map[string][]string
	if car.owned != nil {
		for _, ep := range eps {
			for _, a := range ep.Aliases {
				if car.owned[a] != nil {
					if asking == nil {
						asking = map[string][]string{}
					}
					asking[a] = append(asking[a], ep.Sources[0].Namespace)
				}
			}
		}
	}
	var (
		res verdicts
		out []*endpoint.Endpoint
	)
	for i, ep := range eps {
		h, src := ep.Hostname, ep.Sources[0]
		winner := ""
		if len(owned[h]) == 0 {
			winner = r.hostnameHolder(in, ep, asking[h])
		}
		if winner == "" {
			if out != nil {
				out = append(out, ep)
			}
			continue
		}
		res.conflicts = append(res.conflicts, Conflict{Hostname: h, Loser: src, Winner: winner})
		res.changed = append(res.changed, h)
		if out == nil {
			out = append(make([]*endpoint.Endpoint, 0, len(eps)), eps[:i]...)
		}
	}
	res.endpoints = eps
	if out != nil {
		res.endpoints = out
	}
	return res
}

// hostnameHolder is who holds ep's hostname, which no entry of this cluster has, against
// ep's claim, in words: another cluster's or a hand-made entry that carries it as an alias,
// another namespace that asks for it as an alias its entry carries, or a hand-made entry the
// claim's namespace may not adopt; "" when the claim may go on to the merge. asking are the
// namespaces that ask for the hostname as an alias.
func (r *Registry) hostnameHolder(in *claimsIn, ep *endpoint.Endpoint, asking []string) string {
	h, ns, st, car := ep.Hostname, ep.Sources[0].Namespace, in.st, in.car
	holder := ""
	if car.owned[h] != nil {
		holder = aliasHolder(car.owned[h], asking, st)
	}
	switch {
	case car.foreign[h] != nil && len(st.Foreign[h]) == 0 && car.owned[h] == nil:
		return r.ownerText(car.foreign[h])
	case car.hand[h] != "":
		return "the hand-made entry " + car.hand[h]
	case holder != "" && holder != ns:
		return "namespace " + holder
	case len(st.Unowned[h]) > 0 && car.noAdopt[h]:
		return "a hand-made entry tagged " + TagNoAdopt
	case len(st.Unowned[h]) > 0 && !r.ten.mayAdopt(ns):
		return fmt.Sprintf("a hand-made entry, which namespace %s may not adopt", ns)
	}
	return ""
}

// aliasHolder is the namespace whose entry carries an alias and still asks for it, or whose
// entry carrying it is marked for deletion (the alias goes with the entry, after its grace
// period); the first in order when there are several, "" when none does.
func aliasHolder(carrying []*endpoint.Record, asking []string, st *State) string {
	best := ""
	for _, rec := range carrying {
		v := st.view(rec)
		ns, ok := v.value(PrefixNamespace)
		_, leaving := v.value(PrefixPending)
		if ok && (leaving || slices.Contains(asking, ns)) && (best == "" || ns < best) {
			best = ns
		}
	}
	return best
}

// aliases decides every alias of the merged endpoints by the rule above, and returns them with
// the aliases they lost taken out (as copies); the hostnames changed are those whose endpoint
// lost an alias. byHost are the claims each was merged from, so that a conflict is reported on
// the objects that asked for the alias.
func (r *Registry) aliases(in *claimsIn, merged []*endpoint.Endpoint) verdicts {
	var claimants map[string][]int // alias → the merged endpoints that carry it
	for i, m := range merged {
		for _, a := range m.Aliases {
			if claimants == nil {
				claimants = map[string][]int{}
			}
			claimants[a] = append(claimants[a], i)
		}
	}
	if claimants == nil {
		return verdicts{endpoints: merged}
	}
	var res verdicts
	hostNS := make(map[string]string, len(merged))
	for _, m := range merged {
		hostNS[m.Hostname] = m.Sources[0].Namespace
	}
	lost := map[int][]string{}
	as := make([]string, 0, len(claimants))
	for a := range claimants {
		as = append(as, a)
	}
	slices.Sort(as)
	for _, a := range as {
		idx := claimants[a]
		winner, text := r.aliasWinner(in, a, merged, idx, hostNS)
		for _, i := range idx {
			m := merged[i]
			ns := m.Sources[0].Namespace
			if winner != "" && ns == winner {
				continue
			}
			// Reported on the objects that asked for the alias.
			for _, c := range in.byHost[m.Hostname] {
				if c.Sources[0].Namespace == ns && slices.Contains(c.Aliases, a) {
					res.conflicts = append(res.conflicts, Conflict{Hostname: a, Loser: c.Sources[0], Winner: text, Alias: true})
				}
			}
			lost[i] = append(lost[i], a)
		}
	}
	if len(lost) == 0 {
		res.endpoints = merged
		return res
	}
	res.endpoints = make([]*endpoint.Endpoint, len(merged))
	for i, m := range merged {
		res.endpoints[i] = m
		if l := lost[i]; l != nil {
			c := *m
			c.Aliases = without(m.Aliases, l)
			res.endpoints[i] = &c
			res.changed = append(res.changed, m.Hostname)
		}
	}
	return res
}

// aliasWinner decides alias a, which the merged endpoints idx carry, by the rule above: the
// namespace that keeps it ("" when none of them does) and who holds it, in words.
func (r *Registry) aliasWinner(in *claimsIn, a string, merged []*endpoint.Endpoint, idx []int, hostNS map[string]string) (winner, text string) {
	st, owned, car := in.st, in.owned, in.car
	ours := len(owned[a]) > 0 || car.owned[a] != nil
	switch {
	case len(st.Foreign[a]) > 0 && len(owned[a]) == 0:
		// Another cluster's hostname: an alias yields to it, as within a cluster.
		return "", r.ownerText(&st.Foreign[a][0])
	case car.foreign[a] != nil && (!ours || car.foreign[a].ID < firstID(owned[a], car.owned[a])):
		// Another cluster's alias: ours yields unless we carry it, and when both do (two
		// clusters that added it at once) the older entry keeps it, which both clusters read
		// alike.
		return "", r.ownerText(car.foreign[a])
	case len(st.Unowned[a]) > 0:
		return "", "the hand-made entry " + st.Unowned[a][0].Hostname
	case car.hand[a] != "":
		return "", "the hand-made entry " + car.hand[a]
	case hostNS[a] != "":
		return hostNS[a], "namespace " + hostNS[a]
	case len(owned[a]) > 0:
		winner = firstNamespace(owned[a], st)
		return winner, "namespace " + winner
	}
	var asking []string
	for _, i := range idx {
		asking = append(asking, merged[i].Sources[0].Namespace)
	}
	if winner = aliasHolder(car.owned[a], asking, st); winner == "" {
		oldest := merged[idx[0]]
		for _, i := range idx[1:] {
			if olderClaim(merged[i], oldest) {
				oldest = merged[i]
			}
		}
		winner = oldest.Sources[0].Namespace
	}
	return winner, "namespace " + winner
}

// without is names less drop, nil when nothing is left.
func without(names, drop []string) []string {
	out := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(drop, n) })
	if len(out) == 0 {
		return nil
	}
	return out
}

// unadoptable leaves out of each merged endpoint the addresses that a hand-made entry of its
// hostname serves and its namespace may not adopt: the name resolves to them already, and a
// line of the operator's beside the user's would double it (AddHost refuses the exact pair).
// The hostnames changed are those whose endpoint lost an address.
func (r *Registry) unadoptable(in *claimsIn, merged []*endpoint.Endpoint) verdicts {
	st, car := in.st, in.car
	if len(st.Unowned) == 0 || (r.ten.adopters == nil && len(car.noAdopt) == 0) {
		return verdicts{endpoints: merged}
	}
	var (
		res verdicts
		out []*endpoint.Endpoint
	)
	for i, m := range merged {
		var served []string
		for k := range st.Unowned[m.Hostname] {
			rec := &st.Unowned[m.Hostname][k]
			if !r.adoptable(m, rec) && slices.Contains(m.Targets, rec.IP) {
				served = append(served, rec.IP)
			}
		}
		if served == nil {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]*endpoint.Endpoint, 0, len(merged)), merged[:i]...)
		}
		c := *m
		c.Targets = without(m.Targets, served)
		c.TargetTags = make(map[string][]string, len(c.Targets))
		for _, ip := range c.Targets {
			c.TargetTags[ip] = m.TargetTags[ip]
		}
		res.changed = append(res.changed, m.Hostname)
		out = append(out, &c)
	}
	res.endpoints = merged
	if out != nil {
		res.endpoints = out
	}
	return res
}

// firstID is the lowest ID among the entries.
func firstID(lists ...[]*endpoint.Record) string {
	best := ""
	for _, l := range lists {
		for _, rec := range l {
			if best == "" || rec.ID < best {
				best = rec.ID
			}
		}
	}
	return best
}

// firstNamespace is the namespace named on the first of entries in order that names one.
func firstNamespace(entries []*endpoint.Record, st *State) string {
	best := ""
	for _, rec := range entries {
		v := st.view(rec)
		if ns, ok := v.value(PrefixNamespace); ok && (best == "" || ns < best) {
			best = ns
		}
	}
	return best
}
