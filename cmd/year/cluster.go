package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// namespace holds the year's Ingresses.
const namespace = "homelab"

// cluster applies the days' changes to the apiserver and remembers what it holds.
type cluster struct {
	client  kubernetes.Interface
	objects map[string]object
}

func newCluster(ctx context.Context, client kubernetes.Interface) (*cluster, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	return &cluster{client: client, objects: map[string]object{}}, nil
}

func ingress(o object) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: o.Name, Annotations: map[string]string{
			source.AnnotationEnabled: "true", source.AnnotationIPAddress: o.IP}},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: o.Hostname}}},
	}
}

func (c *cluster) create(ctx context.Context, o object) error {
	if _, err := c.client.NetworkingV1().Ingresses(namespace).Create(ctx, ingress(o), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Ingress %s: %w", o.Name, err)
	}
	c.objects[o.Name] = o
	return nil
}

func (c *cluster) remove(ctx context.Context, name string) error {
	if err := c.client.NetworkingV1().Ingresses(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting Ingress %s: %w", name, err)
	}
	delete(c.objects, name)
	return nil
}

func (c *cluster) move(ctx context.Context, o object) error {
	ing, err := c.client.NetworkingV1().Ingresses(namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading Ingress %s: %w", o.Name, err)
	}
	ing.Annotations[source.AnnotationIPAddress] = o.IP
	if _, err := c.client.NetworkingV1().Ingresses(namespace).Update(ctx, ing, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("moving Ingress %s: %w", o.Name, err)
	}
	c.objects[o.Name] = o
	return nil
}

// apply makes the day's creates, removes and moves, and deletes the object to redeploy.
func (c *cluster) apply(ctx context.Context, d day) error {
	for _, n := range d.Removes {
		if err := c.remove(ctx, n); err != nil {
			return err
		}
	}
	for _, o := range d.Creates {
		if err := c.create(ctx, o); err != nil {
			return err
		}
	}
	for _, o := range d.Moves {
		if err := c.move(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// names is hostname → address of every object the cluster holds.
func (c *cluster) names() map[string]string {
	out := make(map[string]string, len(c.objects))
	for _, o := range c.objects {
		out[o.Hostname] = o.IP
	}
	return out
}

// reader is what the operator's sources answer: the endpoints of the objects they cache.
type reader interface {
	names(ctx context.Context) (map[string]string, error)
}

// settle waits until the operator's informer caches hold what the cluster does, so that the
// sync that follows reads the day's changes.
func settle(ctx context.Context, r reader, want map[string]string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := r.names(ctx)
		if err == nil && equalNames(got, want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator's caches did not catch up with the cluster in 30 s (%d names cached, %d wanted, %v)", len(got), len(want), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func equalNames(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// sortedKeys is m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
