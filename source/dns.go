package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/dnsquery"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// The DNS cache's timing rules.
const (
	// An answer stands for its records' TTL, kept within [dnsMinTTL, dnsMaxTTL] so that a
	// zero TTL does not turn into a query a sync and a long one still follows a change.
	dnsMinTTL, dnsMaxTTL = 5 * time.Second, time.Hour
	// dnsRetry is when a failed lookup is tried again.
	dnsRetry = 30 * time.Second
)

// The system resolver's defaults and limits (glibc's resolv.h, which Go's resolver and musl
// follow): the first three nameservers of resolv.conf, 5 s for each to answer and two rounds
// over them, unless its options say otherwise within [1 s, 30 s] and [1, 5].
const (
	maxNameservers                 = 3
	defaultDNSTimeout              = 5 * time.Second
	minDNSTimeout, maxDNSTimeout   = time.Second, 30 * time.Second
	defaultDNSAttempts             = 2
	minDNSAttempts, maxDNSAttempts = 1, 5
)

// Nameservers are the DNS servers the cache asks, and how long it waits on them.
type Nameservers struct {
	// Servers are host:port, asked in turn.
	Servers []string
	// Timeout is how long one server has to answer a name (its A and AAAA questions);
	// Attempts is how many rounds over Servers a lookup makes before it fails. Zero stands
	// for the system resolver's default.
	Timeout  time.Duration
	Attempts int
}

// withDefaults is ns with zero fields set to the system resolver's defaults.
func (ns Nameservers) withDefaults() Nameservers {
	if ns.Timeout <= 0 {
		ns.Timeout = defaultDNSTimeout
	}
	if ns.Attempts <= 0 {
		ns.Attempts = defaultDNSAttempts
	}
	return ns
}

// DNS answers the hostnames the sources meet where an address is wanted (a load balancer that
// reports only a hostname, external-dns's target annotation) from a cache that lookups beside
// the loop fill: a sync never waits on DNS. An answer stands for its records' TTL; a name looked
// up since is asked again when its answer expires, one nobody looked up is forgotten then, and
// an answer that differs from the last tells the resolver, so that a sync follows. Until a
// name is first answered, and while its lookups fail, it has no addresses and the entries of
// the objects that name it are held as they are.
//
// The names are absolute: a lookup asks for the name as given, never with resolv.conf's
// search domains appended, whatever its ndots.
type DNS struct {
	ctx     context.Context
	ns      Nameservers
	clk     clock.WithDelayedExecution
	changed func()

	mu    sync.Mutex
	names map[string]*dnsAnswer
}

type dnsAnswer struct {
	ips []string
	err error
	// answered: a lookup has ended (ips or err hold its result); before that the name waits.
	answered bool
	// used: looked up since the answer's lookup began, so its expiry asks again.
	used bool
}

// NewDNS returns a cache that asks ns and takes its timers, the servers' timeouts among them,
// from clk; its lookups stop when ctx ends.
func NewDNS(ctx context.Context, ns Nameservers, clk clock.WithDelayedExecution) *DNS {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &DNS{ctx: ctx, ns: ns.withDefaults(), clk: clk, names: map[string]*dnsAnswer{}}
}

// SystemNameservers are the nameservers of /etc/resolv.conf, with its timeout and attempts.
func SystemNameservers() (Nameservers, error) {
	return ReadResolvConf("/etc/resolv.conf")
}

// ReadResolvConf reads the nameservers of a resolv.conf file, with its timeout and attempts.
func ReadResolvConf(path string) (Nameservers, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Nameservers{}, fmt.Errorf("reading the system's DNS servers: %w", err)
	}
	ns := parseResolvConf(string(raw), "53")
	if len(ns.Servers) == 0 {
		return Nameservers{}, fmt.Errorf("%s names no nameserver", path)
	}
	return ns, nil
}

// parseResolvConf reads resolv.conf as the system's resolver does: the nameservers that are
// IP addresses (an IPv6 one may carry a zone), the first maxNameservers of them, each at port;
// the timeout: and attempts: options, the last of each winning and kept within the system's
// bounds. Lines starting with # or ; are comments; search, domain, ndots and the other options
// say how a relative name is completed or how queries are sent, and the cache asks absolute
// names its own way, so they are read past.
func parseResolvConf(text, port string) Nameservers {
	var ns Nameservers
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if _, err := netip.ParseAddr(f[1]); err == nil && len(ns.Servers) < maxNameservers {
				ns.Servers = append(ns.Servers, net.JoinHostPort(f[1], port))
			}
		case "options":
			for _, o := range f[1:] {
				name, v, _ := strings.Cut(o, ":")
				n, err := strconv.Atoi(v)
				if err != nil {
					continue
				}
				switch name {
				case "timeout":
					ns.Timeout = min(max(time.Duration(n)*time.Second, minDNSTimeout), maxDNSTimeout)
				case "attempts":
					ns.Attempts = min(max(n, minDNSAttempts), maxDNSAttempts)
				}
			}
		}
	}
	return ns.withDefaults()
}

// Lookup returns name's addresses (canonical, sorted), or none and why. It never waits: a
// name not in the cache is asked for, and until the answer it has none, Waiting.
func (d *DNS) Lookup(name string) ([]string, Unresolved) {
	name = dnsKey(name)
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.names[name]
	if a == nil {
		a = &dnsAnswer{}
		d.names[name] = a
		go d.resolve(name)
	}
	a.used = true
	switch {
	case !a.answered:
		return nil, Unresolved{Why: "waiting for DNS to answer for " + name, Waiting: true}
	case a.err != nil:
		return nil, Unresolved{Why: fmt.Sprintf("DNS lookup of %s failed: %v", name, a.err)}
	}
	return a.ips, Unresolved{}
}

// dnsKey is a name as the cache keeps it: DNS names compare without case or the root's dot.
func dnsKey(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }

// touch marks names in use, as a Lookup does, without looking them up.
func (d *DNS) touch(names []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range names {
		if a := d.names[dnsKey(n)]; a != nil {
			a.used = true
		}
	}
}

// expired asks again for a name looked up since its last lookup began, and forgets it
// otherwise.
func (d *DNS) expired(name string) {
	d.mu.Lock()
	a := d.names[name]
	if a == nil || d.ctx.Err() != nil {
		d.mu.Unlock()
		return
	}
	if !a.used {
		delete(d.names, name)
		d.mu.Unlock()
		return
	}
	a.used = false
	d.mu.Unlock()
	d.resolve(name)
}

// resolve looks name up, keeps the answer until its TTL (a failure until dnsRetry) and tells
// the resolver when the addresses changed.
func (d *DNS) resolve(name string) {
	ips, ttl, err := d.lookup(name)
	if d.ctx.Err() != nil {
		return
	}
	if err != nil {
		ttl = dnsRetry
	}
	d.mu.Lock()
	a := d.names[name]
	changed := !a.answered || (a.err == nil) != (err == nil) || !slices.Equal(a.ips, ips)
	a.ips, a.err, a.answered = ips, err, true
	notify := d.changed
	d.mu.Unlock()
	// In a goroutine of its own: a fake clock runs the function inside Step.
	d.clk.AfterFunc(ttl, func() { go d.expired(name) })
	if changed && notify != nil {
		notify()
	}
}

// errNoSuchHost is an answer that the name does not exist: another server would say the same.
var errNoSuchHost = errors.New("no such host")

// lookup asks the nameservers for name's A and AAAA records as the system's resolver does: in
// order, each until it answers or its timeout passes, moving on to the next after a timeout, a
// network error or an error code (SERVFAIL, REFUSED), for Attempts rounds. An answer ends the
// lookup, "no such host" among them. Any failure of either question fails the server's answer,
// so that a half answer never removes an address.
func (d *DNS) lookup(name string) ([]string, time.Duration, error) {
	if len(d.ns.Servers) == 0 {
		return nil, 0, errors.New("no DNS server to ask")
	}
	if _, err := dnsmessage.NewName(name + "."); err != nil {
		return nil, 0, fmt.Errorf("DNS name %q: %w", name, err) // no server would take it
	}
	var round []string
	for range d.ns.Attempts {
		round = round[:0]
		for _, server := range d.ns.Servers {
			ips, ttl, err := d.ask(server, name)
			switch {
			case d.ctx.Err() != nil:
				return nil, 0, d.ctx.Err()
			case errors.Is(err, errNoSuchHost):
				return nil, 0, err
			case err != nil:
				round = append(round, err.Error())
				continue
			case len(ips) == 0:
				return nil, 0, fmt.Errorf("%s has no A or AAAA records", name)
			}
			return endpoint.SortedUnique(ips), max(ttl, dnsMinTTL), nil
		}
	}
	// The last round's failures say why, one per server.
	return nil, 0, errors.New(strings.Join(round, "; "))
}

// ask puts both questions about name to server at once, and gives it the timeout to answer
// them, on the cache's clock. It returns the addresses and the least TTL of their records
// (dnsMaxTTL without any), or the first failure.
func (d *DNS) ask(server, name string) ([]string, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(d.ctx)
	defer cancel(nil)
	timer := d.clk.AfterFunc(d.ns.Timeout, func() { cancel(fmt.Errorf("no answer in %s", d.ns.Timeout)) })
	defer timer.Stop()
	type answer struct {
		ips []string
		ttl time.Duration
		err error
	}
	answers := make(chan answer, 2)
	for _, t := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
		go func() {
			ips, ttl, err := query(ctx, server, name, t)
			answers <- answer{ips, ttl, err}
		}()
	}
	var (
		ips []string
		ttl = dnsMaxTTL
	)
	for range 2 {
		a := <-answers
		if a.err != nil {
			return nil, 0, a.err
		}
		ips, ttl = append(ips, a.ips...), min(ttl, a.ttl)
	}
	return ips, ttl, nil
}

// query asks server one question through the operator's DNS client. It returns the addresses
// (canonical text) and the least TTL of the answer's records (dnsMaxTTL without any), and
// errNoSuchHost for NXDOMAIN.
func query(ctx context.Context, server, name string, t dnsmessage.Type) ([]string, time.Duration, error) {
	a, err := dnsquery.Query(ctx, server, name, t)
	if err != nil {
		return nil, 0, err
	}
	if a.Status == dnsquery.NXDomain {
		return nil, 0, fmt.Errorf("%s: %w", name, errNoSuchHost)
	}
	ips := make([]string, 0, len(a.Addrs))
	for _, addr := range a.Addrs {
		// As the text of net.IP: an IPv4-mapped AAAA record reads as the IPv4 address.
		if ip, err := endpoint.NormalizeIP(net.IP(addr.AsSlice()).String()); err == nil {
			ips = append(ips, ip)
		}
	}
	return ips, min(a.TTL, dnsMaxTTL), nil
}
