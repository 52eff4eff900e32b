package operator

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/dnscheck"
	"github.com/router-hosts-operator/router-hosts-operator/internal/clusterconfig"
	"github.com/router-hosts-operator/router-hosts-operator/metrics"
)

// The metrics package keeps the check's metrics.
var _ dnscheck.Metrics = (*metrics.Metrics)(nil)

// newDNSCheck builds the check of the router's DNS from the settings: off while they name no
// server, since a RouterHostsConfig may name one later. It warns through the event recorder
// (or the hooks' Warner), counts in the metrics, and tells the HostMapping status writer, when there is one, that a
// finding changed. It runs only while this replica leads (Run's lead).
func (op *Operator) newDNSCheck(s clusterconfig.Settings, hooks Hooks, log logrus.FieldLogger) *dnscheck.Checker {
	var timers clock.WithDelayedExecution = clock.RealClock{}
	if c, ok := hooks.Clock.(clock.WithDelayedExecution); ok {
		timers = c
	}
	var warner dnscheck.Warner = op.recorder
	if hooks.Warner != nil {
		warner = hooks.Warner
	}
	c := dnscheck.New(dnscheck.Config{Server: s.VerifyDNS, Interval: s.Interval, Grace: hooks.DNSCheckGrace, Clock: timers,
		Log: log.WithField("component", "dnscheck"), Metrics: op.metrics, Warner: warner,
		Changed: func() {
			if op.Status != nil {
				op.Status.Refresh()
			}
		}})
	if op.Status != nil {
		op.Status.UseAnswers(c)
	}
	return c
}

// MetricsRegistry is the registry of the operator's metrics, for tests that read them in
// process.
func (op *Operator) MetricsRegistry() *prometheus.Registry { return op.metrics.Registry }
