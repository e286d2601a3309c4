package testkit

import (
	"time"

	"github.com/raftstream/raftstream/resp/wire"
)

// Conn is a raw RESP connection: it sends commands as arrays of bulk
// strings and returns each reply's exact bytes, so that replies can be
// compared byte for byte.
type Conn = wire.Client

// Dial connects to addr. Every command sent (Send, WriteRaw, Do) may take
// 30 s, its reply included; SetDeadline after sending changes that.
func Dial(addr string) (*Conn, error) {
	c, err := wire.Dial(addr, "", 5*time.Second)
	if err != nil {
		return nil, err
	}
	c.Timeout = 30 * time.Second
	return c, nil
}

// EncodeCommand encodes args as a RESP array of bulk strings.
func EncodeCommand(args ...string) []byte { return wire.AppendCommand(nil, args) }
