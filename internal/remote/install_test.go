package remote

import "testing"

func TestGoPlatform(t *testing.T) {
	for _, c := range []struct{ uname, goos, goarch string }{
		{"Linux x86_64", "linux", "amd64"},
		{"Linux aarch64", "linux", "arm64"},
		{"Darwin arm64", "darwin", "arm64"},
		{"Linux armv7l", "linux", "arm"},
		{"Linux i686", "linux", "386"},
		{"FreeBSD amd64", "freebsd", "amd64"},
		{"Linux riscv64", "linux", "riscv64"},
		{"Linux", "", ""},
		{"", "", ""},
	} {
		if goos, goarch := goPlatform(c.uname); goos != c.goos || goarch != c.goarch {
			t.Errorf("goPlatform(%q) = %s/%s, want %s/%s", c.uname, goos, goarch, c.goos, c.goarch)
		}
	}
}

func TestQuoteRemotePath(t *testing.T) {
	for in, want := range map[string]string{
		"~/bin/system3":         `"$HOME"/'bin/system3'`,
		"/opt/it's/system3":     `'/opt/it'\''s/system3'`,
		"~/.local/bin/system 3": `"$HOME"/'.local/bin/system 3'`,
	} {
		if got := quoteRemotePath(in); got != want {
			t.Errorf("quoteRemotePath(%q) = %s, want %s", in, got, want)
		}
	}
}
