package clusterconfig

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
)

// TestTheLastGoodConfigurationStays plays the object's life as the watcher sees it, one
// evaluation a step: once settings are in use, only settings that pass Check replace them (an
// object that cannot be used, or is gone, keeps them); before any are in use (a start on an
// object that could not be used), nothing is applied until the object can be, and the flags
// only when there turns out to be no object at all.
func TestTheLastGoodConfigurationStays(t *testing.T) {
	bad := &v1alpha1.RouterHostsConfigSpec{ClusterName: "homelab", Policy: "bogus"}
	homelab := &v1alpha1.RouterHostsConfigSpec{ClusterName: "homelab", Tenancy: &v1alpha1.TenancySpec{AdoptionNamespaces: []string{"infra"}}}
	type step struct {
		spec *v1alpha1.RouterHostsConfigSpec // nil: no object
		// cluster is the cluster name in use after the step, applies how many times Apply
		// was called in all, problem a part of the problem ("" for none).
		cluster string
		applies int
		waiting bool
		problem string
	}
	for _, tc := range []struct {
		name string
		// start is why Load could not use the object; nil: it started on the flags.
		start error
		steps []step
	}{
		{"an object that cannot be used at the start is waited for", errors.New(`spec.policy: unknown policy "bogus"`), []step{
			{spec: bad, cluster: "flags", applies: 0, waiting: true, problem: "spec.policy"},
			{spec: homelab, cluster: "homelab", applies: 1},
			// From here on it is the last good configuration.
			{spec: bad, cluster: "homelab", applies: 1, problem: "spec.policy"},
			{spec: nil, cluster: "homelab", applies: 1, problem: "gone"},
			{spec: bad, cluster: "homelab", applies: 1, problem: "spec.policy"},
			{spec: nil, cluster: "homelab", applies: 1, problem: "gone"},
			{spec: homelab, cluster: "homelab", applies: 1},
			// An object that says "the flags" is applied: it is there and can be used.
			{spec: &v1alpha1.RouterHostsConfigSpec{}, cluster: "flags", applies: 2},
		}},
		{"fixed to say what the flags say, it is applied all the same", errors.New("spec.policy: unknown"), []step{
			{spec: &v1alpha1.RouterHostsConfigSpec{}, cluster: "flags", applies: 1},
		}},
		{"a start that could not read it, and there is none: the flags", errors.New("reading RouterHostsConfig: the server is currently unable to handle the request"), []step{
			{spec: nil, cluster: "flags", applies: 1},
		}},
		{"started without one, it never applies the flags again for nothing", nil, []step{
			{spec: nil, cluster: "flags", applies: 0},
			{spec: homelab, cluster: "homelab", applies: 1},
			{spec: nil, cluster: "homelab", applies: 1, problem: "gone"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, hook := logtest.NewNullLogger()
			var applied []Settings
			w := New(Options{Name: "default", Base: base(), Log: log, Reconfigure: func(s Settings) error { applied = append(applied, s); return nil }})
			w.started(base(), tc.start)
			if w.Waiting() != (tc.start != nil) {
				t.Fatalf("waiting = %v after a start with %v", w.Waiting(), tc.start)
			}
			for i, st := range tc.steps {
				var obj *v1alpha1.RouterHostsConfig
				if st.spec != nil {
					obj = &v1alpha1.RouterHostsConfig{Spec: *st.spec}
				}
				w.evaluate(context.Background(), obj, nil)
				s, problem := w.Settings()
				switch {
				case s.ClusterName != st.cluster:
					t.Fatalf("step %d: cluster %q in use, want %q", i, s.ClusterName, st.cluster)
				case len(applied) != st.applies:
					t.Fatalf("step %d: %d applies, want %d", i, len(applied), st.applies)
				case w.Waiting() != st.waiting:
					t.Fatalf("step %d: waiting = %v, want %v", i, w.Waiting(), st.waiting)
				case st.problem == "" && problem != nil, st.problem != "" && (problem == nil || !strings.Contains(problem.Error(), st.problem)):
					t.Fatalf("step %d: problem %v, want one naming %q", i, problem, st.problem)
				}
				if st.cluster == "homelab" && len(s.Tenancy.Adopters) != 1 {
					t.Fatalf("step %d: adopters %q, want the object's [infra]", i, s.Tenancy.Adopters)
				}
			}
			// The object's deletion is said once a deletion, as a warning naming what stays.
			var gone, wantGone int
			for _, st := range tc.steps {
				if st.problem == "gone" {
					wantGone++
				}
			}
			for _, e := range hook.AllEntries() {
				if strings.Contains(e.Message, "is gone") {
					gone++
					if e.Level != logrus.WarnLevel || e.Data["cluster"] != "homelab" {
						t.Errorf("the deletion logged %s %q %v, want a warning naming the cluster in use", e.Level, e.Message, e.Data)
					}
				}
			}
			if gone != wantGone {
				t.Errorf("the deletion was logged %d times, want %d", gone, wantGone)
			}
		})
	}
}

// TestDomainFilterSetBy: the RouterHostsConfig is named as the domain filter's home only when
// its settings are in use and it sets the filter; else the flags set the filter in use.
func TestDomainFilterSetBy(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *v1alpha1.RouterHostsConfigSpec // nil: no object
		want string
	}{
		{"it sets the domains", &v1alpha1.RouterHostsConfigSpec{DomainFilter: []string{"home.lab"}}, "default"},
		{"it sets the excluded domains", &v1alpha1.RouterHostsConfigSpec{ExcludeDomains: []string{"guest.home.lab"}}, "default"},
		{"it clears the flags' domains", &v1alpha1.RouterHostsConfigSpec{DomainFilter: []string{}}, "default"},
		{"it leaves them to the flags", &v1alpha1.RouterHostsConfigSpec{ClusterName: "homelab"}, ""},
		{"its settings are not in use", &v1alpha1.RouterHostsConfigSpec{DomainFilter: []string{"home.lab"}, Policy: "bogus"}, ""},
		{"there is none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, _ := logtest.NewNullLogger()
			w := New(Options{Name: "default", Base: base(), Log: log, Reconfigure: func(Settings) error { return nil }})
			w.started(base(), nil)
			var obj *v1alpha1.RouterHostsConfig
			if tc.spec != nil {
				obj = &v1alpha1.RouterHostsConfig{Spec: *tc.spec}
				obj.Name = "default"
			}
			w.evaluate(context.Background(), obj, nil)
			if got := w.DomainFilterSetBy(); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}
