package mcphost

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/deskd/deskd/config"
)

// stderrTail is how much of a stdio server's stderr is kept.
const stderrTail = 2 << 10

// process is a running stdio server.
type process struct {
	name   string
	pid    int
	stdin  *os.File // deskd's end of the server's stdin
	stdout *os.File // deskd's end of the server's stdout
	stderr *tail
	grace  time.Duration // Options.Grace

	exited chan struct{} // closed when the process has exited and was reaped
	err    error         // cmd.Wait's, set before exited is closed

	stopOnce sync.Once
}

// startProcess starts a stdio server in a process group of its own, with a
// clean environment, and with SIGKILL as its parent-death signal.
//
// Pdeathsig fires when the thread that started the child ends, not the
// process: the child is started and waited for from a goroutine that
// holds its OS thread locked for the child's whole life.
func startProcess(cfg *config.MCPServer, grace time.Duration) (*process, error) {
	if len(cfg.Command) == 0 {
		return nil, errors.New("no command")
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("make the stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("make the stdout pipe: %w", err)
	}
	p := &process{name: cfg.Name, stdin: inW, stdout: outR, stderr: &tail{}, grace: grace, exited: make(chan struct{})}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = environ(cfg)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	cmd.WaitDelay = grace
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread ends with this goroutine, after the
		// child has been reaped.
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		p.err = cmd.Wait()
		// What the server left in its process group (a helper, a
		// wrapper's child) ends with it, whether it exited or was stopped.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		close(p.exited)
	}()
	err = <-started
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start %s: %w", cfg.Command[0], err)
	}
	return p, nil
}

// environ is a stdio server's environment: PATH, LANG, TZ and HOME, then
// the server's env and secret env.
func environ(cfg *config.MCPServer) []string {
	env := map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TZ": "UTC"}
	if home, ok := os.LookupEnv("HOME"); ok {
		env["HOME"] = home
	}
	for k, v := range cfg.Env {
		env[k] = v
	}
	for k, v := range cfg.Secrets.Env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// stop closes the server's stdin and waits for it to exit; after its
// grace it sends SIGTERM to its process group, and after the grace again
// SIGKILL. It returns when the process has been reaped.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		p.closeInput()
		if p.wait(p.grace) {
			return
		}
		syscall.Kill(-p.pid, syscall.SIGTERM)
		if p.wait(p.grace) {
			return
		}
		syscall.Kill(-p.pid, syscall.SIGKILL)
		<-p.exited
	})
	p.stdout.Close()
}

// closeInput closes deskd's end of the server's stdin: a write blocked
// on it ends with an error. Closing it again does nothing.
func (p *process) closeInput() { _ = p.stdin.Close() }

func (p *process) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// explain says why the server failed: err (or, when nil, its exit), and
// the last line it wrote on stderr.
func (p *process) explain(err error) error {
	select {
	case <-p.exited:
		if err == nil {
			err = fmt.Errorf("the process exited (%v)", exitText(p.err))
		} else {
			err = fmt.Errorf("%w; the process exited (%v)", err, exitText(p.err))
		}
	default:
		if err == nil {
			err = errors.New("the process ended its session")
		}
	}
	if line := p.stderr.lastLine(); line != "" {
		err = fmt.Errorf("%w; its stderr ends: %s", err, line)
	}
	return err
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// tail keeps the last stderrTail bytes written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > stderrTail {
		t.b = append(t.b[:0], t.b[len(t.b)-stderrTail:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// lastLine is the last non-empty line, cleaned (cleanText) and cut at
// 200 bytes: it reaches logs, terminals and the model.
func (t *tail) lastLine() string {
	lines := strings.Split(strings.TrimSpace(t.String()), "\n")
	return cleanText(strings.TrimSpace(lines[len(lines)-1]), 200)
}
