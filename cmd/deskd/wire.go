package main

import (
	"fmt"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
)

// routerSettings turns a desk's config into its router's settings: the
// model route with each model's client, the built-in and command tools,
// the budgets and the compaction share.
func routerSettings(cfg *config.Config, dc *config.Desk, folder *memory.Folder, clk clock.Clock) (router.Settings, error) {
	s := router.Settings{
		Instructions:  dc.Instructions,
		MaxToolRounds: dc.MaxToolRounds,
		CompactShare:  dc.CompactShare,
		Retry:         router.RetryPolicy{},
		Budgets: router.Budgets{
			TurnTokens: dc.Budgets.TurnTokens, SessionTokens: dc.Budgets.SessionTokens, DayTokens: dc.Budgets.DayTokens,
			DayCost: dc.Budgets.DayCost, ReserveTokens: dc.Budgets.ReserveTokens,
		},
		Tools: router.BuiltinTools(folder, func() memory.Date { return cfg.Day.DateOf(clk.Now()) }),
	}
	for _, name := range append([]string{dc.Model}, dc.Fallbacks...) {
		m, err := newModel(cfg.Models[name])
		if err != nil {
			return router.Settings{}, err
		}
		s.Route = append(s.Route, m)
	}
	for _, t := range dc.Tools {
		s.Tools = append(s.Tools, router.CommandTool{
			Name: t.Name, Description: t.Description, Schema: t.Schema, Argv: t.Command, Timeout: t.Timeout, MaxOutput: t.MaxOutput,
		}.Tool(dc.Name))
	}
	return s, nil
}

// newModel makes the client of one configured model. The API key is read
// here, handed to the client, and kept nowhere else.
func newModel(m config.Model) (router.Model, error) {
	rm := router.Model{Name: m.Name, Provider: m.Provider, ContextWindow: m.ContextWindow}
	if m.Prices != nil {
		rm.Prices = router.Prices{Input: m.Prices.Input, Output: m.Prices.Output, CachedInput: m.Prices.CachedInput}
	}
	if m.Provider == router.ScriptedProvider {
		rm.Client = router.Scripted{}
		return rm, nil
	}
	key, err := m.APIKey()
	if err != nil {
		return router.Model{}, err
	}
	switch m.Provider {
	case router.OpenAIProvider:
		rm.Client, err = router.NewOpenAI(router.OpenAIOptions{
			Name: m.Name, BaseURL: m.BaseURL, Model: m.Model, APIKey: key, MaxOutputTokens: m.MaxOutputTokens, Timeout: m.Timeout,
		})
	case router.AnthropicProvider:
		rm.Client, err = router.NewAnthropic(router.AnthropicOptions{
			Name: m.Name, BaseURL: m.BaseURL, Model: m.Model, APIKey: key, MaxOutputTokens: m.MaxOutputTokens, Timeout: m.Timeout,
		})
	default:
		err = fmt.Errorf("model %s: unknown provider %q", m.Name, m.Provider)
	}
	if err != nil {
		return router.Model{}, err
	}
	return rm, nil
}
