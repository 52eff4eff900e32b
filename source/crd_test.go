package source

import (
	"context"
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
