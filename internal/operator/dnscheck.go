package operator

import (
	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/router-hosts-operator/router-hosts-operator/dnscheck"
	"github.com/router-hosts-operator/router-hosts-operator/internal/clusterconfig"
	"github.com/router-hosts-operator/router-hosts-operator/metrics"
)

// The metrics package keeps the check's metrics.
var _ dnscheck.Metrics = (*metrics.Metrics)(nil)

// newDNSCheck builds the check of the router's DNS from the settings: off while they name no
// server, since a RouterHostsConfig may name one later. It warns through the event recorder,
// counts in the metrics, and tells the HostMapping status writer, when there is one, that a
// verdict changed. It runs only while this replica leads (Run's lead).
func (op *Operator) newDNSCheck(s clusterconfig.Settings, hooks Hooks, log logrus.FieldLogger) *dnscheck.Checker {
	var timers clock.WithDelayedExecution = clock.RealClock{}
	if c, ok := hooks.Clock.(clock.WithDelayedExecution); ok {
		timers = c
	}
	c := dnscheck.New(dnscheck.Config{Server: s.VerifyDNS, Interval: s.Interval, Grace: hooks.DNSCheckGrace, Clock: timers,
		Log: log.WithField("component", "dnscheck"), Metrics: op.metrics, Warner: op.recorder,
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
