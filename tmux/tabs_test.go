package tmux

import "testing"

// tmux 3.6 and later give a tab back to capture-pane as a tab; earlier
// versions as the spaces it moved the cursor over.
func TestExpandTabs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"no tabs", "no tabs"},
		{"tab\there  ", "tab     here  "},
		{"\tx", "        x"},
		{"12345678\tx", "12345678        x"},
		{"a\tb\tc", "a       b       c"},
		{"one\ttwo\nthree\tfour", "one     two\nthree   four"},
		{"中文\tx", "中文    x"},
		{"é\tx", "é       x"},
		{"\x1b[31mred\x1b[0m\tx", "\x1b[31mred\x1b[0m     x"},
		{"\x1b]8;;http://x\x1b\\ln\x1b]8;;\x07\tx", "\x1b]8;;http://x\x1b\\ln\x1b]8;;\x07      x"},
		{"cut\x1b[3", "cut\x1b[3"},
		{"\xff\tx", "\xff       x"},
	} {
		if got := expandTabs(tc.in); got != tc.want {
			t.Errorf("expandTabs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
