//go:build !unix

package wire

// Stale cannot look into a connection on this platform: an idle
// connection is taken as usable, and a dead one fails on use.
func (c *Client) Stale() bool { return false }
