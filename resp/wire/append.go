package wire

import "strconv"

// Encoders of RESP values, in the style of strconv.AppendInt: they append
// to b and allocate nothing beyond its growth. The server's reply encoder,
// the forwarder and the client build on them.

// AppendLen appends a length header: prefix ('*', '$', '%', '~', ...) and n.
func AppendLen(b []byte, prefix byte, n int) []byte {
	b = append(b, prefix)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendBulk appends s as a bulk string.
func AppendBulk(b, s []byte) []byte {
	b = AppendLen(b, '$', len(s))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendSimple appends s as a simple string ("+s").
func AppendSimple(b []byte, s string) []byte {
	b = append(b, '+')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendError appends msg as an error reply ("-msg"); msg starts with the
// error code ("ERR ...").
func AppendError(b []byte, msg string) []byte {
	b = append(b, '-')
	b = append(b, msg...)
	return append(b, '\r', '\n')
}

// AppendInt appends n as an integer reply.
func AppendInt(b []byte, n int64) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}
