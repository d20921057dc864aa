// Command deskbench measures every row of issue 12's table ("the turn path
// at its floor") in one run, each figure beside its floor and its target:
// event to model, CPU per turn, turns per second, start-up on long
// histories, config edit to status, idle desks, model connections and the
// request size at the 1,000th turn.
//
// It runs the real deskd binary (built from this module into a temporary
// folder, or -deskd PATH) on generated configs and state folders, one
// daemon per row, against a model server in this process that speaks
// OpenAI's streamed Chat Completions API and answers at once. It prints a
// table (or, with -json, the figures as JSON):
//
//	go run ./cmd/deskbench              # every row, full size (a few minutes)
//	go run ./cmd/deskbench -quick       # every row, scaled down (about 30 s)
//	go run ./cmd/deskbench -rows 1,3    # some rows
//	go run ./cmd/deskbench cluster      # issue 25: failover on a 3-host cluster (rows 9 to 11)
//
// Speed is measured here, never asserted: the exit status is 0 when every
// row produced its figures, whether or not the targets are met.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// options are the bench's settings; flags set them.
type options struct {
	Deskd        string       // the deskd binary ("": build it)
	Rows         map[int]bool // the rows to run
	JSON         bool         // print JSON
	Keep         bool         // keep the run's folder
	Work         string       // where the run's folder is made
	Events       int          // row 1: triggers
	CPURecords   int          // row 2: records in the session
	CPUTurns     int          // row 2: turns measured
	Desks        int          // row 3: desks
	Inflight     int          // row 3: triggers in flight
	Turns        int          // row 3: triggers
	StartDesks   int          // row 4: desks
	StartRecords int          // row 4: records per session and entries per ledger
	Edits        int          // row 5: edits
	IdleDesks    int          // row 6: idle desks
	H2Turns      int          // row 7: turns against the TLS server
	Turns8       int          // row 8: turns of the desk
	// Profile, when set, is a folder for CPU profiles of deskd over the
	// measured part of rows 1, 2 and 3, taken from its debug listener
	// (debug_listen), ProfileSeconds long: a row that ends sooner waits
	// for its profile (row 1's default 200 triggers take well under a
	// second, so its profile is then mostly idle; raise -events).
	Profile        string
	ProfileSeconds int
}

// fullOptions is issue 12's table at its size.
func fullOptions() options {
	return options{Events: 200, CPURecords: 1000, CPUTurns: 200, Desks: 100, Inflight: 64, Turns: 4000,
		StartDesks: 100, StartRecords: 10000, Edits: 7, IdleDesks: 10000, H2Turns: 20, Turns8: 1000}
}

// quickOptions scale every row down to about 30 seconds in all.
func quickOptions() options {
	return options{Events: 50, CPURecords: 1000, CPUTurns: 50, Desks: 20, Inflight: 16, Turns: 400,
		StartDesks: 10, StartRecords: 2000, Edits: 3, IdleDesks: 1000, H2Turns: 5, Turns8: 100}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "deskbench:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("deskbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "scale every row down (about 30 seconds in all)")
	rows := fs.String("rows", "1,2,3,4,5,6,7,8", "the rows of issue 12's table to run, comma-separated")
	var o options
	fs.StringVar(&o.Deskd, "deskd", "", "the deskd binary (default: build ./cmd/deskd of this module into a temporary folder)")
	fs.BoolVar(&o.JSON, "json", false, "print the figures as JSON")
	fs.BoolVar(&o.Keep, "keep", false, "keep the run's folder (configs, state folders) and print its path")
	fs.StringVar(&o.Work, "work", "", "make the run's folder here (default: the system's temporary folder)")
	fs.StringVar(&o.Profile, "profile", "", "write CPU profiles of deskd over rows 1, 2 and 3 here (row1.pprof, row2.pprof, row3.pprof; read with go tool pprof)")
	fs.IntVar(&o.ProfileSeconds, "profile-seconds", 5, "how long each -profile profile runs (a row that ends sooner waits for it)")
	ints := []struct {
		p    *int
		name string
		use  string
	}{
		{&o.Events, "events", "row 1: triggers measured"},
		{&o.CPURecords, "cpu-records", "row 2: records in the desk's session"},
		{&o.CPUTurns, "cpu-turns", "row 2: turns measured"},
		{&o.Desks, "desks", "row 3: desks"},
		{&o.Inflight, "inflight", "row 3: triggers in flight"},
		{&o.Turns, "turns", "row 3: triggers"},
		{&o.StartDesks, "start-desks", "row 4: desks"},
		{&o.StartRecords, "start-records", "row 4: records per session file and entries per ledger"},
		{&o.Edits, "edits", "row 5: edits"},
		{&o.IdleDesks, "idle-desks", "row 6: idle desks"},
		{&o.H2Turns, "h2-turns", "row 7: turns against the TLS model server offering HTTP/2"},
		{&o.Turns8, "turns8", "row 8: turns of the desk (the request measured is the last one's)"},
	}
	for _, f := range ints {
		fs.IntVar(f.p, f.name, 0, f.use+" (default: the full or -quick size)")
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	def := fullOptions()
	if *quick {
		def = quickOptions()
	}
	for _, f := range ints {
		if *f.p < 0 {
			return o, fmt.Errorf("-%s %d: want 1 or more", f.name, *f.p)
		}
	}
	fill := func(p *int, d int) {
		if *p == 0 {
			*p = d
		}
	}
	fill(&o.Events, def.Events)
	fill(&o.CPURecords, def.CPURecords)
	fill(&o.CPUTurns, def.CPUTurns)
	fill(&o.Desks, def.Desks)
	fill(&o.Inflight, def.Inflight)
	fill(&o.Turns, def.Turns)
	fill(&o.StartDesks, def.StartDesks)
	fill(&o.StartRecords, def.StartRecords)
	fill(&o.Edits, def.Edits)
	fill(&o.IdleDesks, def.IdleDesks)
	fill(&o.H2Turns, def.H2Turns)
	fill(&o.Turns8, def.Turns8)
	o.Rows = map[int]bool{}
	for _, s := range strings.Split(*rows, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 8 {
			return o, fmt.Errorf("-rows %q: want row numbers 1 to 8, comma-separated", *rows)
		}
		o.Rows[n] = true
	}
	return o, nil
}

// machine describes where the bench ran.
type machine struct {
	CPUs    int    `json:"cpus"`
	Model   string `json:"cpu_model"`
	Go      string `json:"go"`
	LoadAvg string `json:"loadavg_at_start"`
	FDLimit string `json:"open_files_limit"`
}

// report is the bench's output.
type report struct {
	Date    string   `json:"date"`
	Command string   `json:"command"`
	Machine machine  `json:"machine"`
	Figures []figure `json:"figures"`
}

// run is the command: parse args, run the rows, print the report.
// newReport is the report of a run of command (deskbench and its
// arguments), taken now on this machine.
func newReport(command []string) report {
	return report{Date: time.Now().UTC().Format(time.RFC3339), Command: strings.Join(command, " "), Machine: thisMachine()}
}

// runFolder makes a run's folder in work, its name beginning with prefix,
// and returns the func that removes it; with keep it is kept, and stderr
// says where it is.
func runFolder(work, prefix string, keep bool, stderr io.Writer) (dir string, cleanup func(), err error) {
	dir, err = os.MkdirTemp(work, prefix)
	if err != nil {
		return "", nil, fmt.Errorf("make the run's folder: %w", err)
	}
	if keep {
		fmt.Fprintln(stderr, "deskbench: the run's folder is", dir)
		return dir, func() {}, nil
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "cluster" {
		return runCluster(ctx, args[1:], stdout, stderr)
	}
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the usage is printed
	}
	if err != nil {
		return err
	}
	rep := newReport(append([]string{"deskbench"}, args...))
	dir, cleanup, err := runFolder(o.Work, "deskbench-", o.Keep, stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	b := &bench{o: o, dir: dir, bin: o.Deskd}
	if b.bin == "" {
		if b.bin, err = buildDeskd(ctx, dir); err != nil {
			return err
		}
	}
	type step struct {
		row int
		run func() ([]figure, error)
	}
	var t3 throughput
	steps := []step{
		{1, func() ([]figure, error) { return b.row1(ctx) }},
		{2, func() ([]figure, error) { return b.row2(ctx) }},
		{3, func() ([]figure, error) {
			var err error
			if t3, err = b.runThroughput(ctx); err != nil {
				return nil, err
			}
			return b.row3(t3), nil
		}},
		{4, func() ([]figure, error) { return b.row4(ctx) }},
		{5, func() ([]figure, error) { return b.row5(ctx) }},
		{6, func() ([]figure, error) { return b.row6(ctx) }},
		{7, func() ([]figure, error) {
			if t3.turns == 0 { // row 3 did not run: its run is row 7's too
				var err error
				if t3, err = b.runThroughput(ctx); err != nil {
					return nil, err
				}
			}
			return b.row7(ctx, t3)
		}},
		{8, func() ([]figure, error) { return b.row8(ctx) }},
	}
	var errs []error
	for _, s := range steps {
		if !o.Rows[s.row] {
			continue
		}
		start := time.Now()
		figs, err := s.run()
		if err != nil {
			errs = append(errs, fmt.Errorf("row %d: %w", s.row, err))
			fmt.Fprintf(stderr, "deskbench: row %d failed after %.1f s: %v\n", s.row, time.Since(start).Seconds(), err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		fmt.Fprintf(stderr, "deskbench: row %d done in %.1f s\n", s.row, time.Since(start).Seconds())
		rep.Figures = append(rep.Figures, figs...)
	}
	if err := printReport(stdout, rep, o.JSON); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// printReport prints rep as JSON or as a table.
func printReport(w io.Writer, rep report, asJSON bool) error {
	var err error
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		err = enc.Encode(rep)
	} else {
		err = printTable(w, rep)
	}
	if err != nil {
		return fmt.Errorf("print the report: %w", err)
	}
	return nil
}

// buildDeskd builds this module's deskd into dir.
func buildDeskd(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "deskd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/deskd/deskd/cmd/deskd")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build deskd (run deskbench inside the module, or give -deskd): %w\n%s", err, out)
	}
	return bin, nil
}

// thisMachine describes the machine.
func thisMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), FDLimit: fdLimit()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	m.LoadAvg = loadAverage()
	return m
}

// printTable prints the report as a plain-text table.
func printTable(w io.Writer, rep report) error {
	fmt.Fprintf(w, "deskbench %s: %d cpus (%s), %s, load %s, open files limit %s\ncommand: %s\n\n",
		rep.Date, rep.Machine.CPUs, rep.Machine.Model, rep.Machine.Go, rep.Machine.LoadAvg, rep.Machine.FDLimit, rep.Command)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "row\twhat\tfigure\tfloor\ttarget\tmet\tnote")
	figs := slices.Clone(rep.Figures)
	for _, f := range figs {
		m := "-"
		if f.Met != nil {
			m = map[bool]string{true: "yes", false: "NO"}[*f.Met]
		}
		v := formatValue(f.Value) + " " + f.Unit
		note := f.Note
		if f.Failed != "" {
			v, note = "FAILED", f.Failed
		}
		note = strings.ReplaceAll(note, "\n", " / ")
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Row, f.Name, v, dash(f.Floor), dash(f.Target), m, note)
	}
	return tw.Flush()
}

// formatValue prints a figure with three significant digits or so.
func formatValue(v float64) string {
	switch a := max(v, -v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
