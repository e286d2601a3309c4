package resp

import (
	"math"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// uring is the event loop's io_uring: a round's receives, and its sends,
// each in one system call instead of one per connection. Every operation
// carries MSG_DONTWAIT, so it completes while the call submits it (or
// fails with EAGAIN), as the loop's plain reads and writes would; the call
// returns with every completion. Only the loop's goroutine uses it.
//
// Where a system call costs more than the work it carries (a virtual
// machine's kernel entry is about a microsecond), this is what lets one
// round cost less than Redis's one read and one write per command.
type uring struct {
	fd      int
	mem     []byte // the rings, one mapping (IORING_FEAT_SINGLE_MMAP)
	sqeMem  []byte
	sqTail  *uint32
	sqMask  uint32
	sqArray []uint32
	sqes    []uringSQE
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    []uringCQE
	entries uint32

	fds []int32   // each's scratch
	ops []uringOp // each's scratch
}

// closedRes is each's result for a socket closed before the call.
const closedRes = math.MinInt32

// each runs one operation (uringOpSend or uringOpRecv) per connection of
// conns, on buf(i), with every socket held open meanwhile (withFds), and
// sets each one's result in res (len(conns) of them): bytes moved, -errno,
// or closedRes for a socket already closed, which is left out. After an
// error of the ring itself the ring is unusable; a result not known then
// is -EIO.
func (u *uring) each(opcode uint8, conns []*conn, buf func(i int) []byte, res []int32) error {
	if cap(u.fds) < len(conns) {
		u.fds = make([]int32, len(conns))
	}
	fds := u.fds[:len(conns)]
	ops := u.ops[:0]
	var err error
	withFds(conns, fds, func() {
		for i := range conns {
			if fds[i] >= 0 {
				ops = append(ops, uringOp{fd: fds[i], buf: buf(i)})
			}
		}
		err = u.run(opcode, ops)
	})
	k := 0
	for i := range conns {
		if fds[i] < 0 {
			res[i] = closedRes
			continue
		}
		res[i] = ops[k].res
		k++
	}
	clear(ops) // no buffer kept alive
	u.ops = ops[:0]
	return err
}

// withFds runs fn with the sockets of conns held open, their fds in fds
// (-1 for a socket already closed): no fd number in fds can be another
// socket's while fn runs, whoever closes a connection meanwhile.
func withFds(conns []*conn, fds []int32, fn func()) {
	var hold func(i int)
	hold = func(i int) {
		if i == len(conns) {
			fn()
			return
		}
		if conns[i].lw.sc.Control(func(fd uintptr) { fds[i] = int32(fd); hold(i + 1) }) != nil {
			fds[i] = -1
			hold(i + 1)
		}
	}
	hold(0)
}

type uringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32 // msg_flags for SEND and RECV
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	_           uint64
}

type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  struct {
		head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
		userAddr                                                        uint64
	}
	cqOff struct {
		head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
		userAddr                                                        uint64
	}
}

const (
	uringOpSend = 26 // IORING_OP_SEND
	uringOpRecv = 27 // IORING_OP_RECV

	uringSetupSubmitAll   = 1 << 7 // IORING_SETUP_SUBMIT_ALL
	uringFeatSingleMmap   = 1 << 0 // IORING_FEAT_SINGLE_MMAP
	uringEnterGetEvents   = 1 << 0 // IORING_ENTER_GETEVENTS
	uringOffSQEs          = 0x10000000
	uringEntries          = 256
	uringMsgFlags         = unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL
	uringSQESize, cqeSize = 64, 16
)

// newURing sets up a ring, or fails where io_uring is missing or refused
// (seccomp, io_uring_disabled, or a kernel before 5.18, which lacks
// IORING_SETUP_SUBMIT_ALL and may not fail a MSG_DONTWAIT operation at once
// but wait to retry it): the loop then makes a system call per read and
// per write.
func newURing() (*uring, error) {
	var p uringParams
	p.flags = uringSetupSubmitAll
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uringEntries, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, errno
	}
	u := &uring{fd: int(fd), entries: p.sqEntries}
	if p.features&uringFeatSingleMmap == 0 {
		u.close()
		return nil, syscall.ENOSYS
	}
	size := max(int(p.sqOff.array)+int(p.sqEntries)*4, int(p.cqOff.cqes)+int(p.cqEntries)*cqeSize)
	mem, err := unix.Mmap(u.fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		u.close()
		return nil, err
	}
	u.mem = mem
	sqeMem, err := unix.Mmap(u.fd, uringOffSQEs, int(p.sqEntries)*uringSQESize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		u.close()
		return nil, err
	}
	u.sqeMem = sqeMem
	u32 := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	u.sqTail = u32(p.sqOff.tail)
	u.sqMask = *u32(p.sqOff.ringMask)
	u.sqArray = unsafe.Slice(u32(p.sqOff.array), p.sqEntries)
	u.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&sqeMem[0])), p.sqEntries)
	u.cqHead, u.cqTail = u32(p.cqOff.head), u32(p.cqOff.tail)
	u.cqMask = *u32(p.cqOff.ringMask)
	u.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&mem[p.cqOff.cqes])), p.cqEntries)
	return u, nil
}

func (u *uring) close() {
	if u.sqeMem != nil {
		_ = unix.Munmap(u.sqeMem)
	}
	if u.mem != nil {
		_ = unix.Munmap(u.mem)
	}
	_ = unix.Close(u.fd)
}

// uringOp is one send or receive: its socket, its buffer, and once run its
// result (bytes moved, or -errno).
type uringOp struct {
	fd  int32
	buf []byte
	res int32
}

// run performs ops (opcode uringOpSend or uringOpRecv), at most
// u.entries per system call, and sets each one's res. The caller keeps
// every op's socket open and buffer alive until run returns (the fds are
// held: withFds). After an error the ring is unusable; an op whose outcome
// is unknown has res -EIO.
func (u *uring) run(opcode uint8, ops []uringOp) error {
	for i := range ops {
		ops[i].res = -int32(unix.EIO)
	}
	for len(ops) > 0 {
		n := min(len(ops), int(u.entries))
		tail := *u.sqTail // only this goroutine moves the tail
		for i := range ops[:n] {
			op := &ops[i]
			idx := tail & u.sqMask
			sqe := &u.sqes[idx]
			*sqe = uringSQE{opcode: opcode, fd: op.fd, len: uint32(len(op.buf)), opFlags: uringMsgFlags, userData: uint64(i)}
			if len(op.buf) > 0 {
				sqe.addr = uint64(uintptr(unsafe.Pointer(&op.buf[0])))
			}
			u.sqArray[idx] = idx
			tail++
		}
		atomic.StoreUint32(u.sqTail, tail)
		for submitted := 0; submitted < n; {
			k, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), uintptr(n-submitted), uintptr(n-submitted), uringEnterGetEvents, 0, 0)
			if errno == unix.EINTR {
				continue
			}
			if errno != 0 {
				return errno
			}
			submitted += int(k)
		}
		// Every operation completed (MSG_DONTWAIT): take the completions.
		head := atomic.LoadUint32(u.cqHead)
		for got := 0; got < n; {
			tailC := atomic.LoadUint32(u.cqTail)
			for ; head != tailC; head++ {
				cqe := &u.cqes[head&u.cqMask]
				ops[cqe.userData].res = cqe.res
				got++
			}
			atomic.StoreUint32(u.cqHead, head)
			if got < n {
				// Not yet posted (cannot happen for operations that
				// never wait): wait for the rest.
				if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(u.fd), 0, uintptr(n-got), uringEnterGetEvents, 0, 0); errno != 0 && errno != unix.EINTR {
					return errno
				}
			}
		}
		ops = ops[n:]
	}
	return nil
}
