package engine

import "sort"

// Consumer is a consumer of a group (Redis's streamConsumer).
type Consumer struct {
	Name string
	// SeenTime is the last time (Unix ms) the consumer attempted an
	// interaction (XREADGROUP, XCLAIM, XAUTOCLAIM), successful or not.
	SeenTime int64
	// ActiveTime is the last time (Unix ms) the consumer had a successful
	// interaction (read or claimed at least one entry); -1 if never.
	ActiveTime int64
	// PEL holds the NACKs this consumer owns; the same records as in the
	// group PEL.
	PEL *pelTree
}

// findConsumer returns the consumer named name.
func (g *Group) findConsumer(name []byte) *Consumer {
	i := g.consumerIndex(name)
	if i < len(g.Consumers) && g.Consumers[i].Name == string(name) {
		return g.Consumers[i]
	}
	return nil
}

// consumerIndex is the position of name in the sorted Consumers slice.
func (g *Group) consumerIndex(name []byte) int {
	return sort.Search(len(g.Consumers), func(i int) bool { return g.Consumers[i].Name >= string(name) })
}

// createConsumer adds a consumer with seen-time now (Redis's
// streamCreateConsumer); it returns nil if it already exists.
func (g *Group) createConsumer(name []byte, now int64) *Consumer {
	i := g.consumerIndex(name)
	if i < len(g.Consumers) && g.Consumers[i].Name == string(name) {
		return nil
	}
	c := &Consumer{Name: string(name), SeenTime: now, ActiveTime: -1, PEL: newPEL()}
	g.Consumers = append(g.Consumers, nil)
	copy(g.Consumers[i+1:], g.Consumers[i:])
	g.Consumers[i] = c
	return c
}

// lookupOrCreateConsumer returns the consumer, creating it if needed, and
// reports whether it was created.
func (g *Group) lookupOrCreateConsumer(name []byte, now int64) (*Consumer, bool) {
	if c := g.findConsumer(name); c != nil {
		return c, false
	}
	return g.createConsumer(name, now), true
}

// deleteConsumer removes the consumer and all its pending entries from the
// group PEL; it returns the number of pending entries it had.
func (g *Group) deleteConsumer(c *Consumer) int {
	n := c.PEL.Len()
	cu := c.PEL.Seek(MinID)
	for {
		nk, ok := cu.Next()
		if !ok {
			break
		}
		g.PEL.Delete(nk.ID)
	}
	i := g.consumerIndex([]byte(c.Name))
	copy(g.Consumers[i:], g.Consumers[i+1:])
	g.Consumers[len(g.Consumers)-1] = nil
	g.Consumers = g.Consumers[:len(g.Consumers)-1]
	return n
}
