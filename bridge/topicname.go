package bridge

// validTopicName applies Kafka's topic-name rules (Topic.validate; the same
// rules docs/design/record-mapping.md §4 applies before any Iggy call): 1..249 bytes of
// [A-Za-z0-9._-], and not "." or "..".
func validTopicName(name string) bool {
	if len(name) == 0 || len(name) > 249 || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
