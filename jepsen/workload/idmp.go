package workload

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/raftstream/raftstream/jepsen/history"
)

// idmpAttempts bounds how often one logical message is sent.
const idmpAttempts = 5

// xaddIdmp sends one logical message with XADD key IDMP pid iid * v value
// (producer "p<process>", iid its sequence number) and retries it, with the
// same producer and iid, while the outcome is unknown (up to idmpAttempts
// sends). Each send is its own xadd-idmp operation in the history; the
// checkers then hold the stream to "every logical message at most once, and
// exactly once if any send was acknowledged" (duplicates, lost, ids). It
// reports whether a send was acknowledged.
func (wl *Workload) xaddIdmp(ctx context.Context, pr *proc, k string) bool {
	pr.n++
	val := fmt.Sprintf("%d-%d", pr.p, pr.n)
	pid, iid := fmt.Sprintf("p%d", pr.p), strconv.Itoa(pr.n)
	for a := 0; a < idmpAttempts && ctx.Err() == nil; a++ {
		if a > 0 {
			select {
			case <-time.After(retryPause * time.Duration(1<<a)):
			case <-ctx.Done():
				return false
			}
		}
		in := &history.Value{Value: val, Producer: pid, IID: iid}
		inv := wl.w.Invoke(pr.p, history.XAddIdmp, k, in)
		r, err := wl.do(ctx, pr, "XADD", k, "IDMP", pid, iid, "*", "v", val)
		id, perr := str(r)
		ev := wl.complete(inv, &history.Value{Value: val, Producer: pid, IID: iid, ID: id}, err, perr)
		if ev.Type == history.OK {
			return true
		}
	}
	return false
}
