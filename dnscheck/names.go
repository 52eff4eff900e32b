package dnscheck

import (
	"container/heap"
	"net/netip"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// name is what the checker knows of one name: what was written, what its last answer said,
// and when to ask next.
type name struct {
	host string
	// want are the addresses this cluster's entries give the name (as a hostname or an
	// alias); gone the addresses its writes took from it that must stop answering. A name
	// with neither is forgotten.
	want, gone []netip.Addr
	// beside: lines other than this cluster's carry the name too (another cluster that shares
	// it, a hand-made line), whose addresses come and go between this cluster's reads; the name
	// answers as written when it answers with every address of want.
	beside bool
	// refs are the objects that claim the name, for events; a deleted name keeps the last.
	refs []endpoint.SourceRef
	// types are the record types asked for: those of want and gone.
	types []dnsmessage.Type

	// changed is when want or gone last changed (a write, or the name first seen): it should
	// answer as written a grace after.
	changed time.Time
	// due is when the name is asked next; index is its place in the queue.
	due   time.Time
	index int

	// last is the last answer; checked when it came.
	last    Result
	checked time.Time
	// answered: an answer since changed was as written (so a bad one after it is new).
	answered bool
	// badSince is since when the name has not answered as written, zero while it does: the
	// write's time when it never has since, else the first bad answer's.
	badSince time.Time
	// reported: the name has not answered as written for longer than the grace; it is
	// counted in the metric under reportedAs, and its objects were warned.
	reported   bool
	reportedAs Finding
	// backoff is the wait before asking a reported name again; it doubles up to the interval.
	backoff time.Duration
}

// queries is the number of questions one check of the name asks.
func (n *name) queries() int { return len(n.types) }

// setAddrs takes what was written and what was deleted, and the types they need.
func (n *name) setAddrs(want, gone []netip.Addr) {
	n.want = want
	n.gone = slices.DeleteFunc(gone, func(a netip.Addr) bool { return slices.Contains(want, a) })
	n.types = typesOf(n.want, n.gone)
}

// rewritten starts the name afresh after a write: it should answer as written a grace from now.
// A name reported stays reported, since when it was, until it answers as written.
func (n *name) rewritten(now time.Time, grace time.Duration) {
	n.changed, n.answered, n.backoff = now, false, 0
	n.due = now.Add(grace)
	if !n.reported {
		n.badSince = time.Time{}
		n.last = Result{Name: n.host, Want: n.want}
	}
}

// queue is the names by when they are due (container/heap).
type queue []*name

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	// Names due at once go in the order of their names, so that a run is reproducible.
	if !q[i].due.Equal(q[j].due) {
		return q[i].due.Before(q[j].due)
	}
	return q[i].host < q[j].host
}
func (q queue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *queue) Push(x any) {
	n := x.(*name)
	n.index = len(*q)
	*q = append(*q, n)
}
func (q *queue) Pop() any {
	old := *q
	n := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	n.index = -1
	return n
}

// key is a name as the checker keeps it: DNS names compare without case or the root's dot.
func key(host string) string { return strings.ToLower(strings.TrimSuffix(host, ".")) }

// pair is one address of one name, as a hosts file line gives it.
type pair struct {
	name string
	addr netip.Addr
}

// pairsOf are the (name, address) pairs an entry puts in the hosts file: its hostname and each
// alias with its address.
func pairsOf(r *endpoint.Record) []pair {
	if r == nil {
		return nil
	}
	addr, err := netip.ParseAddr(r.IP)
	if err != nil {
		return nil // nothing a resolver could serve
	}
	addr = addr.Unmap()
	out := make([]pair, 0, 1+len(r.Aliases))
	out = append(out, pair{key(r.Hostname), addr})
	for _, a := range r.Aliases {
		out = append(out, pair{key(a), addr})
	}
	return out
}

// writes are what a sync's writes did to the names the router's DNS serves: the names whose
// addresses they changed, and the addresses they took from names.
type writes struct {
	touched map[string]bool
	removed []pair
}

// writesOf reads a report's writes that went through. A release is left out: the entry stays
// on the router, the user's again, and what it answers is no longer this cluster's to check.
// A write that changed no (name, address) pair (tags, a mark) changes nothing the DNS serves.
func writesOf(r *controller.Report) writes {
	w := writes{touched: map[string]bool{}}
	for i := range r.Results {
		ch, res := &r.Changes[i], &r.Results[i]
		if res.Err != nil || ch.Action == plan.Release {
			continue
		}
		now := ch.New
		if res.Stored != nil {
			now = res.Stored
		}
		before, after := pairsOf(ch.Old), pairsOf(now)
		if ch.Action == plan.Delete {
			after = nil
		}
		for _, p := range before {
			if !slices.Contains(after, p) {
				w.removed = append(w.removed, p)
				w.touched[p.name] = true
			}
		}
		for _, p := range after {
			if !slices.Contains(before, p) {
				w.touched[p.name] = true
			}
		}
	}
	return w
}

// merge adds o's writes to w's.
func (w *writes) merge(o writes) {
	if w.touched == nil {
		w.touched = map[string]bool{}
	}
	for n := range o.touched {
		w.touched[n] = true
	}
	w.removed = append(w.removed, o.removed...)
}

// wantOf are the addresses each name should answer with after a sync: every entry this
// cluster owns (those marked for deletion too, which stay on the router until they go) gives
// its hostname and each of its aliases its address.
//
// beside are the names among them that lines of others carry too (State.Foreign, Unowned).
func wantOf(r *controller.Report) (want map[string][]netip.Addr, beside map[string]bool) {
	out := make(map[string][]netip.Addr, len(r.Entries))
	for _, recs := range r.Entries {
		for i := range recs {
			for _, p := range pairsOf(&recs[i]) {
				out[p.name] = append(out[p.name], p.addr)
			}
		}
	}
	for n, addrs := range out {
		out[n] = sortedUnique(addrs)
	}
	if st := r.State; st != nil {
		for _, byHost := range []map[string][]endpoint.Record{st.Foreign, st.Unowned} {
			for _, recs := range byHost {
				for i := range recs {
					for _, p := range pairsOf(&recs[i]) {
						if _, ours := out[p.name]; ours && !slices.Contains(out[p.name], p.addr) {
							if beside == nil {
								beside = map[string]bool{}
							}
							beside[p.name] = true
						}
					}
				}
			}
		}
	}
	return out, beside
}

// refsOf are the objects that claim each name, as a hostname or an alias.
func refsOf(r *controller.Report) map[string][]endpoint.SourceRef {
	out := make(map[string][]endpoint.SourceRef, len(r.Desired))
	for _, ep := range r.Desired {
		out[key(ep.Hostname)] = ep.Sources
		for _, a := range ep.Aliases {
			out[key(a)] = append(out[key(a)], ep.Sources...)
		}
	}
	return out
}

// digest takes a sync's report (nil when only writes came) and the writes of the syncs since
// the last digest: names written are asked a grace after now, names new to the checker too,
// names that lost addresses by a write are asked until those stop answering, and names that
// are no longer this cluster's and lost nothing by its writes are forgotten.
func (c *Checker) digest(r *controller.Report, w writes, now time.Time) {
	if r != nil {
		want, beside := wantOf(r)
		refs := refsOf(r)
		var fresh []*name
		for host, addrs := range want {
			n := c.names[host]
			switch {
			case n == nil:
				n = &name{host: host, index: -1}
				c.names[host] = n
				n.setAddrs(addrs, nil)
				n.rewritten(now, c.grace)
				heap.Push(&c.queue, n)
				if !w.touched[host] {
					fresh = append(fresh, n)
				}
			case !slices.Equal(n.want, addrs):
				n.setAddrs(addrs, n.gone)
				w.touched[host] = true
			}
			if rs := refs[host]; len(rs) > 0 {
				n.refs = rs
			}
			n.beside = beside[host]
		}
		for host, n := range c.names {
			if _, ok := want[host]; !ok && len(n.want) > 0 {
				n.setAddrs(nil, n.gone)
			}
		}
		c.spread(fresh)
	}
	for _, p := range w.removed {
		n := c.names[p.name]
		if n == nil {
			// A name the checker never knew: it was deleted before this replica led. Its
			// objects are not known, but the log and the metric still tell.
			n = &name{host: p.name, index: -1}
			c.names[p.name] = n
			heap.Push(&c.queue, n)
		}
		if !slices.Contains(n.want, p.addr) && !slices.Contains(n.gone, p.addr) {
			n.setAddrs(n.want, sortedUnique(append(n.gone, p.addr)))
		}
	}
	for host := range w.touched {
		if n := c.names[host]; n != nil {
			n.rewritten(now, c.grace)
			heap.Fix(&c.queue, n.index)
		}
	}
	for host, n := range c.names {
		if len(n.want) == 0 && len(n.gone) == 0 {
			c.forget(host, n, "no longer this cluster's")
		}
	}
}

// spread gives names the checker meets without a write (the first sync it sees) due times
// spread evenly over one interval from a grace on, in the order of their names: the first
// round over them is as even as every later one.
func (c *Checker) spread(fresh []*name) {
	if len(fresh) == 0 {
		return
	}
	slices.SortFunc(fresh, func(a, b *name) int { return strings.Compare(a.host, b.host) })
	step := c.interval / time.Duration(len(fresh))
	for i, n := range fresh {
		n.due = n.due.Add(time.Duration(i) * step)
		heap.Fix(&c.queue, n.index)
	}
}
