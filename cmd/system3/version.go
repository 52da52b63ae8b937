package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

// buildVersion reports the version: the linker-set one, else the module
// version recorded by `go install module@version`, else "devel".
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func newVersionCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:         "version",
		Short:       "Print the system3 version",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{skipSetup: "1"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(map[string]string{
					"version": buildVersion(),
					"go":      runtime.Version(),
					"os_arch": runtime.GOOS + "/" + runtime.GOARCH,
				})
			}
			_, err := fmt.Fprintf(a.stdout, "system3 %s (%s, %s/%s)\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
