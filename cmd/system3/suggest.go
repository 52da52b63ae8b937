package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError adds the flags a mistyped one resembles to pflag's error
// ("unknown flag: --tmux-sockt; did you mean --tmux-socket?").
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	name, _, _ = strings.Cut(name, "=")
	var near []string
	visit := func(f *pflag.Flag) {
		if !f.Hidden && closeTo(name, f.Name) && !slices.Contains(near, "--"+f.Name) {
			near = append(near, "--"+f.Name)
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if len(near) == 0 {
		return fmt.Errorf("%s (run `%s --help` for the flags)", msg, cmd.CommandPath())
	}
	return fmt.Errorf("%s; did you mean %s?", msg, orList(near))
}

// closeTo reports whether a mistyped name is near a real one: one is a
// prefix of the other, or they are at most two edits apart.
func closeTo(typed, name string) bool {
	if typed == "" {
		return false
	}
	if strings.HasPrefix(name, typed) || strings.HasPrefix(typed, name) {
		return true
	}
	return editDistance(typed, name) <= 2
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// orList is "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
