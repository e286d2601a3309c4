package wire

import (
	"bufio"
	"net"
	"time"
)

// Client is a small synchronous RESP client: Do sends one command and
// returns its reply's exact bytes; Send and WriteRaw write without reading,
// so that several commands can be pipelined and their replies read with
// ReadReply. Replies are not interpreted (Parse does that). A Client is
// used by one goroutine at a time.
type Client struct {
	// Timeout, when positive, bounds each exchange: Send and WriteRaw set
	// the connection's deadline to now+Timeout before writing, so it covers
	// the replies read after them. Zero leaves deadlines to SetDeadline.
	Timeout time.Duration

	conn net.Conn
	r    *bufio.Reader
	buf  []byte // the command being encoded
}

// Dial connects to addr over TCP and, when pass is not empty, sends AUTH
// pass; an error reply to it is returned as an Error. timeout bounds the
// dial and the AUTH exchange together; the client has no deadline after.
func Dial(addr, pass string, timeout time.Duration) (*Client, error) {
	deadline := time.Now().Add(timeout)
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c := &Client{conn: conn, r: bufio.NewReader(conn)}
	if pass == "" {
		return c, nil
	}
	c.SetDeadline(deadline)
	if err := c.auth(pass); err != nil {
		conn.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

func (c *Client) auth(pass string) error {
	r, err := c.Do("AUTH", pass)
	if err != nil {
		return err
	}
	v, err := Parse(r)
	if err != nil {
		return err
	}
	if e, ok := v.(Error); ok {
		return e
	}
	return nil
}

// Do sends one command and returns the raw bytes of its reply.
func (c *Client) Do(args ...string) ([]byte, error) {
	if err := c.Send(args...); err != nil {
		return nil, err
	}
	return c.ReadReply()
}

// Send writes one command without reading its reply.
func (c *Client) Send(args ...string) error {
	c.buf = AppendCommand(c.buf[:0], args)
	return c.WriteRaw(c.buf)
}

// WriteRaw writes p as it is: several encoded commands, or bytes that are
// not RESP at all.
func (c *Client) WriteRaw(p []byte) error {
	if c.Timeout > 0 {
		c.SetDeadline(time.Now().Add(c.Timeout))
	}
	_, err := c.conn.Write(p)
	return err
}

// ReadReply reads one complete reply and returns its raw bytes.
func (c *Client) ReadReply() ([]byte, error) { return ReadReply(c.r) }

// SetDeadline sets the connection's read and write deadline (zero: none).
func (c *Client) SetDeadline(t time.Time) { _ = c.conn.SetDeadline(t) }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }
