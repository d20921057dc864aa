package main

// The kill switch of a desk, over the API and from the command line:
// deskd pause DESK [--reason TEXT] and deskd resume DESK. A paused desk
// runs no turn; its triggers wait in its queue, or are refused when its
// file says paused_triggers: refuse. The pause is kept in the desk's
// folder (pause.json) and survives a restart.

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/triggers"
)

// maxPauseBody bounds the body of a pause or resume request.
const maxPauseBody = 64 << 10

// pauseRequest is the body of POST /v1/desks/{desk}/pause and .../resume;
// it may be empty.
type pauseRequest struct {
	Reason string `json:"reason,omitempty"`
	// By names who pauses or resumes: the CLI sends the user's login name.
	// Default: "api".
	By string `json:"by,omitempty"`
}

// pauseResponse is the answer of POST /v1/desks/{desk}/pause.
type pauseResponse struct {
	Desk   string     `json:"desk"`
	Paused desk.Pause `json:"paused"`
	// Already is true when the desk was paused before: nothing changed.
	Already bool `json:"already,omitempty"`
	// Running is the trigger of the turn that was running: it finishes.
	Running string `json:"running,omitempty"`
}

// resumeResponse is the answer of POST /v1/desks/{desk}/resume.
type resumeResponse struct {
	Desk string `json:"desk"`
	// Resumed is false when the desk was not paused.
	Resumed bool `json:"resumed"`
	// Was is the pause that ended.
	Was *desk.Pause `json:"was,omitempty"`
	// Queued is how many triggers were waiting.
	Queued int `json:"queued"`
}

// readPauseRequest decodes the optional body: one JSON object of at most
// maxPauseBody bytes (413 past it), decoded strictly (triggers.DecodeJSON:
// nothing after it, no unknown field, UTF-8, errors in words).
func readPauseRequest(w http.ResponseWriter, r *http.Request) (pauseRequest, bool) {
	var req pauseRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPauseBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", maxPauseBody))
		return req, false
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "read the body: "+err.Error())
		return req, false
	}
	if strings.TrimSpace(string(body)) != "" {
		if err := triggers.DecodeJSON(body, &req); err != nil {
			writeError(w, http.StatusBadRequest, `want a JSON body {"reason": "...", "by": "..."}: `+err.Error())
			return req, false
		}
	}
	req.Reason, req.By = strings.TrimSpace(req.Reason), strings.TrimSpace(req.By)
	if req.By == "" {
		req.By = "api"
	}
	return req, true
}

func (a *api) postPause(w http.ResponseWriter, r *http.Request) {
	d, ok := a.desk(w, r)
	if !ok {
		return
	}
	req, ok := readPauseRequest(w, r)
	if !ok {
		return
	}
	p, changed, err := d.Pause(req.By, req.Reason)
	if err != nil {
		a.o.Log.Error().Err(err).Str("desk", d.Name()).Msg("pause")
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	out := pauseResponse{Desk: d.Name(), Paused: p, Already: !changed}
	if run := d.Status().Running; run != nil {
		out.Running = run.Trigger
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) postResume(w http.ResponseWriter, r *http.Request) {
	d, ok := a.desk(w, r)
	if !ok {
		return
	}
	req, ok := readPauseRequest(w, r)
	if !ok {
		return
	}
	queued := d.Status().QueueDepth
	was, err := d.Resume(req.By)
	if err != nil {
		a.o.Log.Error().Err(err).Str("desk", d.Name()).Msg("resume")
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, resumeResponse{Desk: d.Name(), Resumed: was != nil, Was: was, Queued: queued})
}

// operator names the person at the terminal: the login name, else $USER.
func operator() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "cli"
}

func newPauseCommand(stdout io.Writer) *cobra.Command {
	var f clientFlags
	var reason, by string
	cmd := &cobra.Command{
		Use:   "pause DESK",
		Short: "Pause a desk (the kill switch): it runs no turn until resumed; its triggers wait (or are refused: paused_triggers)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.newClient()
			if err != nil {
				return err
			}
			if by == "" {
				by = operator()
			}
			var out pauseResponse
			if _, err := c.do(cmd.Context(), http.MethodPost, "/v1/desks/"+url.PathEscape(args[0])+"/pause",
				pauseRequest{Reason: reason, By: by}, &out); err != nil {
				return err
			}
			verb := "paused"
			if out.Already {
				verb = "was already paused"
			}
			fmt.Fprintf(stdout, "desk %s %s %s\n", termsafe.Line(out.Desk), verb, describePause(out.Paused))
			if out.Running != "" {
				fmt.Fprintf(stdout, "its running turn (trigger %s) finishes; no turn starts after it\n", termsafe.Line(out.Running))
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why: shown in the status and the desk.paused event")
	cmd.Flags().StringVar(&by, "by", "", "who pauses (default: your login name)")
	return cmd
}

func newResumeCommand(stdout io.Writer) *cobra.Command {
	var f clientFlags
	var by string
	cmd := &cobra.Command{
		Use:   "resume DESK",
		Short: "Resume a paused desk: the triggers waiting in its queue run",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.newClient()
			if err != nil {
				return err
			}
			if by == "" {
				by = operator()
			}
			var out resumeResponse
			if _, err := c.do(cmd.Context(), http.MethodPost, "/v1/desks/"+url.PathEscape(args[0])+"/resume",
				pauseRequest{By: by}, &out); err != nil {
				return err
			}
			if !out.Resumed {
				fmt.Fprintf(stdout, "desk %s was not paused\n", termsafe.Line(out.Desk))
				return nil
			}
			fmt.Fprintf(stdout, "desk %s resumed (it was paused %s); %d triggers waiting\n", termsafe.Line(out.Desk), describePause(*out.Was), out.Queued)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&by, "by", "", "who resumes (default: your login name)")
	return cmd
}

// describePause reads "by NAME since TIME: REASON", with NAME and REASON
// escaped (printable): they come from whoever paused the desk.
func describePause(p desk.Pause) string {
	s := "by " + termsafe.Line(p.By)
	if !p.At.IsZero() {
		s += " since " + p.At.UTC().Format(time.RFC3339)
	}
	if p.Reason != "" {
		s += ": " + termsafe.Line(p.Reason)
	}
	return s
}
