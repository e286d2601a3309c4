package resp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// ReadRawReply reads one complete RESP2/RESP3 reply from r and returns its
// exact bytes (used to relay forwarded replies, and by tests).
func ReadRawReply(r *bufio.Reader) ([]byte, error) {
	var out bytes.Buffer
	err := readRawValue(r, &out)
	return out.Bytes(), err
}

func readRawLine(r *bufio.Reader, out *bytes.Buffer) ([]byte, error) {
	line, err := r.ReadBytes('\n')
	out.Write(line)
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("resp: bad line %q", line)
	}
	return line[:len(line)-2], nil
}

func readRawValue(r *bufio.Reader, out *bytes.Buffer) error {
	line, err := readRawLine(r, out)
	if err != nil {
		return err
	}
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '!', '=':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		out.Write(buf)
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readRawValue(r, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("resp: unknown reply type %q", line)
}
