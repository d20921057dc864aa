package testtmp

import "syscall"

// tmpfsMagic is the f_type statfs(2) reports for a tmpfs.
const tmpfsMagic = 0x01021994

// isTmpfs reports whether dir is on a tmpfs.
func isTmpfs(dir string) (bool, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false, err
	}
	return st.Type == tmpfsMagic, nil
}

// alive reports whether process pid exists (one of another user's too).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
