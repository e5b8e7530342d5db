package interpose

// Arg is one raw system-call argument register. Its accessors are named
// after the C type of the parameter, so sign and width are always right.
type Arg uint64

// Int is a C int (32-bit, signed): file descriptors, dirfds, flags declared int.
func (a Arg) Int() int32 { return int32(uint32(a)) }

// Uint is a C unsigned int.
func (a Arg) Uint() uint32 { return uint32(a) }

// Long is a C long.
func (a Arg) Long() int64 { return int64(a) }

// Ulong is a C unsigned long.
func (a Arg) Ulong() uint64 { return uint64(a) }

// SizeT is a size_t.
func (a Arg) SizeT() uint64 { return uint64(a) }

// ModeT is a mode_t (unsigned 32-bit).
func (a Arg) ModeT() uint32 { return uint32(a) }

// UIDT is a uid_t or gid_t; -1 (as 0xffffffff) means "leave unchanged".
func (a Arg) UIDT() uint32 { return uint32(a) }

// OffT is an off_t / loff_t.
func (a Arg) OffT() int64 { return int64(a) }

// DevT is a dev_t.
func (a Arg) DevT() uint64 { return uint64(a) }

// Pointer is a user-space address in the tracee.
func (a Arg) Pointer() uintptr { return uintptr(a) }
