package registry

import (
	"fmt"
	"hash/maphash"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// objectBudget freezes the claims of an object over the budget per object: no new name, and the
// entries it has as they are.
func (r *Registry) objectBudget(in *claimsIn, eps []*endpoint.Endpoint) verdicts {
	b := r.cfg.Budgets
	if b.EntriesPerObject == 0 && b.AliasesPerObject == 0 && b.TagsPerObject == 0 {
		return verdicts{endpoints: eps}
	}
	sizes := r.objectSizes(in.st, eps)
	over := map[string]string{} // by UID, what each object over a budget asks for, over which
	for _, ep := range eps {
		uid := ep.Sources[0].UID
		if sizes == nil && (b.TagsPerObject == 0 || len(ep.Tags) <= b.TagsPerObject) || over[uid] != "" {
			continue // the common case: no object near a budget; or an object met before
		}
		var why []string
		if n := sizes[uid].entries; b.EntriesPerObject > 0 && n > b.EntriesPerObject {
			why = append(why, fmt.Sprintf("%d entries (hostnames × addresses, and its entries marked for deletion until they are gone; the budget is %d)", n, b.EntriesPerObject))
		}
		if n := sizes[uid].aliases; b.AliasesPerObject > 0 && n > b.AliasesPerObject {
			why = append(why, fmt.Sprintf("%d aliases over its hostnames (the budget is %d)", n, b.AliasesPerObject))
		}
		if n := len(ep.Tags); b.TagsPerObject > 0 && n > b.TagsPerObject { // each claim carries them all
			why = append(why, fmt.Sprintf("%d tags (the budget is %d)", n, b.TagsPerObject))
		}
		if len(why) > 0 {
			over[uid] = strings.Join(why, ", ")
		}
	}
	if len(over) == 0 {
		return verdicts{endpoints: eps}
	}
	out := verdicts{endpoints: make([]*endpoint.Endpoint, 0, len(eps))}
	for _, ep := range eps {
		src := ep.Sources[0]
		why, ok := over[src.UID]
		if !ok {
			out.endpoints = append(out.endpoints, ep)
			continue
		}
		if why != "" {
			out.problems = append(out.problems, Problem{Source: src, Kind: ProblemOverBudget,
				Message: fmt.Sprintf("asks for %s, over the budget per object: its new names are not written and the entries it has stay as they are", why)})
			over[src.UID] = "" // reported once per object
		}
		if f := r.frozen(ep, in.st, in.owned[ep.Hostname]); f != nil {
			out.endpoints = append(out.endpoints, f)
		}
	}
	return out
}

// objectSize is what an object asks for: entries (marked ones included) and aliases.
type objectSize struct{ entries, aliases int }

// objectSizes are the sizes of the objects that may be over a budget, nil when none may: summed by
// buckets of UID hashes first, so that thousands of small objects cost no map.
func (r *Registry) objectSizes(st *State, eps []*endpoint.Endpoint) map[string]objectSize {
	const nBuckets = 4096
	var bucketEntries, bucketAliases [nBuckets]int32
	b, seed := r.cfg.Budgets, maphash.MakeSeed()
	bucketOfUID := func(uid string) int { return int(maphash.String(seed, uid) % nBuckets) }
	hotBucket := func(k int) bool {
		return (b.EntriesPerObject > 0 && int(bucketEntries[k]) > b.EntriesPerObject) || (b.AliasesPerObject > 0 && int(bucketAliases[k]) > b.AliasesPerObject)
	}
	// An object's marked entries count until they are gone, but those its claims want again.
	marked := map[string]int{}
	var wants map[string]bool // "uid hostname ip" of the claims, made when a marked entry is met
	for i := 0; b.EntriesPerObject > 0 && i < len(st.Owned); i++ {
		rec := &st.Owned[i]
		v := st.view(rec)
		if _, ok := v.value(PrefixPending); !ok {
			continue
		}
		if wants == nil {
			wants = make(map[string]bool, len(eps))
			for _, ep := range eps {
				for _, ip := range ep.Targets {
					wants[ep.Sources[0].UID+" "+ep.Hostname+" "+ip] = true
				}
			}
		}
		for _, uid := range v.values(PrefixSource) {
			if !wants[uid+" "+strings.ToLower(rec.Hostname)+" "+rec.IP] {
				marked[uid]++
				bucketEntries[bucketOfUID(uid)]++
			}
		}
	}
	hot := false
	for _, ep := range eps {
		k := bucketOfUID(ep.Sources[0].UID)
		bucketEntries[k] += int32(len(ep.Targets))
		bucketAliases[k] += int32(len(ep.Aliases))
		hot = hot || hotBucket(k)
	}
	if !hot {
		return nil
	}
	sizes := map[string]objectSize{}
	for _, ep := range eps {
		if uid := ep.Sources[0].UID; hotBucket(bucketOfUID(uid)) {
			s, seen := sizes[uid]
			if !seen {
				s.entries = marked[uid]
			}
			sizes[uid] = objectSize{s.entries + len(ep.Targets), s.aliases + len(ep.Aliases)}
		}
	}
	return sizes
}

// frozen is a claim of an object over its budget: with no address, so that its entries of the
// hostname keep theirs, and the aliases and tags they carry; nil when it has none.
func (r *Registry) frozen(ep *endpoint.Endpoint, st *State, owned []*endpoint.Record) *endpoint.Endpoint {
	tag, found := PrefixSource+ep.Sources[0].UID, false
	var aliases, tags []string
	for _, rec := range owned {
		v := st.view(rec)
		if _, marked := v.value(PrefixPending); marked || !v.has(tag) {
			continue
		}
		found = true
		aliases = append(aliases, rec.Aliases...)
		if !v.has(TagPreExisting) {
			tags = append(tags, v.user...)
		}
	}
	if !found {
		return nil
	}
	return &endpoint.Endpoint{Hostname: ep.Hostname, Aliases: endpoint.SortedUnique(aliases), Tags: endpoint.SortedUnique(tags),
		Sources: ep.Sources, GracePeriod: ep.GracePeriod}
}
