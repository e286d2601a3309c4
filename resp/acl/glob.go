package acl

// globMatch is Redis's stringmatch (*, ?, [...], \ escapes), case-sensitive,
// for key patterns.
//
// NB: a copy of resp's globMatch, which this package cannot import; both
// give way to the engine's exported matcher once it has one.
func globMatch(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			p := pattern[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for len(p) > 0 && p[0] != ']' {
				switch {
				case p[0] == '\\' && len(p) >= 2:
					if p[1] == s[0] {
						match = true
					}
					p = p[2:]
				case len(p) >= 3 && p[1] == '-':
					lo, hi := p[0], p[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					if s[0] >= lo && s[0] <= hi {
						match = true
					}
					p = p[3:]
				default:
					if p[0] == s[0] {
						match = true
					}
					p = p[1:]
				}
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			if len(p) > 0 {
				p = p[1:]
			}
			pattern = p
			s = s[1:]
			continue
		case '\\':
			if len(pattern) >= 2 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || s[0] != pattern[0] {
				return false
			}
			s = s[1:]
		}
		pattern = pattern[1:]
	}
	return len(s) == 0
}
