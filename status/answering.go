package status

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/dnscheck"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// The reasons of the Answering condition.
const (
	// ReasonAnswering: the router's DNS answers every name of the object as written (True).
	ReasonAnswering = "Answering"
	// ReasonNotAnswering: a name has had no address for longer than the grace (False).
	ReasonNotAnswering = "NotAnswering"
	// ReasonWrongAddress: a name answers other addresses than written (False).
	ReasonWrongAddress = "WrongAddress"
	// ReasonChecking: a name is not asked yet since its last write, or is within its grace
	// (Unknown).
	ReasonChecking = "Checking"
	// ReasonDNSServerNotAnswering: the router's DNS does not answer at all, so nothing is
	// known of the names it has not answered before (Unknown).
	ReasonDNSServerNotAnswering = "DNSServerNotAnswering"
	// ReasonNotWritten: the object has no entry on the router, so its names are not checked
	// (Unknown).
	ReasonNotWritten = "NotWritten"
)

// Answers is the check of the router's DNS (dnscheck.Checker), read for the Answering
// condition.
type Answers interface {
	// Server is the DNS server asked, "" while the check is off (no condition is written).
	Server() string
	// ServerDown is why the server does not answer, nil while it does.
	ServerDown() error
	// State is the checker's word on a name.
	State(hostname string) dnscheck.Answer
}

// UseAnswers makes the writer add the Answering condition from a, and keep the last report so
// that Refresh can work the statuses out again when a's findings change between syncs.
func (h *HostMappings) UseAnswers(a Answers) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answers = a
}

// Refresh works every status out again from the last sync's report, as when a sync reports:
// the check of the router's DNS changed a finding. It returns at once.
func (h *HostMappings) Refresh() {
	h.mu.Lock()
	if h.report == nil {
		h.report = h.last
	}
	h.mu.Unlock()
	h.signal()
}

// answering is the Answering condition of an object whose Synced state is st: what the router's
// DNS answers for the names of its entries; nothing while the check is off. The object's names
// are those its entries carry on the router (its hostname and the aliases written), and the
// worst of their findings is the object's.
func (h *HostMappings) answering(hm *v1alpha1.HostMapping, r *controller.Report, st state) (status metav1.ConditionStatus, reason, message string) {
	if h.answers == nil {
		return "", "", ""
	}
	server := h.answers.Server()
	if server == "" {
		return "", "", ""
	}
	obj := r.Objects[string(hm.UID)]
	var names []string
	if len(obj.Endpoints) > 0 && st.id != "" {
		names = namesOf(r.Entries[obj.Endpoints[0].Hostname])
	}
	if len(names) == 0 {
		return metav1.ConditionUnknown, ReasonNotWritten, "the object has no entry on the router, so the router's DNS is not checked for it"
	}
	var bad []string
	var wrong, waiting bool
	for _, n := range names {
		a := h.answers.State(n)
		switch {
		case a.Reported:
			bad = append(bad, a.Result.String())
			wrong = wrong || a.Finding == dnscheck.Wrong
		case a.Finding != dnscheck.Answering:
			waiting = true
		}
	}
	switch {
	case len(bad) > 0:
		reason = ReasonNotAnswering
		if wrong {
			reason = ReasonWrongAddress
		}
		return metav1.ConditionFalse, reason, fmt.Sprintf("the router's DNS %s does not answer as written: %s", server, strings.Join(bad, "; "))
	case waiting && h.answers.ServerDown() != nil:
		return metav1.ConditionUnknown, ReasonDNSServerNotAnswering, fmt.Sprintf("the router's DNS %s does not answer: %v", server, h.answers.ServerDown())
	case waiting:
		return metav1.ConditionUnknown, ReasonChecking, fmt.Sprintf("the router's DNS %s is asked for %s a grace after each write", server, strings.Join(names, ", "))
	}
	return metav1.ConditionTrue, ReasonAnswering, fmt.Sprintf("the router's DNS %s answers %s as written", server, strings.Join(names, ", "))
}

// namesOf are the names a hostname's entries put in the router's DNS: the hostname and every
// alias, in order.
func namesOf(entries []endpoint.Record) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range entries {
		for _, n := range append([]string{e.Hostname}, e.Aliases...) {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}
