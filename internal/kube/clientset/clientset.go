// Package clientset adapts a client-go clientset (a fake one, in unit tests) to the clients of
// package kube, for tests and tools that set a cluster up with client-go. The operator itself
// must not import it: it links every API group's client.
package clientset

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/router-hosts-operator/router-hosts-operator/internal/kube"
)

func Ingresses(cs kubernetes.Interface) kube.Ingresses {
	return func(ns string) kube.Reader[*networkingv1.Ingress, *networkingv1.IngressList] {
		return cs.NetworkingV1().Ingresses(ns)
	}
}

func Services(cs kubernetes.Interface) kube.Services {
	return func(ns string) kube.Reader[*corev1.Service, *corev1.ServiceList] { return cs.CoreV1().Services(ns) }
}

func Secrets(cs kubernetes.Interface) kube.Secrets {
	return func(ns string) kube.Reader[*corev1.Secret, *corev1.SecretList] { return cs.CoreV1().Secrets(ns) }
}

func Pods(cs kubernetes.Interface) kube.Pods {
	return func(ns string) kube.Reader[*corev1.Pod, *corev1.PodList] { return cs.CoreV1().Pods(ns) }
}

func ConfigMaps(cs kubernetes.Interface) kube.ConfigMaps {
	return func(ns string) kube.Getter[*corev1.ConfigMap] { return cs.CoreV1().ConfigMaps(ns) }
}

func ServiceAccounts(cs kubernetes.Interface) kube.ServiceAccounts {
	return func(ns string) kube.Getter[*corev1.ServiceAccount] { return cs.CoreV1().ServiceAccounts(ns) }
}

func Events(cs kubernetes.Interface) kube.Events {
	return func(ns string) kube.Lister[*corev1.EventList] { return cs.CoreV1().Events(ns) }
}

func Leases(cs kubernetes.Interface) kube.Leases {
	return func(ns string) kube.LeaseClient { return cs.CoordinationV1().Leases(ns) }
}

// Namespaces reads namespaces, as kube.Core's Namespaces.
func Namespaces(cs kubernetes.Interface) kube.Getter[*corev1.Namespace] {
	return cs.CoreV1().Namespaces()
}

// EventSink writes events through the clientset, as the operator's event recorder does.
func EventSink(cs kubernetes.Interface) record.EventSink {
	return &typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")}
}
