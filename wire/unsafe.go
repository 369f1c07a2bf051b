package wire

import "unsafe"

// viewString returns a string that aliases b without copying. The string is
// valid only as long as b is not modified: for decoded requests, until the
// frame is released. This is the only use of package unsafe in wire.
func viewString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
