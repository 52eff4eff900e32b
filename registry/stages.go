package registry

import (
	"slices"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// claimStage is one rule over the claims: it reads the sync's facts and the endpoints the
// stages before it left, and returns its verdicts; an endpoint it changes is a copy.
type claimStage struct {
	name string
	run  func(r *Registry, in *claimsIn, eps []*endpoint.Endpoint) verdicts
}

// claimStages are the rules over the sources' claims, in order (docs/ownership.md says each).
// Up to "merge" the endpoints are the claims, one per object and hostname; then one merged
// endpoint per hostname. A stage's name is the Stage of what it refuses and leads to its code:
// "object-budget" is objectBudget in object_budget.go, tested by TestTheObjectBudgetStage
// (TestEveryStageIsItsFile).
var claimStages = [...]claimStage{
	{"reserved-tags", (*Registry).reservedTags},       // reported, never written
	{"object-budget", (*Registry).objectBudget},       // over it: what it has stays, nothing new
	{"tenancy", (*Registry).tenancy},                  // the names a namespace may claim
	{"hostnames", (*Registry).hostnames},              // a name an alias or a hand-made entry decides
	{"foreign", (*Registry).foreign},                  // another cluster's name, unless both share it
	{"merge", (*Registry).merge},                      // one namespace holds a name; its claims merge
	{"aliases", (*Registry).aliases},                  // one namespace of one cluster per alias
	{"adoption", (*Registry).adoption},                // which hand-made entries may be adopted
	{"namespace-budget", (*Registry).namespaceBudget}, // at it: no new name or address
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

// changeStage is one rule over the plan's changes: it returns those to send on and those it
// holds back, each with why, and what it found. It writes to no change it is handed.
type changeStage struct {
	name string
	run  func(r *Registry, in *changesIn, changes []plan.Change) changed
}

// changeStages are the rules over the plan's changes, in order; a stage's name is the Stage of
// what it holds back.
var changeStages = [...]changeStage{
	{"heartbeat", (*Registry).heartbeat},            // renewed when due, on a write made anyway
	{"silent-clusters", (*Registry).silentClusters}, // another installation's heartbeat overdue
	{"policy", (*Registry).policy},                  // what --policy forbids
	{"take-up", (*Registry).takeUp},                 // an earlier version's entries, 50 a sync
	{"share", (*Registry).share},                    // co-owner tags on others' lines; hand-overs
	{"grace", (*Registry).grace},                    // a delete is a mark first
	{"twins", (*Registry).twins},                    // an entry a twin contests, alone
	{"brake", (*Registry).brake},                    // a mass deletion, until confirmed
	{"answer", (*Registry).answer},                  // a release probe is answered, whatever is held
	{"whole-read", (*Registry).wholeRead},           // what only a whole read may send
	{"rate", (*Registry).rate},                      // an object or namespace over its write rate
	{"writes-per-sync", (*Registry).writesPerSync},  // beyond the budget, the next syncs at once
	{"compact", (*Registry).compact},                // the logs of its own entries, after the writes
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
	// folds is what the memory knows of compactions: the versions entries were compacted at,
	// the entries this process deleted (nil without a memory).
	folds *folds
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
	// compact are the entries whose logs the sync folds after its writes, compactKeys the
	// write-rate allowances each is charged to; ownEvents the largest own entry's events.
	compact     []string
	compactKeys map[string][2]string
	ownEvents   int64
}

// The reasons of the registry's decisions, each the word of the Event (or, where none is
// posted, the log line) that tells it.
const (
	ReasonHostnameConflict  = "HostnameConflict"  // the name is another namespace's, cluster's or a hand-made entry's
	ReasonInvalidAnnotation = "InvalidAnnotation" // a part of the object's input is dropped or corrected
	ReasonNameNotPermitted  = "NameNotPermitted"  // the tenancy rules do not give the namespace the name
	ReasonTakeUpPaced       = "TakeUpPaced"       // an earlier version's entry waits its turn
	ReasonPolicy            = "PolicyForbids"     // --policy forbids the change
	ReasonGracePeriod       = "GracePeriod"       // marked for deletion; goes at Due
	ReasonTwinInstallation  = "TwinInstallation"  // a twin contests the entry
	ReasonMassDeletionHeld  = "MassDeletionHeld"  // the brake holds it until Token confirms
	ReasonWholeReadNeeded   = "WholeReadNeeded"   // waits for a sync that reads the whole server
	ReasonOverBudget        = "OverBudget"        // over a budget; a rate hold is written at Due
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
