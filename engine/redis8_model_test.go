package engine

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestRedis8GroupModel runs random commands mixing XADD, XREADGROUP (with
// and without CLAIM), XACK, XDEL, XDELEX, XACKDEL, XNACK and XTRIM with the
// three reference policies against a plain reference model, comparing the
// live entries, every group's last-delivered-id and PEL (owner, delivery
// time and count) and the per-ID replies after every operation, and
// checking the group invariants. REDIS8_MODEL_SEED replays a seed.
func TestRedis8GroupModel(t *testing.T) {
	seed := replaySeed(t, "REDIS8_MODEL_SEED")
	for round := 0; round < 4; round++ {
		runRedis8Model(t, seed+int64(round), 1200)
	}
}

func runRedis8Model(t *testing.T, seed int64, ops int) {
	rng := rand.New(rand.NewSource(seed))
	e := New(Config{NodeMaxEntries: 1 + rng.Intn(5)})
	m := &refModel{groups: map[string]*refGroup{}}
	groups := []string{"g1", "g2"}
	consumers := []string{"a", "b"}
	policies := []string{"KEEPREF", "DELREF", "ACKED"}
	now := int64(1000)
	nextMs := uint64(1)
	fail := func(op int, format string, args ...any) {
		t.Fatalf("seed %d op %d: %s", seed, op, fmt.Sprintf(format, args...))
	}
	acked := func(id ID) bool {
		for _, g := range m.groups {
			if g.last.Less(id) {
				return false
			}
			if _, ok := g.pel[id]; ok {
				return false
			}
		}
		return true
	}
	del := func(id ID) bool {
		for i, x := range m.entries {
			if x == id {
				m.entries = append(m.entries[:i:i], m.entries[i+1:]...)
				return true
			}
		}
		return false
	}
	dropRefs := func(id ID) {
		for _, g := range m.groups {
			delete(g.pel, id)
		}
	}
	for op := 0; op < ops; op++ {
		now += int64(rng.Intn(40))
		gname := groups[rng.Intn(len(groups))]
		cname := consumers[rng.Intn(len(consumers))]
		g := m.groups[gname]
		var cmd, want string
		switch k := rng.Intn(12); {
		case k <= 2:
			id := ID{nextMs, 0}
			nextMs++
			cmd = "XADD s " + id.String() + " f v"
			m.entries = append(m.entries, id)
			m.lastID = id
		case k == 3 && g == nil:
			if _, ok := e.keys["s"]; !ok {
				continue
			}
			cmd = "XGROUP CREATE s " + gname + " 0"
			m.groups[gname] = &refGroup{pel: map[ID]*refNACK{}, consumers: map[string]bool{}}
		case k == 3: // XTRIM MAXLEN (exact) with a policy
			keep := rng.Intn(6)
			p := policies[rng.Intn(3)]
			cmd = fmt.Sprintf("XTRIM s MAXLEN %d %s", keep, p)
			var kept []ID
			n := len(m.entries)
			for _, id := range m.entries {
				if n > keep && (p != "ACKED" || acked(id)) {
					n--
					if p == "DELREF" {
						dropRefs(id)
					}
					continue
				}
				kept = append(kept, id)
			}
			want = strconv.Itoa(len(m.entries) - len(kept))
			m.entries = kept
		case k == 4: // XDELEX
			p := policies[rng.Intn(3)]
			ids := []ID{m.pickID(rng, nextMs), m.pickID(rng, nextMs)}
			cmd = fmt.Sprintf("XDELEX s %s IDS 2 %s %s", p, ids[0], ids[1])
			var codes []string
			for _, id := range ids {
				code := "-1"
				live := m.live(id)
				switch {
				case p == "ACKED" && !acked(id):
					code = "2" // still referenced, live or not (t_stream.c)
					_ = live
				case del(id):
					code = "1"
				}
				if p == "DELREF" && code != "2" {
					dropRefs(id)
				}
				codes = append(codes, code)
			}
			want = "[" + strings.Join(codes, " ") + "]"
		case g == nil:
			continue
		case k == 5: // XACKDEL
			p := policies[rng.Intn(3)]
			id := m.pickID(rng, nextMs)
			cmd = fmt.Sprintf("XACKDEL s %s %s IDS 1 %s", gname, p, id)
			code := "-1"
			if _, ok := g.pel[id]; ok {
				delete(g.pel, id)
				code = "1"
				if p == "ACKED" && !acked(id) {
					code = "2"
				} else {
					if p == "DELREF" {
						dropRefs(id)
					}
					del(id)
				}
			}
			want = "[" + code + "]"
		case k == 6: // XNACK
			id := m.pickID(rng, nextMs)
			mode := []string{"SILENT", "FAIL", "FATAL"}[rng.Intn(3)]
			nk := g.pel[id]
			if mode == "SILENT" && nk != nil && nk.count < 2 {
				mode = "FAIL" // keep counts >= 1 for checkGroupInvariants
			}
			cmd = fmt.Sprintf("XNACK s %s %s IDS 1 %s", gname, mode, id)
			want = "0"
			if nk != nil {
				want = "1"
				g.seq++
				nk.owner, nk.time, nk.seq = "", 0, g.seq
				switch mode {
				case "SILENT":
					nk.count--
				case "FATAL":
					nk.count = nackFatalCount
				}
			}
		case k == 7: // XREADGROUP '>'
			count := rng.Intn(4)
			cmd = fmt.Sprintf("XREADGROUP GROUP %s %s COUNT %d STREAMS s >", gname, cname, count)
			g.consumers[cname] = true
			m.deliverNew(g, cname, count, false, now)
		case k == 8: // XREADGROUP CLAIM
			count := rng.Intn(4)
			minIdle := []int64{0, 30, 100}[rng.Intn(3)]
			cmd = fmt.Sprintf("XREADGROUP GROUP %s %s COUNT %d CLAIM %d STREAMS s >", gname, cname, count, minIdle)
			g.consumers[cname] = true
			var idle []ID
			for _, id := range m.sortedPEL(g, "") {
				if now-g.pel[id].time >= minIdle {
					idle = append(idle, id)
				}
			}
			// Released entries first in release order, then by delivery time.
			sort.SliceStable(idle, func(i, j int) bool {
				a, b := g.pel[idle[i]], g.pel[idle[j]]
				if (a.owner == "") != (b.owner == "") {
					return a.owner == ""
				}
				if a.owner == "" {
					return a.seq < b.seq
				}
				return a.time < b.time
			})
			n := 0
			for _, id := range idle {
				if count > 0 && n >= count {
					break
				}
				if !m.live(id) {
					continue // skipped, stays pending
				}
				nk := g.pel[id]
				nk.owner, nk.time, nk.seq = cname, now, 0
				if nk.count < nackFatalCount {
					nk.count++
				}
				n++
			}
			if count == 0 || n < count {
				rest := 0
				if count > 0 {
					rest = count - n
				}
				m.deliverNew(g, cname, rest, false, now)
			}
		case k == 9: // history read
			cmd = fmt.Sprintf("XREADGROUP GROUP %s %s STREAMS s 0", gname, cname)
			g.consumers[cname] = true
			for _, id := range m.sortedPEL(g, cname) {
				if m.live(id) {
					g.pel[id].time = now
					if g.pel[id].count < nackFatalCount {
						g.pel[id].count++
					}
				}
			}
		case k == 10:
			id := m.pickID(rng, nextMs)
			cmd = "XACK s " + gname + " " + id.String()
			delete(g.pel, id)
		case k == 11:
			if len(m.entries) == 0 {
				continue
			}
			id := m.entries[rng.Intn(len(m.entries))]
			cmd = "XDEL s " + id.String()
			del(id)
		}
		r := run(e, now, cmd)
		if len(r) > 0 && r[0] == '-' {
			fail(op, "%s: %s", cmd, r)
		}
		if want != "" && r != want {
			fail(op, "%s: reply %s, model %s", cmd, r, want)
		}
		v, ok := e.keys["s"]
		if !ok {
			continue
		}
		s := v.Stream
		checkGroupInvariants(t, s, fmt.Sprintf("seed %d op %d %q", seed, op, cmd))
		var live []ID
		for it := s.Iter(MinID, MaxID, false); it.Next(); {
			live = append(live, it.ID)
		}
		if fmt.Sprint(live) != fmt.Sprint(m.entries) || s.Length != uint64(len(m.entries)) {
			fail(op, "%s: entries %v (length %d), model %v", cmd, live, s.Length, m.entries)
		}
		for name, rg := range m.groups {
			eg := s.lookupGroup([]byte(name))
			if eg == nil || eg.LastID != rg.last || eg.PEL.Len() != len(rg.pel) {
				fail(op, "%s: group %s differs from the model", cmd, name)
			}
			for id, rn := range rg.pel {
				nk, ok := eg.PEL.Get(id)
				owner := ""
				if ok && nk.Consumer != nil {
					owner = nk.Consumer.Name
				}
				if !ok || owner != rn.owner || nk.DeliveryTime != rn.time || nk.DeliveryCount != rn.count {
					fail(op, "%s: group %s NACK %v = %+v, model %+v", cmd, name, id, nk, rn)
				}
			}
		}
	}
}
