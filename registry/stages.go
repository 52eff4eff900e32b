package registry

import (
	"slices"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// claimStage is one rule desired applies to the claims: it reads the sync's facts and the
// endpoints the stages before it left, and returns its verdicts. It writes to neither: an
// endpoint it changes is a copy.
type claimStage struct {
	name string
	run  func(r *Registry, in *claimsIn, eps []*endpoint.Endpoint) verdicts
}

// claimStages are the rules over the sources' claims, in the order they apply. Up to "merge"
// the endpoints are the claims, one per object and hostname; from "merge" on, one merged
// endpoint per hostname. A stage's name is the Stage of the conflicts and problems it
// reports, and leads to its code: the stage "object-budget" is the method objectBudget in
// object_budget.go, and TestTheObjectBudgetStage in object_budget_test.go tests it
// (TestEveryStageIsItsFile).
var claimStages = [...]claimStage{
	// Reserved tags among an object's tags are reported, whether or not its claim wins; merge
	// writes none of them.
	{"reserved-tags", (*Registry).reservedTags},
	// An object over its budget keeps the entries it has as they are and gets no new name.
	{"object-budget", (*Registry).objectBudget},
	// A namespace claims only the names the tenancy rules give it; an alias passes the domain
	// filter as its hostname did; a grace period is capped at the maximum.
	{"tenancy", (*Registry).tenancy},
	// A hostname claim an alias or a hand-made entry decides is turned down (names.go).
	{"hostnames", (*Registry).hostnames},
	// A hostname another cluster holds is left to it, unless both share it.
	{"foreign", (*Registry).foreign},
	// One namespace holds a hostname (holder, taker); its claims merge, each address carrying
	// the source: tags of the objects that want it and the longest of their grace periods.
	{"merge", (*Registry).merge},
	// Every alias obeys the rule hostnames obey: one namespace of one cluster per name, and
	// none a hand-made entry carries.
	{"aliases", (*Registry).aliases},
	// A hand-made entry of a hostname is adopted when its namespace may adopt it; an address
	// one it may not adopt already serves is left out.
	{"adoption", (*Registry).adoption},
	// A namespace at its budget of entries gets no new hostname and no new address.
	{"namespace-budget", (*Registry).namespaceBudget},
}

// claimsIn is what every claim stage of one desired call reads: the sync's facts, and what the
// stages before it found. Only desired's loop writes it.
type claimsIn struct {
	now    time.Time
	st     *State
	owned  map[string][]*endpoint.Record // by lowercase hostname
	car    carriers
	merges mergeSource
	// byHost are the claims each hostname was merged from, once "merge" has run.
	byHost map[string][]*endpoint.Endpoint
	// changed are the hostnames whose claims or endpoint a stage changed or turned down, in
	// the order first met (changedBy): their merge is made afresh and not kept, so that every
	// sync reports what it refused.
	changed map[string]bool
	order   []string
}

// verdicts is what one stage made of the endpoints: those left, in the order handed (the ones
// it changed are copies), and what it turned down. Only "merge" groups the claims, makes
// merges and reuses them; only "adoption" names the hand-made entries the plan may adopt.
type verdicts struct {
	endpoints []*endpoint.Endpoint
	conflicts []Conflict
	problems  []Problem
	grouped   map[string][]*endpoint.Endpoint
	merges    []Merge
	reused    []string
	adopt     map[string][]endpoint.Record
}

// changedBy are the hostnames a stage handed eps changed or turned down: those of the
// endpoints it did not send on as they came. A stage keeps the order it was handed, so one walk
// finds them: an endpoint not next in line was dropped, or replaced by a copy of the same
// hostname. The grouping stage makes every endpoint anew, so only the hostnames of the claims
// it turned down count.
func changedBy(eps []*endpoint.Endpoint, v *verdicts) []string {
	var out []string
	add := func(h string) {
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	if v.grouped != nil {
		for _, c := range v.conflicts {
			add(c.Hostname)
		}
		return out
	}
	if len(v.endpoints) == len(eps) && (len(eps) == 0 || &v.endpoints[0] == &eps[0]) {
		return nil
	}
	j := 0
	for _, ep := range eps {
		if j < len(v.endpoints) && v.endpoints[j] == ep {
			j++
			continue
		}
		if j < len(v.endpoints) && v.endpoints[j].Hostname == ep.Hostname {
			j++
		}
		add(ep.Hostname)
	}
	return out
}

func (in *claimsIn) change(hosts []string) {
	for _, h := range hosts {
		if in.changed[h] {
			continue
		}
		if in.changed == nil {
			in.changed = map[string]bool{}
		}
		in.changed[h] = true
		in.order = append(in.order, h)
	}
}

// unkept is made with every merge of a changed hostname marked Conflicted, and one added for a
// changed hostname that has none, so that a merge made before for it is forgotten.
func (in *claimsIn) unkept(made []Merge) []Merge {
	if len(in.order) == 0 {
		return made
	}
	at := make(map[string]int, len(made))
	for i := range made {
		at[made[i].Host] = i
	}
	for _, h := range in.order {
		if i, ok := at[h]; ok {
			made[i].Conflicted = true
			continue
		}
		made = append(made, Merge{Host: h, Conflicted: true})
	}
	return made
}

// changeStage is one rule runChangeStages applies to the plan's changes: it returns those to send on and
// those it holds back, each with why, and what it found. It writes to no change it is handed.
type changeStage struct {
	name string
	run  func(r *Registry, in *changesIn, changes []plan.Change) changed
}

// changeStages are the rules over the plan's changes, in the order they apply. A stage's name
// is the Stage of what it holds back, and leads to its code as a claim stage's does.
var changeStages = [...]changeStage{
	// An installation renews its heartbeat on its entries when it is due, on a write the sync
	// makes anyway when there is one.
	{"heartbeat", (*Registry).heartbeat},
	// Another installation whose newest heartbeat is overdue is reported; nothing is held.
	{"silent-clusters", (*Registry).silentClusters},
	// --policy, as external-dns applies it after its plan: upsert-only deletes nothing,
	// create-only changes no entry.
	{"policy", (*Registry).policy},
	// An update that only gives an earlier version's entry this installation's tags goes at
	// most takeUpPerSync a sync.
	{"take-up", (*Registry).takeUp},
	// A write on another cluster's line puts this cluster's co-owner tag on or takes it off;
	// a delete of a line another cluster co-owns is its hand-over (share.go).
	{"share", (*Registry).share},
	// A delete is a mark first, and the deletion (or, for an adopted entry, the release) only
	// once the grace period is over.
	{"grace", (*Registry).grace},
	// An entry a twin contests is not written; it holds nothing else.
	{"twins", (*Registry).twins},
	// A mass deletion waits for the brake, with its new names.
	{"brake", (*Registry).brake},
	// Whatever is held, a release probe on an entry of this cluster is answered.
	{"answer", (*Registry).answer},
	// A sync that planned from the known state, not a whole read, sends nothing that only a
	// whole read may send: the caller reads the server and decides again.
	{"whole-read", (*Registry).wholeRead},
	// An object or namespace that writes faster than its write-rate budget waits, and the sync
	// that finds enough allowance writes its latest state.
	{"rate", (*Registry).rate},
	// Beyond the budget of writes per sync, hostnames wait for the syncs that follow at once,
	// each namespace and object in turn.
	{"writes-per-sync", (*Registry).writesPerSync},
}

// changesIn is what every change stage of one decision reads: the sync's facts, the endpoints
// the claim stages left, what the caller read, the write-rate allowances earlier syncs left
// and the heartbeats the memory holds.
type changesIn struct {
	now     time.Time
	st      *State
	desired []*endpoint.Endpoint
	// claims are the sources' endpoints within the managed domains, refused or not: the
	// objects that exist.
	claims []*endpoint.Endpoint
	read   Read
	rates  Rates
	// known is this installation's newest heartbeat this process read or wrote, began the
	// first decision of a process that never knew one (Memory.knownBeat); others the other
	// installations' newest heartbeats read so far (Memory.othersBeats).
	known, began string
	others       map[string]*beatSeen
}

// changed is what one change stage made of the changes.
type changed struct {
	changes []plan.Change
	held    []Held
	// next is the earliest time one of its holds ends; takeUpLeft the entries of an earlier
	// version still to take up; twin and braked what the twins and the brake stages found;
	// rates and problems the write-rate allowances before the sync's writes and the objects
	// the rate stage held back.
	next       time.Time
	takeUpLeft int
	// paced counts the rate stage's holds; deferred those beyond the writes per sync, and
	// deferredCreates whether one of those creates.
	paced, deferred int
	deferredCreates bool
	// wholeRead are the changes only a whole read may send; answers the writes that take the
	// release probes off, each on its own.
	wholeRead []plan.Change
	answers   []plan.Change
	twin      *Twin
	braked    *Braked
	rates     Rates
	problems  []Problem
	silent    []SilentCluster
}

// The reasons of the registry's decisions, each the word of the Event (or, where none is
// posted, the log line) that tells it: a claim turned down, a part of a claim refused, a change
// held back.
const (
	// ReasonHostnameConflict: the claim's name is held by another namespace, cluster or a
	// hand-made entry.
	ReasonHostnameConflict = "HostnameConflict"
	// ReasonInvalidAnnotation: a part of the object's input is dropped or corrected.
	ReasonInvalidAnnotation = "InvalidAnnotation"
	// ReasonNameNotPermitted: the tenancy rules do not let the namespace claim the name.
	ReasonNameNotPermitted = "NameNotPermitted"
	// ReasonTakeUpPaced: an earlier version's entry waits its turn to be taken up.
	ReasonTakeUpPaced = "TakeUpPaced"
	// ReasonPolicy: --policy forbids the change.
	ReasonPolicy = "PolicyForbids"
	// ReasonGracePeriod: the entry is marked for deletion and goes at Due.
	ReasonGracePeriod = "GracePeriod"
	// ReasonTwinInstallation: a twin contests the entry.
	ReasonTwinInstallation = "TwinInstallation"
	// ReasonMassDeletionHeld: the brake holds the change until Token confirms it.
	ReasonMassDeletionHeld = "MassDeletionHeld"
	// ReasonWholeReadNeeded: the change waits for a sync that reads the whole server.
	ReasonWholeReadNeeded = "WholeReadNeeded"
	// ReasonOverBudget: the object or namespace is over its write-rate budget; the change's
	// hostname is written at Due at the latest state.
	ReasonOverBudget = "OverBudget"
)

// Held is a change a change stage did not send, and why.
type Held struct {
	Change plan.Change
	// Stage is the change stage that held it; Reason one of the Reason constants.
	Stage, Reason string
	// The facts behind it: the policy that forbids it, when a marked entry goes, the token
	// that lets a mass deletion through, whether a twin contests the entry itself.
	Policy    plan.Policy
	Due       time.Time
	Token     string
	Contested bool
}

// String is one line of the dry run: the change, the stage that held it and why.
func (h *Held) String() string {
	why := h.Reason
	switch {
	case h.Reason == ReasonPolicy:
		why += ", --policy=" + string(h.Policy)
	case !h.Due.IsZero():
		why += ", goes at " + h.Due.UTC().Format(time.RFC3339)
	case h.Token != "":
		why += ", confirm with " + h.Token
	case h.Contested:
		why += ", contested"
	}
	return "held by " + h.Stage + " (" + why + "): " + h.Change.String()
}
