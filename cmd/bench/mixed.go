package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
)

// The mixed run: N Ingresses, N HTTPRoutes on one Gateway and N annotated Services in a
// namespace of their own, beside 10 × N Services nobody annotated, as a cluster that has moved
// part of its traffic to the Gateway API and exposes the rest through MetalLB.
const (
	mixedNamespace    = "bench-mix"
	plainPerAnnotated = 10
)

var (
	benchGatewayGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	benchRouteGVR   = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
)

// growMixed creates the mixed run's objects; it returns every entry the operator should write.
func (b *bench) growMixed(ctx context.Context, ing *cluster, n int) ([]app, error) {
	gw := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "gw", "namespace": mixedNamespace, "annotations": map[string]any{source.AnnotationEnabled: "true"}},
		"spec": map[string]any{"gatewayClassName": "bench", "listeners": []any{
			map[string]any{"name": "web", "protocol": "HTTP", "port": int64(80), "hostname": "*.bench.lan"}}}}}
	gws := ing.dyn.Resource(benchGatewayGVR).Namespace(mixedNamespace)
	got, err := gws.Create(ctx, gw, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating the Gateway: %w", err)
	}
	got.Object["status"] = map[string]any{"addresses": []any{map[string]any{"type": "IPAddress", "value": "10.250.0.1"}}}
	if _, err := gws.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("the Gateway's status: %w", err)
	}
	if err := ing.grow(ctx, n); err != nil {
		return nil, err
	}
	apps := append([]app(nil), ing.apps...)
	var mu sync.Mutex
	err = harness.Pool(16, n, func(i int) error {
		more, err := createMixed(ctx, ing, i)
		mu.Lock()
		apps = append(apps, more...)
		mu.Unlock()
		return err
	})
	return apps, err
}

// createMixed makes the i-th HTTPRoute (accepted by the Gateway, as its controller would say)
// and the i-th annotated Service, and the plain Services beside them.
func createMixed(ctx context.Context, c *cluster, i int) ([]app, error) {
	route := app{name: fmt.Sprintf("rt-%05d", i), hostname: fmt.Sprintf("rt-%05d.bench.lan", i), ip: "10.250.0.1"}
	parent := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": route.name, "namespace": mixedNamespace},
		"spec": map[string]any{"hostnames": []any{route.hostname}, "parentRefs": []any{parent},
			"rules": []any{map[string]any{"backendRefs": []any{map[string]any{"name": route.name, "port": int64(80)}}}}}}}
	routes := c.dyn.Resource(benchRouteGVR).Namespace(mixedNamespace)
	got, err := retry429(func() (*unstructured.Unstructured, error) { return routes.Create(ctx, u, metav1.CreateOptions{}) })
	if err != nil {
		return nil, fmt.Errorf("creating HTTPRoute %s: %w", route.name, err)
	}
	route.uid = got.GetUID()
	got.Object["status"] = map[string]any{"parents": []any{map[string]any{"parentRef": parent, "controllerName": "example.com/bench",
		"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}}}
	if _, err := retry429(func() (*unstructured.Unstructured, error) {
		return routes.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	}); err != nil {
		return nil, fmt.Errorf("status of HTTPRoute %s: %w", route.name, err)
	}
	svc := app{name: fmt.Sprintf("svc-%05d", i), hostname: fmt.Sprintf("svc-%05d.bench.lan", i), ip: appIP(100000 + i)}
	services := c.client.CoreV1().Services(mixedNamespace)
	s := plainService(svc.name, i)
	s.Annotations = map[string]string{source.AnnotationEnabled: "true", source.AnnotationHostname: svc.hostname}
	s.Spec.ExternalIPs = []string{svc.ip}
	created, err := retry429(func() (*corev1.Service, error) { return services.Create(ctx, s, metav1.CreateOptions{}) })
	if err != nil {
		return nil, fmt.Errorf("creating Service %s: %w", svc.name, err)
	}
	svc.uid = created.UID
	for k := 0; k < plainPerAnnotated; k++ {
		p := plainService(fmt.Sprintf("plain-%05d-%d", i, k), i)
		if _, err := retry429(func() (*corev1.Service, error) { return services.Create(ctx, p, metav1.CreateOptions{}) }); err != nil {
			return nil, fmt.Errorf("creating Service %s: %w", p.Name, err)
		}
	}
	return []app{route, svc}, nil
}

// plainService is a Service as charts write them: labels, a selector, two ports.
func plainService(name string, i int) *corev1.Service {
	labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/instance": fmt.Sprint("release-", i%50),
		"app.kubernetes.io/managed-by": "Helm"}
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: mixedNamespace, Labels: labels,
		Annotations: map[string]string{"meta.helm.sh/release-name": fmt.Sprint("release-", i%50)}},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}, {Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090)}}}}
}

// retry429 repeats a write the apiserver sheds with 429, ten times at most.
func retry429[T any](f func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, err := f()
		if err == nil || !apierrors.IsTooManyRequests(err) || attempt == 10 {
			return v, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runMixed measures the mixed run: convergence, no-op syncs and memory, with every kind's source
// on at once.
func (b *bench) runMixed(ctx context.Context, n int) (*result, error) {
	r := &result{n: 3 * n, kind: "mixed", label: fmt.Sprintf("mixed 3×%d (+%d plain Services)", n, plainPerAnnotated*n),
		realServer: b.opts.server == "real"}
	step := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "bench: %s: %s\n", r.label, fmt.Sprintf(format, a...))
	}
	step("creating %d Ingresses, %d HTTPRoutes, %d annotated and %d plain Services", n, n, n, plainPerAnnotated*n)
	t := time.Now()
	apps, err := b.growMixed(ctx, b.mixed, n)
	if err != nil {
		return nil, err
	}
	step("created in %v", time.Since(t).Round(time.Millisecond))
	return b.measure(ctx, r, b.mixed, mixedNamespace, apps, step,
		"--source=ingress", "--source=gateway-httproute", "--source=service", "--namespace="+mixedNamespace)
}

// measure is what the mixed and class-wide runs share: the floor on apps (the entries of the
// objects in ns), the operator with args until it converges, its first sync's events, the
// no-op syncs on cl's objects, and its memory.
func (b *bench) measure(ctx context.Context, r *result, cl *cluster, ns string, apps []app, step func(string, ...any), args ...string) (*result, error) {
	c, err := b.srv.fresh(ctx, b.opts.replayCost)
	if err != nil {
		return nil, err
	}
	if r.floor, r.floorCPU, err = floor(ctx, b.dir, c, "Ingress", ns, apps, b.opts.concurrency); err != nil {
		return nil, err
	}
	op, stopHeap, err := b.startConverged(ctx, b.opts.replayCost, r, args...)
	if err != nil {
		return nil, err
	}
	defer op.stop()
	defer stopHeap()
	step("converged in %v; RPCs %v", r.converge.Round(time.Millisecond), r.rpcs)
	if err := b.settle(ctx, op, r); err != nil {
		return nil, err
	}
	if err := b.noops(ctx, cl, op, r); err != nil {
		return nil, err
	}
	step("no-op syncs: operator %v, ListHosts %v", r.noopOp, r.noopList)
	if err := b.finish(op, r, stopHeap); err != nil {
		return nil, err
	}
	return r, nil
}

// classNamespace holds the class-wide run's Ingresses.
const classNamespace = "bench-class"

// runClassWide measures --ingress-class among n Ingresses of which one in classEvery is of the
// managed class: convergence, no-op syncs and memory, the informer caching all n.
func (b *bench) runClassWide(ctx context.Context, n int) (*result, error) {
	r := &result{n: n / classEvery, objects: n, kind: "class-wide", label: fmt.Sprintf("class-wide %d of %d Ingresses", n/classEvery, n),
		realServer: b.opts.server == "real"}
	step := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "bench: %s: %s\n", r.label, fmt.Sprintf(format, a...))
	}
	step("creating %d Ingresses, %d of class %s", n, n/classEvery, managedClass)
	t := time.Now()
	if err := b.classWide.grow(ctx, n); err != nil {
		return nil, err
	}
	step("created in %v", time.Since(t).Round(time.Millisecond))
	// The managed Ingresses, as a cluster of their own: the no-op syncs touch them.
	mine := *b.classWide
	mine.apps = nil
	for i, a := range b.classWide.apps {
		if managed(i) {
			mine.apps = append(mine.apps, a)
		}
	}
	return b.measure(ctx, r, &mine, classNamespace, mine.apps, step, "--source=ingress", "--ingress-class="+managedClass, "--namespace="+classNamespace)
}
