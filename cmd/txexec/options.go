package main

import (
	"fmt"
	"os"

	"txexec/internal/cli"
)

// parseRun parses "[options] -- COMMAND [ARG...]" (cli.Parse) and checks
// what only the system can tell: that each --exclude names a directory.
func parseRun(args []string) (*cli.Run, error) {
	o, err := cli.Parse(args)
	if err != nil {
		return nil, err
	}
	for _, p := range o.Excludes {
		if err := checkExclude(p); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// checkExclude refuses an --exclude the view could not honour: it excludes
// directory subtrees, named by a path whose last component is not a
// symlink, that exist when the transaction begins.
func checkExclude(p string) error {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return fmt.Errorf("--exclude %s: %w", p, unwrapPathErr(err))
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("--exclude %s: a symlink; name the directory it points to", p)
	case !fi.IsDir():
		return fmt.Errorf("--exclude %s: not a directory (only directory subtrees can be excluded)", p)
	}
	return nil
}
