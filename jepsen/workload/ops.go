package workload

import (
	"context"
	"fmt"

	"github.com/raftstream/raftstream/jepsen/history"
)

// complete records the outcome; a reply that does not parse is recorded as
// info (the command ran, but what it did is not known).
func (wl *Workload) complete(inv history.Event, v *history.Value, err, perr error) history.Event {
	if err == nil && perr != nil {
		return wl.w.CompleteAs(inv, history.Info, nil, fmt.Errorf("unparsable reply: %w", perr))
	}
	if err != nil {
		v = nil
	}
	return wl.w.Complete(inv, v, err)
}

// Each operation reports whether its outcome is ok.

func (wl *Workload) xadd(ctx context.Context, pr *proc, k string) bool {
	pr.n++
	val := fmt.Sprintf("%d-%d", pr.p, pr.n)
	inv := wl.w.Invoke(pr.p, history.XAdd, k, &history.Value{Value: val})
	r, err := wl.do(ctx, pr, "XADD", k, "*", "v", val)
	id, perr := str(r)
	return wl.complete(inv, &history.Value{Value: val, ID: id}, err, perr).Type == history.OK
}

func (wl *Workload) xrange(ctx context.Context, pr *proc, k string) bool {
	inv := wl.w.Invoke(pr.p, history.XRange, k, &history.Value{Full: true})
	r, err := wl.do(ctx, pr, "XRANGE", k, "-", "+")
	es, perr := entries(r)
	return wl.complete(inv, &history.Value{Full: true, Entries: es}, err, perr).Type == history.OK
}

// xread tails from the last ID this process saw (from 0-0 the first time,
// then the read is full unless COUNT cut it).
func (wl *Workload) xread(ctx context.Context, pr *proc, k string) bool {
	from := pr.lastRead[k]
	if from == "" {
		from = "0-0"
	}
	inv := wl.w.Invoke(pr.p, history.XRead, k, &history.Value{From: from})
	r, err := wl.do(ctx, pr, "XREAD", "COUNT", 50, "STREAMS", k, from)
	es, perr := streamEntries(r, k)
	v := &history.Value{From: from, Entries: es, Full: from == "0-0" && len(es) < 50}
	ok := wl.complete(inv, v, err, perr).Type == history.OK
	if ok && len(es) > 0 {
		pr.lastRead[k] = es[len(es)-1].ID
	}
	return ok
}

// xreadgroup reads up to count new entries (">") or this consumer's pending
// ones ("0"); it returns how many entries came back and whether the outcome
// is known.
func (wl *Workload) xreadgroup(ctx context.Context, pr *proc, k, from string, count int) (int, bool) {
	c := consumer(pr)
	in := &history.Value{Group: wl.cfg.Group, Consumer: c, From: from}
	inv := wl.w.Invoke(pr.p, history.XReadGroup, k, in)
	r, err := wl.do(ctx, pr, "XREADGROUP", "GROUP", wl.cfg.Group, c, "COUNT", count, "STREAMS", k, from)
	es, perr := streamEntries(r, k)
	v := *in
	v.Entries = es
	done := wl.complete(inv, &v, err, perr)
	if done.Type != history.OK {
		return 0, false
	}
	if from == ">" {
		for _, e := range es {
			pr.deliver(k, e.ID)
		}
	}
	return len(es), true
}

// xack acknowledges up to max entries delivered to this consumer.
func (wl *Workload) xack(ctx context.Context, pr *proc, k string, max int) bool {
	ids := pr.unacked[k]
	if len(ids) > max {
		ids = ids[:max]
	}
	if len(ids) == 0 {
		ids = []string{"0-1"} // still exercise XACK; acknowledges nothing
	}
	in := &history.Value{Group: wl.cfg.Group, IDs: ids}
	inv := wl.w.Invoke(pr.p, history.XAck, k, in)
	args := []any{"XACK", k, wl.cfg.Group}
	for _, id := range ids {
		args = append(args, id)
	}
	r, err := wl.do(ctx, pr, args...)
	n, perr := r.(int64)
	var pe error
	if err == nil && !perr {
		pe = fmt.Errorf("XACK reply %T", r)
	}
	v := *in
	v.Count = int(n)
	done := wl.complete(inv, &v, err, pe)
	if done.Type == history.OK && pr.unacked[k] != nil {
		pr.unacked[k] = pr.unacked[k][min(len(ids), len(pr.unacked[k])):]
	}
	return done.Type == history.OK
}

// xautoclaim claims up to count entries idle for 0 ms to this consumer from
// the start ID; it returns the server's cursor ("0-0" when the scan is
// complete) and whether the outcome is known.
func (wl *Workload) xautoclaim(ctx context.Context, pr *proc, k, from string, count int) (string, bool) {
	c := consumer(pr)
	in := &history.Value{Group: wl.cfg.Group, Consumer: c, From: from}
	inv := wl.w.Invoke(pr.p, history.XAutoClaim, k, in)
	r, err := wl.do(ctx, pr, "XAUTOCLAIM", k, wl.cfg.Group, c, 0, from, "COUNT", count)
	next, es, deleted, perr := autoclaim(r)
	v := *in
	v.Entries, v.IDs = es, deleted
	done := wl.complete(inv, &v, err, perr)
	if done.Type != history.OK {
		return "", false
	}
	for _, e := range es {
		pr.deliver(k, e.ID)
	}
	return next, true
}

func (wl *Workload) xpending(ctx context.Context, pr *proc, k string) bool {
	in := &history.Value{Group: wl.cfg.Group}
	inv := wl.w.Invoke(pr.p, history.XPending, k, in)
	r, err := wl.do(ctx, pr, "XPENDING", k, wl.cfg.Group, "-", "+", 1000000)
	ps, perr := pending(r)
	v := *in
	v.Pending = ps
	return wl.complete(inv, &v, err, perr).Type == history.OK
}

func consumer(pr *proc) string { return fmt.Sprintf("c%d", pr.p) }

// deliver remembers id as delivered to this consumer and not yet acked.
func (pr *proc) deliver(k, id string) {
	for _, x := range pr.unacked[k] {
		if x == id {
			return
		}
	}
	pr.unacked[k] = append(pr.unacked[k], id)
}
