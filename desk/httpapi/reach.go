package httpapi

// How the CLI reaches the running deskd: its address and its token, from
// what the operator gave and the config's main file.

import (
	"context"
	"fmt"
	"strings"

	"github.com/deskd/deskd/config"
)

// Reach is what the CLI was given to find the running deskd (its flags
// and environment); Dial finds the rest in the config's main file.
type Reach struct {
	// Addr is the daemon's address: host:port, unix:PATH or a URL. Empty:
	// where the runtime file of the config's state_dir says deskd serves
	// (Locate), else Pick of the config's listen.
	Addr string
	// TokenFile is the file of the token to send. Empty: the config's
	// auth_token_file, which is not read when the address is a unix
	// socket (the socket, which only deskd's user and group can open, is
	// the operator's credential by itself).
	TokenFile string
	// Config is the main config file, read (config.ReadClient) only when
	// Addr or TokenFile is empty.
	Config string
	// StateDir, if set, gives the state folder to look for the runtime
	// file in, from the config's state_dir.
	StateDir func(string) string
	// Pick chooses the address to dial among listen addresses (the
	// config's, the runtime file's). Required when Addr is empty.
	Pick func([]string) string
	// Notes, if set, is told what the operator should know of where
	// deskd was found (Location.Notes), one note a call.
	Notes func(string)
}

// Dial makes a client of the running deskd as r says: its address, how
// it was found (Client.Found), and its token (config.ReadAuthToken). An
// error says what could not be found or read.
func (r Reach) Dial(ctx context.Context) (*Client, error) {
	addr, tokenFile := r.Addr, r.TokenFile
	configToken := false // tokenFile is the config's auth_token_file
	found := ""
	if addr == "" || tokenFile == "" {
		cc, err := config.ReadClient(r.Config)
		switch {
		case err != nil && addr == "":
			return nil, fmt.Errorf("find the daemon (give --addr, or a readable --config): %w", err)
		case err == nil:
			if addr == "" {
				if r.StateDir != nil {
					cc.StateDir = r.StateDir(cc.StateDir)
				}
				loc := Locate(ctx, cc, r.Pick(cc.Listens), r.Pick)
				addr, found = loc.Addr, loc.Looked
				for _, n := range loc.Notes {
					if r.Notes != nil {
						r.Notes(n)
					}
				}
			}
			if tokenFile == "" {
				tokenFile, configToken = cc.AuthTokenFile, true
			}
		}
	}
	c, err := Dial(addr)
	if err != nil {
		return nil, err
	}
	c.Found = found
	if configToken && strings.HasPrefix(addr, config.UnixPrefix) {
		tokenFile = ""
	}
	if tokenFile != "" {
		if c.Token, err = config.ReadAuthToken(tokenFile); err != nil {
			return nil, err
		}
	}
	return c, nil
}
