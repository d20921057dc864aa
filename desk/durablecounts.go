package desk

// DurableCounts returns the counts of the desks' group commit
// (memory/durable.Group.Stats): how many synced writes waited for a
// flush, and how many fsyncs of one file and syncfs calls the flushes
// made, since the daemon was made. metrics.SetDurable reads it.
func (d *Daemon) DurableCounts() (syncedWrites, fsyncs, syncfss int64) {
	s := d.group.Stats()
	return s.Syncs, s.Fsyncs, s.SyncFSs
}
