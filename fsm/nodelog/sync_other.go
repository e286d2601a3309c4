//go:build !linux

package nodelog

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
