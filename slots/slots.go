package slots

// Count is the number of hash slots (Redis Cluster's CLUSTER_SLOTS).
const Count = 16384

// Of returns key's hash slot in [0, Count), honouring the {hash tag} rule.
func Of(key []byte) int {
	return int(CRC16(Tag(key)) & (Count - 1))
}

// OfString is Of for a string key, without copying it.
func OfString(key string) int {
	s, e := tagBounds(key)
	return int(crc16String(key[s:e]) & (Count - 1))
}

// Tag returns the bytes of key that are hashed: the hash tag if key has a
// non-empty one, else key itself.
func Tag(key []byte) []byte {
	s, e := tagBounds(key)
	return key[s:e]
}

// tagBounds returns the hashed part key[s:e]: the text between the first '{'
// and the first '}' after it when non-empty, otherwise the whole key.
func tagBounds[T string | []byte](key T) (s, e int) {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return 0, len(key) // "{}": empty tag, hash the whole key
				}
				return i + 1, j
			}
		}
		return 0, len(key) // '{' without '}'
	}
	return 0, len(key)
}
