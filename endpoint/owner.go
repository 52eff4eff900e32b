package endpoint

// Owner is whose an entry is: what the registry reads from its tags and decides, what the plan
// may do with it, and the word explain and list print.
type Owner string

// The owners of an entry.
const (
	// OwnerThis: this installation wrote the entry for objects of this cluster.
	OwnerThis Owner = "this"
	// OwnerAdopted: a hand-made entry this installation adopted; released, never deleted.
	OwnerAdopted Owner = "adopted"
	// OwnerHandMade: no operator tag; a person or another tool wrote it. It may only be
	// adopted.
	OwnerHandMade Owner = "hand-made"
	// OwnerCoOwned: another cluster's line of a shared hostname that this cluster wants too
	// (its co-owner tag is on it).
	OwnerCoOwned Owner = "co-owned"
	// OwnerOtherCluster: another cluster's operator wrote it.
	OwnerOtherCluster Owner = "other-cluster"
	// OwnerNamesake: another installation writing this cluster's name (another identity).
	OwnerNamesake Owner = "namesake"
	// OwnerSilentCluster: another installation's entry whose newest heartbeat is older than
	// the silent-cluster threshold.
	OwnerSilentCluster Owner = "silent-cluster"
	// OwnerEarlierVersion: an entry of this cluster's name an earlier version wrote, with no
	// identity; and OwnerRenamed: this identity under another name. The claims decide whose
	// they are.
	OwnerEarlierVersion Owner = "earlier-version"
	OwnerRenamed        Owner = "renamed"
)
