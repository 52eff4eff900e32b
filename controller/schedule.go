package controller

import (
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/planner"
)

// Trigger is news that may call for a sync sooner than the schedule says.
type Trigger uint8

// The triggers; as bits, so that news arriving together is one wake-up.
const (
	// TriggerChanged: a source's objects changed.
	TriggerChanged Trigger = 1 << iota
	// TriggerReconfigured: the settings changed (Reconfigure).
	TriggerReconfigured
	// TriggerCredentials: the TLS files changed.
	TriggerCredentials
	// TriggerReachable: the server answers again.
	TriggerReachable
	// TriggerRequested: a caller of SyncNow (external-dns's request) waits for a full sync.
	TriggerRequested
)

// Outcome is how a sync ended, as far as scheduling goes.
type Outcome uint8

// The outcomes.
const (
	// OutcomeOK: the sync got through; some writes may have been refused, which the interval
	// tries again.
	OutcomeOK Outcome = iota
	// OutcomeAuthentication: the server refused the TLS authentication.
	OutcomeAuthentication
	// OutcomeFailed: a read or the writes failed as a whole.
	OutcomeFailed
)

// Ended is what the scheduler learns of a sync that ended.
type Ended struct {
	Mode    planner.Mode
	Started time.Time
	Outcome Outcome
	// Planned says the sync's reads succeeded and it planned: a full sync that did is the one
	// the interval counts from.
	Planned bool
	// Again asks for an event-triggered sync at once: the known state is out of date, or
	// removals freed hostnames others wait for.
	Again bool
	// NextExpiry is when the earliest pending deletion falls due; zero when none.
	NextExpiry time.Time
}

// Schedule says what runs next, and when. Its methods are pure functions of the schedule,
// what happened and the time it happened: the loop (Run) only waits for the earlier of its
// timer and the news, and tells the schedule.
type Schedule struct {
	// Next is when the next sync starts; Mode what kind it is.
	Next time.Time
	Mode planner.Mode
	// Interval is the period of full syncs; Spacing the least time between the starts of two
	// event-triggered ones, so that a burst of changes coalesces into one more sync.
	Interval, Spacing time.Duration

	// lastEvent is when the last event-triggered sync started; lastFull when the last full
	// sync that read the server did.
	lastEvent, lastFull time.Time
	// failures counts the syncs failed in a row.
	failures int
	// authWait: the last sync failed authentication, and only new certificate files or the
	// interval try again.
	authWait bool
	// reachableUsed: the server's return has already cut this run of failures short.
	reachableUsed bool
}

// expirySlack is added to a grace period's end before the sync that acts on it, so that the
// sync's own clock reading is safely past it.
const expirySlack = 100 * time.Millisecond

// NewSchedule starts with a full sync now.
func NewSchedule(now time.Time, interval, spacing time.Duration) Schedule {
	return Schedule{Next: now, Mode: planner.Full, Interval: interval, Spacing: spacing}
}

// Starting is told that the sync the schedule asked for starts now.
func (s Schedule) Starting(now time.Time) Schedule {
	if s.Mode == planner.Event {
		s.lastEvent = now
	}
	return s
}

// Triggered is the schedule after news at now.
//
//   - A change: an event-triggered sync at once after a quiet period; changes during an
//     event-triggered sync, or soon after its start, coalesce into one more no sooner than the
//     spacing. A full sync due sooner, or a failure's backoff, is not brought forward.
//   - Reconfigured: a full sync at once, under the new interval.
//   - New certificate files: a full sync at once, if authentication failed.
//   - The server answers again: a full sync at once if syncs are failing, once per run of
//     failures, so that a server that falls over at every sync gets the growing backoff.
//   - A request: a full sync at once, whatever the backoff, since someone waits for its
//     answer.
func (s Schedule) Triggered(t Trigger, now time.Time) Schedule {
	if t&TriggerRequested != 0 {
		s.Next, s.Mode = now, planner.Full
	}
	if t&TriggerReconfigured != 0 {
		s.Next, s.Mode = now, planner.Full
	}
	if t&TriggerCredentials != 0 && s.authWait {
		s.Next, s.Mode = now, planner.Full
	}
	if t&TriggerReachable != 0 && s.failures > 0 && !s.authWait && !s.reachableUsed {
		s.Next, s.Mode, s.reachableUsed = now, planner.Full, true
	}
	if t&TriggerChanged != 0 && s.failures == 0 {
		at := now
		if e := s.lastEvent.Add(s.Spacing); at.Before(e) {
			at = e
		}
		if at.Before(s.Next) {
			s.Next, s.Mode = at, planner.Event
		}
	}
	return s
}

// Done is the schedule after a sync ended at now. The next full sync comes an interval after
// the last full one that read the server, however many event-triggered syncs ran since; an
// authentication failure waits for the interval (or new certificate files), any other
// failure a backoff doubling from one second to the interval; a pending deletion wakes the
// loop when it falls due.
func (s Schedule) Done(r Ended, now time.Time) Schedule {
	if r.Planned && r.Mode == planner.Full {
		s.lastFull = r.Started
	}
	s.Next, s.Mode, s.authWait = s.lastFull.Add(s.Interval), planner.Full, false
	switch r.Outcome {
	case OutcomeAuthentication:
		s.failures++
		s.Next, s.authWait = r.Started.Add(s.Interval), true
		return s
	case OutcomeFailed:
		s.failures++
		s.Next = now.Add(s.backoff())
		return s
	}
	s.failures, s.reachableUsed = 0, false
	if r.Again {
		s.Next, s.Mode = now, planner.Event
		return s
	}
	if !r.NextExpiry.IsZero() && r.NextExpiry.Before(s.Next) {
		s.Next = r.NextExpiry.Add(expirySlack)
	}
	return s
}

// backoff doubles from one second up to the interval.
func (s Schedule) backoff() time.Duration {
	d := time.Second
	for i := 1; i < s.failures && d < s.Interval; i++ {
		d *= 2
	}
	return min(d, s.Interval)
}
