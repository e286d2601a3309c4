package local

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Link is a directed connection from one endpoint to another: the
// connections From opens to To.
type Link struct{ From, To string }

// Net owns one Proxy per Link and changes their modes in partition-shaped
// patterns. Methods are safe for concurrent use.
type Net struct {
	mu    sync.Mutex
	links map[Link]*Proxy
}

// NewNet returns an empty network.
func NewNet() *Net { return &Net{links: map[Link]*Proxy{}} }

// Add creates the proxy of link from→to forwarding to target and returns
// the address from must dial to reach to.
func (n *Net) Add(from, to, target string) (string, error) { return n.AddIn(nil, from, to, target) }

// AddIn is Add with the link's proxy inside env (from's network namespace).
func (n *Net) AddIn(env Env, from, to, target string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := Link{from, to}
	if _, ok := n.links[l]; ok {
		return "", fmt.Errorf("link %s→%s exists", from, to)
	}
	p, err := NewProxyIn(env, "127.0.0.1:0", target)
	if err != nil {
		return "", err
	}
	n.links[l] = p
	return p.Addr(), nil
}

// Proxy returns the proxy of a link, or nil.
func (n *Net) Proxy(from, to string) *Proxy {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links[Link{from, to}]
}

// Set changes one link.
func (n *Net) Set(from, to string, m Mode, delay time.Duration) error {
	p := n.Proxy(from, to)
	if p == nil {
		return fmt.Errorf("no link %s→%s", from, to)
	}
	p.Set(m, delay)
	return nil
}

// Partition applies m (Stall, Blackhole or Reset; Delay with delay) to
// every link between endpoints of different groups and Pass to links within
// a group. Links touching an endpoint in no group are set to Pass. It
// returns a description for the history ("partition n1|n2,n3 blackhole").
func (n *Net) Partition(m Mode, delay time.Duration, groups ...[]string) string {
	side := map[string]int{}
	var desc []string
	for i, g := range groups {
		for _, e := range g {
			side[e] = i + 1
		}
		desc = append(desc, strings.Join(g, ","))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for l, p := range n.links {
		a, b := side[l.From], side[l.To]
		if a != 0 && b != 0 && a != b {
			p.Set(m, delay)
		} else {
			p.Set(Pass, 0)
		}
	}
	return fmt.Sprintf("partition %s %s", strings.Join(desc, "|"), m)
}

// Isolate cuts one endpoint off from all others with m, in both directions.
func (n *Net) Isolate(m Mode, delay time.Duration, name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	for l, p := range n.links {
		if l.From == name || l.To == name {
			p.Set(m, delay)
		} else {
			p.Set(Pass, 0)
		}
	}
	return fmt.Sprintf("isolate %s %s", name, m)
}

// Heal sets every link to Pass.
func (n *Net) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.links {
		p.Set(Pass, 0)
	}
}

// Links lists the links, sorted.
func (n *Net) Links() []Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	var ls []Link
	for l := range n.links {
		ls = append(ls, l)
	}
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].From != ls[j].From {
			return ls[i].From < ls[j].From
		}
		return ls[i].To < ls[j].To
	})
	return ls
}

// Close closes every proxy.
func (n *Net) Close() error {
	n.mu.Lock()
	ps := n.links
	n.links = map[Link]*Proxy{}
	n.mu.Unlock()
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
