package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// benchNamespace holds every Ingress of the run; the operator reads all namespaces, as it does
// by default.
const benchNamespace = "bench"

// app is one annotated Ingress of the run and the entry it should become.
type app struct {
	name, hostname, ip string
	uid                types.UID
}

// cluster grows and edits the run's Ingresses through the apiserver.
type cluster struct {
	client kubernetes.Interface
	apps   []app
}

func newCluster(ctx context.Context, client kubernetes.Interface) (*cluster, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", benchNamespace, err)
	}
	return &cluster{client: client}, nil
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
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     = make(chan int)
	)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				a, err := c.create(ctx, i)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				added[i-start] = a
			}
		}()
	}
	for i := start; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	c.apps = append(c.apps, added...)
	return nil
}

// create makes the i-th Ingress: one rule, one path, a class, as a typical homelab Ingress.
func (c *cluster) create(ctx context.Context, i int) (app, error) {
	a := app{name: fmt.Sprintf("app-%05d", i), hostname: fmt.Sprintf("app-%05d.bench.lan", i), ip: appIP(i)}
	class := "traefik"
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: benchNamespace,
			Labels:      map[string]string{"app.kubernetes.io/name": a.name},
			Annotations: map[string]string{source.AnnotationEnabled: "true", source.AnnotationIPAddress: a.ip}},
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
		got, err := c.client.NetworkingV1().Ingresses(benchNamespace).Create(ctx, ing, metav1.CreateOptions{})
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

// setIP changes the i-th app's address annotation: one API write, the change whose latency a
// run measures.
func (c *cluster) setIP(ctx context.Context, i int, ip string) error {
	if err := c.patchMeta(ctx, i, map[string]any{"annotations": map[string]string{source.AnnotationIPAddress: ip}}); err != nil {
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
	body, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return fmt.Errorf("encoding patch: %w", err)
	}
	if _, err := c.client.NetworkingV1().Ingresses(benchNamespace).Patch(ctx, c.apps[i].name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patching Ingress %s: %w", c.apps[i].name, err)
	}
	return nil
}
