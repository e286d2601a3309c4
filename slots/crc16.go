package slots

// crcTable is the CRC16-CCITT (XMODEM) table for polynomial 0x1021, the
// checksum Redis Cluster hashes keys with.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for b := 0; b < 8; b++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC16 is CRC16-XMODEM of p (poly 0x1021, init 0, no reflection, no final
// xor). CRC16([]byte("123456789")) == 0x31C3.
func CRC16(p []byte) uint16 {
	var c uint16
	for _, b := range p {
		c = c<<8 ^ crcTable[byte(c>>8)^b]
	}
	return c
}

func crc16String(s string) uint16 {
	var c uint16
	for i := 0; i < len(s); i++ {
		c = c<<8 ^ crcTable[byte(c>>8)^s[i]]
	}
	return c
}
