package source

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The "Adding a source" recipe of docs/sources.md, carried out as written for a made-up custom
// resource, Widget, whose spec.hostnames are its hostnames. TestTheRecipeMakesASource shows the
// steps build a working source; TestTheDocsShowTheRecipeAsBuilt keeps the page's lines the ones
// used here.

// Step 1: source/widget.go.

var widgetResources = []crdResource{{schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, "Widget"}}

type widgetKind struct{ crdKind }

func newWidgetKind() kind {
	return &widgetKind{crdKind{resources: widgetResources, transform: slimUnstructured(widgetSpec)}}
}

func (k *widgetKind) optedIn(o metav1.Object) bool { return enabled(o) }

func (k *widgetKind) claim(o metav1.Object) claim {
	u := o.(*unstructured.Unstructured)
	hosts, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "hostnames")
	return annotatedClaim(k.ref(u), u, hosts, Reported{}, nil)
}

// widgetSpec keeps what the kind reads of a Widget's spec.
func widgetSpec(spec map[string]any) map[string]any {
	return map[string]any{"hostnames": spec["hostnames"]}
}

// Step 3: the line of kinds().
var recipe = []kindInfo{
	{"widget", "Widget", newWidgetKind, nil},
}

func TestTheRecipeMakesASource(t *testing.T) {
	gvr := widgetResources[0].gvr
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns", "uid": "uid-w",
			"annotations": map[string]any{AnnotationEnabled: "true", AnnotationIPAddress: "10.1.2.3"}},
		"spec": map[string]any{"hostnames": []any{"widget.lan"}, "colour": "blue"}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "WidgetList"}, w)
	disc := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: gvr.GroupVersion().String(), APIResources: []metav1.APIResource{{Name: gvr.Resource}}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := fakeClients(fake.NewClientset())
	c.Dynamic, c.Discovery = dyn, disc
	r, err := NewResolver(ctx, c, []Strategy{{Kind: StrategyStatic, IP: "10.9.9.9"}})
	if err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	s, err := newSource(ctx, recipe[0].name, recipe[0].build(), c, Config{Resolver: r, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	// The source starts with its caches filled, so the first read already sees the widget.
	eps, err := s.Endpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hostTargets(eps), map[string][]string{"widget.lan": {"10.1.2.3"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("endpoints %v, want %v", got, want)
	}
}

func TestTheDocsShowTheRecipeAsBuilt(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "docs", "sources.md"))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("recipe_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`{"widget", "Widget", newWidgetKind, nil},`,
		`type widgetKind struct{ crdKind }`,
		`return &widgetKind{crdKind{resources: widgetResources, transform: slimUnstructured(widgetSpec)}}`,
	} {
		if !strings.Contains(string(readme), line) {
			t.Errorf("docs/sources.md's recipe lacks %s", line)
		}
		if !strings.Contains(string(self), line) {
			t.Errorf("the recipe built here lacks %s", line)
		}
	}
}
