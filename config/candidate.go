package config

import "path/filepath"

// LoadDeskFile reads and validates one desk file at path against the main
// settings of c (its models, MCP servers and calendars), as Load reads
// each file of desks_dir, without adding it to c: a candidate desk that
// deskd replay runs a past day against. The desk's name is the file's
// (<desk>.yaml). It returns every problem at once, as Problems.
func LoadDeskFile(c *Config, path string) (*Desk, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, Problems{{File: path, Reason: err.Error()}}
	}
	s := &sink{}
	d := loadDesk(s, c, abs)
	if len(s.ps) > 0 {
		return nil, s.ps
	}
	if d == nil {
		return nil, Problems{{File: abs, Reason: "not a desk file"}}
	}
	return d, nil
}
