package plan

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// TestResults: what a caller makes of a provider's results: the failures in order, the
// failure of the server as a whole apart from the refusals, and all of it as one error that
// names each failed change and says once where the writes stopped.
func TestResults(t *testing.T) {
	a := Change{Action: Create, New: &endpoint.Record{Hostname: "a.lan", IP: "10.0.0.1"}}
	b := Change{Action: Delete, Old: &endpoint.Record{ID: "2", Hostname: "b.lan", IP: "10.0.0.2"}}
	c := Change{Action: Update, Old: &endpoint.Record{ID: "3", Hostname: "c.lan", IP: "10.0.0.3"},
		New: &endpoint.Record{ID: "3", Hostname: "c.lan", IP: "10.0.0.4"}}
	ok := Result{Stored: &endpoint.Record{ID: "1", Hostname: "a.lan", IP: "10.0.0.1", Version: "1"}}
	deleted := Result{}
	invalid := &ChangeError{Change: a, Err: errors.New("InvalidArgument: no"), Refused: true}
	down := &ChangeError{Change: c, Err: errors.New("Unavailable: connection refused")}
	notStarted := func(ch Change) Result {
		return Result{Err: &ChangeError{Change: ch, Err: NotStarted(context.Canceled)}}
	}
	for _, tc := range []struct {
		name     string
		results  []Result
		failures int
		// whole is SplitRefused's whole error, "" for nil; refused how many refusals it gives.
		whole   string
		refused int
		// err is ErrorOf's message, "" for nil.
		err     string
		stopped bool
	}{
		{name: "none"},
		{name: "every change went through", results: []Result{ok, deleted}},
		{name: "a refusal is no failure of the server", results: []Result{{Err: invalid}, deleted}, failures: 1, refused: 1,
			err: "create a.lan 10.0.0.1: InvalidArgument: no"},
		{name: "an unreachable server beside a refusal", results: []Result{{Err: invalid}, deleted, {Err: down}}, failures: 2, refused: 1,
			whole: "update c.lan 10.0.0.3 (id 3): Unavailable: connection refused",
			err:   "create a.lan 10.0.0.1: InvalidArgument: no\nupdate c.lan 10.0.0.3 (id 3): Unavailable: connection refused"},
		{name: "changes not started are said once", results: []Result{ok, notStarted(b), notStarted(c)}, failures: 2,
			whole: "stopped after 1 of 3 changes: context canceled", err: "stopped after 1 of 3 changes: context canceled", stopped: true},
		{name: "a stop after failures", results: []Result{{Err: invalid}, {Err: down}, notStarted(b)}, failures: 3, refused: 1,
			whole: "update c.lan 10.0.0.3 (id 3): Unavailable: connection refused\nstopped after 2 of 3 changes: context canceled",
			err: "create a.lan 10.0.0.1: InvalidArgument: no\nupdate c.lan 10.0.0.3 (id 3): Unavailable: connection refused\n" +
				"stopped after 2 of 3 changes: context canceled", stopped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failures := Failures(tc.results)
			var want []*ChangeError
			for _, r := range tc.results {
				if r.Err != nil {
					want = append(want, r.Err)
				}
			}
			if len(failures) != tc.failures || !slices.Equal(failures, want) {
				t.Errorf("failures %v, want the %d failed results in order", failures, tc.failures)
			}
			whole, refused := SplitRefused(tc.results)
			if msg(whole) != tc.whole || len(refused) != tc.refused {
				t.Errorf("whole %q with %d refused, want %q with %d", msg(whole), len(refused), tc.whole, tc.refused)
			}
			for _, ce := range refused {
				if !ce.Refused {
					t.Errorf("%v among the refusals", ce)
				}
			}
			err := ErrorOf(tc.results)
			if msg(err) != tc.err {
				t.Errorf("error %q, want %q", msg(err), tc.err)
			}
			for _, e := range []error{whole, err} {
				if got := errors.Is(e, ErrNotStarted) && errors.Is(e, context.Canceled); got != tc.stopped {
					t.Errorf("%q says the writes stopped on the context: %v, want %v", msg(e), got, tc.stopped)
				}
			}
		})
	}
}

// TestChangeError: a failed change names its change, and its cause stays reachable.
func TestChangeError(t *testing.T) {
	cause := errors.New("AlreadyExists")
	old := &endpoint.Record{ID: "7", Hostname: "old.lan", IP: "10.0.0.1"}
	for _, tc := range []struct {
		change Change
		want   string
	}{
		{Change{Action: Create, New: &endpoint.Record{Hostname: "a.lan", IP: "10.0.0.1"}}, "create a.lan 10.0.0.1: AlreadyExists"},
		{Change{Action: Delete, Old: old}, "delete old.lan 10.0.0.1 (id 7): AlreadyExists"},
		{Change{Action: Update, Old: old, New: &endpoint.Record{ID: "7", Hostname: "old.lan", IP: "10.0.0.2"}}, "update old.lan 10.0.0.1 (id 7): AlreadyExists"},
		{Change{Action: Update, Old: old, New: &endpoint.Record{ID: "7", Hostname: "new.lan", IP: "10.0.0.2"}}, "update new.lan 10.0.0.2 (id 7): AlreadyExists"},
	} {
		ce := &ChangeError{Change: tc.change, Err: cause}
		if ce.Error() != tc.want || !errors.Is(ce, cause) {
			t.Errorf("%q (wraps the cause: %v), want %q", ce.Error(), errors.Is(ce, cause), tc.want)
		}
	}
	ns := &ChangeError{Change: Change{Action: Delete, Old: old}, Err: NotStarted(context.DeadlineExceeded)}
	if want := "delete old.lan 10.0.0.1 (id 7): not started: context deadline exceeded"; ns.Error() != want ||
		!errors.Is(ns, ErrNotStarted) || !errors.Is(ns, context.DeadlineExceeded) {
		t.Errorf("not started: %q, want %q matching ErrNotStarted and the context's error", ns.Error(), want)
	}
}

func msg(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
