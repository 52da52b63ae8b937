package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// rejectUnknownCommands makes every command that groups subcommands fail on
// a word that names none of them, with cobra's suggestions, instead of
// printing its help and exiting 0; and replaces the help command with one
// that fails on an unknown topic.
func rejectUnknownCommands(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = 2
		if c.HasSubCommands() {
			if !c.Runnable() {
				// cobra prints a group's help, and exits 0, before it
				// checks the group's arguments.
				c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			}
			check := c.Args
			c.Args = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return unknownCommand(cmd, args[0])
				}
				if check != nil {
					return check(cmd, args)
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)

	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help prints the help of any command: system3 help COMMAND [SUBCOMMAND].",
		Annotations: map[string]string{
			skipSetup: "true",
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, sub.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return unknownCommand(cmd, rest[0])
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	})
}

// unknownCommand is the error for a word that names no subcommand of cmd.
func unknownCommand(cmd *cobra.Command, word string) error {
	if s := cmd.SuggestionsFor(word); len(s) > 0 {
		return fmt.Errorf("unknown command %q for %q: did you mean %s? (%s --help lists the commands)", word, cmd.CommandPath(), strings.Join(s, " or "), cmd.CommandPath())
	}
	return fmt.Errorf("unknown command %q for %q; %s --help lists the commands", word, cmd.CommandPath(), cmd.CommandPath())
}

// checkHelpArgs reports an unknown command in args that ask for help
// (`system3 nosuch --help`): cobra prints the nearest command's help for
// them without checking its arguments. It parses args on a command tree of
// its own, so the one that runs sees its flags fresh.
func checkHelpArgs(root *cobra.Command, args []string) error {
	if !slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" }) {
		return nil
	}
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == nil {
		return err
	}
	cmd.InitDefaultHelpFlag()
	if err := cmd.ParseFlags(rest); err != nil {
		return nil // Execute reports bad flags
	}
	if cmd.HasSubCommands() {
		if pos := cmd.Flags().Args(); len(pos) > 0 {
			return unknownCommand(cmd, pos[0])
		}
	}
	return nil
}
