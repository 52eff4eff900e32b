package source

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/router-hosts-operator/router-hosts-operator/test/dnstest"
)

// dnsUnderTest is a cache asking srv, on a fake clock, whose changes are counted on a channel.
func dnsUnderTest(t *testing.T, srv *dnstest.Server) (*DNS, *clocktesting.FakeClock, chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	d := NewDNS(ctx, Nameservers{Servers: []string{srv.Addr}}, clk)
	changed := make(chan struct{}, 16)
	d.changed = func() { changed <- struct{}{} }
	return d, clk, changed
}

// waitChanged waits for the cache to report a changed answer: a lookup on a real socket.
func waitChanged(t *testing.T, changed chan struct{}) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer reported in 10 s")
	}
}

// waitQueries waits until the server has been asked n questions about name, and then for no
// change to be reported (an answer that changed nothing).
func waitQueries(t *testing.T, srv *dnstest.Server, name string, n int, changed chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for srv.Queries(name) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d questions about %s in 10 s, want %d", srv.Queries(name), name, n)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-changed:
		t.Fatal("a change was reported")
	case <-time.After(100 * time.Millisecond):
	}
	if got := srv.Queries(name); got != n {
		t.Fatalf("%d questions about %s, want %d", got, name, n)
	}
}

// stepTimers moves the fake clock by d once its timers are set.
func stepTimers(t *testing.T, clk *clocktesting.FakeClock, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("no timer was set")
		}
		time.Sleep(time.Millisecond)
	}
	clk.Step(d)
}

func TestDNSAnswersBesideTheCaller(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Set("lb.example.com", dnstest.Answer{IPs: []string{"10.0.0.2", "fd00::2", "10.0.0.1"}, TTL: 60})
	d, _, changed := dnsUnderTest(t, srv)

	ips, u := d.Lookup("LB.example.com.")
	if ips != nil || !u.Waiting || !strings.Contains(u.Why, "waiting for DNS") {
		t.Fatalf("first lookup: %v %q, want none while waiting", ips, u.Why)
	}
	waitChanged(t, changed)
	ips, u = d.Lookup("lb.example.com")
	if u.Why != "" || strings.Join(ips, ",") != "10.0.0.1,10.0.0.2,fd00::2" {
		t.Fatalf("answered: %v %q", ips, u.Why)
	}
	if n := srv.Queries("lb.example.com"); n != 2 {
		t.Errorf("%d questions, want one A and one AAAA", n)
	}
}

// answered returns a cache that has looked name up on a server answering a, once the answer
// is in.
func answered(t *testing.T, name string, a dnstest.Answer) (*dnstest.Server, *DNS, *clocktesting.FakeClock, chan struct{}) {
	t.Helper()
	srv := dnstest.Start(t)
	srv.Set(name, a)
	d, clk, changed := dnsUnderTest(t, srv)
	d.Lookup(name)
	waitChanged(t, changed)
	return srv, d, clk, changed
}

func TestDNSFollowsTheTTL(t *testing.T) {
	srv, d, clk, changed := answered(t, "lb.example.com", dnstest.Answer{IPs: []string{"10.0.0.1"}, TTL: 60})

	// Before the TTL nothing is asked; at it, a name in use is asked again, and the same
	// answer is no change.
	stepTimers(t, clk, 59*time.Second)
	if n := srv.Queries("lb.example.com"); n != 2 {
		t.Fatalf("%d questions before the TTL, want 2", n)
	}
	d.Lookup("lb.example.com")
	clk.Step(time.Second)
	waitQueries(t, srv, "lb.example.com", 4, changed)

	// A new answer is a change, and the old one stands until it arrives.
	srv.Set("lb.example.com", dnstest.Answer{IPs: []string{"10.0.0.9"}, TTL: 60})
	d.touch([]string{"lb.example.com"})
	if ips, _ := d.Lookup("lb.example.com"); strings.Join(ips, ",") != "10.0.0.1" {
		t.Fatalf("before the refresh: %v", ips)
	}
	stepTimers(t, clk, time.Minute)
	waitChanged(t, changed)
	if ips, _ := d.Lookup("lb.example.com"); strings.Join(ips, ",") != "10.0.0.9" {
		t.Fatalf("after the refresh: %v", ips)
	}

	// A name nobody looked up since is forgotten at its expiry, not asked again.
	before := srv.Queries("lb.example.com")
	stepTimers(t, clk, time.Minute) // the refresh of the lookup above
	waitQueries(t, srv, "lb.example.com", before+2, changed)
	stepTimers(t, clk, time.Minute) // unused since: forgotten
	waitQueries(t, srv, "lb.example.com", before+2, changed)
	if _, u := d.Lookup("lb.example.com"); !strings.Contains(u.Why, "waiting") {
		t.Fatalf("a forgotten name is asked anew: %q", u.Why)
	}
}

func TestDNSTTLBounds(t *testing.T) {
	srv, d, clk, changed := answered(t, "zero.example.com", dnstest.Answer{IPs: []string{"10.0.0.1"}, TTL: 0})
	stepTimers(t, clk, dnsMinTTL-time.Second)
	d.Lookup("zero.example.com")
	waitQueries(t, srv, "zero.example.com", 2, changed)
	clk.Step(time.Second)
	waitQueries(t, srv, "zero.example.com", 4, changed)
}

func TestDNSFailuresHold(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Set("servfail.example.com", dnstest.Answer{RCode: dnsmessage.RCodeServerFailure})
	srv.Set("empty.example.com", dnstest.Answer{TTL: 60})
	d, clk, changed := dnsUnderTest(t, srv)
	for name, want := range map[string]string{
		"missing.example.com":                     "no such host",
		"servfail.example.com":                    "ServerFailure",
		"empty.example.com":                       "no A or AAAA records",
		strings.Repeat("a.", 130) + "example.com": "DNS name",
	} {
		d.Lookup(name)
		waitChanged(t, changed)
		if ips, u := d.Lookup(name); ips != nil || u.Waiting || !strings.Contains(u.Why, want) {
			t.Errorf("%s: %v %q, want none and %q", name, ips, u.Why, want)
		}
	}
	// A failure is asked again after dnsRetry, and an answer then is a change.
	srv.Set("missing.example.com", dnstest.Answer{IPs: []string{"10.0.0.3"}, TTL: 60})
	stepTimers(t, clk, dnsRetry)
	waitChanged(t, changed)
	if ips, u := d.Lookup("missing.example.com"); strings.Join(ips, ",") != "10.0.0.3" {
		t.Fatalf("after the retry: %v %q", ips, u.Why)
	}
}

func TestDNSFallsBackToTCP(t *testing.T) {
	srv := dnstest.Start(t)
	srv.Set("big.example.com", dnstest.Answer{IPs: []string{"10.0.0.4"}, TTL: 60, Truncate: true})
	d, _, changed := dnsUnderTest(t, srv)

	d.Lookup("big.example.com")
	waitChanged(t, changed)
	if ips, u := d.Lookup("big.example.com"); strings.Join(ips, ",") != "10.0.0.4" {
		t.Fatalf("a truncated answer, asked again over TCP: %v %q", ips, u.Why)
	}
}
