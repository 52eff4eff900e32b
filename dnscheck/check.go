package dnscheck

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/router-hosts-operator/router-hosts-operator/dnsquery"
)

// Finding is what a name's answer says of it.
type Finding uint8

// The findings.
const (
	// Unchecked: not asked yet, or not since its last write.
	Unchecked Finding = iota
	// Answering: the server answers with exactly the addresses written.
	Answering
	// Missing: the server has no address for the name (NXDOMAIN, or no data of the types
	// written).
	Missing
	// Wrong: the server answers with other addresses than those written.
	Wrong
	// StillAnswering: a name this cluster deleted still answers with an address it deleted.
	StillAnswering
	// Gone: a deleted name no longer answers with what it had.
	Gone
	// NoAnswer: the server did not answer at all (no answer in time, SERVFAIL, REFUSED, a
	// network error), which says nothing about the name.
	NoAnswer
)

// String is the finding as logs say it.
func (v Finding) String() string {
	switch v {
	case Answering:
		return "answering"
	case Missing:
		return "missing"
	case Wrong:
		return "wrong"
	case StillAnswering:
		return "still answering"
	case Gone:
		return "gone"
	case NoAnswer:
		return "no answer"
	}
	return "unchecked"
}

// Label is the reason label of the names_not_answering metric for a name not answering as
// written: missing, wrong or still_answering; "" for the other findings.
func (v Finding) Label() string {
	switch v {
	case Missing:
		return "missing"
	case Wrong:
		return "wrong"
	case StillAnswering:
		return "still_answering"
	}
	return ""
}

// Labels are every value Label gives, for metrics that start each at zero.
var Labels = []string{Missing.Label(), Wrong.Label(), StillAnswering.Label()}

// Bad reports whether the finding is a name not answering as written (Label is not "").
func (v Finding) Bad() bool { return v.Label() != "" }

// Result is one check of one name.
type Result struct {
	// Name is the name asked for.
	Name string
	// Want are the addresses written (sorted); none for a name that should not answer.
	Want []netip.Addr
	// Got are the addresses the server answered, of the types asked for (sorted).
	Got []netip.Addr
	// NXDomain says the server answered that the name does not exist.
	NXDomain bool
	Finding  Finding
	// Err is why the server gave no answer (Finding NoAnswer).
	Err error
}

// String says the result in a sentence, for logs, events and conditions.
func (r Result) String() string {
	switch r.Finding {
	case Answering:
		return fmt.Sprintf("%s answers %s as written", r.Name, addrsText(r.Want))
	case Missing:
		how := "no data"
		if r.NXDomain {
			how = "NXDOMAIN"
		}
		return fmt.Sprintf("%s has no address (%s), written %s", r.Name, how, addrsText(r.Want))
	case Wrong:
		return fmt.Sprintf("%s answers %s, written %s", r.Name, addrsText(r.Got), addrsText(r.Want))
	case StillAnswering:
		return fmt.Sprintf("%s still answers %s after its deletion", r.Name, addrsText(r.Got))
	case Gone:
		return fmt.Sprintf("%s no longer answers", r.Name)
	case NoAnswer:
		return fmt.Sprintf("no answer for %s: %v", r.Name, r.Err)
	}
	return r.Name + " is not checked yet"
}

func addrsText(addrs []netip.Addr) string {
	if len(addrs) == 0 {
		return "nothing"
	}
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// Check asks server (host:port) for hostname's addresses once and compares them with want,
// the addresses written: the check of one name that a one-shot command makes. It asks for the
// record types of want (A for IPv4, AAAA for IPv6); with want empty, for both, and then a name
// that answers with any address is StillAnswering. ctx bounds the questions; give it a
// deadline (DefaultTimeout is what the Checker gives each).
func Check(ctx context.Context, server, hostname string, want []netip.Addr) Result {
	want = sortedUnique(want)
	if server == "" {
		return Result{Name: hostname, Want: want, Finding: NoAnswer, Err: errNoServer}
	}
	return judge(hostname, want, nil, false, ask(ctx, dnsquery.Query, server, hostname, typesOf(want, nil)))
}

// answer is what the server said of one name, over the types asked for.
type answer struct {
	got      []netip.Addr
	nxdomain bool
	err      error
	// queries counts the questions asked, and results their outcomes, for the metrics.
	results []string
}

// The outcomes of one question, the result label of verify_dns_queries_total.
const (
	queryAnswered = "answered"
	queryNoData   = "no_data"
	queryNXDomain = "nxdomain"
	queryError    = "error"
)

// QueryResults are every outcome of one question, for metrics that start each at zero.
var QueryResults = []string{queryAnswered, queryNoData, queryNXDomain, queryError}

// queryFunc is dnsquery.Query, which the Checker's tests replace.
type queryFunc func(ctx context.Context, server, name string, t dnsmessage.Type) (dnsquery.Answer, error)

// ask puts the questions of types about name to server, in turn; the first error ends it.
func ask(ctx context.Context, query queryFunc, server, name string, types []dnsmessage.Type) answer {
	var a answer
	for _, t := range types {
		got, err := query(ctx, server, name, t)
		if err != nil {
			a.results = append(a.results, queryError)
			a.err = err
			return a
		}
		switch got.Status {
		case dnsquery.NXDomain:
			a.results, a.nxdomain = append(a.results, queryNXDomain), true
		case dnsquery.NoData:
			a.results = append(a.results, queryNoData)
		default:
			a.results = append(a.results, queryAnswered)
		}
		for _, addr := range got.Addrs {
			a.got = append(a.got, addr.Unmap())
		}
	}
	a.got = sortedUnique(a.got)
	return a
}

// judge compares what the server answered for name with want, the addresses written, and gone,
// the addresses this cluster deleted that must no longer answer (nil for a one-shot check:
// then any address of a name that wants none is still answering). beside: others' lines carry
// the name too, so it answers as written with every address of want among others.
func judge(name string, want, gone []netip.Addr, beside bool, a answer) Result {
	r := Result{Name: name, Want: want, Got: a.got, NXDomain: a.nxdomain, Err: a.err}
	switch {
	case a.err != nil:
		r.Finding = NoAnswer
	case len(want) > 0 && (slices.Equal(a.got, want) || beside && !slices.ContainsFunc(want, func(w netip.Addr) bool { return !slices.Contains(a.got, w) })):
		r.Finding = Answering
	case len(want) > 0 && len(a.got) == 0:
		r.Finding = Missing
	case len(want) > 0:
		r.Finding = Wrong
	case len(a.got) > 0 && (gone == nil || slices.ContainsFunc(a.got, func(g netip.Addr) bool { return slices.Contains(gone, g) })):
		r.Finding = StillAnswering
	default:
		r.Finding = Gone
	}
	return r
}

// typesOf are the record types that hold addrs (A for IPv4, AAAA for IPv6), A first; both
// when there are none.
func typesOf(want, gone []netip.Addr) []dnsmessage.Type {
	var v4, v6 bool
	for _, a := range slices.Concat(want, gone) {
		if a.Unmap().Is4() {
			v4 = true
		} else {
			v6 = true
		}
	}
	switch {
	case v4 && !v6:
		return []dnsmessage.Type{dnsmessage.TypeA}
	case v6 && !v4:
		return []dnsmessage.Type{dnsmessage.TypeAAAA}
	}
	return []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA}
}

// sortedUnique is addrs unmapped (an IPv4-mapped IPv6 address is the IPv4 address a hosts
// file line serves), sorted and without repeats, in a slice of its own.
func sortedUnique(addrs []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, a.Unmap())
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(out)
}

// errNoServer is the error of a check with no server to ask.
var errNoServer = errors.New("no DNS server to ask (--verify-dns)")
