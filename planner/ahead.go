package planner

import (
	"context"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// ahead starts the search of an event sync's lone new hostname before the registry decides,
// so that the router's replay and the decision run side by side instead of one after the
// other: a new name reaches the router sooner by the decision's time. It guesses from the
// endpoints alone which hostname the sync will create: the one hostname that the last sync's
// endpoints did not have and that no known entry has. Each hostname is guessed at most once,
// when it first appears, so a hostname the registry then refuses costs one search and no
// more; a guess the plan does not confirm is thrown away, and the sync searches as it would
// have.
type ahead struct {
	// seen are the hostnames, lowercase, of the last sync's endpoints.
	seen map[string]struct{}
}

// search is a search started ahead of the decision.
type search struct {
	host   string
	cancel context.CancelFunc
	done   chan struct{}
	// Set before done is closed.
	found []endpoint.Record
	err   error
	took  time.Duration
}

// start guesses the sync's lone new hostname and starts its search, or returns nil.
func (a *ahead) start(ctx context.Context, read Reader, clk clock.PassiveClock, k *known, eps []*endpoint.Endpoint) *search {
	host := a.guess(k, eps)
	if host == "" {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &search{host: host, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		begin := clk.Now()
		s.found, s.err = read.Search(ctx, host)
		s.took = clk.Since(begin)
	}()
	return s
}

// remember keeps eps' hostnames for the next sync's guess.
func (a *ahead) remember(eps []*endpoint.Endpoint) {
	if a.seen == nil {
		a.seen = make(map[string]struct{}, len(eps))
	}
	clear(a.seen)
	for _, e := range eps {
		a.seen[strings.ToLower(e.Hostname)] = struct{}{}
	}
}

// guess is the one hostname, lowercase, of eps that the last sync's endpoints and the known
// entries lack; "" when there is none or more than one, or no sync came before.
func (a *ahead) guess(k *known, eps []*endpoint.Endpoint) string {
	if a.seen == nil || !k.valid {
		return ""
	}
	host := ""
	for _, e := range eps {
		h := strings.ToLower(e.Hostname)
		if _, ok := a.seen[h]; ok || h == host {
			continue
		}
		if host != "" {
			return ""
		}
		host = h
	}
	if host == "" || k.has(host) {
		return ""
	}
	return host
}

// wait is the search's answer once it has come.
func (s *search) wait() ([]endpoint.Record, time.Duration, error) {
	<-s.done
	s.cancel()
	return s.found, s.took, s.err
}

// drop abandons a guess the plan did not confirm, and waits for its goroutine to end, so
// that no read outlives its sync.
func (s *search) drop() {
	if s == nil {
		return
	}
	s.cancel()
	<-s.done
}
