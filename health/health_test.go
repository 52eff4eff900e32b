package health

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/planner"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
)

// TestReadyz: readiness is the process's, whatever the router's state.
func TestReadyz(t *testing.T) {
	for _, tc := range []struct {
		name     string
		synced   bool
		leading  bool
		code     int
		wantBody string
	}{
		{"ready, leader", true, true, http.StatusOK, "ok (leader)\n"},
		{"ready, standby", true, false, http.StatusOK, "ok (standby)\n"},
		{"caches not synced", false, true, http.StatusServiceUnavailable, "informer caches not synced\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(time.Minute, func() bool { return tc.synced }, testingclock.NewFakeClock(time.Now()))
			c.SetLeading(tc.leading)
			// The router is down: readiness does not care.
			c.Report(context.Background(), &controller.Report{Step: controller.StepList, Err: errors.New("ListHosts: connection refused")})
			code, body := get(c.Readyz)
			if code != tc.code || body != tc.wantBody {
				t.Fatalf("%d %q, want %d %q", code, body, tc.code, tc.wantBody)
			}
		})
	}
}

// tick is one thing that happens to a Checker: a sync's report after some time passed.
type tick struct {
	after time.Duration
	r     controller.Report
}

// TestRouterzAnswersFromTheSyncs: /routerz tells what the loop's syncs learnt of router-hosts
// and how long ago, never asking the router itself.
func TestRouterzAnswersFromTheSyncs(t *testing.T) {
	refused := fmt.Errorf("ListHosts: %w: %w", provider.ErrAuthentication, errors.New("remote error: tls: unknown certificate authority"))
	down := errors.New("ListHosts: connection refused")
	read := controller.Report{Step: controller.StepDone, Read: planner.ReadServer}
	wrote := controller.Report{Step: controller.StepDone, Read: planner.ReadKnown, Changes: []plan.Change{{Action: plan.Create}}}
	quiet := controller.Report{Step: controller.StepDone, Read: planner.ReadKnown}
	listFailed := controller.Report{Step: controller.StepList, Err: down}
	authFailed := controller.Report{Step: controller.StepList, Err: refused, AuthFailed: true}
	manyWritesFailed := controller.Report{Step: controller.StepApply, Read: planner.ReadKnown, Err: errors.Join(errors.New("AddHost a.lan: unavailable"), errors.New("AddHost b.lan: unavailable"))}
	for _, tc := range []struct {
		name     string
		steps    []tick
		standby  bool
		code     int
		wantBody string
	}{
		{"no sync yet", nil, false, http.StatusServiceUnavailable, "unknown: no sync has reached router-hosts yet\n"},
		{"a sync failed before reaching the router", []tick{{0, controller.Report{Step: controller.StepSource, Err: errors.New("reading source 0")}}},
			false, http.StatusServiceUnavailable, "unknown: no sync has reached router-hosts yet\n"},
		{"read the server", []tick{{time.Second, read}, {12 * time.Second, quiet}}, false, http.StatusOK, "ok (answered 12s ago)\n"},
		{"wrote from the known state", []tick{{0, wrote}, {3 * time.Second, quiet}}, false, http.StatusOK, "ok (answered 3s ago)\n"},
		{"unreachable after answering", []tick{{0, read}, {time.Minute, listFailed}, {30 * time.Second, listFailed}, {10 * time.Second, quiet}},
			false, http.StatusServiceUnavailable, "router-hosts not reachable since 2030-01-01T00:01:00Z (40s ago; last answered 1m40s ago): ListHosts: connection refused\n"},
		{"never reached", []tick{{0, listFailed}}, false, http.StatusServiceUnavailable,
			"router-hosts not reachable since 2030-01-01T00:00:00Z (0s ago): ListHosts: connection refused\n"},
		{"writes failed as a whole, one line of them", []tick{{0, read}, {time.Second, manyWritesFailed}}, false, http.StatusServiceUnavailable,
			"router-hosts not reachable since 2030-01-01T00:00:01Z (0s ago; last answered 1s ago): AddHost a.lan: unavailable (and more)\n"},
		{"certificate refused", []tick{{0, authFailed}, {5 * time.Second, quiet}}, false, http.StatusServiceUnavailable,
			"AuthenticationFailed: " + refused.Error() + "; since 2030-01-01T00:00:00Z (5s ago)\n"},
		{"answering again", []tick{{0, listFailed}, {time.Minute, authFailed}, {time.Minute, read}}, false, http.StatusOK, "ok (answered 0s ago)\n"},
		{"a stopped sync says nothing", []tick{{0, read}, {time.Second, controller.Report{Step: controller.StepList, Err: fmt.Errorf("ListHosts: %w", context.Canceled)}}},
			false, http.StatusOK, "ok (answered 1s ago)\n"},
		{"standby", []tick{{0, read}}, true, http.StatusServiceUnavailable, "unknown: this replica is a standby; only the leader calls router-hosts\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			c := New(time.Minute, func() bool { return true }, clk)
			c.SetLeading(true)
			for _, s := range tc.steps {
				clk.Step(s.after)
				c.Report(context.Background(), &s.r)
			}
			if tc.standby {
				c.SetLeading(false)
			}
			code, body := get(c.Routerz)
			if code != tc.code || body != tc.wantBody {
				t.Fatalf("%d %q\nwant %d %q", code, body, tc.code, tc.wantBody)
			}
		})
	}
}

// TestHealthz: the leader's loop is wedged after three intervals and a minute without a sync
// attempt; a standby never is.
func TestHealthz(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	c := New(time.Minute, func() bool { return true }, clk)
	c.SetLeading(true)
	clk.Step(4*time.Minute - time.Second)
	if code, body := get(c.Healthz); code != http.StatusOK {
		t.Fatalf("within the limit: %d %q", code, body)
	}
	clk.Step(2 * time.Second)
	if code, body := get(c.Healthz); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "sync loop wedged: no sync attempt for 4m1s") {
		t.Fatalf("past the limit: %d %q", code, body)
	}
	c.SetLeading(false)
	if code, _ := get(c.Healthz); code != http.StatusOK {
		t.Fatalf("a standby: %d", code)
	}
	c.SetLeading(true)
	clk.Step(time.Hour)
	c.Report(context.Background(), &controller.Report{Step: controller.StepSource, Err: errors.New("x")})
	if code, _ := get(c.Healthz); code != http.StatusOK {
		t.Fatalf("after a sync attempt: %d", code)
	}
}

func get(h http.HandlerFunc) (int, string) {
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	return rec.Code, rec.Body.String()
}

// TestWaitingForARouter: a leader with no router named is live (it has nothing to sync),
// /routerz says why it waits, and once a router is named the wedge clock starts then.
func TestWaitingForARouter(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	c := New(time.Minute, func() bool { return true }, clk)
	c.SetLeading(true)
	c.SetNoRouter("no router-hosts endpoint")
	clk.Step(time.Hour)
	if code, body := get(c.Healthz); code != http.StatusOK {
		t.Fatalf("healthz while waiting an hour: %d %q", code, body)
	}
	if code, body := get(c.Routerz); code != http.StatusServiceUnavailable || !strings.Contains(body, "no router named yet, waiting: no router-hosts endpoint") {
		t.Fatalf("routerz while waiting: %d %q", code, body)
	}
	c.SetNoRouter("")
	clk.Step(time.Minute)
	if code, body := get(c.Healthz); code != http.StatusOK {
		t.Fatalf("healthz a minute after a router was named: %d %q", code, body)
	}
	clk.Step(4 * time.Minute)
	if code, _ := get(c.Healthz); code != http.StatusServiceUnavailable {
		t.Fatalf("healthz with a router and no sync for 5 minutes: %d, want wedged", code)
	}
}
