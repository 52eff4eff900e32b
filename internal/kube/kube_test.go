package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// TestDiscovery: one request to /api/v1 or /apis/<group>/<version>; a group version the
// server lacks is "not served", any other failure an error, as client-go's IsResourceEnabled.
func TestDiscovery(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1":
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"services","namespaced":true,"kind":"Service","verbs":["list"]}]}`))
		case "/apis/traefik.io/v1alpha1":
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","groupVersion":"traefik.io/v1alpha1","resources":[{"name":"ingressroutes","namespaced":true,"kind":"IngressRoute","verbs":["list"]}]}`))
		case "/apis/broken.io/v1":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
		}
	}))
	defer srv.Close()
	d, err := NewDiscovery(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gvr     schema.GroupVersionResource
		want    bool
		wantErr bool
	}{
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "services"}, want: true},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}},
		{gvr: schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}, want: true},
		{gvr: schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}},
		{gvr: schema.GroupVersionResource{Group: "broken.io", Version: "v1", Resource: "things"}, wantErr: true},
	} {
		got, err := IsResourceEnabled(d, tc.gvr)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: %v, %v; want %v, error %v", tc.gvr, got, err, tc.want, tc.wantErr)
		}
	}
	want := []string{"/api/v1", "/api/v1", "/apis/traefik.io/v1alpha1", "/apis/gateway.networking.k8s.io/v1", "/apis/broken.io/v1"}
	if len(paths) != len(want) {
		t.Fatalf("asked %v, want %v", paths, want)
	}
	for i := range want {
		if paths[i] != want[i] {
			t.Fatalf("asked %v, want %v", paths, want)
		}
	}
}

// TestTypedClient: a typed client reads through the scheme of this package alone.
func TestTypedClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/networking.k8s.io/v1/namespaces/apps/ingresses/web" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Ingress","apiVersion":"networking.k8s.io/v1","metadata":{"name":"web","namespace":"apps","uid":"u1"},"spec":{"rules":[{"host":"web.lan"}]}}`))
	}))
	defer srv.Close()
	n, err := NewNetworking(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ing, err := n.Ingresses("apps").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || ing.UID != "u1" || len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != "web.lan" {
		t.Fatalf("got %+v, %v", ing, err)
	}
}
