package soak

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// The checks of who writes what: each installation's writes, as its tap saw them, held to its
// own identity; the rename held to its entries' IDs; the settled world held to silence; the
// namesakes each installation reports.

// unowned reports whether tags are a hand-made entry's: no owner tag, no identity.
func unowned(tags []string) bool {
	return !slices.Contains(tags, registry.TagOwner) && len(clusterIDs(tags)) == 0
}

// whose names who an entry with these tags belongs to, for a failure.
func (c *checker) whose(tags []string) string {
	switch inst := c.ownerOfTags(tags); {
	case inst != "":
		return fmt.Sprintf("installation %s's (cluster %v, cluster-id %s)", inst, clusterNames(tags), c.set.ids[inst])
	case unowned(tags):
		return "the person's"
	case len(clusterIDs(tags)) == 0:
		return fmt.Sprintf("cluster %v's (no identity)", clusterNames(tags))
	}
	return fmt.Sprintf("an unknown installation's (cluster %v, cluster-id %v)", clusterNames(tags), clusterIDs(tags))
}

// namesAt are the cluster names inst may write at t: the one it started under, and from its
// rename on the new one too (a write of the old process may still land).
func (c *checker) namesAt(inst string, t time.Time) []string {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if r := c.m.rename; r != nil && r.inst == inst && !t.Before(r.at) {
		return []string{r.from, r.to}
	}
	return c.m.ran[inst][:1]
}

// checkWrites holds every write the installations sent (its tap saw it, the router took it
// or not) to InvOwnWrites: an AddHost adds an entry of the sender's identity; an UpdateHost is
// sent for an entry of the sender's identity or a hand-made one, and leaves it of the sender's
// identity (or, from its own, given back: hand-made again); a DeleteHost is sent for an entry
// of the sender's identity; and what it leaves of its own names a cluster it runs under. On a
// shared line an UpdateHost may also put the sender's co-owner tag on another installation's
// line, or take it off, or hand a line of its own over to its first co-owner (sharingWrite). The
// entry a write was sent for is the version it expected, from the ledger; unseen counts the
// writes sent for a version the run never saw (the answer that made it was lost), which are
// held to what they leave alone.
func (c *checker) checkWrites(l *ledger) (writes map[string]int, unseen []string) {
	writes = map[string]int{}
	for _, w := range l.since(time.Time{}) {
		writes[w.inst]++
		before := l.version(w.id, w.expected)
		var wrote []string // the tags the write leaves: the router's answer, else what it asked
		host := w.host
		switch req := w.req.(type) {
		case *pb.AddHostRequest:
			wrote = req.GetTags()
		case *pb.UpdateHostRequest:
			if req.GetTags() != nil {
				wrote = req.GetTags().GetValues()
			} else if before != nil {
				wrote = before.GetTags()
			}
		}
		if w.after != nil {
			wrote, host = w.after.GetTags(), w.after.GetHostname()
		} else if before != nil {
			host = before.GetHostname()
		}
		// A twin's own entries are its pair's: both write the one identity.
		me, mine := w.inst, ownerGroup(w.inst)
		problem := ""
		switch w.method {
		case methodAdd:
			if c.ownerOfTags(wrote) != mine {
				problem = "added an entry that is " + c.whose(wrote)
			}
		case methodUpdate:
			switch {
			case before == nil:
				unseen = append(unseen, fmt.Sprintf("%s by %s for entry %s", w, me, w.id))
				if c.ownerOfTags(wrote) != mine && !unowned(wrote) {
					problem = c.sharingWrite(me, w, nil, wrote)
				}
			case c.ownerOfTags(before.GetTags()) == mine:
				if c.ownerOfTags(wrote) != mine && !unowned(wrote) {
					problem = c.sharingWrite(me, w, before, wrote)
				}
			case unowned(before.GetTags()):
				if c.ownerOfTags(wrote) != mine {
					problem = "wrote the person's entry without adopting it: it is " + c.whose(wrote)
				}
			case c.ownerOfTags(before.GetTags()) != "" && c.ownerOfTags(wrote) == c.ownerOfTags(before.GetTags()):
				// Another installation's line this one shares: its co-owner tag, and nothing else.
				problem = c.sharingWrite(me, w, before, wrote)
			default:
				problem = "wrote an entry that is " + c.whose(before.GetTags())
			}
		case methodDelete:
			switch {
			case before == nil:
				unseen = append(unseen, fmt.Sprintf("%s by %s for entry %s", w, me, w.id))
			case c.ownerOfTags(before.GetTags()) != mine:
				problem = "deleted an entry that is " + c.whose(before.GetTags())
			}
		}
		if problem == "" && c.ownerOfTags(wrote) == mine {
			names := c.namesAt(me, w.at)
			if cs := clusterNames(wrote); len(cs) != 1 || !slices.Contains(names, cs[0]) {
				problem = fmt.Sprintf("wrote cluster %v on its entry, running as %v", cs, names)
			}
		}
		if problem != "" {
			c.fail(w.at, InvOwnWrites, []string{strings.ToLower(host)}, "installation %s (cluster-id %s) sent %s for entry %s: %s; the entry before: %s; what it wrote: %v",
				me, c.set.ids[me], w, w.id, problem, describe(nonNil(before)), wrote)
		}
	}
	return writes, unseen
}

// renameSnapshot are inst's entries its objects want now, unmarked: what its rename must keep.
func (c *checker) renameSnapshot(v *view, inst string) []*pb.HostEntry {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	var out []*pb.HostEntry
	c.unmarked(v, inst, func(e *pb.HostEntry, tags []string) {
		ns := values(tags, registry.PrefixNamespace)
		if len(ns) != 1 {
			return
		}
		for _, o := range c.m.claimers(strings.ToLower(e.GetHostname())) {
			if o.Cluster != inst || o.Namespace != ns[0] {
				continue
			}
			ips := c.m.ips(o)
			if slices.Contains(ips, e.GetIpAddress()) || (len(ips) == 0 && slices.Contains(tags, registry.PrefixSource+o.UID)) {
				out = append(out, e)
				break
			}
		}
	})
	return out
}

// unmarked calls each with every entry of installation inst on v that carries no
// pending-deletion mark, and the operator's tags of it.
func (c *checker) unmarked(v *view, inst string, each func(e *pb.HostEntry, tags []string)) {
	for _, e := range v.entries {
		if c.owner(e) != inst {
			continue
		}
		if tags, _ := c.opTags(e); len(values(tags, registry.PrefixPending)) == 0 {
			each(e, tags)
		}
	}
}

// renameUnsettled are the installation's unmarked entries that name no object of it any more
// (their objects went while its kube-apiserver was away, and it has not caught up yet). A rename
// leaves such an entry to nobody, by the documented rule (an entry of this identity under
// another name that no object here claims may be a twin's), so the rename waits until the
// installation has marked them. A line handed over to it names no object, and is wanted by
// its address.
func (c *checker) renameUnsettled(v *view, inst string) []*pb.HostEntry {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	var out []*pb.HostEntry
	c.unmarked(v, inst, func(e *pb.HostEntry, tags []string) {
		uids := values(tags, registry.PrefixSource)
		wanted := slices.ContainsFunc(c.m.claimers(strings.ToLower(e.GetHostname())), func(o *Object) bool {
			if o.Cluster != inst {
				return false
			}
			if len(uids) == 0 {
				return slices.Contains(c.m.ips(o), e.GetIpAddress())
			}
			return slices.Contains(uids, o.UID)
		})
		if !wanted {
			out = append(out, e)
		}
	})
	return out
}

// checkRename holds a rename to InvRename on the router as v shows it: every entry of the
// snapshot is there under the same ID, with the installation's identity and the new name
// alone.
func (c *checker) checkRename(v *view, r *renaming) []Failure {
	byID := map[string]*pb.HostEntry{}
	for _, e := range v.entries {
		byID[e.GetId()] = e
	}
	var out []Failure
	for _, was := range r.snapshot {
		h := strings.ToLower(was.GetHostname())
		e := byID[was.GetId()]
		if e == nil {
			out = append(out, Failure{Invariant: InvRename, Hosts: []string{h}, Detail: fmt.Sprintf(
				"renaming %s from %s to %s: its entry %s for %s at %s, which its objects wanted all along, is gone (was %s; the router has for %s: %s)",
				r.inst, r.from, r.to, was.GetId(), h, was.GetIpAddress(), describe([]*pb.HostEntry{was}), h, describe(v.byHost[h]))})
			continue
		}
		tags, _ := c.opTags(e)
		cs, ids := clusterNames(tags), clusterIDs(tags)
		if !slices.Equal(cs, []string{r.to}) || !slices.Equal(ids, []string{c.set.ids[r.inst]}) {
			out = append(out, Failure{Invariant: InvRename, Hosts: []string{h}, Detail: fmt.Sprintf(
				"renaming %s from %s to %s: its entry %s carries cluster %v and cluster-id %v when the rename should have settled, want %s %s alone: %s",
				r.inst, r.from, r.to, e.GetId(), cs, ids, registry.ClusterTag(r.to), registry.IdentityTag(c.set.ids[r.inst]), describe([]*pb.HostEntry{e}))})
		}
	}
	return out
}

// renameWrites counts what the renamed installation sent for the snapshot's entries from the
// rename until its check (the end of the run when the final check did it), the router's
// answer lost or not (a router restart): the rename is one UpdateHost an entry, nothing
// deleted.
func renameWrites(l *ledger, r *renaming) (updates, unanswered, deletes int) {
	ids := map[string]bool{}
	for _, e := range r.snapshot {
		ids[e.GetId()] = true
	}
	for _, w := range l.since(r.at) {
		if w.inst != r.inst || !ids[w.id] || (!r.checkedAt.IsZero() && w.at.After(r.checkedAt)) {
			continue
		}
		switch {
		case w.method == methodUpdate && w.err == nil:
			updates++
		case w.method == methodUpdate:
			unanswered++
		case w.method == methodDelete:
			deletes++
		}
	}
	return updates, unanswered, deletes
}

// checkQuiet holds the writes sent during the quiet window to InvQuiet: there are none. Each
// entry written is one failure, with every write to it.
func (c *checker) checkQuiet(ws []*write, l *ledger, window time.Duration) []Failure {
	byEntry := map[string][]*write{}
	for _, w := range ws {
		byEntry[w.id+"|"+w.host] = append(byEntry[w.id+"|"+w.host], w)
	}
	keys := make([]string, 0, len(byEntry))
	for k := range byEntry {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Failure
	for _, k := range keys {
		ws := byEntry[k]
		var lines []string
		host := ws[0].host
		for _, w := range ws {
			before := l.version(w.id, w.expected)
			if host == "" && before != nil {
				host = before.GetHostname()
			}
			if host == "" && w.after != nil {
				host = w.after.GetHostname()
			}
			lines = append(lines, fmt.Sprintf("%s by %s: before %s, after %s", w, w.inst, describe(nonNil(before)), describe(nonNil(w.after))))
		}
		out = append(out, Failure{Invariant: InvQuiet, Hosts: []string{strings.ToLower(host)}, Detail: fmt.Sprintf(
			"%d writes to entry %s in the quiet window of %v after the world settled, want none:\n    %s", len(ws), ws[0].id, window,
			strings.Join(lines, "\n    "))})
	}
	return out
}

// namesakesOnRouter is how many other identities v shows under inst's name: what its
// namesake_clusters metric must say.
func (c *checker) namesakesOnRouter(v *view, inst string) int {
	c.m.mu.Lock()
	name := c.m.names[inst]
	c.m.mu.Unlock()
	others := map[string]bool{}
	for _, e := range v.entries {
		tags, _ := c.opTags(e)
		cs, ids := clusterNames(tags), clusterIDs(tags)
		if !slices.Contains(tags, registry.TagOwner) || len(cs) == 0 || slices.ContainsFunc(cs, func(n string) bool { return n != name }) || len(ids) == 0 {
			continue
		}
		if slices.ContainsFunc(ids, func(id string) bool { return id != c.set.ids[inst] }) {
			others[ids[0]] = true
		}
	}
	return len(others)
}
