package audit

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Manifest returns MANIFEST.txt: the notes, then every file with its
// sha256, size and what it is.
func (b *Bundle) Manifest() []byte {
	var m strings.Builder
	for _, line := range b.header {
		m.WriteString(line)
		m.WriteByte('\n')
	}
	m.WriteString("\nfiles (sha256, bytes, path in this bundle: what it is):\n")
	for _, f := range b.files {
		fmt.Fprintf(&m, "%s  %d  %s: %s\n", sha256Hex(f.Data), len(f.Data), f.Name, f.What)
	}
	m.WriteString("\nSHA256SUMS lists the same hashes for `sha256sum -c SHA256SUMS`, run in this folder.\n")
	return []byte(m.String())
}

// Sums returns SHA256SUMS in sha256sum's format.
func (b *Bundle) Sums() []byte {
	var s strings.Builder
	for _, f := range b.files {
		fmt.Fprintf(&s, "%s  %s\n", sha256Hex(f.Data), f.Name)
	}
	return []byte(s.String())
}

// Archive returns the bundle as a gzipped tar: MANIFEST.txt and
// SHA256SUMS first, then the files, all under the bundle's root folder.
func (b *Bundle) Archive(now time.Time) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	gz.Name, gz.ModTime = b.root+".tar", now
	tw := tar.NewWriter(gz)
	all := append([]File{{Name: "MANIFEST.txt", Data: b.Manifest()}, {Name: "SHA256SUMS", Data: b.Sums()}}, b.files...)
	for _, f := range all {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg, Name: b.root + "/" + f.Name, Mode: 0o644, Size: int64(len(f.Data)),
			ModTime: now.UTC().Truncate(time.Second), Uname: "deskd", Gname: "deskd", Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("archive %s: %w", f.Name, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("archive %s: %w", f.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return buf.Bytes(), nil
}

// ReadArchive reads back a bundle that Archive wrote: its files in archive
// order (MANIFEST.txt and SHA256SUMS first), each named by its path in the
// archive (under the bundle's root folder), What left empty. An entry that
// is not a regular file is an error.
func ReadArchive(r io.Reader) ([]File, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	tr := tar.NewReader(gz)
	var files []File
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read bundle: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("read bundle: %s is not a regular file", hdr.Name)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read bundle %s: %w", hdr.Name, err)
		}
		files = append(files, File{Name: hdr.Name, Data: data})
	}
}
