package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// countingReporter counts the syncs reported.
type countingReporter struct{ n atomic.Int64 }

func (c *countingReporter) Report(context.Context, *controller.Report) { c.n.Add(1) }

// TestChangesReachTheRouterWhileStatusesArePending runs the loop with a status client held to
// 20 writes a second, so that after 200 HostMappings converge most of their statuses are still
// waiting: a change made then still reaches the router at once, a status superseded while it
// waits is never written after the newer one, and once all is written steady syncs write none.
func TestChangesReachTheRouterWhileStatusesArePending(t *testing.T) {
	const n = 200
	syncs := &countingReporter{}
	h := newHarness(t, options{sources: []string{"hostmapping"}, statusQPS: 20, reporters: []controller.Reporter{syncs}, realClock: true})
	for i := 0; i < n; i++ {
		h.hostMapping(fmt.Sprintf("hm-%d", i), map[string]any{"hostname": fmt.Sprintf("hm-%d.lan", i), "ipAddress": fmt.Sprintf("10.70.%d.%d", i/250, i%250+1)})
	}
	h.waitSource(func(eps []*endpoint.Endpoint) bool { return len(eps) == n })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = h.ctrl.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	// The router holds every entry a moment before the sync's report hands the statuses to the
	// writer, so wait for both.
	waitFor(t, 30*time.Second, func() bool { return h.srv.Store().Len() == n && h.status.Pending() > 0 })

	// Watch hm-7's status from here on: every version of it the writer produces.
	hm7 := h.getHM("hm-7")
	w, err := h.hmClient().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=hm-7", ResourceVersion: hm7.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if p := h.status.Pending(); p < n/2 {
		t.Fatalf("only %d statuses pending after convergence; the test needs the writer held back", p)
	}

	// Two changes to hm-7 while its status waits: each reaches the router at once.
	for _, ip := range []string{"10.71.0.7", "10.71.0.8"} {
		cur := h.getHM("hm-7")
		_ = unstructured.SetNestedField(cur.Object, ip, "spec", "ipAddress")
		start := time.Now()
		if _, err := h.hmClient().Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, func() bool { e := h.srv.Store().Lookup("hm-7.lan"); return len(e) == 1 && e[0].GetIpAddress() == ip })
		took := time.Since(start)
		t.Logf("hm-7 → %s reached the router in %v with %d statuses pending", ip, took.Round(time.Millisecond), h.status.Pending())
		if took > 2*time.Second {
			t.Fatalf("a change waited %v behind pending status writes", took)
		}
	}
	if p := h.status.Pending(); p == 0 {
		t.Fatal("every status was written before the changes; the test proved nothing")
	}
	// The status writes come back as informer events; they are the operator's own echo, not a
	// change of input, and start no sync (which would keep the loop busy and hold real changes
	// back by the minimum spacing).
	time.Sleep(1500 * time.Millisecond)
	quietFrom, pending := syncs.n.Load(), h.status.Pending()
	time.Sleep(2 * time.Second)
	if got := syncs.n.Load() - quietFrom; got != 0 || h.status.Pending() >= pending {
		t.Fatalf("%d syncs in 2 s while statuses were written (%d → %d pending); want none", got, pending, h.status.Pending())
	}

	h.statusWritten()
	// hm-7's status was written for generation 3 only ever after any for an older one.
	var seen []int64
	for timeout := time.After(2 * time.Second); ; {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Modified {
				continue
			}
			if g, ok, _ := unstructured.NestedInt64(ev.Object.(*unstructured.Unstructured).Object, "status", "observedGeneration"); ok {
				if len(seen) == 0 || seen[len(seen)-1] != g {
					seen = append(seen, g)
				}
			}
			continue
		case <-timeout:
		}
		break
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("hm-7's status went back from generation %d to %d: %v", seen[i-1], seen[i], seen)
		}
	}
	if len(seen) == 0 || seen[len(seen)-1] != 3 {
		t.Fatalf("hm-7's written status generations %v, want the last to be 3", seen)
	}

	// Everything written: steady syncs write no status.
	before := map[string]string{}
	list, err := h.hmClient().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range list.Items {
		before[u.GetName()] = u.GetResourceVersion()
	}
	h.sync()
	h.sync()
	h.statusWritten()
	list, err = h.hmClient().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range list.Items {
		if before[u.GetName()] != u.GetResourceVersion() {
			t.Fatalf("a steady sync wrote %s's status", u.GetName())
		}
	}
}
