package config

import "path/filepath"

// Client is what a command-line client needs from the main file to reach
// a running deskd: its listen addresses and its token file.
type Client struct {
	// Listens is every address of listen (default 127.0.0.1:7317).
	Listens []string
	// AuthTokenFile is the absolute path of the token file, or empty.
	AuthTokenFile string
	// StateDir is the absolute path of state_dir, or empty: where the
	// running deskd keeps its runtime file.
	StateDir string
	// Path is the absolute path of the main file.
	Path string
}

// ReadClient reads listen and auth_token_file from the main file at path,
// without loading or checking the rest of the config (the desks, the
// models), so that a client works whatever state the desk files are in.
func ReadClient(path string) (Client, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Client{}, Problems{{File: path, Reason: err.Error()}}
	}
	s := &sink{}
	root, ok := readYAML(s, abs)
	if !ok {
		return Client{}, s.ps
	}
	c := &Config{}
	loadListen(root, c)
	if f, st := root.str("auth_token_file"); st == set && f != "" {
		if p, err := expandKeyFile(f); err != nil {
			root.problem("auth_token_file", "%v", err)
		} else {
			c.AuthTokenFile = resolve(filepath.Dir(abs), p)
		}
	}
	if len(s.ps) > 0 {
		return Client{}, s.ps
	}
	cl := Client{Listens: c.Listens, AuthTokenFile: c.AuthTokenFile, Path: abs}
	if p, st := root.str("state_dir"); st == set && p != "" {
		cl.StateDir = resolve(filepath.Dir(abs), p)
	}
	return cl, nil
}
