//go:build !linux

package testtmp

// isTmpfs reports false: Root is a Linux folder.
func isTmpfs(string) (bool, error) { return false, nil }
