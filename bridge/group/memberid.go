package group

import "crypto/rand"

// newMemberID returns "<prefix>-<random UUID>", the shape Kafka gives member
// ids (GroupMetadata.generateMemberId: client id, or group.instance.id for a
// static member, then a delimiter and a UUID).
func newMemberID(prefix string) string {
	var u [16]byte
	rand.Read(u[:])         // never fails since Go 1.24 (it aborts the program instead)
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant

	const hexdigits = "0123456789abcdef"
	b := make([]byte, 0, len(prefix)+1+36)
	b = append(b, prefix...)
	b = append(b, '-')
	for i, x := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexdigits[x>>4], hexdigits[x&0x0f])
	}
	return string(b)
}
