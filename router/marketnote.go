package router

import "github.com/deskd/deskd/triggers"

// holdsMarketEvent reports whether a user message of msgs is a market
// event as triggers.Prompt frames it (a new session's summary in front of
// it or not): the system prompt then says, once, how to read one
// (triggers.MarketNote). A desk's session usually begins with one, so
// the scan ends at its first message; a session without one pays a look
// at each user message's first bytes.
func holdsMarketEvent(msgs []Message) bool {
	for i := range msgs {
		if msgs[i].Role != RoleUser {
			continue
		}
		if _, ok := triggers.EventText(triggers.OwnText(msgs[i].Text)); ok {
			return true
		}
	}
	return false
}
