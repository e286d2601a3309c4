package engine

import (
	"encoding/binary"
	"slices"
	"strings"
)

// Retention policies (a raftstream extension, not Redis): a table of
// policies, each for a stream name or a key pattern (orders:*), enforced by
// trimming through the log.
//
// A policy has up to three limits and a mode:
//   - MAXLEN n: at most about n entries (MAXLEN ~ n: whole nodes go);
//   - MAXAGE ms: entries whose ID time is more than ms before the entry's
//     now go (MINID ~ now-ms: whole nodes, so the oldest entry kept is at
//     most one node's span older than the limit);
//   - MAXBYTES b: the newest whole nodes whose listpacks fit in b bytes stay
//     (MAXLEN ~ of the entries they hold);
//   - KEEPREF (default), DELREF or ACKED (Redis 8.2's meanings, trim_policy.go).
//     Under ACKED nothing from the first entry some group has not delivered
//     or still has pending on is removed (retention trims from the head up
//     to it, so groups' lag stays computable); DELREF also drops the removed
//     entries from every PEL.
//
// The table is replicated state: RAFTSTREAM.RETENTION SET/DEL go through
// the log of every shard (resp/retention.go fans them out), and snapshots
// carry it. The shard leader's retention cycle (RetentionCycle) proposes
// RAFTSTREAM.RETAIN key [key ...] for streams a policy would trim; that
// command evaluates the policy at the entry's now, so every replica trims
// the same entries, and does nothing to a stream with nothing to trim.
// Trimming goes through the XTRIM machinery: Length, first entry,
// max-deleted-entry-id and entries-added move exactly as XTRIM moves them.
//
// When several policies match a stream, the one whose pattern equals the
// name wins, else the longest pattern, then the first in byte order.

const (
	// RetentionCommand is the log command that changes or reads the table
	// (what RAFTSTREAM RETENTION sends to every shard).
	RetentionCommand = "raftstream.retention"
	retainCmd        = "raftstream.retain"
	// maxRetentionPolicies bounds the table (every stream creation and
	// XINFO STREAM tests the patterns).
	maxRetentionPolicies = 1024
)

func init() {
	register(RetentionCommand, cmdRetention)
	register(retainCmd, cmdRetain)
	registerValidator(RetentionCommand, func(_ int64, argv [][]byte) *Error { _, err := retentionSyntax(argv); return err })
	registerValidator(retainCmd, func(_ int64, argv [][]byte) *Error { return arityAtLeast(argv, 2, retainCmd) })
}

// retentionPolicy is one row of the table. A limit of -1 is unset.
type retentionPolicy struct {
	Pattern                  string
	MaxLen, MaxAge, MaxBytes int64
	Mode                     refPolicy
}

// retention is the table and the streams it governs.
//
// Invariant: keys holds, once each, exactly the stream keys some policy
// matches (expired ones included until removed); pos[keys[i]] == i.
// policies is sorted by pattern.
type retention struct {
	policies []*retentionPolicy
	keys     []string
	pos      map[string]int
}

// match returns the policy for key, or nil.
func (r *retention) match(key string) *retentionPolicy {
	var best *retentionPolicy
	for _, p := range r.policies {
		if p.Pattern == key {
			return p
		}
		if (best == nil || len(p.Pattern) > len(best.Pattern)) && GlobMatch(p.Pattern, key, false) {
			best = p
		}
	}
	return best
}

// track records a new stream key if a policy governs it.
func (r *retention) track(key string) {
	if len(r.policies) == 0 || r.match(key) == nil {
		return
	}
	if _, ok := r.pos[key]; ok {
		return
	}
	if r.pos == nil {
		r.pos = map[string]int{}
	}
	r.pos[key] = len(r.keys)
	r.keys = append(r.keys, key)
}

// untrack forgets a stream key (swapping the last one into its place).
func (r *retention) untrack(key string) {
	i, ok := r.pos[key]
	if !ok {
		return
	}
	last := len(r.keys) - 1
	if i != last {
		r.keys[i] = r.keys[last]
		r.pos[r.keys[i]] = i
	}
	r.keys = r.keys[:last]
	delete(r.pos, key)
}

// retrack rebuilds keys after the table changed, in key order.
func (e *Engine) retrack() {
	e.ret.keys, e.ret.pos = nil, nil
	if len(e.ret.policies) == 0 {
		return
	}
	for _, k := range e.sortedKeys() {
		if e.keys[k].Kind == KindStream {
			e.ret.track(k)
		}
	}
}

// ---- RAFTSTREAM.RETENTION -----------------------------------------------------

// retentionArgs is a parsed RAFTSTREAM.RETENTION command.
type retentionArgs struct {
	sub    string // SET, DEL, GET, LIST
	policy retentionPolicy
}

// retentionSyntax parses
//
//	RAFTSTREAM.RETENTION SET pattern [MAXLEN n] [MAXAGE ms] [MAXBYTES b] [KEEPREF|DELREF|ACKED]
//	RAFTSTREAM.RETENTION DEL|GET pattern
//	RAFTSTREAM.RETENTION LIST
//
// (what RAFTSTREAM RETENTION sends with its own name); MAXBYTES takes
// memory units (100mb) as CONFIG SET does.
func retentionSyntax(argv [][]byte) (retentionArgs, *Error) {
	var a retentionArgs
	if len(argv) < 2 {
		return a, WrongArity("raftstream|retention")
	}
	a.sub = strings.ToUpper(string(argv[1]))
	switch {
	case a.sub == "LIST" && len(argv) == 2:
		return a, nil
	case (a.sub == "DEL" || a.sub == "GET") && len(argv) == 3:
		a.policy.Pattern = string(argv[2])
		return a, nil
	case a.sub == "SET" && len(argv) >= 4:
	case a.sub == "SET" || a.sub == "DEL" || a.sub == "GET" || a.sub == "LIST":
		return a, Errorf("ERR wrong number of arguments for 'raftstream|retention|%s' command", strings.ToLower(a.sub))
	default:
		return a, Errorf("ERR unknown subcommand '%.128s'. Try SET, GET, DEL or LIST.", argv[1])
	}
	p := &a.policy
	p.Pattern = string(argv[2])
	p.MaxLen, p.MaxAge, p.MaxBytes = -1, -1, -1
	if p.Pattern == "" {
		return a, Errorf("ERR the retention pattern must not be empty")
	}
	modeGiven := false
	for i := 3; i < len(argv); i++ {
		opt := argv[i]
		var limit *int64
		switch {
		case EqFold(opt, "MAXLEN"):
			limit = &p.MaxLen
		case EqFold(opt, "MAXAGE"):
			limit = &p.MaxAge
		case EqFold(opt, "MAXBYTES"):
			limit = &p.MaxBytes
		case isPolicy(opt) && !modeGiven:
			p.Mode, _ = parsePolicy(opt)
			modeGiven = true
			continue
		default:
			return a, ErrSyntax
		}
		if *limit != -1 || i+1 == len(argv) {
			return a, ErrSyntax
		}
		i++
		name := strings.ToUpper(string(opt))
		if name == "MAXBYTES" {
			v, ok := ParseMemory(argv[i])
			if !ok || v > 1<<62 || len(argv[i]) == 0 {
				return a, Errorf("ERR MAXBYTES must be a memory value (bytes, or with a unit: 64kb, 100mb)")
			}
			*limit = int64(v)
			continue
		}
		v, err := intArg(argv[i], "")
		if err != nil {
			return a, err
		}
		if v < 0 {
			return a, Errorf("ERR %s must be >= 0", name)
		}
		*limit = v
	}
	if p.MaxLen < 0 && p.MaxAge < 0 && p.MaxBytes < 0 {
		return a, Errorf("ERR RETENTION SET needs at least one of MAXLEN, MAXAGE and MAXBYTES")
	}
	return a, nil
}

func cmdRetention(e *Engine, now int64, argv [][]byte) Reply {
	a, err := retentionSyntax(argv)
	if err != nil {
		return err
	}
	r := &e.ret
	i, found := slices.BinarySearchFunc(r.policies, a.policy.Pattern, func(p *retentionPolicy, pat string) int {
		return strings.Compare(p.Pattern, pat)
	})
	switch a.sub {
	case "LIST":
		out := make(Array, len(r.policies))
		for j, p := range r.policies {
			out[j] = p.reply()
		}
		return out
	case "GET":
		if !found {
			return NullBulk{}
		}
		return r.policies[i].reply()
	case "DEL":
		if !found {
			return Integer(0)
		}
		r.policies = slices.Delete(r.policies, i, i+1)
		e.retrack()
		return Integer(1)
	}
	p := a.policy
	if found {
		r.policies[i] = &p
	} else {
		if len(r.policies) >= maxRetentionPolicies {
			return Errorf("ERR too many retention policies (at most %d)", maxRetentionPolicies)
		}
		r.policies = slices.Insert(r.policies, i, &p)
	}
	e.retrack()
	return OK
}

// reply is the policy as RAFTSTREAM RETENTION GET shows it: unset limits
// are nulls.
func (p *retentionPolicy) reply() Reply {
	limit := func(v int64) Reply {
		if v < 0 {
			return NullBulk{}
		}
		return Integer(v)
	}
	return Map{
		Bulk("pattern"), Bulk(p.Pattern),
		Bulk("maxlen"), limit(p.MaxLen),
		Bulk("maxage"), limit(p.MaxAge),
		Bulk("maxbytes"), limit(p.MaxBytes),
		Bulk("mode"), Bulk(p.modeName()),
	}
}

func (p *retentionPolicy) modeName() string {
	switch p.Mode {
	case policyDelRef:
		return "delref"
	case policyAcked:
		return "acked"
	}
	return "keepref"
}

// retentionXInfo is the field pair XINFO STREAM appends for a stream a
// policy governs (a raftstream extension; nothing for other streams).
func (e *Engine) retentionXInfo(key []byte) Map {
	if len(e.ret.policies) == 0 {
		return nil
	}
	p := e.ret.match(string(key))
	if p == nil {
		return nil
	}
	return Map{Bulk("retention-policy"), p.reply()}
}

// ---- enforcement -------------------------------------------------------------

// retentionTrims returns the trims p asks of s at now: MINID for MAXAGE,
// then MAXLEN for MAXLEN and MAXBYTES (the smaller), each approximate with
// the default LIMIT, under p's mode; under ACKED none reaches the first
// entry a group still needs.
func (s *Stream) retentionTrims(p *retentionPolicy, now int64, cfg Config) []trimArgs {
	base := trimArgs{approx: true, policy: p.Mode}
	base.applyDefaultLimit(cfg)
	if p.Mode == policyAcked {
		base.ceiling, base.hasCeiling = s.firstUnacked()
	}
	var out []trimArgs
	if p.MaxAge >= 0 && now-p.MaxAge > 0 {
		a := base
		a.strategy, a.minID = trimMinID, ID{Ms: uint64(now - p.MaxAge)}
		out = append(out, a)
	}
	maxLen := int64(-1)
	if p.MaxLen >= 0 {
		maxLen = p.MaxLen
	}
	if p.MaxBytes >= 0 {
		if n := s.entriesWithin(p.MaxBytes); maxLen < 0 || n < maxLen {
			maxLen = n
		}
	}
	if maxLen >= 0 {
		a := base
		a.strategy, a.maxLen = trimMaxLen, maxLen
		out = append(out, a)
	}
	return out
}

// entriesWithin is the number of live entries in the newest whole nodes
// whose listpacks add up to at most b bytes.
func (s *Stream) entriesWithin(b int64) int64 {
	var bytes, n int64
	for i := len(s.rax.nodes) - 1; i >= 0; i-- {
		nd := &s.rax.nodes[i]
		if bytes += int64(len(nd.lp)); bytes > b {
			break
		}
		live, _ := nd.counts()
		n += live
	}
	return n
}

// firstUnacked returns the first live entry some group has not delivered
// or has pending, if any: what ACKED retention must keep, with everything
// after it.
func (s *Stream) firstUnacked() (ID, bool) {
	var u ID
	found := false
	consider := func(id ID) {
		if !found || id.Less(u) {
			u, found = id, true
		}
	}
	for _, g := range s.Groups {
		if g.LastID != MaxID {
			if it := s.Iter(g.LastID.next(), MaxID, false); it.Next() {
				consider(it.ID)
			}
		}
		cu := g.PEL.Seek(s.FirstID)
		for nk, ok := cu.Next(); ok && (!found || nk.ID.Less(u)); nk, ok = cu.Next() {
			if s.isLive(nk.ID) {
				consider(nk.ID)
				break
			}
		}
	}
	return u, found
}

// isLive reports whether id is a live entry of s.
func (s *Stream) isLive(id ID) bool {
	i := s.rax.seekLE(id)
	if i < 0 || s.rax.nodes[i].last.Less(id) {
		return false
	}
	_, live := s.rax.nodes[i].find(id)
	return live
}

// trimWouldDelete reports whether s.trim(a) would delete an entry, for the
// trims retentionTrims makes (approximate under KEEPREF; under DELREF and
// ACKED, entry by entry from the first live one). It only reads.
func (s *Stream) trimWouldDelete(a *trimArgs) bool {
	if s.Length == 0 || (a.strategy == trimMaxLen && s.Length <= uint64(a.maxLen)) {
		return false
	}
	nodes := s.rax.nodes
	if a.policy == policyKeepRef {
		n := &nodes[0]
		entries, _ := n.counts()
		if a.limit != 0 && entries > a.limit {
			return false
		}
		if a.strategy == trimMaxLen {
			return s.Length-uint64(entries) >= uint64(a.maxLen)
		}
		return n.last.Less(a.minID)
	}
	// trimWithRefs frees the empty nodes before the first live entry and
	// deletes that entry if the strategy and the ceiling allow.
	f := s.FirstID
	if a.hasCeiling && !f.Less(a.ceiling) || a.strategy == trimMinID && !f.Less(a.minID) {
		return false
	}
	if i := s.rax.seekLE(f); i >= 0 && a.limit != 0 {
		if entries, _ := nodes[i].counts(); entries > a.limit {
			return false
		}
	}
	return true
}

// retainKey applies key's policy to its stream at now and returns the
// number of entries removed.
func (e *Engine) retainKey(key []byte, now int64) int64 {
	if len(e.ret.policies) == 0 {
		return 0
	}
	v := e.get(key, now)
	if v == nil || v.Kind != KindStream {
		return 0
	}
	p := e.ret.match(string(key))
	if p == nil {
		return 0
	}
	var n int64
	for _, a := range v.Stream.retentionTrims(p, now, e.cfg) {
		n += v.Stream.trim(&a)
	}
	return n
}

// retainDue reports whether key's policy would trim its stream at now.
func (e *Engine) retainDue(key string, now int64) bool {
	v := e.getStr(key, now)
	if v == nil || v.Kind != KindStream {
		return false
	}
	p := e.ret.match(key)
	if p == nil {
		return false
	}
	for _, a := range v.Stream.retentionTrims(p, now, e.cfg) {
		if v.Stream.trimWouldDelete(&a) {
			return true
		}
	}
	return false
}

// cmdRetain is RAFTSTREAM.RETAIN key [key ...]: each key's policy applied
// at now; replies the entries removed.
func cmdRetain(e *Engine, now int64, argv [][]byte) Reply {
	if err := arityAtLeast(argv, 2, retainCmd); err != nil {
		return err
	}
	var n int64
	for _, k := range argv[1:] {
		n += e.retainKey(k, now)
	}
	return Integer(n)
}

// RetentionCycle is one step of the retention cycle: it looks at up to
// visit of the streams a policy governs, starting at cursor, and returns
// the log command that trims up to max of them that need it at now
// (RAFTSTREAM.RETAIN), or nil, and the cursor to start from next time. It
// only reads: the shard leader calls it under the read lock and proposes
// the command. Streams created or deleted meanwhile may shift the order;
// every governed stream is still looked at within two passes.
func (e *Engine) RetentionCycle(now int64, cursor, visit, max int) ([][]byte, int) {
	keys := e.ret.keys
	if len(keys) == 0 {
		return nil, 0
	}
	if cursor >= len(keys) || cursor < 0 {
		cursor = 0
	}
	var argv [][]byte
	i := cursor
	for seen := 0; seen < min(visit, len(keys)) && len(argv) <= max; seen++ {
		if e.retainDue(keys[i], now) {
			if argv == nil {
				argv = [][]byte{[]byte(retainCmd)}
			}
			argv = append(argv, []byte(keys[i]))
		}
		if i++; i == len(keys) {
			i = 0
		}
	}
	return argv, i
}

// ---- snapshot encoding ---------------------------------------------------------

// appendRetentionSnapshot appends the table (snapshot version 3): a count,
// then per policy in pattern order: pattern (uvarint length, bytes),
// maxlen+1, maxage+1, maxbytes+1 (uvarint, 0 = unset), mode (1 byte).
func appendRetentionSnapshot(b []byte, ps []*retentionPolicy) []byte {
	b = binary.AppendUvarint(b, uint64(len(ps)))
	for _, p := range ps {
		b = binary.AppendUvarint(b, uint64(len(p.Pattern)))
		b = append(b, p.Pattern...)
		for _, v := range []int64{p.MaxLen, p.MaxAge, p.MaxBytes} {
			b = binary.AppendUvarint(b, uint64(v+1))
		}
		b = append(b, byte(p.Mode))
	}
	return b
}

// retention decodes the table written by appendRetentionSnapshot.
func (d *snapDecoder) retention() []*retentionPolicy {
	n := d.uvarint("policy count")
	if n > maxRetentionPolicies {
		d.fail("policy count")
		return nil
	}
	var out []*retentionPolicy
	for range n {
		p := &retentionPolicy{Pattern: string(d.bytes(d.uvarint("pattern"), "pattern"))}
		for _, v := range []*int64{&p.MaxLen, &p.MaxAge, &p.MaxBytes} {
			x := d.uvarint("limit")
			if x > 1<<62 {
				d.fail("limit")
			}
			*v = int64(x) - 1
		}
		mode := d.bytes(1, "mode")
		if d.err != nil {
			return nil
		}
		if p.Mode = refPolicy(mode[0]); p.Mode > policyAcked {
			d.fail("mode")
			return nil
		}
		if len(out) > 0 && out[len(out)-1].Pattern >= p.Pattern {
			d.fail("policy order")
			return nil
		}
		out = append(out, p)
	}
	return out
}
