package manifests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func TestLoad(t *testing.T) {
	ing := "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: apps}\n"
	cases := []struct {
		name  string
		files map[string]string // relative path: content; "-" is stdin
		args  []string
		want  []string // keys
		err   string
	}{
		{name: "a multi-document file, empty documents skipped", files: map[string]string{"all.yaml": "---\n" + ing + "---\n\n---\napiVersion: v1\nkind: Service\nmetadata: {name: svc}\n"},
			args: []string{"all.yaml"}, want: []string{"Ingress.networking.k8s.io apps/web", "Service default/svc"}},
		{name: "a folder, in lexical order, other files ignored", files: map[string]string{"d/b.yml": ing, "d/a.json": `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"apps"}}`, "d/README.md": "# no"},
			args: []string{"d"}, want: []string{"Namespace apps", "Ingress.networking.k8s.io apps/web"}},
		{name: "stdin", files: map[string]string{"-": ing}, args: []string{"-"}, want: []string{"Ingress.networking.k8s.io apps/web"}},
		{name: "a List's items", files: map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(ing, "\n", "\n  ")},
			args: []string{"l.yaml"}, want: []string{"Ingress.networking.k8s.io apps/web"}},
		{name: "no kind", files: map[string]string{"x.yaml": "apiVersion: v1\nmetadata: {name: x}\n"}, args: []string{"x.yaml"}, err: "x.yaml#1: no kind"},
		{name: "generateName only", files: map[string]string{"x.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {generateName: x-}\n"}, args: []string{"x.yaml"}, err: "generateName"},
		{name: "the same object twice", files: map[string]string{"a.yaml": ing, "b.yaml": ing}, args: []string{"a.yaml", "b.yaml"}, err: "also given in"},
		{name: "not YAML", files: map[string]string{"x.yaml": "a: [b\n"}, args: []string{"x.yaml"}, err: "x.yaml#1: not YAML"},
		{name: "a missing file", args: []string{"missing.yaml"}, err: "missing.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var stdin strings.Reader
			for p, content := range tc.files {
				if p == "-" {
					stdin = *strings.NewReader(content)
					continue
				}
				full := filepath.Join(dir, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var args []string
			for _, a := range tc.args {
				if a != "-" {
					a = filepath.Join(dir, a)
				}
				args = append(args, a)
			}
			objs, err := Load(args, &stdin)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, KeyOf(o.Unstructured).String())
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func obj(apiVersion, kind, ns, name string, uid string, labels map[string]string, status map[string]any) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID(uid))
	u.SetLabels(labels)
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// TestOverlay: the manifests stand in for the live objects of the same key, keeping what an
// apply keeps (the UID, the creation time, the status); new objects are the newest; --prune
// removes what it selects and the manifests lack; other live objects stay.
func TestOverlay(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	lbStatus := map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "10.0.0.9"}}}}
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	replacedLive := obj("networking.k8s.io/v1", "Ingress", "apps", "web", "uid-web", map[string]string{"part": "x"}, lbStatus)
	replacedLive.SetCreationTimestamp(created)
	live := []unstructured.Unstructured{replacedLive,
		obj("networking.k8s.io/v1", "Ingress", "apps", "pruned", "uid-pruned", map[string]string{"part": "x"}, nil),
		obj("networking.k8s.io/v1", "Ingress", "apps", "other", "uid-other", nil, nil),
	}
	lister := func(_ context.Context, got schema.GroupVersionResource) ([]unstructured.Unstructured, error) {
		if got.GroupResource() != gvr.GroupResource() {
			return nil, nil
		}
		return live, nil
	}
	web := obj("networking.k8s.io/v1beta1", "Ingress", "apps", "web", "", map[string]string{"part": "x"}, nil)
	web.SetAnnotations(map[string]string{"changed": "yes"})
	fresh := obj("networking.k8s.io/v1", "Ingress", "", "fresh", "", nil, nil)
	cm := obj("v1", "ConfigMap", "apps", "cm", "", nil, nil)
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	sel, _ := labels.Parse("part=x")
	ov := NewOverlay(lister, []Object{{Unstructured: &web, Origin: "f#1"}, {Unstructured: &fresh, Origin: "f#2"}, {Unstructured: &cm, Origin: "f#3"}}, sel, now)

	list, err := ov.Dynamic(nil).Resource(gvr).Namespace("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]unstructured.Unstructured{}
	for _, u := range list.Items {
		byName[u.GetName()] = u
		if u.GetAPIVersion() != "networking.k8s.io/v1" {
			t.Errorf("%s: apiVersion %s, want the version listed", u.GetName(), u.GetAPIVersion())
		}
	}
	if len(byName) != 3 || byName["pruned"].Object != nil {
		t.Fatalf("listed %v: want web, fresh and other, not the pruned one", byName)
	}
	if w := byName["web"]; w.GetUID() != "uid-web" || !w.GetCreationTimestamp().Time.Equal(created.Time) || w.Object["status"] == nil || w.GetAnnotations()["changed"] != "yes" {
		t.Errorf("web %v: want the manifest's content with the live UID, creation time and status", w.Object)
	}
	if f := byName["fresh"]; f.GetNamespace() != "default" || !f.GetCreationTimestamp().Time.Equal(now) || f.GetUID() == "" {
		t.Errorf("fresh %v: want it in default, created now, with a UID", f.Object)
	}
	ings, err := ov.Ingresses()("apps").List(context.Background(), metav1.ListOptions{LabelSelector: "part=x"})
	if err != nil || len(ings.Items) != 1 || ings.Items[0].Name != "web" {
		t.Errorf("typed list in apps with part=x: %v %v, want web alone", ings, err)
	}

	touched := ov.Touched()
	want := map[string]Change{"web": Replaced, "fresh": Added, "pruned": Pruned}
	for k, tt := range touched {
		if want[k.Name] != tt.Change {
			t.Errorf("%s: %s, want %s", k, tt.Change, want[k.Name])
		}
		if k.Name == "fresh" && !tt.StatusUnknown {
			t.Errorf("fresh: want its status unknown")
		}
		if k.Name == "web" && tt.StatusUnknown {
			t.Errorf("web: its status is the live one's")
		}
	}
	if len(touched) != 3 {
		t.Errorf("touched %v: want 3", touched)
	}
	if u := ov.Unread(); len(u) != 1 || u[0].GetKind() != "ConfigMap" {
		t.Errorf("unread %v: want the ConfigMap", u)
	}
}

// TestKnownUIDs: offline, an object the router's entries name keeps their UID and is older than
// any object the manifests add; one they do not name is new.
func TestKnownUIDs(t *testing.T) {
	nas := obj("router-hosts.fzymgc.house/v1alpha1", "HostMapping", "apps", "nas", "", nil, nil)
	printer := obj("router-hosts.fzymgc.house/v1alpha1", "HostMapping", "apps", "printer", "", nil, nil)
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	ov := NewOverlay(nil, []Object{{Unstructured: &nas}, {Unstructured: &printer}}, nil, now)
	ov.Known(map[string]string{"HostMapping apps/nas": "uid-nas"})
	gvr := schema.GroupVersionResource{Group: "router-hosts.fzymgc.house", Version: "v1alpha1", Resource: "hostmappings"}
	list, err := ov.Dynamic(nil).Resource(gvr).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("%v %v", list, err)
	}
	for _, u := range list.Items {
		switch u.GetName() {
		case "nas":
			if u.GetUID() != "uid-nas" || !u.GetCreationTimestamp().Time.Before(now) {
				t.Errorf("nas %v: want the entries' UID and an earlier creation", u.Object["metadata"])
			}
		case "printer":
			if u.GetUID() == "uid-nas" || !u.GetCreationTimestamp().Time.Equal(now) {
				t.Errorf("printer %v: want a UID of its own, created now", u.Object["metadata"])
			}
		}
	}
	for k, tt := range ov.Touched() {
		if want := map[string]Change{"nas": Replaced, "printer": Added}[k.Name]; tt.Change != want {
			t.Errorf("%s: %s, want %s", k, tt.Change, want)
		}
	}
}

func TestServedAs(t *testing.T) {
	for _, tc := range []struct {
		kind, group, resource string
		want                  bool
	}{
		{"Gateway", "gateway.networking.k8s.io", "gateways", true},
		{"Ingress", "networking.k8s.io", "ingresses", true},
		{"IngressRouteTCP", "traefik.io", "ingressroutetcps", true},
		{"HostMapping", "router-hosts.fzymgc.house", "hostmappings", true},
		{"Gateway", "gateway.networking.k8s.io", "gatewayclasses", false},
	} {
		if got := servedAs(schema.GroupKind{Group: tc.group, Kind: tc.kind}, schema.GroupResource{Group: tc.group, Resource: tc.resource}); got != tc.want {
			t.Errorf("%s as %s.%s: %v, want %v", tc.kind, tc.resource, tc.group, got, tc.want)
		}
	}
	ingress := schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}
	if servedAs(ingress, schema.GroupResource{Group: "extensions", Resource: "ingresses"}) {
		t.Error("another group's resource is not the kind's")
	}
}
