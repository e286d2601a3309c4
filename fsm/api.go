package fsm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/raftstream/raftstream/engine"
)

// Errors returned by Future.Wait and Shard.Read. Map them to client errors in
// one place (resp); compare with errors.Is / errors.As.
var (
	// ErrUnknownOutcome: the proposal may or may not have been applied
	// (leadership lost with the entry in flight, shutdown, timeout).
	ErrUnknownOutcome = errors.New("unknown outcome")
	// ErrBusy: the shard's proposal queue is full; nothing was proposed.
	ErrBusy = errors.New("proposal queue full")
	// ErrShutdown: the shard is closed; nothing was proposed.
	ErrShutdown = errors.New("shard is shut down")
)

// NotLeaderError: this replica is not the shard's leader; nothing was
// proposed. Leader is the leader's Raft server ID and address if known
// (empty during an election).
type NotLeaderError struct {
	LeaderID   string
	LeaderAddr string
	// LeaderlessFor, when LeaderID is "", is how long this replica has
	// heard from no leader (0: it has never heard from one, or it just
	// stopped leading).
	LeaderlessFor time.Duration
}

func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" {
		return "not leader (leader unknown)"
	}
	return fmt.Sprintf("not leader (leader %s at %s)", e.LeaderID, e.LeaderAddr)
}

// Unit is a list of commands (each an argv) applied atomically, in order,
// within one log entry: a single command, or a MULTI/EXEC block.
type Unit [][][]byte

// Future is the outcome of one submitted Unit.
type Future struct {
	once    sync.Once
	done    chan struct{}
	replies []engine.Reply
	err     error
	// index is the Raft log index of the entry that applied the unit (0
	// if none did). Written before done is closed.
	index uint64
}

func newFuture() *Future { return &Future{done: make(chan struct{})} }

// complete sets the result. The first call wins; later calls (a timeout
// racing the apply) are ignored.
func (f *Future) complete(replies []engine.Reply, err error) { f.completeAt(replies, err, 0) }

// completeAt is complete for a unit applied by the entry at index.
func (f *Future) completeAt(replies []engine.Reply, err error, index uint64) {
	f.once.Do(func() {
		f.replies, f.err, f.index = replies, err, index
		close(f.done)
	})
}

// Index is the Raft log index of the entry that applied the unit, once Done
// is closed: what WAIT asks the followers to hold. It is 0 when no entry
// applied it: the unit failed, or nothing in it was proposed (every command
// failed validation, or the backend answered without proposing).
func (f *Future) Index() uint64 {
	select {
	case <-f.done:
		return f.index
	default:
		return 0
	}
}

// Done is closed when the result is available.
func (f *Future) Done() <-chan struct{} { return f.done }

// Wait blocks until the unit is applied (one reply per command) or fails.
// A ctx expiry while waiting returns ErrUnknownOutcome.
func (f *Future) Wait(ctx context.Context) ([]engine.Reply, error) {
	select {
	case <-f.done:
		return f.replies, f.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", ErrUnknownOutcome, ctx.Err())
	}
}

// FailedFuture returns a Future already completed with err, for callers that
// reject a unit before it reaches a shard (cluster: shard not hosted here).
func FailedFuture(err error) *Future {
	f := newFuture()
	f.complete(nil, err)
	return f
}

// CompletedFuture returns a future already completed with replies (for
// backends that answer without proposing, and for test backends).
func CompletedFuture(replies []engine.Reply) *Future { return AppliedFuture(replies, 0) }

// AppliedFuture returns a future completed with replies by the entry at
// index (for test backends that stand in for a shard's log).
func AppliedFuture(replies []engine.Reply, index uint64) *Future {
	f := newFuture()
	f.completeAt(replies, nil, index)
	return f
}
