// Package wrap protects set-ID programs for every caller: it moves a
// set-user-ID or set-group-ID program, or one with file capabilities,
// aside into a root-owned directory (its set-ID bits removed there) and puts at its path a configured copy
// of the set-user-ID-root launcher (launcher/launcher.c), which starts
// txexec as root to run the original with the credentials the kernel
// would have given it (README "Protecting set-user-ID programs",
// docs/semantics.md §7).
//
// It owns the layout of the wrapped directory (one entry per wrapped
// program: DIR/ID/wrap.conf and DIR/ID/NAME, the original under its own
// name, so that the process is named as natively), the configuration
// format the launcher and txexec read, the configuring of a launcher (the
// configuration's path written into a copy of the template at its
// marker), the rule of a secure path (SecurePath, the launcher's own check
// in Go), and the operations: Wrap, Unwrap, List, Check.
//
// It must not know about transactions or the supervisor: what a wrapped
// program's run does with its configuration is cmd/txexec's.
//
// Linux analogue: none; dpkg-divert is the nearest (a file moved aside and
// something else put in its place), and docs/semantics.md §7 says why
// wrap does not divert.
//
// Invariants:
//   - A wrapped path holds either the original (before the final rename of
//     Wrap, after that of Unwrap) or a launcher whose configuration and
//     original are complete on disk: each file is written under a
//     temporary name, synced, and renamed into place, the launcher last.
//   - The wrapped copy of an original never carries a set-ID bit; it keeps
//     its file capabilities only in an entry searchable by root alone (no
//     one else may execute it: txexec executes it through a descriptor it
//     opened as root). The launcher never has file capabilities and is
//     never set-group-ID (it would hide the caller's effective gid).
package wrap
