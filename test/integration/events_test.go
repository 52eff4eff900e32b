package integration

import (
	"context"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube/clientset"
)

// eventsFor lists the events recorded about one object, by reason.
func eventsFor(t *testing.T, ns, uid string) map[string]int {
	t.Helper()
	list, err := cp.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.uid=" + uid})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range list.Items {
		out[e.Reason] += int(e.Count)
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// flushed waits until the broadcaster has written every event emitted so far. It writes
// asynchronously but in order, one event after the other: once a marker emitted now is
// stored, so is everything before it.
func flushed(t *testing.T, rec *events.Recorder, ns string) {
	t.Helper()
	marker := endpoint.SourceRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "events-flushed", UID: string(uuid.NewUUID())}
	rec.Warn(marker, "Flushed", "every event before this one is written")
	waitFor(t, 10*time.Second, func() bool { return eventsFor(t, ns, marker.UID)["Flushed"] == 1 })
}

func TestEventsOnTransitionsOnly(t *testing.T) {
	rec, stop := events.New(clientset.EventSink(cp.Client), harnessInstance(t), logrus.New())
	defer stop()
	rec.SetLeading(true)
	h := newHarness(t, options{reporters: []controller.Reporter{rec}, warner: rec})
	ing := h.create(ingress(h.ns, "web", enabled("ip-address", "10.43.0.1", "tags", "ok,bad tag"), "web.lan"))
	h.waitHost("web.lan", "10.43.0.1")
	h.sync()
	uid := string(ing.UID)
	waitFor(t, 10*time.Second, func() bool { return eventsFor(t, h.ns, uid)[events.SyncSucceeded] == 1 })

	// The bad tag is a Warning, once, however many syncs read it.
	waitFor(t, 10*time.Second, func() bool { return eventsFor(t, h.ns, uid)["InvalidAnnotation"] == 1 })

	before := eventsFor(t, h.ns, uid)
	for i := 0; i < 3; i++ {
		if out := h.sync(); len(out.Changes) != 0 {
			t.Fatalf("sync %d was not a no-op: %v", i, out.Changes)
		}
	}
	flushed(t, rec, h.ns)
	if after := eventsFor(t, h.ns, uid); total(after) != total(before) {
		t.Fatalf("three no-op syncs emitted events: %v → %v", before, after)
	}
	// Dropping the hostname while the object stays: EntryScheduledForDeletion.
	h.update(ing, func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "other.lan" })
	h.waitHost("other.lan", "10.43.0.1")
	h.sync()
	waitFor(t, 10*time.Second, func() bool { return eventsFor(t, h.ns, uid)[events.EntryScheduledForDeletion] == 1 })
}
