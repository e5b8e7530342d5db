// Package record is recordings of runs (txexec --record): a manifest of
// what a deterministic run read of the host — every file, directory
// listing and symlink of its read set, the program interpreters the
// kernel loaded itself — and of what it produced (exit status, stdout,
// stderr, its changes), with file contents as content-addressed blobs;
// the private root tree a replay runs in, made from a manifest; and the
// one-file form of a recording (export, and replay from that file).
//
// Linux analogue: none; rr records a run at the instruction level, this
// records only the file-system inputs a transaction's read set names,
// which, with --deterministic, decide what the run does (docs/semantics.md
// §10 says what they do not cover).
//
// It must not know about seccomp, tracees or SQL: the blobs come and go
// through the Blobs interface (the store's, or a directory of an
// imported file), and cmd/txexec runs the commands.
package record
