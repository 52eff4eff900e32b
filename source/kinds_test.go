package source

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestRules(t *testing.T) {
	r := []string{"get", "list", "watch"}
	for _, c := range []struct {
		name string
		want []Rule
	}{
		{"ingress", []Rule{{Groups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: r}}},
		{"service", []Rule{{Groups: []string{""}, Resources: []string{"services"}, Verbs: r}}},
		// Both groups share the resources: one rule, as a Role writes it.
		{"traefik", []Rule{{Groups: []string{"traefik.io", "traefik.containo.us"}, Resources: []string{"ingressroutes", "ingressroutetcps"}, Verbs: r}}},
		{"hostmapping", []Rule{
			{Groups: []string{"router-hosts.fzymgc.house"}, Resources: []string{"hostmappings"}, Verbs: r},
			{Groups: []string{"router-hosts.fzymgc.house"}, Resources: []string{"hostmappings/status"}, Verbs: []string{"patch", "update"}},
		}},
		{"gateway-grpcroute", []Rule{
			{Groups: []string{"gateway.networking.k8s.io"}, Resources: []string{"grpcroutes"}, Verbs: r},
			{Groups: []string{"gateway.networking.k8s.io"}, Resources: []string{"gateways"}, Verbs: r, Everywhere: true},
			{Groups: []string{""}, Resources: []string{"namespaces"}, Verbs: r, Everywhere: true},
		}},
		// A name that stands for others: their rules, merged.
		{"gateway", []Rule{
			{Groups: []string{"gateway.networking.k8s.io"}, Resources: []string{"httproutes", "grpcroutes", "tlsroutes"}, Verbs: r},
			{Groups: []string{"gateway.networking.k8s.io"}, Resources: []string{"gateways"}, Verbs: r, Everywhere: true},
			{Groups: []string{""}, Resources: []string{"namespaces"}, Verbs: r, Everywhere: true},
		}},
		{"no-such-source", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Rules(c.name); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Rules(%q) =\n%+v\nwant\n%+v", c.name, got, c.want)
			}
		})
	}
}

func TestMergeRules(t *testing.T) {
	r, w := []string{"get", "list", "watch"}, []string{"patch"}
	for _, c := range []struct {
		name     string
		in, want []Rule
	}{
		{"nothing", nil, nil},
		{"repeats dropped", []Rule{read("a", "x"), read("a", "x")}, []Rule{read("a", "x")}},
		{"one group's resources gathered", []Rule{read("a", "x"), read("a", "y")}, []Rule{read("a", "x", "y")}},
		{"groups of the same resources joined", []Rule{read("a", "x"), read("b", "x")}, []Rule{{Groups: []string{"a", "b"}, Resources: []string{"x"}, Verbs: r}}},
		// Joining a and b would grant b/y, which nothing asked for.
		{"groups of other resources kept apart", []Rule{read("a", "x", "y"), read("b", "x")}, []Rule{read("a", "x", "y"), read("b", "x")}},
		{"other verbs kept apart", []Rule{read("a", "x"), {Groups: []string{"a"}, Resources: []string{"y"}, Verbs: w}},
			[]Rule{read("a", "x"), {Groups: []string{"a"}, Resources: []string{"y"}, Verbs: w}}},
		{"everywhere kept apart", []Rule{read("a", "x"), {Groups: []string{"a"}, Resources: []string{"y"}, Verbs: r, Everywhere: true}},
			[]Rule{read("a", "x"), {Groups: []string{"a"}, Resources: []string{"y"}, Verbs: r, Everywhere: true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mergeRules(c.in); !reflect.DeepEqual(got, c.want) {
				t.Errorf("mergeRules(%+v) =\n%+v\nwant\n%+v", c.in, got, c.want)
			}
		})
	}
}

// reach is one resource a kind lists: where (everywhere, or only the watched namespace).
type reach struct {
	group, resource string
	everywhere      bool
}

func (r reach) String() string {
	where := "in the watched namespace"
	if r.everywhere {
		where = "everywhere"
	}
	return fmt.Sprintf("%s/%s %s", r.group, r.resource, where)
}

// TestKindRulesAreWhatItReads starts every kind of the table (and the docs' recipe) in one
// namespace against clients that record each list, and compares what it lists with what its
// rules grant it to read, both ways: every list granted in the namespace it is made in, and
// every read rule used. An informer watches what it lists, so the lists stand for both. The
// cluster serves exactly what the rules name; a custom resource the kind asks for beside them
// is one discovery says is missing, which the kind logs, and the test fails on.
func TestKindRulesAreWhatItReads(t *testing.T) {
	const ns = "apps"
	for _, k := range append(kinds(), recipe...) {
		if k.build == nil {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			kd := k.build()
			granted := map[reach]bool{}
			served := map[string][]metav1.APIResource{} // group → resources
			for _, r := range kd.rules() {
				for _, g := range r.Groups {
					for _, res := range r.Resources {
						if !strings.Contains(res, "/") {
							served[g] = append(served[g], metav1.APIResource{Name: res})
						}
						if slices.Contains(r.Verbs, "list") {
							granted[reach{g, res, r.Everywhere}] = true
						}
					}
				}
			}
			typed := fake.NewClientset()
			dyn := &recordingDynamic{}
			c := fakeClients(typed)
			c.Dynamic, c.Discovery = dyn, &groupDiscovery{FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}, served: served}
			log, hook := logtest.NewNullLogger()
			log.SetLevel(logrus.InfoLevel)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, err := NewResolver(ctx, c, []Strategy{{Kind: StrategyStatic, IP: "10.9.9.9"}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := newSource(ctx, k.name, kd, c, Config{Namespace: ns, Resolver: r, Log: log}); err != nil {
				t.Fatal(err)
			}

			lists := dyn.lists()
			for _, a := range typed.Actions() {
				if a.GetVerb() == "list" {
					lists = append(lists, listCall{a.GetResource(), a.GetNamespace()})
				}
			}
			listed := map[reach]bool{}
			for _, l := range lists {
				at := reach{l.gvr.Group, l.gvr.Resource, l.ns == ""}
				if !at.everywhere && l.ns != ns {
					t.Errorf("lists %s in namespace %q, neither the watched one nor every one", at, l.ns)
				}
				listed[at] = true
			}
			for _, e := range hook.AllEntries() {
				if res, ok := e.Data["resource"]; ok && strings.Contains(e.Message, "not served") {
					t.Errorf("asks for %v, which its rules do not grant", res)
				}
			}
			for at := range listed {
				if !granted[at] {
					t.Errorf("lists %s, which its rules do not grant", at)
				}
			}
			for g := range granted {
				if !listed[g] {
					t.Errorf("its rules grant reading %s, which it never lists", g)
				}
			}
		})
	}
}

// listCall is one list: of a resource, in a namespace ("" for every one).
type listCall struct {
	gvr schema.GroupVersionResource
	ns  string
}

// recordingDynamic is a dynamic client of an empty cluster that records each list; only
// what informers call is there.
type recordingDynamic struct {
	mu    sync.Mutex
	calls []listCall
}

func (d *recordingDynamic) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return &recordingResource{d: d, gvr: gvr}
}

// IsWatchListSemanticsUnSupported: informers list, then watch, rather than stream.
func (d *recordingDynamic) IsWatchListSemanticsUnSupported() bool { return true }

func (d *recordingDynamic) lists() []listCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

type recordingResource struct {
	dynamic.ResourceInterface
	d   *recordingDynamic
	gvr schema.GroupVersionResource
	ns  string
}

func (r *recordingResource) Namespace(ns string) dynamic.ResourceInterface {
	return &recordingResource{d: r.d, gvr: r.gvr, ns: ns}
}

func (r *recordingResource) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r.d.mu.Lock()
	r.d.calls = append(r.d.calls, listCall{r.gvr, r.ns})
	r.d.mu.Unlock()
	l := &unstructured.UnstructuredList{}
	l.SetResourceVersion("1")
	return l, nil
}

func (r *recordingResource) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// groupDiscovery serves, in every version of a group, the resources named for it.
type groupDiscovery struct {
	*fakediscovery.FakeDiscovery
	served map[string][]metav1.APIResource
}

func (d *groupDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	parsed, err := schema.ParseGroupVersion(gv)
	if err != nil {
		return nil, err
	}
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: d.served[parsed.Group]}, nil
}
