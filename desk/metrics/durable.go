package metrics

// Durable is what the metrics read of the desks' file layer at each
// scrape: the counts of its group commit (memory/durable.Group).
// *desk.Daemon is one.
type Durable interface {
	// DurableCounts returns how many synced writes waited for a flush,
	// and how many fsyncs of one file and syncfs calls the flushes made,
	// since start.
	DurableCounts() (syncedWrites, fsyncs, syncfss int64)
}

// SetDurable adds the metrics of the desks' group commit, read from d at
// each scrape: deskd_durable_synced_writes_total,
// deskd_durable_flushes_total (every flush, one fsync or one syncfs),
// deskd_durable_fsyncs_total and deskd_durable_syncfs_total. Their
// ratio, flushes per synced write, says how much the writes of many
// desks share their fsyncs. Without it they are absent. Call it once.
func (m *Registry) SetDurable(d Durable) {
	read := func(pick func(writes, fsyncs, syncfss int64) int64) func() float64 {
		return func() float64 { return float64(pick(d.DurableCounts())) }
	}
	m.reg.MustRegister(
		counterFunc("deskd_durable_synced_writes_total",
			"Synced appends of the desks' ledgers and sessions that waited for a flush (group commit).",
			read(func(w, _, _ int64) int64 { return w })),
		counterFunc("deskd_durable_flushes_total",
			"Flushes that made synced writes durable: one fsync of a file, or one syncfs shared by the writers waiting at once.",
			read(func(_, f, s int64) int64 { return f + s })),
		counterFunc("deskd_durable_fsyncs_total",
			"Flushes that were an fsync of one file (a lone writer, or a check after a failed syncfs).",
			read(func(_, f, _ int64) int64 { return f })),
		counterFunc("deskd_durable_syncfs_total",
			"Flushes that were one syncfs of the state folder's file system, covering every writer that waited.",
			read(func(_, _, s int64) int64 { return s })),
	)
}
