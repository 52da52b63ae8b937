package approval

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// matchWords matches a command glob against one simple command: * stands
// for any text (spaces and slashes too), ? for one character, everything
// else for itself; runs of blanks count as one space. A pattern ending in
// " *" also matches the command without arguments ("go test *" matches
// "go test").
func matchWords(pattern, s string) bool {
	pattern = normSpace(pattern)
	if base, ok := strings.CutSuffix(pattern, " *"); ok && s == base {
		return true
	}
	return wildcard(pattern, s)
}

// wildcard reports whether s matches pattern, where * is any run of bytes
// and ? one rune. It runs in O(len(pattern)·len(s)) at worst.
func wildcard(pattern, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, 0
	for sx < len(s) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starP, starS = px, sx
				px++
				continue
			case '?':
				_, n := utf8.DecodeRuneInString(s[sx:])
				px++
				sx += n
				continue
			default:
				if c == s[sx] {
					px++
					sx++
					continue
				}
			}
		}
		if starP >= 0 {
			starS++
			px, sx = starP+1, starS
			continue
		}
		return false
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}

// matchPath matches a path glob against a clean absolute path: path.Match
// per segment, and a segment ** for any number of segments (none too).
// A relative glob is taken relative to base (the pane's working
// directory); a glob ending in / matches everything under it.
func matchPath(glob, base, p string) bool {
	if !strings.HasPrefix(glob, "/") {
		if base == "" {
			return false
		}
		glob = strings.TrimSuffix(base, "/") + "/" + glob
	}
	if strings.HasSuffix(glob, "/") {
		glob += "**"
	}
	return matchSegs(splitPath(glob), splitPath(p))
}

func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
}

func matchSegs(g, p []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for len(g) > 0 && g[0] == "**" {
				g = g[1:]
			}
			if len(g) == 0 {
				return true
			}
			for i := range p {
				if matchSegs(g, p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 {
			return false
		}
		if ok, err := path.Match(g[0], p[0]); err != nil || !ok {
			return false
		}
		g, p = g[1:], p[1:]
	}
	return len(p) == 0
}

// checkPathGlob refuses a path glob path.Match cannot read.
func checkPathGlob(g string) error {
	if strings.TrimSpace(g) == "" {
		return fmt.Errorf("an empty path glob")
	}
	if strings.HasPrefix(g, "~") {
		return fmt.Errorf("path glob %q: write the home directory out, or a glob relative to the pane's working directory", g)
	}
	for _, seg := range splitPath(g) {
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("path glob %q: %v", g, err)
		}
	}
	return nil
}

// inside reports whether the clean absolute path p is dir or under it.
func inside(dir, p string) bool {
	if dir == "" || p == "" {
		return false
	}
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}
