// Package config reads and validates deskd's configuration files.
//
// The configuration is two kinds of YAML file:
//
//   - the main file (by default /etc/deskd/deskd.yaml, see DefaultPath),
//     which holds the daemon settings (state_dir, timezone, rollover_at,
//     listen, log, shutdown_timeout, debug_listen), the model providers
//     under models, the MCP servers under mcp_servers, and desks_dir;
//   - the desks folder (desks_dir, by default desks.d beside the main
//     file), which holds one file per desk named <desk>.yaml.
//
// Relative paths in the main file are relative to the main file's
// directory; instructions_file in a desk file is relative to the desk
// file's directory.
//
// Load reads everything and validates it in full: it returns either a
// complete, valid *Config or Problems, the list of every problem found in
// every file, each with its file, the dotted path of the field
// ("models.offline.provider", "schedules[1].cron") and the reason. Unknown
// keys, wrong types, bad cron expressions, unknown time zones, unknown
// model names and missing API key sources are all problems. A Config is
// never partially valid, and callers must not modify one after Load returns
// it: the daemon swaps whole Configs.
//
// LoadKeeping is the load of a running daemon (and of deskd run): a desk
// file with problems is refused alone, its desk kept on its config in
// force (or left out when it has none), and the Loaded answer says which;
// any other problem refuses the whole load, as Load does.
//
// Each file is read with its own fresh viper instance (never the global
// one, never WatchConfig). Viper makes keys case-insensitive by lowercasing
// them; two keys in one mapping that differ only in case are a problem
// here instead of silently colliding. Where case matters (environment
// variable names, MCP tool names in limits) the loader asks for the key
// as the file spells it.
//
// API keys are never read or stored here: a Model names where its key
// comes from (api_key_env or api_key_file) and Load checks that the source
// is there. An MCP server's secrets (env_files, pass_env, headers_file)
// are the exception: they are read at load, into MCPServer.Secrets, which
// no problem, change or snapshot shows. The time zone database is embedded (time/tzdata), so zone
// names load on hosts without zoneinfo.
package config
