//go:build !linux

package resp

import (
	"errors"
	"time"
)

// evloop is Linux only (epoll); elsewhere every connection has its goroutine.
type evloop struct{}

type loopWriter struct{}

// ringError: the loop is never made here.
func (*evloop) ringError() error { return nil }

func newLoop(*connServer, func() time.Duration, bool) (*evloop, error) {
	return nil, errors.New("the event loop needs Linux")
}

func (*evloop) add(*conn) bool { return false }
func (*evloop) run()           {}
func (*evloop) close()         {}

func (*evloop) stats() (int, uint64, uint64, bool) { return 0, 0, 0, false }
