package operator

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// TestTenancyAndBudgetFlags: the flags of the tenancy and the budgets, their defaults and the
// mistakes they refuse.
func TestTenancyAndBudgetFlags(t *testing.T) {
	tls := []string{"--router-hosts-endpoint=r:1", "--tls-ca=a", "--tls-cert=b", "--tls-key=c"}
	for _, tc := range []struct {
		name    string
		args    []string
		tenancy registry.Tenancy
		budgets registry.Budgets
		err     string
	}{
		{name: "defaults: every namespace may claim and adopt, a year's grace at most", args: tls,
			tenancy: registry.Tenancy{Adopters: []string{"*"}, MaxGracePeriod: 365 * 24 * time.Hour}, budgets: registry.DefaultBudgets()},
		{name: "a shared cluster's", args: append([]string{"--namespace-domains=media=media.lan, tv.lan", "--namespace-domains=team-*=apps.lan",
			"--adopt-namespace=infra", "--max-grace-period=1h", "--max-writes-per-sync=100", "--max-entries-per-object=0"}, tls...),
			tenancy: registry.Tenancy{Domains: []registry.NamespaceDomains{{Namespace: "media", Domains: []string{"media.lan", "tv.lan"}},
				{Namespace: "team-*", Domains: []string{"apps.lan"}}}, Adopters: []string{"infra"}, MaxGracePeriod: time.Hour},
			budgets: func() registry.Budgets {
				b := registry.DefaultBudgets()
				b.WritesPerSync, b.EntriesPerObject = 100, 0
				return b
			}()},
		{name: "an empty --adopt-namespace lets none adopt", args: append([]string{"--adopt-namespace="}, tls...),
			tenancy: registry.Tenancy{Adopters: []string{}, MaxGracePeriod: 365 * 24 * time.Hour}, budgets: registry.DefaultBudgets()},
		{name: "a rule without domains", args: append([]string{"--namespace-domains=media"}, tls...), err: "--namespace-domains"},
		{name: "a bad pattern", args: append([]string{"--adopt-namespace=["}, tls...), err: "--adopt-namespace"},
		{name: "a maximum below the grace period", args: append([]string{"--max-grace-period=1m"}, tls...), err: "above the maximum"},
		{name: "a negative budget", args: append([]string{"--max-writes-per-sync=-1"}, tls...), err: "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseFlags(tc.args, Build{Version: "test"})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := cfg.settings()
			if !reflect.DeepEqual(s.Tenancy, tc.tenancy) || s.Budgets != tc.budgets {
				t.Fatalf("tenancy %+v budgets %+v\nwant    %+v budgets %+v", s.Tenancy, s.Budgets, tc.tenancy, tc.budgets)
			}
		})
	}
}
