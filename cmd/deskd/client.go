package main

// The commands that drive a running deskd through its HTTP API: status,
// trigger, rollover, events, and pause and resume (pause.go).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/triggers"
)

// Exit codes of the client commands, beside 0 (done), 1 (an error, or a
// turn that failed or was dropped) and 2 (usage or config).
const (
	// exitInterrupted: the trigger's turn was interrupted during its model
	// call; an operator decides.
	exitInterrupted = 3
	// exitTimeout: --wait ended before the trigger was answered.
	exitTimeout = 4
)

// clientCommands returns the commands that talk to a running deskd.
func clientCommands(stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{
		newStatusCommand(stdout), newTriggerCommand(stdout, stderr), newRolloverCommand(stdout), newForkCommand(stdout),
		newEventsCommand(stdout, stderr), newPauseCommand(stdout), newResumeCommand(stdout),
	}
}

// clientFlags are how a command finds the daemon.
type clientFlags struct {
	config, addr, tokenFile string
}

func (f *clientFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", defaultConfig, "the main config file, for listen and auth_token_file")
	cmd.Flags().StringVar(&f.addr, "addr", "", "the daemon's address: host:port, unix:PATH or a URL (default: $DESKD_ADDR, else listen of the config)")
	cmd.Flags().StringVar(&f.tokenFile, "token-file", "", "the file of the token to send: the operator's (auth_token_file) or a feed's (feed_token_file) "+
		"(default: $DESKD_TOKEN_FILE, else auth_token_file of the config, which is not read for a unix socket: the socket is the operator's credential)")
}

// client is an HTTP client of the API.
type client struct {
	base  string
	hc    *http.Client
	token string
}

// newClient finds the daemon's address and token: the flags, then the
// environment, then the config's main file. Over a unix socket the
// config's auth_token_file is not read: the socket, which only deskd's
// user and group can open, is the operator's credential by itself.
func (f *clientFlags) newClient() (*client, error) {
	addr, tokenFile := f.addr, f.tokenFile
	configToken := false // tokenFile is the config's auth_token_file
	if addr == "" {
		addr = os.Getenv("DESKD_ADDR")
	}
	if tokenFile == "" {
		tokenFile = os.Getenv("DESKD_TOKEN_FILE")
	}
	if addr == "" || tokenFile == "" {
		cc, err := config.ReadClient(f.config)
		switch {
		case err != nil && addr == "":
			return nil, &exitError{code: 2, err: fmt.Errorf("find the daemon (give --addr, or a readable --config): %w", err)}
		case err == nil:
			if addr == "" {
				addr = pickAddr(cc.Listens)
			}
			if tokenFile == "" {
				tokenFile, configToken = cc.AuthTokenFile, true
			}
		}
	}
	c, err := dialClient(addr)
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	if configToken && strings.HasPrefix(addr, config.UnixPrefix) {
		tokenFile = ""
	}
	if tokenFile != "" {
		if c.token, err = config.ReadAuthToken(tokenFile); err != nil {
			return nil, &exitError{code: 2, err: err}
		}
	}
	return c, nil
}

// pickAddr prefers a unix socket, then the first TCP address.
func pickAddr(listens []string) string {
	for _, a := range listens {
		if strings.HasPrefix(a, config.UnixPrefix) {
			return a
		}
	}
	if len(listens) > 0 {
		return listens[0]
	}
	return config.DefaultListen
}

// dialClient makes a client of addr: host:port, unix:PATH, or an
// http(s):// URL. A wildcard host (0.0.0.0, ::) is reached on loopback.
func dialClient(addr string) (*client, error) {
	c := &client{hc: &http.Client{}}
	switch {
	case strings.HasPrefix(addr, config.UnixPrefix):
		path := strings.TrimPrefix(addr, config.UnixPrefix)
		c.base = "http://deskd"
		c.hc.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}
	case strings.HasPrefix(addr, "http://"), strings.HasPrefix(addr, "https://"):
		c.base = strings.TrimRight(addr, "/")
	default:
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("daemon address %q: want host:port, unix:PATH or a URL", addr)
		}
		if port == "0" {
			return nil, fmt.Errorf("daemon address %q has port 0 (the system chose one): give --addr as printed in the \"deskd ready\" line", addr)
		}
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		c.base = "http://" + net.JoinHostPort(host, port)
	}
	return c, nil
}

// apiError is an error answer of the API.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// do sends a request with a JSON body (unless nil) and decodes a 2xx
// answer into out (unless nil). Other answers are *apiError.
func (c *client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("reach deskd at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("read deskd's answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
		}
		return resp.StatusCode, &apiError{Status: resp.StatusCode, Message: e.Error}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode deskd's answer: %w", err)
		}
	}
	return resp.StatusCode, nil
}

func newStatusCommand(stdout io.Writer) *cobra.Command {
	var f clientFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every desk of the running deskd: session, trading date, queue, running turn, next slot, interrupted triggers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.newClient()
			if err != nil {
				return err
			}
			var out desksResponse
			if _, err := c.do(cmd.Context(), http.MethodGet, "/v1/desks", nil, &out); err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdout, out)
			}
			printStatus(stdout, out.Desks)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return cmd
}

// printStatus prints one line per desk, then the interrupted triggers.
// Every value from the daemon passes through printable: none holds a
// control character, a tab or a line break when it reaches the screen.
func printStatus(w io.Writer, desks []desk.Status) {
	p := termsafe.Line
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DESK\tSTATE\tSESSION\tTRADING DATE\tEXCHANGES\tQUEUE\tRUNNING\tNEXT SLOT\tMARKET\tMODEL")
	for _, s := range desks {
		running := "-"
		if s.Running != nil {
			running = fmt.Sprintf("%s (%s, %s)", s.Running.Trigger, s.Running.Kind, s.Running.Phase)
		}
		next := "-"
		if s.NextSchedule != "" {
			next = s.NextSchedule + " " + s.NextSlot.Format(time.RFC3339)
		}
		market := "-"
		if s.MarketOpen != nil {
			market = s.Calendar + " closed"
			if *s.MarketOpen {
				market = s.Calendar + " open"
			}
		}
		model := s.Model
		if s.Scripted {
			model += " (scripted)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\t%s\n", p(s.Name), p(string(s.State)), p(s.Session), p(s.TradingDate),
			s.Exchanges, s.QueueDepth, s.QueueLimit, p(running), p(next), p(market), p(model))
	}
	_ = tw.Flush()
	for _, s := range desks {
		if s.Paused != nil {
			fmt.Fprintf(w, "\ndesk %s is paused %s; its triggers are %s until deskd resume %s\n", p(s.Name), describePause(*s.Paused),
				map[bool]string{true: "refused", false: "queued"}[s.PausedTriggers == "refuse"], p(s.Name))
		}
	}
	for _, s := range desks {
		for _, u := range s.Unreadable {
			fmt.Fprintf(w, "\ndesk %s cannot read %s, so its prompts go without it: %s\n", p(s.Name), p(u.Path), p(u.Error))
		}
	}
	for _, s := range desks {
		if st := s.Storage; st != nil {
			what := "cannot write to its disk"
			if st.DiskFull {
				what = "cannot write: the disk is full"
			}
			fmt.Fprintf(w, "\ndesk %s %s since %s; it takes no turn, and its triggers wait in the ledger, until a write succeeds:\n  %s\n",
				p(s.Name), what, st.Since.Format(time.RFC3339), p(st.Error))
		}
	}
	for _, s := range desks {
		if len(s.Interrupted) == 0 {
			continue
		}
		fmt.Fprintf(w, "\ndesk %s: %d interrupted triggers (their turns reached the model, which may have acted; not run again):\n", p(s.Name), len(s.Interrupted))
		for _, t := range s.Interrupted {
			fmt.Fprintf(w, "  %s  %s  session %s  %s\n", p(t.ID), p(string(t.Kind)), p(t.Session), p(firstLineOf(t.Text, 60)))
		}
	}
}

func firstLineOf(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

func newTriggerCommand(stdout, stderr io.Writer) *cobra.Command {
	var f clientFlags
	var kind, id, key string
	var wait, asJSON bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "trigger DESK TEXT",
		Short: "Send a desk a trigger (TEXT - reads it from stdin); --wait waits for the answer",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			text := args[1]
			if text == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), triggers.MaxBody+1))
				if err != nil {
					return err
				}
				text = string(b)
			}
			c, err := f.newClient()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var acc triggerResponse
			status, err := c.do(ctx, http.MethodPost, "/v1/desks/"+url.PathEscape(args[0])+"/triggers",
				triggers.Request{Text: text, Kind: triggers.Kind(kind), ID: id, Key: key, Source: "cli"}, &acc)
			if err != nil {
				return err
			}
			if !wait {
				if asJSON {
					return printJSON(stdout, acc)
				}
				if status == http.StatusOK {
					fmt.Fprintf(stdout, "%s: already known, %s\n", acc.ID, acc.State)
				} else {
					fmt.Fprintf(stdout, "%s: queued\n", acc.ID)
				}
				return nil
			}
			s, err := c.waitTrigger(ctx, args[0], acc.ID, timeout)
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(stdout, s); err != nil {
					return err
				}
			} else {
				printOutcome(stdout, s)
			}
			return outcomeError(s)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&kind, "kind", string(triggers.Market), "market or manual: market text reaches the model as untrusted data; manual, as the operator's own words, needs the operator's credential (the token of auth_token_file, or the unix socket)")
	cmd.Flags().StringVar(&id, "id", "", "idempotency key: the same id twice queues once")
	cmd.Flags().StringVar(&key, "key", "", "coalescing key of a market trigger (a symbol, say)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the answer and print the reply")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "with --wait: give up after this long (exit 4)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return cmd
}

// waitTrigger long-polls the trigger until it is final or timeout passes.
func (c *client) waitTrigger(ctx context.Context, deskName, id string, timeout time.Duration) (desk.TriggerStatus, error) {
	deadline := time.Now().Add(timeout)
	path := "/v1/desks/" + url.PathEscape(deskName) + "/triggers/" + url.PathEscape(id)
	for {
		left := time.Until(deadline)
		poll := min(max(left, 0), time.Minute)
		var s desk.TriggerStatus
		if _, err := c.do(ctx, http.MethodGet, path+"?wait="+poll.Round(time.Millisecond).String(), nil, &s); err != nil {
			return s, err
		}
		if s.Final() {
			return s, nil
		}
		if time.Until(deadline) <= 0 {
			return s, &exitError{code: exitTimeout, err: fmt.Errorf("trigger %s is still %s after %s", id, s.State, timeout)}
		}
	}
}

func printOutcome(w io.Writer, s desk.TriggerStatus) {
	head := s.ID + ": " + string(s.State)
	if s.MergedInto != "" {
		head += " (merged into " + s.MergedInto + ")"
	}
	if s.Session != "" {
		head += fmt.Sprintf(", session %s turn %d", s.Session, s.Turn)
	}
	fmt.Fprintln(w, termsafe.Line(head))
	if s.Reason != "" {
		fmt.Fprintln(w, "reason: "+termsafe.Line(s.Reason))
	}
	if s.Reply != "" {
		fmt.Fprintln(w, termsafe.Text(s.Reply))
	}
}

// outcomeError turns a final state into the command's exit.
func outcomeError(s desk.TriggerStatus) error {
	switch s.State {
	case triggers.StateAnswered:
		return nil
	case triggers.StateInterrupted:
		return &exitError{code: exitInterrupted, err: fmt.Errorf("trigger %s was interrupted during its model call; it is not run again", s.ID)}
	default:
		return fmt.Errorf("trigger %s %s: %s", s.ID, s.State, s.Reason)
	}
}

func newRolloverCommand(stdout io.Writer) *cobra.Command {
	return newSessionCommand(stdout, "rollover", "Roll a desk over to a new session now (between turns)")
}

func newForkCommand(stdout io.Writer) *cobra.Command {
	return newSessionCommand(stdout, "fork", "Start a new session that carries the current session's context, linked to it as its parent")
}

// newSessionCommand makes a command that asks the daemon for a new session
// of a desk through POST /v1/desks/{desk}/<verb>.
func newSessionCommand(stdout io.Writer, verb, short string) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   verb + " DESK",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.newClient()
			if err != nil {
				return err
			}
			var out rolloverResponse
			if _, err := c.do(cmd.Context(), http.MethodPost, "/v1/desks/"+url.PathEscape(args[0])+"/"+verb, struct{}{}, &out); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "desk %s: session %s -> %s\n", termsafe.Line(out.Desk), termsafe.Line(out.Previous), termsafe.Line(out.Session))
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newEventsCommand(stdout, stderr io.Writer) *cobra.Command {
	var f clientFlags
	var follow bool
	var deskName string
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print deskd's recent events, one JSON line each; --follow keeps printing new ones",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.newClient()
			if err != nil {
				return err
			}
			return c.streamEvents(cmd.Context(), stdout, stderr, deskName, follow)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep following new events (reconnecting with Last-Event-ID)")
	cmd.Flags().StringVar(&deskName, "desk", "", "only this desk's events")
	return cmd
}

// streamEvents prints the backlog, then, with follow, new events until ctx
// ends, reconnecting after a dropped connection from the last id seen.
func (c *client) streamEvents(ctx context.Context, stdout, stderr io.Writer, deskName string, follow bool) error {
	q := url.Values{"backlog": {"1"}}
	if !follow {
		q.Set("follow", "0")
	}
	if deskName != "" {
		q.Set("desk", deskName)
	}
	lastID := ""
	for {
		err := c.readEvents(ctx, "/v1/events?"+q.Encode(), lastID, func(id, data string) {
			lastID = id
			fmt.Fprintln(stdout, printableEvent(data))
		}, func(comment string) {
			if !strings.HasPrefix(comment, "ping") {
				fmt.Fprintln(stderr, "deskd: "+termsafe.Line(comment))
			}
		})
		if ctx.Err() != nil {
			return nil
		}
		if !follow {
			if errors.Is(err, io.EOF) {
				return nil // the backlog is all there was
			}
			return err
		}
		var ae *apiError
		if errors.As(err, &ae) {
			return err
		}
		fmt.Fprintf(stderr, "deskd: event stream ended (%v); reconnecting\n", err)
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// readEvents reads one SSE connection, calling onEvent for each event and
// onComment for each comment line.
func (c *client) readEvents(ctx context.Context, path, lastID string, onEvent func(id, data string), onComment func(string)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("reach deskd at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &apiError{Status: resp.StatusCode, Message: strings.TrimSpace(string(b))}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var id string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				onEvent(id, strings.Join(data, "\n"))
			}
			data = nil
		case strings.HasPrefix(line, ":"):
			onComment(strings.TrimSpace(line[1:]))
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(line[5:], " "))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.EOF
}

// printJSON prints v as indented JSON, with the characters that could act
// on a terminal escaped (printableJSON): still JSON, of the same value.
func printJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termsafe.JSON(b.Bytes()))
	return err
}

// printableEvent is one event of the stream as deskd events prints it: its
// JSON, escaped by printableJSON; data that is not JSON, by printable.
func printableEvent(data string) string {
	if json.Valid([]byte(data)) {
		return string(termsafe.JSON([]byte(data)))
	}
	return termsafe.Line(data)
}
