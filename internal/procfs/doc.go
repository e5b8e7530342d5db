// Package procfs reads the "Key:<tab>value" files of /proc that the
// supervisor consults: /proc/TID/status (credentials, umask, state,
// process group, memory high-water mark) and /proc/PID/fdinfo/FD
// (descriptor flags, the pid behind a pidfd). One parser serves every
// package, so that a field is read the same way everywhere.
//
// It must not know about tracees, transactions or what a field is used for:
// callers pick the fields and give them meaning.
package procfs
