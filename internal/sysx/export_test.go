package sysx

// What creds_test.go (package sysx_test, so that it can use
// internal/testenv, which imports this package) needs of Self's insides.

func (s *Self) IDs() (uid, gid uint32, groups []uint32) { return s.uid, s.gid, s.groups }

func (s *Self) Caps() (eff, perm uint64) { return s.capEff, s.capPerm }

func (s *Self) SetEffective(eff uint64) error { return s.capsetEffective(eff) }
