package main

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
)

// defaultConfig is where deskd looks for its main file.
const defaultConfig = "/etc/deskd/deskd.yaml"

func newCheckConfigCommand(stdout io.Writer) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "check-config",
		Short: "Validate the config files and print every problem",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(path)
			if err != nil {
				return err
			}
			names := make([]string, 0, len(cfg.Desks))
			for name := range cfg.Desks {
				names = append(names, name)
			}
			sort.Strings(names)
			fmt.Fprintf(stdout, "%s: ok, %d desks %v\n", cfg.Path, len(names), names)
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	return cmd
}

// loadConfig loads the config; its problems, one a line, become the error.
func loadConfig(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	var problems config.Problems
	if errors.As(err, &problems) {
		return nil, &exitError{code: 2, err: fmt.Errorf("config has %d problems:\n%w", len(problems), err)}
	}
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	return cfg, nil
}
