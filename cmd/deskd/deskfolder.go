package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/transcript"
)

// The operator's commands that read a desk's folder (sessions, rename,
// show, export, audit, memory, skills, replay) open it here, and those
// that read the config (context) load it here. They read it without
// changing it (a rename writes only the session's title file, a restore
// or an undo what it names), so they are safe beside a running deskd.

// deskFolder opens the state folder of desk name of cfg
// (desk.OpenStateFolder): a desk no longer in the config is still found
// by its state folder; a desk with neither is an error (exit status 2), a
// desk of the config that has not run one of exit status 1.
func deskFolder(cfg *config.Config, name string) (*memory.Folder, error) {
	folder, err := desk.OpenStateFolder(cfg, name, clock.Real().Now)
	switch {
	case errors.Is(err, desk.ErrNoSuchDesk):
		return nil, &exitError{code: 2, err: err}
	case errors.Is(err, desk.ErrNeverRan):
		return nil, &exitError{code: 1, err: err}
	}
	return folder, err
}

// configRun is the work of a command on the config loaded from --config.
type configRun func(cmd *cobra.Command, cfg *config.Config, args []string) error

// configCommand makes the command use (its usage line), taking args,
// whose help is short, that reads the config: it gets the --config flag,
// and its RunE loads the config (loadConfig) and calls run. A check that
// needs no config (a missing flag) goes in the command's PreRunE, which
// cobra runs first.
func configCommand(use string, args cobra.PositionalArgs, short string, run configRun) *cobra.Command {
	var path string
	cmd := newCommand(use, args, short, func() (*config.Config, error) { return loadConfig(path) }, run)
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	return cmd
}

// newCommand makes the command use (its usage line), taking args, whose
// help is short, that works on what open gives it (a client of the
// running deskd, the config): its RunE calls open, then run with it.
// open runs after cobra has parsed the flags it reads.
func newCommand[T any](use string, args cobra.PositionalArgs, short string, open func() (T, error),
	run func(cmd *cobra.Command, v T, args []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: args, RunE: func(cmd *cobra.Command, args []string) error {
		v, err := open()
		if err != nil {
			return err
		}
		return run(cmd, v, args)
	}}
}

// folderRun is the work of a command on one desk's state folder: cfg is
// the config loaded from --config, folder the state folder of desk
// args[0].
type folderRun func(cmd *cobra.Command, cfg *config.Config, folder *memory.Folder, args []string) error

// folderCommand is configCommand for a command that reads the state
// folder of desk args[0]: its RunE opens the folder (deskFolder) and
// calls run.
func folderCommand(use string, args cobra.PositionalArgs, short string, run folderRun) *cobra.Command {
	return configCommand(use, args, short, inFolder(run))
}

// inFolder is the work of a command on the config that opens the state
// folder of desk args[0] (deskFolder) and calls run.
func inFolder(run folderRun) configRun {
	return func(cmd *cobra.Command, cfg *config.Config, args []string) error {
		folder, err := deskFolder(cfg, args[0])
		if err != nil {
			return err
		}
		return run(cmd, cfg, folder, args)
	}
}

// folderClientRun is the work of a command on one desk's state folder
// that changes it through the running deskd where one answers
// (viaDaemon, with cf).
type folderClientRun func(cmd *cobra.Command, cf *clientFlags, cfg *config.Config, folder *memory.Folder, args []string) error

// folderClientCommand is folderCommand for a command that may change the
// folder (memory --restore, skills --undo): it gets the client flags,
// whose --config names the config, and its RunE opens the folder and
// calls run with them.
func folderClientCommand(use string, args cobra.PositionalArgs, short string, run folderClientRun) *cobra.Command {
	var cf clientFlags
	cmd := newCommand(use, args, short, func() (*config.Config, error) { return loadConfig(cf.config) },
		inFolder(func(cmd *cobra.Command, cfg *config.Config, folder *memory.Folder, args []string) error {
			return run(cmd, &cf, cfg, folder, args)
		}))
	cf.register(cmd)
	return cmd
}

// sessionCommand is folderCommand for a command on one session of desk
// args[0]: args[1] names it (loadSession), the desk's current one when
// there is no args[1].
func sessionCommand(use string, args cobra.PositionalArgs, short string,
	run func(cfg *config.Config, folder *memory.Folder, sess transcript.Session) error) *cobra.Command {
	return folderCommand(use, args, short, func(_ *cobra.Command, cfg *config.Config, folder *memory.Folder, args []string) error {
		sess, err := loadSession(folder, optionalArg(args, 1))
		if err != nil {
			return err
		}
		return run(cfg, folder, sess)
	})
}

// requireOutput is the PreRunE of a command that writes the file of its
// -o flag (*out): without one, the usage error (exit status 2) is
// "<command>: <need>".
func requireOutput(out *string, need string) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if *out == "" {
			return &exitError{code: 2, err: fmt.Errorf("%s: %s", cmd.Name(), need)}
		}
		return nil
	}
}

// writeOutput writes data to file, the -o of an operator's command,
// atomically (memory.WriteFileAtomic, mode 0640); an error is wrapped
// with what was being written.
func writeOutput(file string, data []byte, what string) error {
	if err := memory.WriteFileAtomic(file, data, 0o640); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// loadSession reads the session an operator named (transcript.Pick; ""
// for the desk's current one), with the exit status of a name that names
// none: 1 for a desk with no sessions, 2 for a name that names no session
// or several.
func loadSession(folder *memory.Folder, name string) (transcript.Session, error) {
	s, err := transcript.Load(folder, name)
	return s, pickExit(err)
}

// pickExit gives an error of transcript.Pick its exit status (see
// loadSession); other errors are returned as they are.
func pickExit(err error) error {
	switch {
	case errors.Is(err, transcript.ErrNoSessions):
		return &exitError{code: 1, err: err}
	case errors.Is(err, transcript.ErrUnknownSession), errors.Is(err, transcript.ErrAmbiguousSession):
		return &exitError{code: 2, err: err}
	}
	return err
}

// optionalArg returns args[i], or "" when there is none.
func optionalArg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}
