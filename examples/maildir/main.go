// Command maildir is an example of transactions begun by the program
// itself (docs/semantics.md §9): a small multi-threaded mail-delivery
// server over a maildir-like tree, one file per message, where each
// delivery changes several files. It runs the same server two ways:
//
//   - -mode tx: each request is one transaction (txexec/tx.Run), under
//     `txexec --in-program`: deliveries are atomic and isolated, also
//     against a crash, with no lock in the program;
//   - -mode flock: each request holds its mailbox's flock, the usual way;
//     a crash in the middle leaves a half-made delivery.
//
// A delivery of message ID to USER writes USER/tmp/ID, renames it to
// USER/new/ID (maildir), appends "ID SIZE" to USER/index and rewrites
// USER/summary ("messages N\nbytes B\n"). At the client's QUIT, the server
// says how many deliveries it made in how many runs (tx mode re-runs a
// delivery that lost a conflict). The subcommands:
//
//	maildir serve -mode tx|flock -dir DIR -socket PATH [-fsync]
//	maildir drive -socket PATH -clients N -requests N -users N -out FILE
//	maildir check -dir DIR -acks FILE
//
// drive sends concurrent DELIVER requests and writes how many each user
// was acknowledged; check compares the tree with them (every acknowledged
// message delivered once, index and summary in step with new/, tmp/
// empty). examples/maildir/bench.sh runs both servers and compares them
// (docs/performance.md).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"txexec/tx"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: maildir serve|drive|check [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "drive":
		err = drive(os.Args[2:])
	case "check":
		err = check(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "maildir: %v\n", err)
		os.Exit(1)
	}
}

// server delivers messages into dir.
type server struct {
	dir   string
	mode  string
	fsync bool
	// delivered counts the deliveries made, runs the runs of deliveries
	// (more in tx mode: a delivery that lost a conflict runs again).
	delivered, runs atomic.Int64
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	mode := fs.String("mode", "tx", "tx (one transaction per request) or flock (a lock per mailbox)")
	dir := fs.String("dir", "", "the mail tree")
	sock := fs.String("socket", "", "the unix socket to listen on")
	fsync := fs.Bool("fsync", false, "flock mode: fsync each delivery (tx mode: the commit does)")
	fs.Parse(args)
	if *dir == "" || *sock == "" || (*mode != "tx" && *mode != "flock") {
		return errors.New("serve: -dir, -socket and -mode tx|flock are required")
	}
	if *mode == "tx" {
		// Fail now, clearly, rather than at the first request.
		if _, err := tx.Begin(0); err != nil {
			return err
		}
		if err := tx.End(); err != nil {
			return err
		}
	}
	s := &server{dir: *dir, mode: *mode, fsync: *fsync}
	os.Remove(*sock)
	l, err := net.Listen("unix", *sock)
	if err != nil {
		return err
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go s.conn(c)
	}
}

// conn serves one client: one request per line, "DELIVER USER ID BODY",
// answered "OK" or "ERR why"; "QUIT" stops the server.
func (s *server) conn(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 4)
		switch {
		case len(f) == 1 && f[0] == "QUIT":
			fmt.Printf("served %d deliveries in %d runs\n", s.delivered.Load(), s.runs.Load())
			os.Exit(0)
		case len(f) == 4 && f[0] == "DELIVER":
			if err := s.deliver(f[1], f[2], f[3]+"\n"); err != nil {
				fmt.Fprintf(w, "ERR %v\n", err)
			} else {
				w.WriteString("OK\n")
			}
		default:
			w.WriteString("ERR bad request\n")
		}
		if r.Buffered() == 0 {
			w.Flush()
		}
	}
}

func (s *server) deliver(user, id, body string) error {
	if strings.ContainsAny(user+id, "/.") || user == "" || id == "" {
		return errors.New("bad name")
	}
	box := filepath.Join(s.dir, user)
	if s.mode == "tx" {
		err := tx.Run(func() error {
			s.runs.Add(1)
			return s.deliverIn(box, id, body)
		})
		if err == nil {
			s.delivered.Add(1)
		}
		return err
	}
	if err := os.MkdirAll(box, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(box, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	s.runs.Add(1)
	if err := s.deliverIn(box, id, body); err != nil {
		return err
	}
	s.delivered.Add(1)
	return nil
}

// deliverIn makes the delivery's changes: the message, its index line and
// the summary.
func (s *server) deliverIn(box, id, body string) error {
	for _, d := range []string{"tmp", "new"} {
		if err := os.MkdirAll(filepath.Join(box, d), 0o755); err != nil {
			return err
		}
	}
	tmp := filepath.Join(box, "tmp", id)
	if err := s.write(tmp, []byte(body), os.O_CREATE|os.O_TRUNC|os.O_WRONLY); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(box, "new", id)); err != nil {
		return err
	}
	if err := s.write(filepath.Join(box, "index"), fmt.Appendf(nil, "%s %d\n", id, len(body)), os.O_CREATE|os.O_APPEND|os.O_WRONLY); err != nil {
		return err
	}
	n, bytes, err := readSummary(box)
	if err != nil {
		return err
	}
	if err := s.write(filepath.Join(box, "summary"), fmt.Appendf(nil, "messages %d\nbytes %d\n", n+1, bytes+len(body)), os.O_CREATE|os.O_TRUNC|os.O_WRONLY); err != nil {
		return err
	}
	if s.fsync {
		for _, d := range []string{box, filepath.Join(box, "new"), filepath.Join(box, "tmp")} {
			if err := syncPath(d); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *server) write(path string, b []byte, flags int) error {
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && s.fsync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func readSummary(box string) (n, bytes int, err error) {
	b, err := os.ReadFile(filepath.Join(box, "summary"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscanf(string(b), "messages %d\nbytes %d\n", &n, &bytes); err != nil {
		return 0, 0, fmt.Errorf("summary of %s: %q: %w", box, b, err)
	}
	return n, bytes, nil
}

func drive(args []string) error {
	fs := flag.NewFlagSet("drive", flag.ExitOnError)
	sock := fs.String("socket", "", "the server's socket")
	clients := fs.Int("clients", 8, "concurrent clients")
	requests := fs.Int("requests", 200, "requests per client")
	users := fs.Int("users", 16, "mailboxes")
	out := fs.String("out", "", "where to write the acknowledged deliveries per user")
	quit := fs.Bool("quit", true, "stop the server at the end")
	fs.Parse(args)
	var mu sync.Mutex
	acks := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, *clients)
	start := time.Now()
	for c := range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("unix", *sock)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			r := bufio.NewReader(conn)
			rng := rand.New(rand.NewPCG(uint64(c), 42))
			for i := range *requests {
				user := fmt.Sprintf("user%02d", rng.IntN(*users))
				body := strings.Repeat("x", 100+rng.IntN(900))
				fmt.Fprintf(conn, "DELIVER %s c%di%d %s\n", user, c, i, body)
				line, err := r.ReadString('\n')
				if err != nil {
					errs <- err
					return
				}
				if line != "OK\n" {
					errs <- fmt.Errorf("deliver to %s: %s", user, strings.TrimSpace(line))
					return
				}
				mu.Lock()
				acks[user]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		return err
	}
	total := *clients * *requests
	fmt.Printf("%d deliveries by %d clients in %.3fs: %.0f deliveries/s\n", total, *clients, elapsed.Seconds(), float64(total)/elapsed.Seconds())
	if *quit {
		if conn, err := net.Dial("unix", *sock); err == nil {
			conn.Write([]byte("QUIT\n"))
			conn.Close()
		}
	}
	if *out != "" {
		var b strings.Builder
		for user, n := range acks {
			fmt.Fprintf(&b, "%s %d\n", user, n)
		}
		return os.WriteFile(*out, []byte(b.String()), 0o644)
	}
	return nil
}

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	dir := fs.String("dir", "", "the mail tree")
	acksFile := fs.String("acks", "", "drive's -out")
	fs.Parse(args)
	b, err := os.ReadFile(*acksFile)
	if err != nil {
		return err
	}
	acks := map[string]int{}
	for line := range strings.Lines(string(b)) {
		var user string
		var n int
		if _, err := fmt.Sscanf(line, "%s %d", &user, &n); err != nil {
			return fmt.Errorf("acks: %q: %w", line, err)
		}
		acks[user] = n
	}
	boxes, err := os.ReadDir(*dir)
	if err != nil {
		return err
	}
	var problems []string
	total := 0
	for _, e := range boxes {
		if e.IsDir() {
			if _, ok := acks[e.Name()]; !ok {
				acks[e.Name()] = 0
			}
		}
	}
	for user, want := range acks {
		box := filepath.Join(*dir, user)
		news, _ := os.ReadDir(filepath.Join(box, "new"))
		tmps, _ := os.ReadDir(filepath.Join(box, "tmp"))
		n, bytes, err := readSummary(box)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		index, _ := os.ReadFile(filepath.Join(box, "index"))
		lines := strings.Split(strings.TrimSuffix(string(index), "\n"), "\n")
		if len(index) == 0 {
			lines = nil
		}
		sum := 0
		seen := map[string]bool{}
		for _, l := range lines {
			f := strings.Fields(l)
			size, _ := strconv.Atoi(f[len(f)-1])
			sum += size
			if seen[f[0]] {
				problems = append(problems, fmt.Sprintf("%s: %s indexed twice", user, f[0]))
			}
			seen[f[0]] = true
			st, err := os.Stat(filepath.Join(box, "new", f[0]))
			if err != nil || int(st.Size()) != size {
				problems = append(problems, fmt.Sprintf("%s: indexed message %s missing or of another size", user, f[0]))
			}
		}
		if len(news) != want || n != want || len(lines) != want || bytes != sum || len(tmps) != 0 {
			problems = append(problems, fmt.Sprintf("%s: %d acknowledged, %d in new/, %d indexed, summary says %d (%d bytes, index %d), %d left in tmp/",
				user, want, len(news), len(lines), n, bytes, sum, len(tmps)))
		}
		total += want
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return fmt.Errorf("check: %d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	fmt.Printf("check: %d mailboxes, %d deliveries, all consistent\n", len(acks), total)
	return nil
}
