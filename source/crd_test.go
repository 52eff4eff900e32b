package source

import (
	"context"
	"errors"
	"testing"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestRoutesWaitForTheirGateways: a route resource that is served is still not watched while
// the kind's other caches (its Gateways) are missing, so a route is never read without them
// (it would claim nothing and its entries would be marked for deletion); once they are there,
// the next check starts it.
func TestRoutesWaitForTheirGateways(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: gatewayGroup, Version: "v1", Resource: "httproutes"}
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: gvr.GroupVersion().String(), APIResources: []metav1.APIResource{{Name: "httproutes"}}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "HTTPRouteList"})
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	ready := false
	w := newCRDWatch(dyn, disc, Config{Log: log}, nil, slimUnstructured(routeSpec), func(_, _ metav1.Object) {})
	w.after = func() bool { return ready }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.check(ctx, []schema.GroupVersionResource{gvr}, true); err != nil {
		t.Fatal(err)
	}
	if w.started[gvr] || w.listers()[gvr] != nil {
		t.Fatal("the routes were watched before their Gateways were cached")
	}
	ready = true
	if err := w.check(ctx, []schema.GroupVersionResource{gvr}, true); err != nil {
		t.Fatal(err)
	}
	if w.listers()[gvr] == nil {
		t.Fatal("the routes were not watched once their Gateways were cached")
	}
}

// TestDiscoveryAtStartIsAskedAgainUntilItAnswers: an operator that starts while the apiserver
// is away (restarting) waits for discovery to answer instead of exiting, and then watches the
// resource as usual. (Found by the soak: a replica restarted during an apiserver restart
// exited at start.)
func TestDiscoveryAtStartIsAskedAgainUntilItAnswers(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: gvr.GroupVersion().String(), APIResources: []metav1.APIResource{{Name: "ingressroutes"}}}}
	failures := 3
	disc.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
		}
		return false, nil, nil
	})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "IngressRouteList"})
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	w := newCRDWatch(dyn, disc, Config{Log: log}, nil, slimUnstructured(routeMatches), func(_, _ metav1.Object) {})
	w.retry = 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.start(ctx, []schema.GroupVersionResource{gvr}); err != nil {
		t.Fatalf("start gave up on discovery: %v", err)
	}
	if failures != 0 || w.listers()[gvr] == nil {
		t.Fatalf("after discovery answered: %d failures left, watched %v", failures, w.listers()[gvr] != nil)
	}

	// A context that ends while discovery still fails ends start with an error.
	failures = 1 << 30
	w2 := newCRDWatch(dyn, disc, Config{Log: log}, nil, slimUnstructured(routeMatches), func(_, _ metav1.Object) {})
	w2.retry = 0
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := w2.start(ctx2, []schema.GroupVersionResource{gvr}); err == nil {
		t.Fatal("start returned without an error although discovery never answered")
	}
}
