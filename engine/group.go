package engine

// Group is a consumer group (Redis's streamCG).
//
// NB: skeleton; the PEL, consumers and NACK records are added with the
// consumer-group commands.
type Group struct {
	Name        string
	LastID      ID    // last-delivered-id
	EntriesRead int64 // entries-read; -1 when unknown (SCG_INVALID_ENTRIES_READ)
}
