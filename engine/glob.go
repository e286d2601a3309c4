package engine

// GlobMatch reports whether s matches pattern by Redis's glob rules
// (stringmatchlen: KEYS, SCAN MATCH, CONFIG GET, COMMAND LIST FILTERBY
// PATTERN, ACL key and channel patterns):
//
//   - any run of bytes, the empty one too
//     ?       any one byte
//     [abc]   one byte of the set; [a-c] a range (the ends in either order);
//     [^...] one byte not in the set; a '[' without ']' ends at the
//     pattern's end
//     \x      x itself, outside and inside [...]
//
// With nocase, ASCII letters match either case (except an escaped byte in a
// set, which Redis compares exactly). Patterns and subjects may be strings
// or byte slices, so callers match what they hold without copying it.
func GlobMatch[T ~string | ~[]byte](pattern, s T, nocase bool) bool {
	p := pattern
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if GlobMatch(p[1:], s[i:], nocase) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			p, s = p[1:], s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			var ok bool
			if p, ok = matchSet(p[1:], s[0], nocase); !ok {
				return false
			}
			s = s[1:]
		default:
			if p[0] == '\\' && len(p) >= 2 {
				p = p[1:]
			}
			if len(s) == 0 || !eqByte(p[0], s[0], nocase) {
				return false
			}
			p, s = p[1:], s[1:]
		}
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			return len(p) == 0
		}
	}
	return len(s) == 0
}

// matchSet matches c against the set that p starts with (just after its
// '['), and returns the pattern after the set's ']'.
func matchSet[T ~string | ~[]byte](p T, c byte, nocase bool) (rest T, ok bool) {
	not := len(p) > 0 && p[0] == '^'
	if not {
		p = p[1:]
	}
	match := false
	for len(p) > 0 && p[0] != ']' {
		switch {
		case p[0] == '\\' && len(p) >= 2:
			match = match || p[1] == c
			p = p[2:]
		case len(p) >= 3 && p[1] == '-':
			lo, hi, x := p[0], p[2], c
			if lo > hi {
				lo, hi = hi, lo
			}
			if nocase {
				x, lo, hi = lowerByte(x), lowerByte(lo), lowerByte(hi)
			}
			match = match || (x >= lo && x <= hi)
			p = p[3:]
		default:
			match = match || eqByte(p[0], c, nocase)
			p = p[1:]
		}
	}
	if len(p) > 0 {
		p = p[1:] // the ']'
	}
	return p, match != not
}

func eqByte(a, b byte, nocase bool) bool {
	if nocase {
		return lowerByte(a) == lowerByte(b)
	}
	return a == b
}
