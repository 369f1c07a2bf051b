package wire

// Decoding helpers shared by the codecs.

// resize returns s with length n, reusing its capacity (steady-state
// decoding allocates nothing) and keeping earlier elements' storage.
func resize[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)
}

// resizeNullable is resize for a nullable array: n < 0 (null) gives nil, and
// a present array is never nil, so null and empty stay distinct.
func resizeNullable[T any](s []T, n int) []T {
	if n < 0 {
		return nil
	}
	s = resize(s, n)
	if s == nil {
		s = []T{}
	}
	return s
}

// arrayLen reads the count of a non-nullable array: null fails the read.
func arrayLen(rd *Reader, flex bool, minElem int) int {
	n := rd.ArrayLen(flex, minElem)
	if n < 0 {
		rd.Fail(ErrNegativeLength)
		return 0
	}
	return n
}

// nullStr reads a nullable string.
func nullStr(rd *Reader, flex bool) NullString {
	s, ok := rd.NullableStr(flex)
	return NullString{S: s, Valid: ok}
}

// int32s reads a non-nullable []INT32 into s's storage.
func int32s(rd *Reader, flex bool, s []int32) []int32 {
	s = resize(s, arrayLen(rd, flex, 4))
	for i := range s {
		s[i] = rd.Int32()
	}
	return s
}

// strs reads a []STRING into s's storage; a null array is nil when nullable
// and an error otherwise.
func strs(rd *Reader, flex, nullable bool, s []string) []string {
	minElem := 2
	if flex {
		minElem = 1
	}
	n := rd.ArrayLen(flex, minElem)
	switch {
	case n >= 0 && nullable:
		s = resizeNullable(s, n)
	case n >= 0:
		s = resize(s, n)
	case nullable:
		return nil
	default:
		rd.Fail(ErrNegativeLength)
		return s[:0]
	}
	for i := range s {
		s[i] = rd.Str(flex)
	}
	return s
}
