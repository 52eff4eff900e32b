package soak

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// history is every action of a run with the hostnames it touched, so that a failure can show
// what happened to its entries.
type history struct {
	mu   sync.Mutex
	list []event
}

type event struct {
	at    time.Duration
	what  string
	hosts []string
}

func (h *history) add(at time.Duration, what string, hosts []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.list = append(h.list, event{at: at, what: what, hosts: hosts})
}

// touching renders the last n events up to before that touched any of hosts, with the faults
// (events that name no hostname) among them.
func (h *history) touching(hosts []string, before time.Duration, n int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var picked []event
	for i := len(h.list) - 1; i >= 0 && len(picked) < n; i-- {
		e := h.list[i]
		if e.at > before {
			continue
		}
		if len(e.hosts) == 0 || slices.ContainsFunc(e.hosts, func(x string) bool { return slices.Contains(hosts, x) }) {
			picked = append(picked, e)
		}
	}
	slices.Reverse(picked)
	var b strings.Builder
	for _, e := range picked {
		fmt.Fprintf(&b, "    %9s  %s\n", e.at.Round(time.Millisecond), e.what)
	}
	return b.String()
}

func (h *history) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.list)
}

// write saves every event, one a line, for reading a run afterwards.
func (h *history) write(path string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, e := range h.list {
		fmt.Fprintf(&b, "%9s  %s\n", e.at.Round(time.Millisecond), e.what)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}
