package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"sort"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// SourceKind is the kind the webhook's entries carry in their kind: tag and comment.
const SourceKind = "external-dns"

// published is what external-dns has published through the webhook: hostname → addresses.
type published map[string]map[string]bool

// publishedOf reads it from the server's entries: those this webhook owns, less the ones
// marked for deletion (external-dns deleted them; shown again, it would delete them again).
func publishedOf(recs []endpoint.Record, owns func(*endpoint.Record) bool, marked func(*endpoint.Record) bool) published {
	h := published{}
	for i := range recs {
		rec := &recs[i]
		if !owns(rec) || marked(rec) {
			continue
		}
		// As external-dns's records are read (parse), so that an entry spelled otherwise on
		// the server (edited by hand) is the same record, not a new one beside it.
		host, errH := endpoint.NormalizeHostname(rec.Hostname)
		ip, errI := endpoint.NormalizeIP(rec.IP)
		if errH != nil || errI != nil {
			continue
		}
		h.add(host, ip)
	}
	return h
}

// clone is a copy to change; nil stays nil.
func (h published) clone() published {
	if h == nil {
		return nil
	}
	out := make(published, len(h))
	for host, ips := range h {
		out[host] = maps.Clone(ips)
	}
	return out
}

func (h published) add(host, ip string) {
	if h[host] == nil {
		h[host] = map[string]bool{}
	}
	h[host][ip] = true
}

func (h published) remove(host, ip string) {
	delete(h[host], ip)
	if len(h[host]) == 0 {
		delete(h, host)
	}
}

// records renders what is published as external-dns sees records: per hostname an A endpoint with
// its IPv4 addresses and an AAAA endpoint with its IPv6 ones, sorted.
func (h published) records() []*WireEndpoint {
	out := []*WireEndpoint{}
	for _, host := range h.hosts() {
		var v4, v6 []string
		for ip := range h[host] {
			if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
				v4 = append(v4, ip)
			} else {
				v6 = append(v6, ip)
			}
		}
		for _, r := range []struct {
			typ string
			ips []string
		}{{RecordTypeA, v4}, {RecordTypeAAAA, v6}} {
			if len(r.ips) > 0 {
				sort.Strings(r.ips)
				out = append(out, &WireEndpoint{DNSName: host, Targets: r.ips, RecordType: r.typ})
			}
		}
	}
	return out
}

func (h published) hosts() []string {
	hosts := make([]string, 0, len(h))
	for host := range h {
		hosts = append(hosts, host)
	}
	sort.Strings(hosts)
	return hosts
}

// apply takes external-dns's changes: what is deleted or updated away goes first, then what
// is created or updated to, so an update that keeps an address keeps it. Nothing is applied
// when any endpoint is invalid.
func (h published) apply(ch *Changes) error {
	type step struct {
		eps []*WireEndpoint
		add bool
		of  string
	}
	steps := []step{{ch.Delete, false, "delete"}, {ch.UpdateOld, false, "updateOld"}, {ch.Create, true, "create"}, {ch.UpdateNew, true, "updateNew"}}
	for _, s := range steps {
		for i, e := range s.eps {
			if _, _, err := parse(e); err != nil {
				return fmt.Errorf("%s[%d]: %w", s.of, i, err)
			}
		}
	}
	for _, s := range steps {
		for _, e := range s.eps {
			host, ips, _ := parse(e)
			for _, ip := range ips {
				if s.add {
					h.add(host, ip)
				} else {
					h.remove(host, ip)
				}
			}
		}
	}
	return nil
}

// endpoints is what is published as the controller's desired endpoints, one per hostname, each
// from a source named after its hostname so that its entries carry a stable source: tag.
func (h published) endpoints(namespace string) []*endpoint.Endpoint {
	out := make([]*endpoint.Endpoint, 0, len(h))
	for _, host := range h.hosts() {
		ips := make([]string, 0, len(h[host]))
		for ip := range h[host] {
			ips = append(ips, ip)
		}
		sort.Strings(ips)
		out = append(out, &endpoint.Endpoint{Hostname: host, Targets: ips, Sources: []endpoint.SourceRef{refOf(namespace, host)}})
	}
	return out
}

// refOf is the reference of the external-dns record behind a hostname. Its UID is the same in
// every webhook that publishes the name, so it proves no entry this webhook's
// (registry.Config.HostnameUIDs).
func refOf(namespace, host string) endpoint.SourceRef {
	sum := sha256.Sum256([]byte(host))
	return endpoint.SourceRef{Group: "externaldns.k8s.io", Version: "v1alpha1", Kind: SourceKind, Namespace: namespace, Name: host,
		UID: "edns-" + hex.EncodeToString(sum[:8])}
}

// parse reads one endpoint external-dns sent: an A or AAAA record of a valid hostname whose
// targets are addresses of its family.
func parse(e *WireEndpoint) (host string, ips []string, err error) {
	if e == nil {
		return "", nil, fmt.Errorf("null endpoint")
	}
	host, err = endpoint.NormalizeHostname(e.DNSName)
	if err != nil {
		return "", nil, fmt.Errorf("%q: %w", e.DNSName, err)
	}
	if e.RecordType != RecordTypeA && e.RecordType != RecordTypeAAAA {
		return "", nil, fmt.Errorf("%s %s: router-hosts holds only A and AAAA records", e.DNSName, e.RecordType)
	}
	for _, t := range e.Targets {
		ip, err := target(e.RecordType, t)
		if err != nil {
			return "", nil, fmt.Errorf("%s %s: %w", e.DNSName, e.RecordType, err)
		}
		ips = append(ips, ip)
	}
	return host, ips, nil
}

// target reads one target of a record of type typ: an address of that family.
func target(typ, t string) (string, error) {
	ip, err := endpoint.NormalizeIP(t)
	if err != nil {
		return "", fmt.Errorf("target %q is not an address: %w", t, err)
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return "", fmt.Errorf("target %q: %w", t, err)
	}
	if a.Is4() != (typ == RecordTypeA) {
		return "", fmt.Errorf("target %q is not an address of an %s record", t, typ)
	}
	return ip, nil
}

// dropped is a record adjust left out, and why.
type dropped struct {
	name, recordType, why string
}

// adjust makes external-dns's desired records what the webhook publishes, so that its plan
// compares like with like and converges: A and AAAA records only, their names as router-hosts
// writes them, address targets of their family only, no TTL and no provider-specific
// properties (router-hosts has neither). Everything else is dropped and said why.
func adjust(in []*WireEndpoint) ([]*WireEndpoint, []dropped) {
	out := make([]*WireEndpoint, 0, len(in))
	var drops []dropped
	for _, e := range in {
		if e == nil {
			continue
		}
		if e.RecordType != RecordTypeA && e.RecordType != RecordTypeAAAA {
			drops = append(drops, dropped{e.DNSName, e.RecordType, "router-hosts holds only A and AAAA records"})
			continue
		}
		host, err := endpoint.NormalizeHostname(e.DNSName)
		if err != nil {
			drops = append(drops, dropped{e.DNSName, e.RecordType, err.Error()})
			continue
		}
		var ips []string
		for _, t := range e.Targets {
			ip, err := target(e.RecordType, t)
			if err != nil {
				drops = append(drops, dropped{e.DNSName, e.RecordType, err.Error() + "; target dropped"})
				continue
			}
			ips = append(ips, ip)
		}
		if len(ips) == 0 {
			continue
		}
		adj := *e
		adj.DNSName, adj.Targets, adj.RecordTTL, adj.ProviderSpecific = host, endpoint.SortedUnique(ips), 0, nil
		out = append(out, &adj)
	}
	return out, drops
}
