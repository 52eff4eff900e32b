package main

import (
	"fmt"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// durationMetric is the operator's histogram of its calls to the router.
const durationMetric = "router_hosts_operator_router_hosts_request_duration_seconds"

// callTotals are the operator's calls of one RPC so far: how many, and their time in all.
type callTotals struct {
	n   uint64
	sum float64
}

// durations are the syncs of one kind timed in a period.
type durations struct {
	n   int
	sum time.Duration
}

func (d *durations) add(t time.Duration) { d.n++; d.sum += t }

func (d durations) mean() time.Duration {
	if d.n == 0 {
		return 0
	}
	return d.sum / time.Duration(d.n)
}

// accumulator keeps the operator's own figures across its restarts (the rename) and hands out
// each period's share.
type accumulator struct {
	// folded are the calls of operators that have stopped; taken what earlier periods took.
	folded, taken map[string]callTotals
	busyD, quietD durations
}

func (a *accumulator) busy() *durations  { return &a.busyD }
func (a *accumulator) quiet() *durations { return &a.quietD }

// calls is the running operator's histogram of calls, by RPC.
func calls(op *running) (map[string]callTotals, error) {
	fams, err := op.op.Gatherer().Gather()
	if err != nil {
		return nil, fmt.Errorf("reading the operator's metrics: %w", err)
	}
	out := map[string]callTotals{}
	for _, f := range fams {
		if f.GetName() != durationMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			out[label(m, "method")] = callTotals{n: m.GetHistogram().GetSampleCount(), sum: m.GetHistogram().GetSampleSum()}
		}
	}
	return out, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// fold keeps the calls of an operator about to stop.
func (a *accumulator) fold(op *running) {
	now, err := calls(op)
	if err != nil {
		return
	}
	if a.folded == nil {
		a.folded = map[string]callTotals{}
	}
	for m, t := range now {
		f := a.folded[m]
		a.folded[m] = callTotals{n: f.n + t.n, sum: f.sum + t.sum}
	}
}

// take is the period's calls by RPC and its mean sync durations, and starts the next period.
func (a *accumulator) take(op *running) (map[string]callCost, time.Duration, time.Duration, int, error) {
	now, err := calls(op)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	if a.taken == nil {
		a.taken = map[string]callTotals{}
	}
	out := map[string]callCost{}
	for m, t := range now {
		f := a.folded[m]
		total := callTotals{n: f.n + t.n, sum: f.sum + t.sum}
		before := a.taken[m]
		if n := total.n - before.n; n > 0 {
			out[m] = callCost{n: n, mean: time.Duration((total.sum - before.sum) / float64(n) * float64(time.Second))}
		}
		a.taken[m] = total
	}
	busy, quiet, syncs := a.busyD.mean(), a.quietD.mean(), a.busyD.n+a.quietD.n
	a.busyD, a.quietD = durations{}, durations{}
	return out, busy, quiet, syncs, nil
}
