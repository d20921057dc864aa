package desk

// What deskd context shows: a desk's next request, assembled from its
// files as the desk would assemble it, without running the desk.

import (
	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
)

// InspectContext reports the tokens the next request of desk dc of cfg
// would carry, by source (router.Inspect): its router's settings as the
// desk's assembly makes them (RouterSettings: no MCP server is reached),
// its saved session, and the latest summary, which a new session's first
// message carries. It only reads the desk's folder, so it is safe beside
// a running deskd; it opens it as memory.OpenFolder does.
func InspectContext(cfg *config.Config, dc *config.Desk, clk clock.Clock) (router.ContextReport, error) {
	folder, err := memory.OpenFolder(folderOf(cfg, dc.Name), dc.Name, clk.Now)
	if err != nil {
		return router.ContextReport{}, err
	}
	settings, err := RouterSettings(cfg, dc, folder, clk)
	if err != nil {
		return router.ContextReport{}, err
	}
	var summary string
	if s, ok, err := folder.LatestSummary(); err != nil {
		return router.ContextReport{}, err
	} else if ok {
		summary = s.Text
	}
	bus := event.New()
	defer bus.Close()
	return router.Inspect(router.Options{Desk: dc.Name, Folder: folder, Clock: clk, Day: cfg.Day, Bus: bus, Settings: settings}, summary)
}
