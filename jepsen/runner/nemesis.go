package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"strings"
	"time"

	"github.com/raftstream/raftstream/jepsen/history"
	"github.com/raftstream/raftstream/jepsen/local"
)

// nemesis cycles through cfg.Faults until ctx ends: quiet for FaultEvery,
// then one fault for FaultFor (cut short by ctx), recorded as start/stop.
// The i-th fault targets node i mod Nodes (its process, its client link or
// its bus links) unless the fault picks its own (leader, random halves).
func nemesis(ctx context.Context, cfg Config, w *history.Writer, s *system, log *slog.Logger) error {
	var errs []error
	rnd := rand.New(rand.NewSource(cfg.Seed))
	for i := 0; len(cfg.Faults) > 0; i++ {
		if !sleep(ctx, cfg.FaultEvery) {
			break
		}
		f := cfg.Faults[i%len(cfg.Faults)]
		if err := s.memberTick(w, log); err != nil {
			errs = append(errs, err)
		}
		if f == FaultMembership { // a join now, the removal some faults later; both in the background
			s.membership(w, log)
			continue
		}
		if f == FaultReshard { // a slot move, or a shard added or retired, in the background
			s.reshard(w, log)
			continue
		}
		j := i % s.eligible()
		name, undo, err := inject(ctx, cfg, s, f, j, i, rnd)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
		}
		w.Nemesis(history.Start, name)
		log.Info("fault", "start", name)
		sleep(ctx, cfg.FaultFor)
		if undo != nil {
			if err := undo(); err != nil {
				errs = append(errs, fmt.Errorf("undo %s: %w", name, err))
			}
		}
		w.Nemesis(history.Stop, name)
		log.Info("fault", "stop", name)
	}
	return errors.Join(errs...)
}

// inject starts fault f (the i-th) aimed at node j and returns its name for
// the history and the function that ends it.
func inject(ctx context.Context, cfg Config, s *system, f string, j, i int, rnd *rand.Rand) (string, func() error, error) {
	n, p := s.nodes[j], s.proxies[j]
	names := make([]string, s.eligible()) // the spare only while a member
	for k := range names {
		names[k] = s.nodes[k].Name
	}
	healNet := func() error {
		s.net.Heal()
		if s.ns != nil {
			return s.ns.Heal()
		}
		return nil
	}
	pass := func() error { p.Set(local.Pass, 0); return nil }
	into := func(m local.Mode, d time.Duration) { // every link into n
		for _, l := range s.net.Links() {
			if l.To == n.Name {
				_ = s.net.Set(l.From, l.To, m, d)
			}
		}
	}
	if s.ext != nil {
		if name, undo, err, ok := injectDocker(ctx, s, f, j); ok {
			return name, undo, err
		}
	}
	switch f {
	case FaultStall:
		p.Set(local.Stall, 0)
		return f + " " + n.Name, pass, nil
	case FaultDelay:
		p.Set(local.Delay, cfg.Delay)
		return fmt.Sprintf("%s %v %s", f, cfg.Delay, n.Name), pass, nil
	case FaultReset:
		p.Set(local.Reset, 0)
		return f + " " + n.Name, pass, nil
	case FaultBlackhole:
		p.Set(local.Blackhole, 0)
		return f + " " + n.Name, pass, nil
	case FaultKill:
		err := n.Kill()
		return f + " " + n.Name, func() error { return n.Start(30 * time.Second) }, err
	case FaultPause:
		err := n.Pause()
		return f + " " + n.Name, n.Resume, err
	case FaultBusStall:
		into(local.Stall, 0)
		return f + " " + n.Name, healNet, nil
	case FaultBusBlackhole:
		into(local.Blackhole, 0)
		return f + " " + n.Name, healNet, nil
	case FaultBusReset:
		into(local.Reset, 0)
		return f + " " + n.Name, healNet, nil
	case FaultBusDelay:
		into(local.Delay, cfg.Delay)
		return fmt.Sprintf("%s %v %s", f, cfg.Delay, n.Name), healNet, nil
	case FaultPartitionOne:
		return "isolate " + n.Name + " blackhole", healNet, s.cut(func(a, b string) bool { return a == n.Name || b == n.Name })
	case FaultPartitionLeader:
		l, ok := s.leader(ctx, s.keys[0], 300*time.Millisecond)
		if !ok {
			l = j
		}
		ln := s.nodes[l].Name
		err := s.cut(func(a, b string) bool { return a == ln || b == ln })
		return "isolate " + ln + " blackhole (leader of " + s.keys[0] + ")", healNet, err
	case FaultPartitionHalves:
		perm := rnd.Perm(len(names))
		side := map[string]int{}
		var a, b []string
		for k, x := range perm {
			if k < len(perm)/2 {
				a = append(a, names[x])
			} else {
				b = append(b, names[x])
				side[names[x]] = 1
			}
		}
		err := s.cut(func(x, y string) bool { return side[x] != side[y] })
		return fmt.Sprintf("partition %s|%s blackhole", strings.Join(a, ","), strings.Join(b, ",")), healNet, err
	case FaultPartitionRing:
		k := len(names)
		err := s.cut(func(x, y string) bool {
			d := (index(names, x) - index(names, y) + k) % k
			return d != 1 && d != k-1
		})
		return "partition ring " + strings.Join(names, "-") + " blackhole", healNet, err
	case FaultPartitionBridge:
		// n is the bridge; the others split into two halves that only it joins.
		var rest []string
		side := map[string]int{}
		for k := 1; k < len(names); k++ {
			rest = append(rest, names[(j+k)%len(names)])
		}
		a, b := rest[:len(rest)/2], rest[len(rest)/2:]
		for _, x := range b {
			side[x] = 1
		}
		err := s.cut(func(x, y string) bool { return x != n.Name && y != n.Name && side[x] != side[y] })
		return fmt.Sprintf("partition bridge %s|%s via %s blackhole", strings.Join(a, ","), strings.Join(b, ","), n.Name), healNet, err
	case FaultOneWay:
		for _, l := range s.net.Links() {
			if l.From == n.Name {
				_ = s.net.Set(l.From, l.To, local.Blackhole, 0)
			}
		}
		return "oneway " + n.Name + "→peers blackhole", healNet, nil
	case FaultLinkDelay:
		for _, l := range s.net.Links() {
			if l.From == n.Name || l.To == n.Name {
				_ = s.net.Set(l.From, l.To, local.Delay, cfg.Delay)
			}
		}
		return fmt.Sprintf("%s %v %s", f, cfg.Delay, n.Name), healNet, nil
	case FaultLeaderPause:
		l, ok := s.leader(ctx, s.keys[0], 300*time.Millisecond)
		if !ok {
			l = j
		}
		m := s.nodes[l]
		err := m.Pause()
		return fmt.Sprintf("%s %s (leader of %s)", f, m.Name, s.keys[0]), m.Resume, err
	case FaultClockSkew:
		skew := cfg.Skew
		if skew == 0 {
			skew = 5 * time.Second
		}
		if i%2 == 1 {
			skew = -skew
		}
		restart := func(off time.Duration) error {
			n.Vars["clock"] = off.String()
			return errors.Join(n.Kill(), n.Start(30*time.Second))
		}
		err := restart(skew)
		return fmt.Sprintf("%s %v %s", f, skew, n.Name), func() error { return restart(0) }, err
	}
	return f, nil, fmt.Errorf("unknown fault %q", f)
}

func index(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

// injectDocker is inject for the faults of the external driver; ok is false
// for the others (client-link faults, handled by inject).
func injectDocker(ctx context.Context, s *system, f string, j int) (string, func() error, error, bool) {
	d := s.ext
	leader := func() int {
		if l, ok := s.leader(ctx, s.keys[0], 300*time.Millisecond); ok {
			return l
		}
		return j
	}
	switch f {
	case FaultKill:
		return "kill " + s.nodes[j].Name + " (docker)", func() error { return d.Start(j) }, d.Kill(j), true
	case FaultPause:
		return "pause " + s.nodes[j].Name + " (docker)", func() error { return d.Unpause(j) }, d.Pause(j), true
	case FaultLeaderPause:
		l := leader()
		return "leader-pause " + s.nodes[l].Name + " (docker)", func() error { return d.Unpause(l) }, d.Pause(l), true
	case FaultPartitionOne, FaultPartitionLeader:
		l := j
		if f == FaultPartitionLeader {
			l = leader()
		}
		return "isolate " + s.nodes[l].Name + " (docker network disconnect)", func() error { return d.Connect(l) }, d.Disconnect(l), true
	}
	return "", nil, nil, false
}

// cut blackholes the node-to-node links between x and y where blocked(x, y)
// (symmetric) and passes the others: per-link proxies with the local
// driver, nftables drops in the node namespaces with the netns driver.
func (s *system) cut(blocked func(x, y string) bool) error {
	if s.ns != nil {
		var pairs [][2]int
		for i, a := range s.nodes {
			for j, b := range s.nodes {
				if i != j && blocked(a.Name, b.Name) {
					pairs = append(pairs, [2]int{i + 1, j + 1})
				}
			}
		}
		return s.ns.Cut(pairs)
	}
	for _, l := range s.net.Links() {
		m := local.Pass
		if blocked(l.From, l.To) {
			m = local.Blackhole
		}
		_ = s.net.Set(l.From, l.To, m, 0)
	}
	return nil
}
