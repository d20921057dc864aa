package main

// The daemon under test: a config in a temporary folder, the real deskd
// binary run on it as a child process, and what /proc says of it.

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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// keyEnv is the environment variable the config's model takes its API key
// from; the bench's model server accepts any key.
const keyEnv = "DESKBENCH_MODEL_KEY"

// setup is one config in a folder of its own.
type setup struct {
	Dir      string // the folder
	Config   string // the main file
	State    string // the state folder
	DesksDir string // desks.d
	Port     int    // the API's port on 127.0.0.1
	// DebugPort is the port of deskd's debug listener (pprof) on
	// 127.0.0.1; 0 is none.
	DebugPort int
	// Log, when set, is a file deskd's stderr is appended to, every line.
	Log string
}

// deskFile is the YAML of one bench desk: the model m, a queue long
// enough for every trigger the bench posts, and extra lines.
func deskFile(name, extra string) string {
	return "model: m\ninstructions: You run the " + name + " desk. Keep notes of what you learn.\nqueue_limit: 100000\n" + extra
}

// newSetup writes dir/deskd.yaml (the model m at baseURL, a free port) and
// one file in desks.d per desk name, each deskFile(name, "").
func newSetup(dir, baseURL string, desks []string, debug bool) (setup, error) {
	port, err := freePort()
	if err != nil {
		return setup{}, err
	}
	debugLine := ""
	var debugPort int
	if debug {
		if debugPort, err = freePort(); err != nil {
			return setup{}, err
		}
		debugLine = fmt.Sprintf("debug_listen: 127.0.0.1:%d\n", debugPort)
	}
	s := setup{Dir: dir, Config: filepath.Join(dir, "deskd.yaml"), State: filepath.Join(dir, "state"),
		DesksDir: filepath.Join(dir, "desks.d"), Port: port, DebugPort: debugPort}
	main := fmt.Sprintf(`state_dir: state
timezone: %s
rollover_at: "00:00"
listen: 127.0.0.1:%d
log: {level: info, format: json}
shutdown_timeout: 20s
models:
  m: {provider: openai, base_url: %q, model: bench, api_key_env: %s, timeout: 60s}
%s`, tradingZone, port, baseURL, keyEnv, debugLine)
	if err := os.MkdirAll(s.DesksDir, 0o755); err != nil {
		return s, fmt.Errorf("write the config: %w", err)
	}
	if err := os.WriteFile(s.Config, []byte(main), 0o644); err != nil {
		return s, fmt.Errorf("write the config: %w", err)
	}
	for _, d := range desks {
		if err := s.writeDesk(d, deskFile(d, "")); err != nil {
			return s, err
		}
	}
	return s, nil
}

// writeDesk writes the file of desk name.
func (s setup) writeDesk(name, text string) error {
	if err := os.WriteFile(filepath.Join(s.DesksDir, name+".yaml"), []byte(text), 0o644); err != nil {
		return fmt.Errorf("write desk %s: %w", name, err)
	}
	return nil
}

// URL is the API's base URL.
func (s setup) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", s.Port) }

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// daemon is a running deskd.
type daemon struct {
	cmd     *exec.Cmd
	Started time.Time     // just before the process was started
	ready   chan struct{} // closed at "deskd ready"
	ReadyAt time.Time     // when the bench read "deskd ready" (set before ready closes)
	exited  chan struct{}
	logFile *os.File // setup.Log, closed once stderr has closed

	mu   sync.Mutex
	tail []string // the last 3 lines of stderr, for errors
}

// startDaemon runs bin on s's config with env added to the bench's
// environment.
func startDaemon(bin string, s setup, env ...string) (*daemon, error) {
	d := &daemon{ready: make(chan struct{}), exited: make(chan struct{})}
	d.cmd = exec.Command(bin, "run", "--config", s.Config)
	d.cmd.Env = append(append(os.Environ(), keyEnv+"=bench-key"), env...)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("start deskd: %w", err)
	}
	d.cmd.Stdout = io.Discard
	var r io.Reader = stderr
	if s.Log != "" {
		f, err := os.OpenFile(s.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("start deskd: its log: %w", err)
		}
		r = io.TeeReader(stderr, f)
		defer func() {
			if d.cmd.Process == nil { // not started: read never runs
				f.Close()
			}
		}()
		d.logFile = f
	}
	d.Started = time.Now()
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start deskd: %w", err)
	}
	go d.read(r)
	return d, nil
}

// read follows deskd's stderr until it closes, then waits for the process.
func (d *daemon) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20) // "deskd ready" lists every desk
	ready := false
	for sc.Scan() {
		line := sc.Bytes()
		if !ready && bytes.Contains(line, []byte(`"message":"deskd ready"`)) {
			ready = true
			d.ReadyAt = time.Now()
			close(d.ready)
		}
		d.mu.Lock()
		if len(line) > 600 {
			line = append(line[:600:600], "..."...)
		}
		d.tail = append(d.tail, string(line))
		if len(d.tail) > 3 {
			d.tail = d.tail[len(d.tail)-3:]
		}
		d.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
	_ = d.cmd.Wait()
	if d.logFile != nil {
		d.logFile.Close()
	}
	close(d.exited)
}

// Pid is the process id.
func (d *daemon) Pid() int { return d.cmd.Process.Pid }

// lastLines returns the last lines deskd wrote to stderr.
func (d *daemon) lastLines() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.tail, "\n")
}

// lastLine returns the last line deskd wrote to stderr (where it says why
// it stopped).
func (d *daemon) lastLine() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.tail) == 0 {
		return ""
	}
	return d.tail[len(d.tail)-1]
}

// waitReady waits for "deskd ready".
func (d *daemon) waitReady(ctx context.Context, max time.Duration) error {
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-d.ready:
		return nil
	case <-d.exited:
		return fmt.Errorf("deskd exited before it was ready (%s): %s", d.cmd.ProcessState, d.lastLine())
	case <-t.C:
		return fmt.Errorf("deskd not ready within %s:\n%s", max, d.lastLines())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop sends SIGTERM and waits for the process to end (SIGKILL after 30s).
func (d *daemon) stop() error {
	select {
	case <-d.exited:
		return nil
	default:
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop deskd: %w", err)
	}
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-d.exited:
	case <-t.C:
		_ = d.cmd.Process.Kill()
		<-d.exited
		return fmt.Errorf("deskd did not stop within 30s of SIGTERM")
	}
	if st := d.cmd.ProcessState; st != nil && !st.Success() {
		return fmt.Errorf("deskd exited with %s:\n%s", st, d.lastLines())
	}
	return nil
}

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// Linux).
const clockTick = 10 * time.Millisecond

// cpuTime returns the CPU time process pid has used, all its threads: the
// sum of the threads' time on a CPU from /proc/PID/task/*/schedstat, in
// nanoseconds (a thread that has ended is not counted; the Go runtime
// seldom ends one), or, without schedstat, user and system time from
// /proc/PID/stat in ticks of clockTick. src names the source.
func cpuTime(pid int) (d time.Duration, src string, err error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err == nil {
		var sum int64
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread ended meanwhile
			}
			if err != nil {
				sum = -1
				break
			}
			f := strings.Fields(string(b))
			if len(f) == 0 {
				sum = -1
				break
			}
			ns, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				sum = -1
				break
			}
			sum += ns
		}
		if sum >= 0 {
			return time.Duration(sum), "schedstat", nil
		}
	}
	d, err = statCPU(pid)
	return d, "/proc stat ticks of " + clockTick.String(), err
}

// statCPU returns the user and system CPU time of process pid from
// /proc/PID/stat.
func statCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time of %d: %w", pid, err)
	}
	// The fields after the command, which is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu time of %d: no command in /proc/%d/stat", pid, pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time of %d: short /proc/%d/stat", pid, pid)
	}
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu time of %d: bad utime or stime", pid)
	}
	return time.Duration(ut+st) * clockTick, nil
}

// memoryOf returns VmRSS and VmHWM of process pid, in bytes.
func memoryOf(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("memory of %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("memory of %d: %s: %w", pid, k, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("memory of %d: no VmRSS", pid)
	}
	return rss, hwm, nil
}

// openFDs returns how many files process pid has open.
func openFDs(pid int) (int, error) {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, fmt.Errorf("open files of %d: %w", pid, err)
	}
	return len(es), nil
}

// api is a client of deskd's HTTP API.
type api struct {
	base   string
	client *http.Client
}

// newAPI returns a client of the API at base that keeps up to conns
// connections alive.
func newAPI(base string, conns int) *api {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = conns, conns
	return &api{base: base, client: &http.Client{Transport: tr, Timeout: 2 * time.Minute}}
}

// do sends a request and decodes a JSON answer into out (if not nil); a
// status other than want is an error.
func (a *api) do(ctx context.Context, method, path, body string, want int, out any) error {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, r)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s = %d, want %d: %s", method, path, resp.StatusCode, want, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
		}
	}
	return nil
}

// triggerStatus is the part of GET /v1/desks/{desk}/triggers/{id} the
// bench reads.
type triggerStatus struct {
	State   string `json:"state"`
	Session string `json:"session"`
	Turn    int    `json:"turn"`
	Reply   string `json:"reply"`
}

// post queues a market trigger with id (the idempotency key) and text.
func (a *api) post(ctx context.Context, desk, id, text string) error {
	body, err := json.Marshal(map[string]string{"id": id, "text": text})
	if err != nil {
		return err
	}
	return a.do(ctx, http.MethodPost, "/v1/desks/"+desk+"/triggers", string(body), http.StatusAccepted, nil)
}

// await long-polls trigger id of desk until it is in a final state.
func (a *api) await(ctx context.Context, desk, id string) (triggerStatus, error) {
	for {
		var st triggerStatus
		if err := a.do(ctx, http.MethodGet, "/v1/desks/"+desk+"/triggers/"+id+"?wait=30s", "", http.StatusOK, &st); err != nil {
			return st, err
		}
		switch st.State {
		case "queued", "running", "sent":
			if err := ctx.Err(); err != nil {
				return st, err
			}
			continue
		}
		return st, nil
	}
}

// profile starts a CPU profile of deskd of seconds seconds from its debug
// listener, written to path; the function it returns waits for it.
func (s setup) profile(ctx context.Context, path string, seconds int) func() error {
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			url := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", s.DebugPort, seconds)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("profile deskd: %w", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("profile deskd: %s", resp.Status)
			}
			f, err := os.Create(path)
			if err != nil {
				return fmt.Errorf("profile deskd: %w", err)
			}
			if _, err := io.Copy(f, resp.Body); err != nil {
				_ = f.Close()
				return fmt.Errorf("profile deskd: %w", err)
			}
			return f.Close()
		}()
	}()
	return func() error { return <-done }
}
