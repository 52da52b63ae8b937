package wake

import (
	"fmt"
	"time"
)

// eventID makes an ID that sorts by seq (fixed width) and stays unique even if
// the journal is deleted and seq starts again, thanks to the time suffix.
func eventID(seq uint64, t time.Time) string {
	return fmt.Sprintf("w%010d-%s", seq, formatBase36(t.UnixMilli()))
}

func formatBase36(n int64) string {
	if n < 0 {
		n = -n
	}
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	if n == 0 {
		return "0"
	}
	var b [16]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = digits[n%36]
		n /= 36
	}
	return string(b[i:])
}
