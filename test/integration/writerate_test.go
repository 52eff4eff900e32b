package integration

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAHostFlippingWithNoGracePeriodIsPaced: a person gives an Ingress a grace period of 0 and
// then flips its host between two names every second for twenty seconds. Each flip would be a
// create and a deletion; both count against the object's write-rate budget (6 a minute here),
// so the router gets at most the budget's worth left by the first write and the budget's pace,
// the object gets an OverBudget Warning, and once the person stops the name they left it on
// is the one the router serves, alone.
func TestAHostFlippingWithNoGracePeriodIsPaced(t *testing.T) {
	const budget = 6
	h := newHarness(t, options{})
	ing := h.create(ingress(h.ns, "flap", enabled("ip-address", "10.64.0.1", "grace-period", "0"), "flip-a.home.lan"))
	startOperator(t, h, kubeconfig, "--interval=1s", "--min-event-sync-interval=200ms", "--max-object-writes-per-minute=6")
	waitFor(t, 30*time.Second, func() bool { return entriesByHost(h.srv.Store())["flip-a.home.lan"] != nil })

	h.srv.Service().ResetCalls()
	start, last := time.Now(), ""
	for i := range 20 {
		last = []string{"flip-b.home.lan", "flip-a.home.lan"}[i%2]
		h.update(ing, func(in *networkingv1.Ingress) { in.Spec.Rules[0].Host = last })
		time.Sleep(time.Second)
	}
	// The first write left a budget's worth; then the budget a minute.
	limit := budget + int64(math.Ceil(budget*time.Since(start).Minutes())) + 1
	n := h.writes()
	t.Logf("20 s of flipping sent %d writes (%v), at most %d", n, h.srv.Service().CallCounts(), limit)
	if n > limit {
		t.Fatalf("20 s of flipping sent %d writes (%v), want at most %d", n, h.srv.Service().CallCounts(), limit)
	}

	other := map[string]string{"flip-a.home.lan": "flip-b.home.lan", "flip-b.home.lan": "flip-a.home.lan"}[last]
	waitFor(t, 60*time.Second, func() bool {
		m := entriesByHost(h.srv.Store())
		return m[last] != nil && m[last].GetIpAddress() == "10.64.0.1" && m[other] == nil
	})
	events, err := h.cp.Client.CoreV1().Events(h.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=flap,reason=OverBudget"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 || events.Items[0].Type != "Warning" || !strings.Contains(events.Items[0].Message, "write-rate budget") {
		t.Fatalf("no OverBudget Warning on the flipping Ingress: %v", events.Items)
	}
}
