package importer

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/raftstream/raftstream/engine"
)

// Consumer groups: the target's groups of a stream are made equal to the
// source's by commands chosen from the difference of the two, so that a
// group already equal costs no write:
//
//   - a missing group: XGROUP CREATE key group last-delivered-id MKSTREAM
//     ENTRIESREAD entries-read (-1 when the source reports null);
//     a different last-delivered-id or entries-read: XGROUP SETID … ENTRIESREAD;
//   - a consumer the target lacks: XGROUP CREATECONSUMER;
//   - a pending entry the target lacks or holds differently (owner,
//     delivery time, delivery count): XCLAIM key group owner 0 id
//     TIME delivery-time RETRYCOUNT delivery-count FORCE JUSTID, which
//     creates or rewrites the PEL entry without delivering anything (the
//     command Redis itself propagates to replicas and the AOF for a PEL
//     entry);
//   - a pending entry only the target has (acknowledged on the source
//     since an earlier run): XACK;
//   - a consumer only the target has: XGROUP DELCONSUMER (its PEL is empty
//     by then).
//
// A group only the target has is left alone (--verify reports it).

// groupCmd is one command of a sync and what its reply must say.
type groupCmd struct {
	argv []any
	// check, when set, judges the reply (nil: any non-error reply is fine).
	check func(reply any) error
}

// groupDiff lists the commands that turn the target's group dg (nil when
// missing) into the source's sg.
func (j *streamJob) groupDiff(sg, dg *groupInfo, gone map[engine.ID]bool) ([]groupCmd, error) {
	var cmds []groupCmd
	key, name := j.key, sg.name
	er := strconv.FormatInt(sg.entriesRead, 10)
	switch {
	case dg == nil:
		cmds = append(cmds, groupCmd{argv: []any{"XGROUP", "CREATE", key, name, sg.lastID.String(), "MKSTREAM", "ENTRIESREAD", er}})
		dg = &groupInfo{}
	case dg.lastID != sg.lastID || dg.entriesRead != sg.entriesRead:
		cmds = append(cmds, groupCmd{argv: []any{"XGROUP", "SETID", key, name, sg.lastID.String(), "ENTRIESREAD", er}})
	}
	has := map[string]bool{}
	for _, c := range dg.consumers {
		has[c.name] = true
	}
	keep := map[string]bool{}
	for _, c := range sg.consumers {
		keep[c.name] = true
		if !has[c.name] {
			cmds = append(cmds, groupCmd{argv: []any{"XGROUP", "CREATECONSUMER", key, name, c.name}})
		}
	}
	// Merge the two PELs, both in ID order.
	sp, dp := sg.pending, dg.pending
	for len(sp) > 0 || len(dp) > 0 {
		switch {
		case len(dp) == 0 || len(sp) > 0 && sp[0].id.Less(dp[0].id):
			c, err := j.claim(name, sp[0], gone)
			if err != nil {
				return nil, err
			}
			cmds = append(cmds, c...)
			sp = sp[1:]
		case len(sp) == 0 || dp[0].id.Less(sp[0].id):
			cmds = append(cmds, groupCmd{argv: []any{"XACK", key, name, dp[0].id.String()}})
			dp = dp[1:]
		default:
			if sp[0] != dp[0] {
				c, err := j.claim(name, sp[0], gone)
				if err != nil {
					return nil, err
				}
				cmds = append(cmds, c...)
			}
			sp, dp = sp[1:], dp[1:]
		}
	}
	for _, c := range dg.consumers {
		if !keep[c.name] {
			cmds = append(cmds, groupCmd{argv: []any{"XGROUP", "DELCONSUMER", key, name, c.name}})
		}
	}
	return cmds, nil
}

// claim is the command that reproduces the source's pending entry n on
// the target: XCLAIM for an entry a consumer owns, XNACK … FORCE for one
// that no consumer owns (released by XNACK, Redis 8.8: XCLAIM always gives
// an owner), which makes the target's entry owner-less with the same
// delivery count and no delivery time. Released entries are released in
// ID order; the source's release order (in which XREADGROUP … CLAIM offers
// them) is shown by no command.
func (j *streamJob) claim(group string, n nackInfo, gone map[engine.ID]bool) ([]groupCmd, error) {
	if gone[n.id] {
		return nil, permanent(fmt.Errorf("pending entry %s of group %s: its entry was deleted on the source and is no longer on the target, "+
			"so XCLAIM cannot make it pending; DEL %s on the target and import again", n.id, group, j.key))
	}
	id := n.id.String()
	if n.consumer == "" {
		return []groupCmd{{
			argv: []any{"XNACK", j.key, group, "FAIL", "IDS", 1, id, "RETRYCOUNT", n.deliveryCount, "FORCE"},
			check: func(reply any) error {
				if reply != int64(1) {
					return fmt.Errorf("XNACK %s %s %s: the target did not release it (reply %v): is the entry missing?", j.key, group, id, reply)
				}
				return nil
			},
		}}, nil
	}
	return []groupCmd{{
		argv: []any{"XCLAIM", j.key, group, n.consumer, 0, id, "TIME", n.deliveryTime,
			"RETRYCOUNT", n.deliveryCount, "FORCE", "JUSTID"},
		check: func(reply any) error {
			if a, ok := reply.([]any); !ok || len(a) != 1 || a[0] != id {
				return fmt.Errorf("XCLAIM %s %s %s: the target did not make it pending (reply %v): is the entry missing?", j.key, group, id, reply)
			}
			return nil
		},
	}}, nil
}

// run sends cmds to the target in pipelines of Chunk commands and checks
// every reply; the first error is returned.
func (j *streamJob) run(ctx context.Context, cmds []groupCmd) error {
	for len(cmds) > 0 {
		n := min(len(cmds), j.im.cfg.Chunk)
		p := j.im.dst.c.Pipeline()
		sent := make([]*redis.Cmd, n)
		for i, c := range cmds[:n] {
			sent[i] = p.Do(ctx, c.argv...)
		}
		_, _ = p.Exec(ctx)
		for i, c := range cmds[:n] {
			reply, err := sent[i].Result()
			if err == nil && c.check != nil {
				err = c.check(reply)
			}
			if err != nil {
				return fmt.Errorf("target %v: %w", c.argv, err)
			}
		}
		cmds = cmds[n:]
	}
	return nil
}
