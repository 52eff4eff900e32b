package source

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// The DNS cache's timing rules.
const (
	// dnsTimeout bounds one lookup (both record types).
	dnsTimeout = 5 * time.Second
	// An answer stands for its records' TTL, kept within [dnsMinTTL, dnsMaxTTL] so that a
	// zero TTL does not turn into a query a sync and a long one still follows a change.
	dnsMinTTL, dnsMaxTTL = 5 * time.Second, time.Hour
	// dnsRetry is when a failed lookup is tried again.
	dnsRetry = 30 * time.Second
)

// DNS answers the hostnames the sources meet where an address is wanted (a load balancer that
// reports only a hostname, external-dns's target annotation) from a cache that lookups beside
// the loop fill: a sync never waits on DNS. An answer stands for its records' TTL; a name looked
// up since is asked again when its answer expires, one nobody looked up is forgotten then, and
// an answer that differs from the last tells the resolver, so that a sync follows. Until a
// name is first answered, and while its lookups fail, it has no addresses and the entries of
// the objects that name it are held as they are.
type DNS struct {
	ctx     context.Context
	server  string // host:port
	clk     clock.WithDelayedExecution
	changed func()
	timeout time.Duration // of one lookup

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

// NewDNS returns a cache that asks server (host:port) and takes its timers from clk; its
// lookups stop when ctx ends.
func NewDNS(ctx context.Context, server string, clk clock.WithDelayedExecution) *DNS {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &DNS{ctx: ctx, server: server, clk: clk, timeout: dnsTimeout, names: map[string]*dnsAnswer{}}
}

// SystemDNSServer is the first nameserver of /etc/resolv.conf, as host:port.
func SystemDNSServer() (string, error) {
	raw, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return "", fmt.Errorf("reading the system's DNS server: %w", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "nameserver" {
			return net.JoinHostPort(f[1], "53"), nil
		}
	}
	return "", errors.New("/etc/resolv.conf names no nameserver")
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
	ctx, cancel := context.WithTimeout(d.ctx, d.timeout)
	ips, ttl, err := lookup(ctx, d.server, name)
	cancel()
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

// lookup asks server for name's A and AAAA records. Any failure fails the whole lookup, so that
// a half answer never removes an address.
func lookup(ctx context.Context, server, name string) ([]string, time.Duration, error) {
	var (
		ips []string
		ttl = dnsMaxTTL
	)
	for _, t := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
		got, least, err := query(ctx, server, name, t)
		if err != nil {
			return nil, 0, err
		}
		ips, ttl = append(ips, got...), min(ttl, least)
	}
	if len(ips) == 0 {
		return nil, 0, fmt.Errorf("%s has no A or AAAA records", name)
	}
	return endpoint.SortedUnique(ips), max(ttl, dnsMinTTL), nil
}

// query sends one question over UDP, and again over TCP when the answer was truncated. It
// returns the addresses and the least TTL of the answer's records (dnsMaxTTL without any).
func query(ctx context.Context, server, name string, t dnsmessage.Type) ([]string, time.Duration, error) {
	fqdn, err := dnsmessage.NewName(name + ".")
	if err != nil {
		return nil, 0, fmt.Errorf("DNS name %q: %w", name, err)
	}
	var idb [2]byte
	_, _ = rand.Read(idb[:])
	q := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: binary.BigEndian.Uint16(idb[:]), RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: fqdn, Type: t, Class: dnsmessage.ClassINET}},
	}
	packed, err := q.Pack()
	if err != nil {
		return nil, 0, fmt.Errorf("DNS query for %s: %w", name, err)
	}
	m, err := exchange(ctx, "udp", server, packed, q.Header.ID)
	if err == nil && m.Truncated {
		m, err = exchange(ctx, "tcp", server, packed, q.Header.ID)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("asking %s for %s %s: %w", server, name, t, err)
	}
	switch m.RCode {
	case dnsmessage.RCodeSuccess:
	case dnsmessage.RCodeNameError:
		return nil, 0, fmt.Errorf("%s: no such host", name)
	default:
		return nil, 0, fmt.Errorf("asking %s for %s %s: %s", server, name, t, m.RCode)
	}
	var ips []string
	ttl := dnsMaxTTL
	for _, rr := range m.Answers {
		ttl = min(ttl, time.Duration(rr.Header.TTL)*time.Second)
		var raw net.IP
		switch b := rr.Body.(type) {
		case *dnsmessage.AResource:
			raw = b.A[:]
		case *dnsmessage.AAAAResource:
			raw = b.AAAA[:]
		default:
			continue
		}
		if ip, err := endpoint.NormalizeIP(raw.String()); err == nil {
			ips = append(ips, ip)
		}
	}
	return ips, ttl, nil
}

// exchange sends one packed query and reads the answer with the same ID.
func exchange(ctx context.Context, network, server string, packed []byte, id uint16) (*dnsmessage.Message, error) {
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, network, server)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stream := network == "tcp"
	if stream {
		packed = append(binary.BigEndian.AppendUint16(nil, uint16(len(packed))), packed...)
	}
	if _, err := conn.Write(packed); err != nil {
		return nil, err
	}
	for {
		var buf []byte
		if stream {
			var n [2]byte
			if _, err := io.ReadFull(conn, n[:]); err != nil {
				return nil, err
			}
			buf = make([]byte, binary.BigEndian.Uint16(n[:]))
			if _, err := io.ReadFull(conn, buf); err != nil {
				return nil, err
			}
		} else {
			buf = make([]byte, 1232)
			n, err := conn.Read(buf)
			if err != nil {
				return nil, err
			}
			buf = buf[:n]
		}
		var m dnsmessage.Message
		if err := m.Unpack(buf); err != nil || m.ID != id || !m.Response {
			if stream {
				return nil, fmt.Errorf("malformed DNS answer: %v", err)
			}
			continue // not our answer: wait for it until the deadline
		}
		return &m, nil
	}
}
