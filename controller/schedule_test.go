package controller

import (
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/planner"
)

// TestSchedule is the scheduler's table: a schedule, what happens at a time, and what runs
// next, and when. t0 is a full sync that read the server and ended with nothing pending.
func TestSchedule(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	const interval, spacing = time.Minute, time.Second
	// settled is the schedule after the full sync at t0.
	settled := func() Schedule {
		s := NewSchedule(t0, interval, spacing).Starting(t0)
		return s.Done(Ended{Mode: planner.Full, Started: t0, Planned: true}, at(50*time.Millisecond))
	}
	// step is one thing that happens: a trigger, the start of the sync due, or its end.
	type step func(Schedule) Schedule
	trigger := func(tr Trigger, d time.Duration) step {
		return func(s Schedule) Schedule { return s.Triggered(tr, at(d)) }
	}
	// run starts the sync that is due and ends it after took with r (its mode and start filled in).
	run := func(took time.Duration, r Ended) step {
		return func(s Schedule) Schedule {
			start := s.Next
			r.Mode, r.Started = s.Mode, start
			return s.Starting(start).Done(r, start.Add(took))
		}
	}
	failed := Ended{Outcome: OutcomeFailed}
	for _, tc := range []struct {
		name  string
		steps []step
		next  time.Time
		mode  planner.Mode
	}{
		{"at start, a full sync at once", nil, t0, planner.Full},
		{"after the first sync, the interval", []step{}, at(interval), planner.Full},
		{"a change after a quiet period syncs at once", []step{trigger(TriggerChanged, 10*time.Second)}, at(10 * time.Second), planner.Event},
		{"changes during an event sync coalesce after the spacing", []step{
			trigger(TriggerChanged, 10*time.Second), run(20*time.Millisecond, Ended{Planned: true}),
			trigger(TriggerChanged, 10*time.Second+100*time.Millisecond), trigger(TriggerChanged, 10*time.Second+200*time.Millisecond),
		}, at(11 * time.Second), planner.Event},
		{"event syncs do not postpone the interval's full read", []step{
			trigger(TriggerChanged, 10*time.Second), run(20*time.Millisecond, Ended{Planned: true}),
			trigger(TriggerChanged, 30*time.Second), run(20*time.Millisecond, Ended{Planned: true}),
		}, at(interval), planner.Full},
		{"a change does not bring a sooner full sync forward", []step{trigger(TriggerChanged, interval-10*time.Millisecond)}, at(interval - 10*time.Millisecond), planner.Event},
		{"a grace period ending wakes the loop", []step{
			trigger(TriggerChanged, 10*time.Second), run(20*time.Millisecond, Ended{Planned: true, NextExpiry: at(14 * time.Second)}),
		}, at(14*time.Second + expirySlack), planner.Full},
		{"a deletion falling due after the interval waits for it", []step{
			trigger(TriggerChanged, 10*time.Second), run(20*time.Millisecond, Ended{Planned: true, NextExpiry: at(2 * interval)}),
		}, at(interval), planner.Full},
		{"a stale known state: an event sync at once", []step{
			trigger(TriggerChanged, 10*time.Second), run(20*time.Millisecond, Ended{Again: true}),
		}, at(10*time.Second + 20*time.Millisecond), planner.Event},
		{"a failure: backoff of a second", []step{trigger(TriggerReconfigured, 5*time.Second), run(10*time.Millisecond, failed)},
			at(5*time.Second + 10*time.Millisecond + time.Second), planner.Full},
		{"failures double the backoff", []step{
			trigger(TriggerReconfigured, 5*time.Second), run(0, failed), run(0, failed), run(0, failed),
		}, at(5*time.Second + 7*time.Second), planner.Full},
		{"the backoff stops at the interval", []step{
			trigger(TriggerReconfigured, 5*time.Second), run(0, failed), run(0, failed), run(0, failed), run(0, failed),
			run(0, failed), run(0, failed), run(0, failed), run(0, failed),
		}, at(5*time.Second + (1+2+4+8+16+32+60+60)*time.Second), planner.Full},
		{"a change does not cut a backoff short", []step{
			trigger(TriggerReconfigured, 5*time.Second), run(0, failed), trigger(TriggerChanged, 5*time.Second+100*time.Millisecond),
		}, at(6 * time.Second), planner.Full},
		{"the server's return cuts a backoff short", []step{
			trigger(TriggerReconfigured, 5*time.Second), run(0, failed), trigger(TriggerReachable, 5*time.Second+100*time.Millisecond),
		}, at(5*time.Second + 100*time.Millisecond), planner.Full},
		{"once per run of failures", []step{
			trigger(TriggerReconfigured, 5*time.Second), run(0, failed), trigger(TriggerReachable, 5*time.Second+100*time.Millisecond),
			run(0, failed), trigger(TriggerReachable, 5*time.Second+200*time.Millisecond),
		}, at(5*time.Second + 100*time.Millisecond + 2*time.Second), planner.Full},
		{"a new run of failures may be cut short again", []step{
			trigger(TriggerReconfigured, 5*time.Second), run(0, failed), trigger(TriggerReachable, 5*time.Second+100*time.Millisecond),
			run(0, Ended{Planned: true}), trigger(TriggerChanged, 7*time.Second), run(0, failed), trigger(TriggerReachable, 7*time.Second+500*time.Millisecond),
		}, at(7*time.Second + 500*time.Millisecond), planner.Full},
		{"the server's return in steady state starts nothing", []step{trigger(TriggerReachable, 10*time.Second)}, at(interval), planner.Full},
		{"an authentication failure waits for the interval", []step{
			trigger(TriggerReconfigured, 5*time.Second), run(0, Ended{Outcome: OutcomeAuthentication}), trigger(TriggerChanged, 6*time.Second),
			trigger(TriggerReachable, 7*time.Second),
		}, at(5*time.Second + interval), planner.Full},
		{"or for new certificate files", []step{
			trigger(TriggerReconfigured, 5*time.Second), run(0, Ended{Outcome: OutcomeAuthentication}), trigger(TriggerCredentials, 8*time.Second),
		}, at(8 * time.Second), planner.Full},
		{"new certificate files without a failure start nothing", []step{trigger(TriggerCredentials, 8*time.Second)}, at(interval), planner.Full},
		{"a reconfiguration: a full sync at once", []step{trigger(TriggerReconfigured, 20*time.Second)}, at(20 * time.Second), planner.Full},
		{"a request: a full sync at once", []step{trigger(TriggerRequested, 20*time.Second)}, at(20 * time.Second), planner.Full},
		{"a request cuts a backoff short", []step{
			trigger(TriggerReconfigured, 5*time.Second), run(0, failed), run(0, failed), trigger(TriggerRequested, 5*time.Second+100*time.Millisecond),
		}, at(5*time.Second + 100*time.Millisecond), planner.Full},
		{"a request during an event sync's spacing is not postponed", []step{
			trigger(TriggerChanged, 10*time.Second), run(20*time.Millisecond, Ended{Planned: true}),
			trigger(TriggerChanged, 10*time.Second+100*time.Millisecond), trigger(TriggerRequested, 10*time.Second+200*time.Millisecond),
		}, at(10*time.Second + 200*time.Millisecond), planner.Full},
		{"news arriving together is one wake-up", []step{trigger(TriggerChanged|TriggerReconfigured, 20*time.Second)}, at(20 * time.Second), planner.Full},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSchedule(t0, interval, spacing)
			if tc.steps != nil {
				s = settled()
				for _, st := range tc.steps {
					s = st(s)
				}
			}
			if !s.Next.Equal(tc.next) || s.Mode != tc.mode {
				t.Fatalf("next: %s sync at t0%+v, want %s at t0%+v", s.Mode, s.Next.Sub(t0), tc.mode, tc.next.Sub(t0))
			}
		})
	}
}
