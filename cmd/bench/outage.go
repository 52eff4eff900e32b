package main

import (
	"context"
	"fmt"
	"time"
)

// stoppable is a server the bench can take away and bring back with its data, as a router
// reboots: the test server. A real router is never stopped by the bench.
type stoppable interface {
	stop()
	restart() error
}

func (t *testServer) stop() { t.srv.Stop() }

func (t *testServer) restart() error {
	if err := t.srv.Restart(); err != nil {
		return fmt.Errorf("restarting the test server: %w", err)
	}
	return nil
}

// outageResult is what an outage run measured.
type outageResult struct {
	// unsynced is the number of statuses that did not say Synced when the server came back.
	unsynced int
	// changed is how long after the server came back the change made during the outage
	// reached it.
	changed time.Duration
	// recovered is the time from the server's return until every status said Synced again.
	recovered time.Duration
	// latencies are the changes made while the statuses recovered, one every 1.1 s.
	latencies []time.Duration
}

// recoveryChangeEvery paces the changes timed during the recovery: as the other timed changes,
// apart by more than --min-event-sync-interval, within which events coalesce by design.
const recoveryChangeEvery = 1100 * time.Millisecond

// outage stops the server for d with the operator in steady state, changing one object right
// after the stop (so a sync fails and the statuses turn ServerUnreachable), brings the server
// back and times the recovery: until the change made during the outage is on the server, until
// every status says Synced again, and single changes made meanwhile.
func (b *bench) outage(ctx context.Context, cl *cluster, op *operator, r *result, statuses *statusWatch, d time.Duration, step func(string, ...any)) error {
	srv, ok := b.srv.(stoppable)
	if !ok {
		return nil
	}
	out := &outageResult{}
	srv.stop()
	stopped := time.Now()
	during, ip := r.n/2, b.nextIP()
	if err := cl.setIP(ctx, during, ip); err != nil {
		return err
	}
	time.Sleep(time.Until(stopped.Add(d)))
	out.unsynced = r.n - statuses.count()
	if err := srv.restart(); err != nil {
		return err
	}
	back := time.Now()
	step("server stopped for %v; %d statuses not Synced when it came back", d, out.unsynced)

	recovered := make(chan error, 1)
	go func() {
		at, err := statuses.waitAll(ctx, r.n, 10*time.Minute, op.alive)
		out.recovered = at.Sub(back)
		recovered <- err
	}()
	if _, err := b.waitIP(ctx, op, cl.apps[during].hostname, ip, stopped); err != nil {
		return fmt.Errorf("the change made during the outage: %w", err)
	}
	out.changed = time.Since(back)
	// Changes go on while the statuses recover, at least ten of them.
	var done bool
	for k := 0; !done || len(out.latencies) < 10; k++ {
		next := time.Now().Add(recoveryChangeEvery)
		lat, err := b.change(ctx, cl, op, (during+1+k*7919)%r.n)
		if err != nil {
			return fmt.Errorf("a change during the recovery: %w", err)
		}
		out.latencies = append(out.latencies, lat)
		select {
		case err := <-recovered:
			if err != nil {
				return err
			}
			done = true
		default:
		}
		time.Sleep(time.Until(next))
	}
	r.outage = out
	step("after the outage: the change made during it arrived %v after the server came back, every status Synced after %v; %d changes meanwhile, p50 %v p99 %v",
		out.changed.Round(time.Millisecond), out.recovered.Round(time.Millisecond), len(out.latencies),
		percentile(out.latencies, 50), percentile(out.latencies, 99))
	return nil
}
