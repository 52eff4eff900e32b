package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/planner"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// TestReportOf: the report of a sync that planned carries what the sync produced as it was
// (its times, mode, the loop's Again and NextExpiry), says why each hostname did not get its
// write, and the sync's error follows from it: the writes' failure as a whole, else the
// refused hostnames, else none.
func TestReportOf(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	create := func(host string) plan.Change {
		return plan.Change{Action: plan.Create, New: &endpoint.Record{ID: "id-" + host, Hostname: host, IP: "10.0.0.1"}}
	}
	invalid := errors.New("InvalidArgument")
	gone := errors.New("NotFound")
	auth := fmt.Errorf("handshake: %w", provider.ErrAuthentication)
	for _, tc := range []struct {
		name    string
		read    planner.ReadKind
		refused map[string]error
		// fail is the provider's error for each of the changes (a.lan, then c.lan), nil for
		// one written; fail nil: both written. dryRun: nothing written, no results.
		fail   func(cs []plan.Change) []*plan.ChangeError
		dryRun bool
		again  bool
		// step, authFailed and failed are what the report says; entries the hostnames with
		// an entry once the writes are done.
		step       Step
		authFailed bool
		failed     map[string]FailureKind
		entries    []string
		// err is in the sync's error, "" for none; refusedErr: it is a RefusedError.
		err        string
		refusedErr bool
	}{
		{name: "every write went through", read: planner.ReadServer,
			failed: map[string]FailureKind{}, entries: []string{"a.lan", "c.lan"}},
		{name: "a write refused, and one skipped as refused before", read: planner.ReadKnown, refused: map[string]error{"b.lan": invalid},
			fail: func(cs []plan.Change) []*plan.ChangeError {
				return []*plan.ChangeError{{Change: cs[0], Err: invalid, Refused: true}, nil}
			},
			failed: map[string]FailureKind{"a.lan": FailureRefused, "b.lan": FailureRefused}, entries: []string{"c.lan"},
			err: "2 hostnames refused (a.lan, b.lan)", refusedErr: true},
		{name: "a stale write is the sync at once's, not a failure, whatever was read", read: planner.ReadServer,
			fail: func(cs []plan.Change) []*plan.ChangeError {
				return []*plan.ChangeError{{Change: cs[0], Err: gone, Refused: true, Stale: true}, nil}
			},
			again: true, failed: map[string]FailureKind{}, entries: []string{"c.lan"}},
		{name: "a stale write no sync at once follows (it keeps happening) is refused", read: planner.ReadServer,
			fail: func(cs []plan.Change) []*plan.ChangeError {
				return []*plan.ChangeError{{Change: cs[0], Err: gone, Refused: true, Stale: true}, nil}
			},
			failed: map[string]FailureKind{"a.lan": FailureRefused}, entries: []string{"c.lan"},
			err: "1 hostnames refused (a.lan)", refusedErr: true},
		{name: "the server refused the TLS authentication", read: planner.ReadServer,
			fail: func(cs []plan.Change) []*plan.ChangeError {
				return []*plan.ChangeError{{Change: cs[0], Err: auth}, {Change: cs[1], Err: auth}}
			},
			step: StepApply, authFailed: true, failed: map[string]FailureKind{"a.lan": FailureAuthentication, "c.lan": FailureAuthentication},
			entries: []string{}, err: "applying 2 changes: "},
		{name: "a change not started when the sync was stopped fails the sync, not its hostname", read: planner.ReadServer,
			fail: func(cs []plan.Change) []*plan.ChangeError {
				return []*plan.ChangeError{nil, {Change: cs[1], Err: plan.NotStarted(context.Canceled)}}
			},
			step: StepApply, failed: map[string]FailureKind{}, entries: []string{"a.lan"},
			err: "applying 2 changes: stopped after 1 of 2 changes: context canceled"},
		{name: "a dry run writes nothing", read: planner.ReadServer, dryRun: true,
			failed: map[string]FailureKind{}, entries: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := &endpoint.Endpoint{Hostname: "a.lan", Targets: []string{"10.0.0.1"}, Sources: []endpoint.SourceRef{{Kind: "Ingress", UID: "u1"}}}
			in := &reading{mode: planner.Event, started: t0, changed: t0.Add(-time.Second), endpoints: []*endpoint.Endpoint{ep},
				sources: []sourceRead{{endpoints: []*endpoint.Endpoint{ep}}}, counts: []int{1}}
			sy := &planner.Sync{Mode: planner.Event, Read: tc.read, Refused: tc.refused, Decision: registry.Decision{Cluster: "home", State: &registry.State{},
				Verdict: registry.Verdict{Changes: []plan.Change{create("a.lan"), create("c.lan")}, NextExpiry: t0.Add(time.Hour), Pending: 3}}}
			var results []plan.Result
			if !tc.dryRun {
				results = make([]plan.Result, len(sy.Changes))
				var fails []*plan.ChangeError
				if tc.fail != nil {
					fails = tc.fail(sy.Changes)
				}
				for i := range results {
					if i < len(fails) && fails[i] != nil {
						results[i].Err = fails[i]
						continue
					}
					stored := *sy.Changes[i].New
					results[i].Stored = &stored
				}
			}
			end := t0.Add(25 * time.Millisecond)
			rep := reportOf(in, sy, results, tc.again, end)

			if rep.Cluster != "home" || rep.Mode != planner.Event || !rep.Started.Equal(t0) || rep.Duration != 25*time.Millisecond ||
				!rep.ChangedAt.Equal(in.changed) || rep.Again != tc.again || !rep.NextExpiry.Equal(t0.Add(time.Hour)) || rep.Pending != 3 ||
				rep.Read != tc.read || len(rep.Changes) != 2 || !reflect.DeepEqual(rep.SourceEndpoints, []int{1}) || len(rep.Objects["u1"].Endpoints) != 1 {
				t.Fatalf("report %+v does not carry what the sync produced", rep)
			}
			if rep.Step != tc.step || rep.AuthFailed != tc.authFailed || (rep.Step == StepApply) != (rep.Err != nil) {
				t.Fatalf("step %s, auth failed %v, err %v; want %s, %v", rep.Step, rep.AuthFailed, rep.Err, tc.step, tc.authFailed)
			}
			failed := map[string]FailureKind{}
			for host, f := range rep.Failed {
				failed[host] = f.Kind
			}
			if !reflect.DeepEqual(failed, tc.failed) {
				t.Fatalf("failed %v, want %v", failed, tc.failed)
			}
			if len(rep.Results) != len(results) || (results != nil && &rep.Results[0] != &results[0]) {
				t.Fatalf("results %v, want the %d the provider returned", rep.Results, len(results))
			}
			entries := []string{}
			for host := range rep.Entries {
				entries = append(entries, host)
			}
			sort.Strings(entries)
			if tc.entries == nil {
				tc.entries = []string{}
			}
			if !reflect.DeepEqual(entries, tc.entries) {
				t.Fatalf("entries for %v, want %v", entries, tc.entries)
			}

			err := errorOf(rep)
			var refused *RefusedError
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want %q", err, tc.err)
			case errors.As(err, &refused) != tc.refusedErr:
				t.Fatalf("error %v: a RefusedError %v, want %v", err, !tc.refusedErr, tc.refusedErr)
			case tc.authFailed && !errors.Is(err, provider.ErrAuthentication):
				t.Fatalf("error %v does not say the authentication failed", err)
			}
		})
	}
}

// TestReportOfFailedRead: a sync whose read failed reports where and why; a failed read of the
// server (not of a source, though the webhook's source reads the server too) tells whether
// the authentication failed, with what the sources gave so that observers can still report
// on the objects concerned.
func TestReportOfFailedRead(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	ep := &endpoint.Endpoint{Hostname: "a.lan", Targets: []string{"10.0.0.1"}, Sources: []endpoint.SourceRef{{Kind: "Ingress", UID: "u1"}}}
	auth := fmt.Errorf("listing router-hosts entries: %w", provider.ErrAuthentication)
	for _, tc := range []struct {
		name       string
		step       Step
		err        error
		authFailed bool
		objects    bool
	}{
		{name: "a source", step: StepSource, err: auth},
		{name: "the server, unreachable", step: StepList, err: errors.New("unavailable"), objects: true},
		{name: "the server, refusing the TLS authentication", step: StepList, err: auth, authFailed: true, objects: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &reading{mode: planner.Full, started: t0, changed: t0.Add(-time.Second)}
			if tc.step == StepList {
				in.endpoints, in.sources, in.counts = []*endpoint.Endpoint{ep}, []sourceRead{{endpoints: []*endpoint.Endpoint{ep}}}, []int{1}
			}
			rep := reportOfFailedRead(in, tc.step, tc.err, t0.Add(time.Second))
			if rep.Step != tc.step || rep.Err != tc.err || rep.AuthFailed != tc.authFailed || rep.Mode != planner.Full ||
				!rep.Started.Equal(t0) || rep.Duration != time.Second || !rep.ChangedAt.IsZero() || rep.Again {
				t.Fatalf("report %+v", rep)
			}
			if got := len(rep.Endpoints) == 1 && len(rep.Objects["u1"].Endpoints) == 1 && reflect.DeepEqual(rep.SourceEndpoints, []int{1}); got != tc.objects {
				t.Fatalf("endpoints %v, objects %v, counts %v; want them %v", rep.Endpoints, rep.Objects, rep.SourceEndpoints, tc.objects)
			}
		})
	}
}
