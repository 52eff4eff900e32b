package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/webhook"
)

// Invariant is one promise of docs/ownership.md's contract, as a check over what the
// simulation sees. The contract's page lists the same IDs, names and promises, word for word
// (TestTheContractIsThePage).
type Invariant struct {
	ID, Name, Promise string
	// check returns the violations after a step, each a sentence naming the entry and party.
	check func(w *World, s *turn) []string
}

// turn is one party's action as the router shows it.
type turn struct {
	party         string
	before, after map[string]*pb.HostEntry
	writes        []write
	// compacted are the CompactAggregates the installations sent during the step.
	compacted []compactCall
	// rest: the step is a sync of a quiet world (no party but the installations acts).
	rest bool
	// settleFailed says why a settling did not reach rest; unserved are the addresses wanted
	// but neither served nor refused once it did.
	settleFailed string
	unserved     []string
}

// Contract is every invariant, in the page's order.
var Contract = []Invariant{
	{"O1", "own-entries", "An installation changes or deletes only the entries it wrote (under any name or identity it has had) or adopted by the adoption rule; on another cluster's line it only puts its own co-owner tag on or takes it off.", ownEntries},
	{"O2", "user-data-verbatim", "On an entry a person made, the tags outside the operator's block and the comment are always the person's, verbatim and in order; an entry given back has the address and hostname it was found with.", userDataVerbatim},
	{"O3", "wanted-names-stay", "No installation deletes an entry whose address an object of the cluster that wrote it still wants while that cluster's installation runs, or, away, wrote the entry in the last 30 minutes after the deleting process first read the router; nor re-points one of another identity's.", wantedNamesStay},
	{"O4", "consent", "A hostname is served by the entries of two installations of different identities only while every one of those entries carries shared:true (an entry on its way out leaves after its grace period).", consent},
	{"O5", "every-write-charged", "Every write an object causes, whatever its kind, counts against its budget: no installation writes more for one object in any minute than its budget allows. Lifting a mark another writer put on is not the object's doing, and keeps a name: it is never held.", everyWriteCharged},
	{"O6", "deletions-go", "An entry written for an object (a source: tag) under its installation's name and identity, or under an identity it had before once one of its entries proved it and no one wrote under it for a renewal period of the heartbeats, that no object of its cluster wants, and that no other party rewrote in the last 30 minutes, is gone within its grace period and six of its installation's syncs an interval apart, unless the brake holds its cluster or namespace.", deletionsGo},
	{"O7", "no-live-cluster-silent", "No installation that renews its heartbeat (it runs, and holds an entry it created, not on its way out, to carry it) is reported silent.", noLiveClusterSilent},
	{"O8", "settles", "Once the other parties stop, the installations reach rest within twenty rounds of syncs, and at rest they write nothing.", func(_ *World, s *turn) []string {
		if s.settleFailed != "" {
			return []string{s.settleFailed}
		}
		return nil
	}},
	{"O9", "served-or-said", "At rest, every address an object wants answers on the router (an entry of that hostname at that address), or its installation reports the conflict, problem or hold that keeps it off.", func(_ *World, s *turn) []string { return s.unserved }},
	{"O10", "own-compactions", "An installation compacts only the event logs of entries it wrote alone, live or deleted, one by its ID: never a hand-made or adopted entry, another installation's, or a line it shares or another cluster co-owns.", ownCompactions},
}

// ownEntries is O1.
func ownEntries(w *World, s *turn) []string {
	in := w.installation(s.party)
	if in == nil {
		return nil
	}
	var out []string
	for _, wr := range s.writes {
		if wr.before == nil {
			continue
		}
		l := w.history.life[wr.id]
		switch {
		case carriesIdentity(wr.before, in):
		case l != nil && l.creator == in.cluster.key:
		case l != nil && l.creator == person:
			// A hand-made entry: adopted, changed on loan or given back; O2 checks the loan.
		case wr.after != nil && onlyTags(wr.before, wr.after, func(t string) bool {
			return in.coOwnerTag(t) || strings.HasPrefix(t, registry.PrefixReleaseProbe)
		}):
		default:
			out = append(out, fmt.Sprintf("%s wrote %s, which is %s's: %s", in.name, describe(wr.before), ownerName(l), change(wr)))
		}
	}
	return out
}

// ownCompactions is O10: each entry an installation compacted during the step, as the router
// showed it last (a deleted one, before its deletion), carries its name and an identity it has
// had, was not made by a person, and carries neither pre-existing:true, shared:true nor a
// co-owner tag.
func ownCompactions(w *World, s *turn) []string {
	in := w.installation(s.party)
	var out []string
	for _, c := range s.compacted {
		e := s.after[c.id]
		if e == nil {
			e = s.before[c.id]
		}
		l := w.history.life[c.id]
		if e == nil && l != nil {
			e = l.last
		}
		switch {
		case in == nil || c.inst != in.name:
			out = append(out, fmt.Sprintf("%s compacted %s during a step of %s", c.inst, c.id, s.party))
		case c.id == "":
			out = append(out, fmt.Sprintf("%s compacted by a threshold, every writer's entries", in.name))
		case e == nil:
			out = append(out, fmt.Sprintf("%s compacted %s, which no one wrote", in.name, c.id))
		case l != nil && l.creator == person, slices.Contains(e.GetTags(), registry.TagPreExisting):
			out = append(out, fmt.Sprintf("%s compacted %s, which a person made", in.name, describe(e)))
		case !carriesIdentity(e, in):
			out = append(out, fmt.Sprintf("%s compacted %s, which is %s's", in.name, describe(e), ownerName(l)))
		case slices.ContainsFunc(e.GetTags(), func(t string) bool { return t == registry.TagShared || strings.HasPrefix(t, registry.PrefixCoOwner) }):
			out = append(out, fmt.Sprintf("%s compacted %s, which another cluster may share or co-owns", in.name, describe(e)))
		}
	}
	return out
}

// userDataVerbatim is O2.
func userDataVerbatim(w *World, s *turn) []string {
	var out []string
	for id, e := range s.after {
		l := w.history.life[id]
		if l == nil || l.creator != person {
			continue
		}
		if got := userTags(e); !slices.Equal(got, l.userTags) {
			out = append(out, fmt.Sprintf("%s: the person's tags are %q, the entry's own outside the operator's block %q (step by %s)", describe(e), l.userTags, got, s.party))
		}
		if (e.Comment == nil) != (l.comment == nil) || e.GetComment() != strOr(l.comment) {
			out = append(out, fmt.Sprintf("%s: comment %q, the person wrote %q (step by %s)", describe(e), e.GetComment(), strOr(l.comment), s.party))
		}
		if !slices.Contains(e.GetTags(), registry.TagPreExisting) && (e.GetIpAddress() != l.ip || e.GetHostname() != l.hostname) {
			out = append(out, fmt.Sprintf("%s: not on loan, but not at the person's %s %s (step by %s)", describe(e), l.hostname, l.ip, s.party))
		}
	}
	return out
}

// wantedNamesStay is O3.
func wantedNamesStay(w *World, s *turn) []string {
	in := w.installation(s.party)
	if in == nil {
		return nil
	}
	var out []string
	for _, wr := range s.writes {
		l := w.history.life[wr.id]
		if wr.before == nil || l == nil || l.creator == person || l.creator == in.cluster.key {
			continue
		}
		c := w.clusterOf(l.creator)
		if !c.wants(wr.before.GetHostname(), wr.before.GetIpAddress()) || !(w.installationOf(c).up || w.atWork(l, in)) {
			continue
		}
		switch {
		case wr.after == nil:
			out = append(out, fmt.Sprintf("%s deleted %s, which cluster %s still wants", in.name, describe(wr.before), c.key))
		case wr.after.GetIpAddress() != wr.before.GetIpAddress() && !carriesIdentity(wr.before, in):
			out = append(out, fmt.Sprintf("%s re-pointed %s, which cluster %s still wants, to %s", in.name, describe(wr.before), c.key, wr.after.GetIpAddress()))
		}
	}
	return out
}

// atWork reports whether the writer of an entry is still at work for in, though away: it wrote
// the entry after in's process first read the router, in the last 30 minutes.
func (w *World) atWork(l *life, in *installation) bool {
	return !in.firstRead.IsZero() && l.creatorWrote.After(in.firstRead) && w.clock.Since(l.creatorWrote) < 30*time.Minute
}

// consent is O4.
func consent(w *World, s *turn) []string {
	type holder struct{ identity string }
	byHost := map[string][]*pb.HostEntry{}
	for _, e := range s.after {
		// An entry on its way out leaves after its grace period, which consent does not cut.
		if slices.Contains(e.GetTags(), registry.TagOwner) && tagValue(&pb.HostEntry{Tags: operatorTags(e)}, registry.PrefixClusterID) != "" &&
			tagValue(e, registry.PrefixPending) == "" {
			h := strings.ToLower(e.GetHostname())
			byHost[h] = append(byHost[h], e)
		}
	}
	var out []string
	for h, es := range byHost {
		ids := map[string]bool{}
		all := true
		for _, e := range es {
			op := &pb.HostEntry{Tags: operatorTags(e)}
			// The identity tells installations apart; a renamed one writes two names, one whose
			// identity changed two identities.
			ids[w.lineage(tagValue(op, registry.PrefixClusterID))] = true
			all = all && slices.Contains(e.GetTags(), registry.TagShared)
		}
		if len(ids) > 1 && !all {
			var who []string
			for _, e := range es {
				who = append(who, describe(e))
			}
			slices.Sort(who)
			out = append(out, fmt.Sprintf("%s is served by %d installations without every one's consent (after a step by %s): %s", h, len(ids), s.party, strings.Join(who, "; ")))
		}
	}
	slices.Sort(out)
	return out
}

// everyWriteCharged is O5: within any minute, an object's writes stay within what its
// allowance can hold (the budget, plus what it wrote at once when first met: the model's
// objects have at most two hostnames at two addresses, so eight writes when both move) and
// what refills meanwhile.
func everyWriteCharged(w *World, s *turn) []string {
	in := w.installation(s.party)
	if in == nil || len(s.writes) == 0 {
		return nil
	}
	const limit = 2*objectBudget + 8
	now := w.clock.Now()
	var out []string
	for k, ts := range w.history.writes {
		if !strings.HasPrefix(k, in.name+"/") {
			continue
		}
		n := 0
		for _, t := range ts {
			if now.Sub(t) < time.Minute {
				n++
			}
		}
		if n > limit {
			out = append(out, fmt.Sprintf("%s wrote %d times for object %s within a minute, over the %d its budget of %d a minute allows", in.name, n, strings.TrimPrefix(k, in.name+"/"), limit, objectBudget))
		}
	}
	slices.Sort(out)
	return out
}

// deletionsGo is O6.
func deletionsGo(w *World, s *turn) []string {
	now := w.clock.Now()
	var out []string
	for _, id := range sortedIDs(s.after) {
		e, l := s.after[id], w.history.life[id]
		if l == nil || l.creator == person {
			continue
		}
		in := w.installationOf(w.clusterOf(l.creator))
		if in == nil || len(sources(e)) == 0 || !(carriesCurrent(e, in) || w.formerDue(e, in)) || now.Sub(l.otherWrote) < 30*time.Minute || in.cluster.wants(e.GetHostname(), e.GetIpAddress()) {
			l.unwanted = time.Time{}
			continue
		}
		// The grace period runs from the first sync of its installation that finds it unwanted.
		if s.party != in.name || !in.up || in.last == nil {
			continue
		}
		if l.unwanted.IsZero() {
			l.unwanted, l.pastDue, l.pastDueAt = now, 0, time.Time{}
			continue
		}
		if in.last.Braked != nil || !now.After(l.unwanted.Add(graceOf(e, in))) {
			continue
		}
		// Syncs count an interval apart: the write-rate budget paces deletions in time.
		if now.Sub(l.pastDueAt) < Interval {
			continue
		}
		l.pastDueAt = now
		if l.pastDue++; l.pastDue > 6 {
			out = append(out, fmt.Sprintf("%s still holds %s, unwanted since %s, after its grace period and six syncs", in.name, describe(e), l.unwanted.Sub(w.start)))
		}
	}
	return out
}

// noLiveClusterSilent is O7.
func noLiveClusterSilent(w *World, s *turn) []string {
	in := w.installation(s.party)
	if in == nil || in.last == nil {
		return nil
	}
	var out []string
	for _, sc := range in.last.Silent {
		for _, other := range w.insts {
			// Live: up, syncing (within five intervals: the model's syncs come at random), and
			// holding an entry of its own to carry its heartbeat.
			if other.up && other.clusterName == sc.Cluster && other.id == sc.ClusterID && w.clock.Since(other.lastSync) < 5*Interval && w.holdsEntry(other, s.after) {
				out = append(out, fmt.Sprintf("%s reports %s (cluster %s, cluster-id %s) silent, which runs", in.name, other.name, sc.Cluster, sc.ClusterID))
			}
		}
	}
	return out
}

// holdsEntry reports whether in's cluster wrote an entry of after that carries in's name and
// identity now and is not on its way out: one its heartbeat can ride on.
func (w *World) holdsEntry(in *installation, after map[string]*pb.HostEntry) bool {
	for id, e := range after {
		if l := w.history.life[id]; l != nil && l.creator == in.cluster.key && carriesCurrent(e, in) && tagValue(e, registry.PrefixPending) == "" {
			return true
		}
	}
	return false
}

// graceOf is an entry's grace period: its own grace-period: tag, or its installation's.
// lineage is the installation that has had identity id (the first, for twins), or id itself.
func (w *World) lineage(id string) string {
	for _, in := range w.insts {
		if slices.Contains(in.ids, id) {
			return in.name
		}
	}
	return id
}

// coOwnerTag reports whether t is a co-owner tag of in under any name and identity it has had.
func (in *installation) coOwnerTag(t string) bool {
	for _, name := range in.names {
		for _, id := range in.ids {
			if t == registry.CoOwnerTag(name, id) {
				return true
			}
		}
	}
	return false
}

// operatorTags are the tags the operator wrote on an entry: on an adopted entry its block
// (userTags is the rest), on any other every tag.
func operatorTags(e *pb.HostEntry) []string {
	tags := e.GetTags()
	open := slices.Index(tags, registry.TagPreExisting)
	if open < 0 {
		return tags
	}
	for j := open + 1; j < len(tags); j++ {
		if strings.HasPrefix(tags[j], registry.PrefixOriginalIP) {
			return tags[open : j+1]
		}
	}
	return tags[open:]
}

// coOwnerOf is in's co-owner tag.
func coOwnerOf(in *installation) string { return registry.CoOwnerTag(in.clusterName, in.id) }

// webhookUID is the UID of the record of host a webhook publishes.
func webhookUID(ns, host string) string { return webhook.Ref(ns, host).UID }

func graceOf(e *pb.HostEntry, in *installation) time.Duration {
	if v := tagValue(e, registry.PrefixGracePeriod); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			return time.Duration(n) * time.Second
		}
	}
	return in.grace
}

// carriesIdentity reports whether e carries in's cluster name and one of the identities in
// has had: what makes an entry in's own by its tags.
func carriesIdentity(e *pb.HostEntry, in *installation) bool {
	op := &pb.HostEntry{Tags: operatorTags(e)}
	return slices.Contains(e.GetTags(), registry.TagOwner) && slices.Contains(in.names, tagValue(op, registry.PrefixCluster)) &&
		slices.Contains(in.ids, tagValue(op, registry.PrefixClusterID))
}

// formerDue reports whether e carries in's name and an identity in had before, which one of
// its entries proved in's since its process started, and which no one wrote since, for longer
// than a renewal period of the heartbeats (and two syncs to see it): no copy of it runs,
// and all its entries are in's.
func (w *World) formerDue(e *pb.HostEntry, in *installation) bool {
	op := &pb.HostEntry{Tags: operatorTags(e)}
	id := tagValue(op, registry.PrefixClusterID)
	if !slices.Contains(e.GetTags(), registry.TagOwner) || tagValue(op, registry.PrefixCluster) != in.clusterName || id == in.id || !slices.Contains(in.ids, id) {
		return false
	}
	for _, other := range w.insts {
		if other.id == id {
			return false
		}
	}
	return in.proved[id] && !in.heard[id] && w.clock.Now().Sub(in.started) > silentAfter/4+2*Interval
}

// prove takes the entries in's sync found: one under a former identity of in that names an
// object in's cluster wants proves that identity in's.
func (w *World) prove(in *installation, before map[string]*pb.HostEntry) {
	for _, e := range before {
		op := &pb.HostEntry{Tags: operatorTags(e)}
		id := tagValue(op, registry.PrefixClusterID)
		if id == in.id || !slices.Contains(in.ids, id) || tagValue(op, registry.PrefixCluster) != in.clusterName {
			continue
		}
		for _, uid := range sources(e) {
			if in.cluster.claims(uid) {
				in.proved[id] = true
			}
		}
	}
}

// carriesCurrent reports whether e carries in's name and identity as they are now: an entry
// under a former name or identity is in's only once one of its entries proves it (the rule of
// docs/ownership.md), and then a sync writes the current ones on it.
func carriesCurrent(e *pb.HostEntry, in *installation) bool {
	op := &pb.HostEntry{Tags: operatorTags(e)}
	return slices.Contains(e.GetTags(), registry.TagOwner) && tagValue(op, registry.PrefixCluster) == in.clusterName &&
		tagValue(op, registry.PrefixClusterID) == in.id
}

// onlyTags reports whether a and b differ in nothing but tags that keep says are allowed to
// come or go.
func onlyTags(a, b *pb.HostEntry, keep func(string) bool) bool {
	if a.GetIpAddress() != b.GetIpAddress() || a.GetHostname() != b.GetHostname() || !slices.Equal(a.GetAliases(), b.GetAliases()) || a.GetComment() != b.GetComment() {
		return false
	}
	strip := func(tags []string) []string { return slices.DeleteFunc(slices.Clone(tags), keep) }
	return slices.Equal(strip(a.GetTags()), strip(b.GetTags()))
}

func (w *World) installationOf(c *cluster) *installation {
	for _, in := range w.insts {
		if in.cluster == c {
			return in
		}
	}
	return nil
}

func ownerName(l *life) string {
	if l == nil {
		return "unknown"
	}
	return "cluster " + l.creator
}

func describe(e *pb.HostEntry) string {
	return fmt.Sprintf("%s %s %s [%s]", e.GetId()[len(e.GetId())-6:], e.GetHostname(), e.GetIpAddress(), strings.Join(e.GetTags(), " "))
}

func change(wr write) string {
	if wr.after == nil {
		return "deleted"
	}
	return "to " + describe(wr.after)
}

func strOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
