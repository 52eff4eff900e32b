package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/router-hosts-operator/router-hosts-operator/source"
	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
)

// benchNamespace holds every Ingress of the run; the operator reads all namespaces, as it does
// by default. HostMappings have a namespace of their own, to which their runs are restricted.
const (
	benchNamespace   = "bench"
	benchHMNamespace = "bench-hm"
)

// app is one annotated Ingress of the run and the entry it should become.
type app struct {
	name, hostname, ip string
	uid                types.UID
}

// cluster grows and edits the run's objects of one kind (Ingresses or HostMappings) through
// the apiserver.
type cluster struct {
	client kubernetes.Interface
	dyn    dynamic.Interface
	kind   string // source.HostMappingKind, or "Ingress"
	ns     string
	apps   []app
	// classWide makes Ingresses without the opt-in annotation, one in classEvery of the class
	// the operator manages (--ingress-class), the others of another class.
	classWide bool
}

// The class-wide run's classes.
const (
	managedClass = "lan"
	otherClass   = "public"
	classEvery   = 10
)

// managed reports whether the i-th Ingress of a class-wide cluster is of the managed class.
func managed(i int) bool { return i%classEvery == 0 }

func newCluster(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, kind string) (*cluster, error) {
	c := &cluster{client: client, dyn: dyn, kind: kind, ns: benchNamespace}
	if kind == source.HostMappingKind {
		c.ns = benchHMNamespace
	}
	return c, c.ensureNamespace(ctx)
}

// ensureNamespace creates the cluster's namespace unless it exists.
func (c *cluster) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", c.ns, err)
	}
	return nil
}

// hostMappings is the HostMapping resource of the cluster's namespace.
func (c *cluster) hostMappings() dynamic.ResourceInterface {
	return c.dyn.Resource(source.HostMappingGVR).Namespace(c.ns)
}

// appIP spreads addresses over 10.100.0.0/14 so that no two apps share one.
func appIP(i int) string {
	return fmt.Sprintf("10.%d.%d.%d", 100+i/(250*250), i/250%250, i%250+1)
}

// grow creates Ingresses until there are n, with 16 writers: the apiserver, not the bench,
// should be what limits the pace.
func (c *cluster) grow(ctx context.Context, n int) error {
	start := len(c.apps)
	if n <= start {
		return nil
	}
	added := make([]app, n-start)
	if err := harness.Pool(16, n-start, func(i int) (err error) {
		added[i], err = c.create(ctx, start+i)
		return err
	}); err != nil {
		return err
	}
	c.apps = append(c.apps, added...)
	return nil
}

// create makes the i-th object: an Ingress with one rule, one path and a class, as a typical
// homelab Ingress, or a HostMapping with its address.
func (c *cluster) create(ctx context.Context, i int) (app, error) {
	if c.kind == source.HostMappingKind {
		return c.createHostMapping(ctx, i)
	}
	a := app{name: fmt.Sprintf("app-%05d", i), hostname: fmt.Sprintf("app-%05d.bench.lan", i), ip: appIP(i)}
	class := "traefik"
	annotations := map[string]string{source.AnnotationEnabled: "true", source.AnnotationIPAddress: a.ip}
	if c.classWide {
		class = otherClass
		if managed(i) {
			class = managedClass
		}
		delete(annotations, source.AnnotationEnabled)
	}
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: c.ns,
			Labels:      map[string]string{"app.kubernetes.io/name": a.name},
			Annotations: annotations},
		Spec: networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{
			Host: a.hostname,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &prefix,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: a.name, Port: networkingv1.ServiceBackendPort{Number: 80}}},
			}}}},
		}}},
	}
	for attempt := 0; ; attempt++ {
		got, err := c.client.NetworkingV1().Ingresses(c.ns).Create(ctx, ing, metav1.CreateOptions{})
		if err == nil {
			a.uid = got.UID
			return a, nil
		}
		// A loaded apiserver sheds load with 429s; anything else, or persistent refusal, ends the run.
		if !apierrors.IsTooManyRequests(err) || attempt == 10 {
			return a, fmt.Errorf("creating Ingress %s: %w", a.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *cluster) createHostMapping(ctx context.Context, i int) (app, error) {
	a := app{name: fmt.Sprintf("hm-%05d", i), hostname: fmt.Sprintf("hm-%05d.bench.lan", i), ip: appIP(i)}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": source.HostMappingKind,
		"metadata": map[string]any{"name": a.name, "namespace": c.ns}, "spec": map[string]any{"hostname": a.hostname, "ipAddress": a.ip}}}
	for attempt := 0; ; attempt++ {
		got, err := c.hostMappings().Create(ctx, u, metav1.CreateOptions{})
		if err == nil {
			a.uid = got.GetUID()
			return a, nil
		}
		if !apierrors.IsTooManyRequests(err) || attempt == 10 {
			return a, fmt.Errorf("creating HostMapping %s: %w", a.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// setIP changes the i-th app's address (an Ingress's annotation, a HostMapping's spec): one
// API write, the change whose latency a run measures.
func (c *cluster) setIP(ctx context.Context, i int, ip string) error {
	var err error
	if c.kind == source.HostMappingKind {
		err = c.patch(ctx, i, map[string]any{"spec": map[string]any{"ipAddress": ip}})
	} else {
		err = c.patchMeta(ctx, i, map[string]any{"annotations": map[string]string{source.AnnotationIPAddress: ip}})
	}
	if err != nil {
		return err
	}
	c.apps[i].ip = ip
	return nil
}

// touch changes a label of the i-th Ingress: an informer event for an opted-in object that
// changes no endpoint, so it triggers a sync that must find nothing to do.
func (c *cluster) touch(ctx context.Context, i int, value string) error {
	return c.patchMeta(ctx, i, map[string]any{"labels": map[string]string{"bench-touch": value}})
}

func (c *cluster) patchMeta(ctx context.Context, i int, meta map[string]any) error {
	return c.patch(ctx, i, map[string]any{"metadata": meta})
}

func (c *cluster) patch(ctx context.Context, i int, patch map[string]any) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding patch: %w", err)
	}
	if c.kind == source.HostMappingKind {
		_, err = c.hostMappings().Patch(ctx, c.apps[i].name, types.MergePatchType, body, metav1.PatchOptions{})
	} else {
		_, err = c.client.NetworkingV1().Ingresses(c.ns).Patch(ctx, c.apps[i].name, types.MergePatchType, body, metav1.PatchOptions{})
	}
	if err != nil {
		return fmt.Errorf("patching %s %s: %w", c.kind, c.apps[i].name, err)
	}
	return nil
}

// shrink deletes the objects past the first n, so that the next run of the same size meets
// the cluster it expects: the timed creates add objects of their own.
func (c *cluster) shrink(ctx context.Context, n int) error {
	for i := len(c.apps) - 1; i >= n; i-- {
		var err error
		if c.kind == source.HostMappingKind {
			err = c.hostMappings().Delete(ctx, c.apps[i].name, metav1.DeleteOptions{})
		} else {
			err = c.client.NetworkingV1().Ingresses(c.ns).Delete(ctx, c.apps[i].name, metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s: %w", c.kind, c.apps[i].name, err)
		}
		c.apps = c.apps[:i]
	}
	return nil
}
