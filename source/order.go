package source

import (
	"cmp"
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// order keeps a source's last listing in its total order (hostname, then the object), so that
// a listing in which few objects changed merges their endpoints into it instead of sorting
// every endpoint again. The rule: an endpoint keeps its place while the memo that made it is
// reused by the listing; the endpoints of memos made afresh are sorted and merged in, and
// those of memos not met are dropped.
type order struct {
	last []placed
}

type placed struct {
	ep *endpoint.Endpoint
	m  *memo
}

// list returns this listing's endpoints in order: the last listing's whose memo was met in
// pass, with fresh (the endpoints of memos made in pass, which the last listing cannot hold)
// merged in.
func (o *order) list(pass uint64, fresh []placed) []*endpoint.Endpoint {
	slices.SortFunc(fresh, comparePlaced)
	merged := make([]placed, 0, len(o.last)+len(fresh))
	j := 0
	for _, p := range o.last {
		if p.m.pass != pass {
			continue
		}
		for j < len(fresh) && comparePlaced(fresh[j], p) < 0 {
			merged = append(merged, fresh[j])
			j++
		}
		merged = append(merged, p)
	}
	merged = append(merged, fresh[j:]...)
	o.last = merged
	out := make([]*endpoint.Endpoint, len(merged))
	for k, p := range merged {
		out[k] = p.ep
	}
	return out
}

func comparePlaced(a, b placed) int { return compareEndpoints(a.ep, b.ep) }

// compareEndpoints is the total order of a listing, so that every replica and every sync sees
// the same list.
func compareEndpoints(a, b *endpoint.Endpoint) int {
	if c := strings.Compare(a.Hostname, b.Hostname); c != 0 {
		return c
	}
	x, y := &a.Sources[0], &b.Sources[0]
	return cmp.Or(strings.Compare(x.Namespace, y.Namespace), strings.Compare(x.Name, y.Name),
		strings.Compare(x.Kind, y.Kind), strings.Compare(x.Group, y.Group))
}
