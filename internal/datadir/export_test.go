package datadir

// SetAfterBind sets the hook ListenUnix runs between bind and chmod, and
// returns a function that restores the old one.
func SetAfterBind(f func(path string)) (restore func()) {
	old := afterBind
	afterBind = f
	return func() { afterBind = old }
}
