package provider

// Compaction is what became of one aggregate Compact was asked to fold.
type Compaction struct {
	// ID is the aggregate's (the entry's) ID as asked.
	ID string
	// EventsBefore and EventsAfter are the aggregate's events in the server's log before and
	// after: equal for one of a single event, which is left alone, and both 0 for an ID the
	// server does not know.
	EventsBefore, EventsAfter int64
	// Version is the aggregate's version, which compaction keeps: the entry's, or its
	// tombstone's when it is deleted. It confirms, it is not sent back.
	Version int64
	// Err is why the aggregate was not compacted: the call's error, wrapping
	// provider.ErrCompactionUnsupported when the server does not offer the RPC or refuses it,
	// or plan.ErrNotStarted when the call was never made. nil when compacted.
	Err error
}
