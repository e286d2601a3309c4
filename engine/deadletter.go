package engine

// deadLetter is a stub until dead-lettering lands.
func (e *Engine) deadLetter(key []byte, s *Stream, g *Group, nk *NACK, fields [][]byte, now int64) bool {
	return false
}
