package nodelog

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data (and the size, which an append changes)
// without its other metadata.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
