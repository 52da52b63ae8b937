package claudetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// TestPinnedVersionMatchesPackageJSON keeps PinnedVersion, which the tests
// write as the CLI's onboarding version and the captures are labelled with,
// equal to the version e2e/package.json installs.
func TestPinnedVersionMatchesPackageJSON(t *testing.T) {
	root := testkit.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "e2e", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	if got := pkg.Dependencies["@anthropic-ai/claude-code"]; got != PinnedVersion {
		t.Fatalf("e2e/package.json pins @anthropic-ai/claude-code %q, PinnedVersion is %q: change both together", got, PinnedVersion)
	}
}
