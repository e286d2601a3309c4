//go:build !linux

package main

import (
	"errors"
	"net"
	"os"
)

func fdatasync(f *os.File) error { return f.Sync() }

func eventLoop(net.Listener, *logFile) error {
	return errors.New("the eventloop model needs Linux (epoll)")
}
