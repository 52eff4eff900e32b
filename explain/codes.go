package explain

import (
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// The reason codes explain gives that are its own: the registry's (HostnameConflict,
// GracePeriod, ...) and the sources' (InvalidAnnotation, NoAddress, NotOptedIn, ...) are
// given in their own words, which are also their Events'.
const (
	// Synced: the router holds the name as the claim wants it.
	Synced = "Synced"
	// Pending: the next sync writes the change shown.
	Pending = "Pending"
	// OutsideDomainFilter: the name is outside --domain-filter (or in --exclude-domains).
	OutsideDomainFilter = "OutsideDomainFilter"
	// Unclaimed: no object of this cluster claims the name.
	Unclaimed = "Unclaimed"
	// NotAnswering: the router's DNS does not answer the name as written (--verify-dns).
	NotAnswering = "NotAnswering"
	// StillAnswering: the router holds nothing for the name, and its DNS still answers it.
	StillAnswering = "StillAnswering"
)

// Code is one reason code and what it means, as docs/explain.md lists it.
type Code struct {
	Code, Meaning string
}

// Codes is every reason code explain can give, in the order the docs list them: a claim's
// outcome, a part of a claim refused, a change held back, an object never read, the DNS check.
func Codes() []Code {
	return []Code{
		{Synced, "the router holds the name as the claim wants it"},
		{Pending, "the next sync writes the change shown"},
		{OutsideDomainFilter, "the name is outside --domain-filter or inside --exclude-domains"},
		{Unclaimed, "no object of this cluster claims the name"},
		{registry.ReasonHostnameConflict, "another namespace, cluster or a hand-made entry holds the name"},
		{registry.ReasonNameNotPermitted, "the tenancy rules do not let the namespace claim the name"},
		{registry.ReasonInvalidAnnotation, "a part of the object's input is dropped or corrected"},
		{source.ReasonInvalidHostname, "the object names a hostname the router would refuse"},
		{source.ReasonNoAddress, "the object resolves no address; its entries are kept as they are"},
		{registry.ReasonOverBudget, "the object or namespace is over a budget (entries, aliases, write rate)"},
		{registry.ReasonTakeUpPaced, "an earlier version's entry waits its turn to be taken up"},
		{registry.ReasonPolicy, "--policy forbids the change"},
		{registry.ReasonGracePeriod, "the entry is marked for deletion and goes when its grace period ends"},
		{registry.ReasonTwinInstallation, "another writer with this installation's identity contests the entry"},
		{registry.ReasonMassDeletionHeld, "the brake holds a mass deletion until it is confirmed"},
		{registry.ReasonWholeReadNeeded, "the change waits for a sync that reads the whole server"},
		{source.ReasonSourceNotEnabled, "no --source reads the object's kind"},
		{source.ReasonOutsideNamespace, "--namespace restricts the operator to another namespace"},
		{source.ReasonNotOptedIn, "the object lacks the opt-in annotation, and no class or Gateway setting takes it in"},
		{source.ReasonExcludedByLabelFilter, "the object's labels do not match --label-filter"},
		{NotAnswering, "the router's DNS does not answer the name as written"},
		{StillAnswering, "the router holds nothing for the name, and its DNS still answers it"},
	}
}

// CodesOfTheLoop are the codes only the running operator's loop gives, from what it
// remembers of earlier syncs (a twin's writes) or of the sync it is in (a change planned from
// the known state), which one read cannot see: explain reads the whole server once and keeps
// nothing, so it does not give them; the operator's Events and logs do.
func CodesOfTheLoop() []string {
	return []string{registry.ReasonTwinInstallation, registry.ReasonWholeReadNeeded}
}
