// Package gitops tests what GitOps tools make of the operator's objects: the Argo CD health
// checks of examples/argocd, run in gopher-lua, the Lua Argo CD runs them in, with the
// libraries Argo CD opens for a check from argocd-cm; and Flux's health checks, kstatus. Both on
// the statuses the operator writes. It is a module of its own so that neither library enters
// the operator's go.mod.
package gitops

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/internal/clusterconfig"
	"github.com/router-hosts-operator/router-hosts-operator/status"
)

// repoRoot is the operator's checkout, two levels up.
func repoRoot() string { return filepath.Join("..", "..") }

// The argocd-cm keys of the checks: Argo CD's resource.customizations.health.<group>_<Kind>.
var (
	hostMappingKey = "resource.customizations.health." + v1alpha1.GroupVersion.Group + "_" + v1alpha1.HostMappingKind
	configKey      = "resource.customizations.health." + v1alpha1.GroupVersion.Group + "_" + v1alpha1.RouterHostsConfigKind
)

// scripts are the health checks of examples/argocd's argocd-cm patch, by key. The argo-cd
// chart's values beside it must carry the very same scripts under configs.cm, and the patch
// must be argocd-cm in Argo CD's namespace.
func scripts(t *testing.T) map[string]string {
	t.Helper()
	read := func(name string, into any) {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "argocd", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(raw, into); err != nil {
			t.Fatalf("examples/argocd/%s: %v", name, err)
		}
	}
	var patch struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	read("argocd-cm-patch.yaml", &patch)
	if patch.Kind != "ConfigMap" || patch.Metadata.Name != "argocd-cm" || patch.Metadata.Namespace != "argocd" {
		t.Errorf("the patch is %s %s/%s, not Argo CD's ConfigMap argocd/argocd-cm", patch.Kind, patch.Metadata.Namespace, patch.Metadata.Name)
	}
	var values struct {
		Configs struct {
			CM map[string]string `json:"cm"`
		} `json:"configs"`
	}
	read("argo-cd-values.yaml", &values)
	if !maps.Equal(patch.Data, values.Configs.CM) {
		t.Error("argo-cd-values.yaml's configs.cm is not argocd-cm-patch.yaml's data")
	}
	if keys, want := slices.Sorted(maps.Keys(patch.Data)), []string{hostMappingKey, configKey}; !slices.Equal(keys, want) {
		t.Fatalf("the patch sets %v, want %v", keys, want)
	}
	return patch.Data
}

// health runs a check as Argo CD runs one from argocd-cm: a state without the standard
// libraries but package, base and table, obj set to the object, a one-second deadline, and a
// table returned whose status is one Argo CD knows.
func health(t *testing.T, script string, obj map[string]any) (string, string) {
	t.Helper()
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), NRet: 0, Protect: true}, lua.LString(name)); err != nil {
			t.Fatalf("opening %s: %v", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		t.Fatalf("the health check fails on %s: %v", describe(obj), err)
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the health check returns %s, not a table", l.Get(-1).Type())
	}
	st, msg := lua.LVAsString(ret.RawGetString("status")), lua.LVAsString(ret.RawGetString("message"))
	if !slices.Contains([]string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}, st) {
		t.Fatalf("the health check returns the status %q, which Argo CD turns into Unknown", st)
	}
	return st, msg
}

// toLua converts an object as Argo CD does: maps to tables by key, lists to sequences, numbers
// (int64 from the apiserver, float64 from JSON) to Lua numbers.
func toLua(l *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(x)
	case string:
		return lua.LString(x)
	case int:
		return lua.LNumber(x)
	case int32:
		return lua.LNumber(x)
	case int64:
		return lua.LNumber(x)
	case float64:
		return lua.LNumber(x)
	case json.Number:
		return lua.LString(x)
	case []any:
		t := l.CreateTable(len(x), 0)
		for _, e := range x {
			t.Append(toLua(l, e))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(x))
		for k, e := range x {
			t.RawSetString(k, toLua(l, e))
		}
		return t
	}
	return lua.LNil
}

func describe(obj map[string]any) string {
	b, _ := json.Marshal(obj)
	return string(b)
}

// object is a HostMapping or RouterHostsConfig at generation gen with the given status (nil
// for none).
func object(kind string, gen int64, st map[string]any) map[string]any {
	o := map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": kind,
		"metadata": map[string]any{"name": "x", "generation": gen}}
	if st != nil {
		o["status"] = st
	}
	return o
}

// cond is a condition as the operator writes it.
func cond(typ, st, reason, msg string, gen int64) map[string]any {
	return map[string]any{"type": typ, "status": st, "reason": reason, "message": msg, "observedGeneration": gen,
		"lastTransitionTime": "2026-01-01T00:00:00Z"}
}

// hmStatus is a HostMapping status as status.HostMappings writes it: Synced and Ready with one
// outcome.
func hmStatus(gen int64, ok bool, reason, msg string) map[string]any {
	s := "False"
	if ok {
		s = "True"
	}
	return map[string]any{"synced": ok, "observedGeneration": gen, "routerHostsId": "01J", "addresses": []any{"10.0.0.1"},
		"conditions": []any{cond("Synced", s, reason, msg, gen), cond("Ready", s, reason, msg, gen)}}
}

// TestHealthOfEveryStatus: the HostMapping's check on each reason of its Synced condition, and
// the RouterHostsConfig's on each of its Ready condition: Healthy when Ready is True at the
// object's generation; Progressing before the operator has written a status, while it has not
// seen the latest generation, and for what retries by itself (a HostMapping without an address
// yet, a router that does not answer, a config before its first sync); Degraded for what needs a
// change, with the operator's reason and message.
func TestHealthOfEveryStatus(t *testing.T) {
	all := scripts(t)
	hm, rhc := all[hostMappingKey], all[configKey]
	for _, c := range []struct {
		name, script string
		obj          map[string]any
		want         string
	}{
		{"HostMapping without a status", hm, object("HostMapping", 1, nil), "Progressing"},
		{"HostMapping with an empty status", hm, object("HostMapping", 1, map[string]any{}), "Progressing"},
		{"HostMapping synced", hm, object("HostMapping", 3, hmStatus(3, true, status.ReasonSuccess, "Host synced to router-hosts")), "Healthy"},
		{"HostMapping synced, an older generation", hm, object("HostMapping", 4, hmStatus(3, true, status.ReasonSuccess, "Host synced to router-hosts")), "Progressing"},
		{"HostMapping without an address yet", hm, object("HostMapping", 1, hmStatus(1, false, status.ReasonNoAddress, "no address")), "Progressing"},
		{"HostMapping, router unreachable", hm, object("HostMapping", 1, hmStatus(1, false, status.ReasonServerUnreachable, "router-hosts not reachable")), "Progressing"},
		{"HostMapping in conflict", hm, object("HostMapping", 1, hmStatus(1, false, status.ReasonConflict, "hostname a.lan is claimed by another object or cluster")), "Degraded"},
		{"HostMapping invalid", hm, object("HostMapping", 1, hmStatus(1, false, status.ReasonValidationFailed, "bad")), "Degraded"},
		{"HostMapping write refused", hm, object("HostMapping", 1, hmStatus(1, false, status.ReasonWriteFailed, "refused")), "Degraded"},
		{"HostMapping, certificate refused", hm, object("HostMapping", 1, hmStatus(1, false, status.ReasonAuthenticationFailed, "x509")), "Degraded"},
		{"HostMapping, name not permitted", hm, object("HostMapping", 1, hmStatus(1, false, status.ReasonNotPermitted, "not under media.lan")), "Degraded"},
		{"HostMapping over budget", hm, object("HostMapping", 1, hmStatus(1, false, status.ReasonOverBudget, "over budget")), "Degraded"},
		{"HostMapping, a status from before Ready", hm, object("HostMapping", 2, map[string]any{"synced": true, "observedGeneration": int64(2),
			"conditions": []any{cond("Synced", "True", status.ReasonSuccess, "Host synced to router-hosts", 2)}}), "Healthy"},
		{"HostMapping, Ready unknown", hm, object("HostMapping", 1, map[string]any{"observedGeneration": int64(1),
			"conditions": []any{cond("Ready", "Unknown", "Pending", "", 1)}}), "Progressing"},

		{"RouterHostsConfig without a status", rhc, object("RouterHostsConfig", 1, nil), "Progressing"},
		{"RouterHostsConfig before its first sync", rhc, object("RouterHostsConfig", 1, map[string]any{"observedGeneration": int64(1), "conditions": []any{
			cond("Ready", "False", clusterconfig.ReasonNoSyncYet, "no sync has run yet", 1),
			cond("ServerReachable", "Unknown", clusterconfig.ReasonNoSyncYet, "no sync has run yet", 1)}}), "Progressing"},
		{"RouterHostsConfig ready", rhc, object("RouterHostsConfig", 2, map[string]any{"observedGeneration": int64(2), "conditions": []any{
			cond("Ready", "True", clusterconfig.ReasonReady, "configuration applied, server reachable, last sync complete", 2)}}), "Healthy"},
		{"RouterHostsConfig ready, an older generation", rhc, object("RouterHostsConfig", 3, map[string]any{"observedGeneration": int64(2), "conditions": []any{
			cond("Ready", "True", clusterconfig.ReasonReady, "configuration applied, server reachable, last sync complete", 2)}}), "Progressing"},
		{"RouterHostsConfig, router unreachable", rhc, object("RouterHostsConfig", 1, map[string]any{"observedGeneration": int64(1), "conditions": []any{
			cond("Ready", "False", v1alpha1.ReasonUnreachable, "router-hosts not reachable", 1)}}), "Degraded"},
		{"RouterHostsConfig, certificate refused", rhc, object("RouterHostsConfig", 1, map[string]any{"observedGeneration": int64(1), "conditions": []any{
			cond("Ready", "False", v1alpha1.ReasonAuthenticationFailed, "x509", 1)}}), "Degraded"},
		{"RouterHostsConfig invalid", rhc, object("RouterHostsConfig", 1, map[string]any{"observedGeneration": int64(1), "conditions": []any{
			cond("Ready", "False", v1alpha1.ReasonInvalidConfig, "Secret not found; the last good configuration stays in use", 1)}}), "Degraded"},
		{"RouterHostsConfig, a sync failed", rhc, object("RouterHostsConfig", 1, map[string]any{"observedGeneration": int64(1), "conditions": []any{
			cond("Ready", "False", clusterconfig.ReasonSyncFailed, "3 hostnames were not written", 1)}}), "Degraded"},
		{"RouterHostsConfig, Ready unknown", rhc, object("RouterHostsConfig", 1, map[string]any{"observedGeneration": int64(1), "conditions": []any{
			cond("Ready", "Unknown", "Pending", "", 1)}}), "Progressing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, msg := health(t, c.script, c.obj)
			if got != c.want {
				t.Errorf("%s (%q), want %s", got, msg, c.want)
			}
			if msg == "" {
				t.Error("no message")
			}
			// Degraded says why, in the operator's words.
			if got == "Degraded" {
				var conds []any
				if st, ok := c.obj["status"].(map[string]any); ok {
					conds, _ = st["conditions"].([]any)
				}
				for _, x := range conds {
					if m := x.(map[string]any); m["type"] == "Ready" && !strings.Contains(msg, fmt.Sprint(m["reason"])) {
						t.Errorf("message %q does not name the reason %v", msg, m["reason"])
					}
				}
			}
		})
	}
}
