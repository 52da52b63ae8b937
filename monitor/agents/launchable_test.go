package agents

import (
	"slices"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// The vocabulary's list of the agents a spawn starts without
// configuration, which the faces offer, is the registry's.
func TestLaunchableAgentsAreTheRegistrys(t *testing.T) {
	var names []string
	for _, s := range Launchable() {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	if got := api.LaunchableAgents(); !slices.Equal(got, names) {
		t.Fatalf("api.LaunchableAgents() = %q, the registry's launchable agents are %q: make them agree", got, names)
	}
}
