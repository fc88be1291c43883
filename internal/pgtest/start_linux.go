package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ownerLock is the open, flock-held lock file of this process's server
// directory: held until the process exits, so another test binary's
// cleanOld can tell a live directory from one whose owner died.
var ownerLock *os.File

// start runs initdb and the server, as the "postgres" user when root. The
// server is a child killed when this process exits (Pdeathsig, from a
// thread that never exits); directories of servers whose test binary died
// are removed on the next start.
func start() (string, error) {
	initdb, err := findBin("initdb")
	if err != nil {
		return "", err
	}
	postgres, err := findBin("postgres")
	if err != nil {
		return "", err
	}
	cleanOld()
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return "", fmt.Errorf("running as root, and PostgreSQL refuses root: no \"postgres\" user to run it as (Debian's postgresql package creates it): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "vc-pgtest-")
	if err != nil {
		return "", err
	}
	if ownerLock, err = lockOwner(dir, true); err != nil {
		return "", fmt.Errorf("lock the test server's directory: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return "", err
	}
	if cred != nil {
		if err := os.Chown(data, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", err
		}
	}
	var out bytes.Buffer
	cmd := exec.Command(initdb, "-D", data, "-U", "vc", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = dir
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("initdb: %w\n%s", err, out.String())
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return "", err
	}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the starting thread exits: keep it forever.
		runtime.LockOSThread()
		srv := exec.Command(postgres, "-D", data, "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", "",
			"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
		srv.Stdout, srv.Stderr, srv.Dir = logf, logf, dir
		srv.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := srv.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = srv.Wait()
		select {} // the thread must outlive the server
	}()
	if err := <-started; err != nil {
		return "", fmt.Errorf("start postgres: %w", err)
	}
	base := fmt.Sprintf("postgres://vc@127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, base+"/postgres?sslmode=disable")
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return base, nil
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			return "", fmt.Errorf("postgres did not accept connections within 60 s: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lockName is the file in a server directory whose flock its owner holds.
const lockName = "owner.lock"

// lockOwner takes the flock of dir's owner lock without waiting, creating
// the file when create is set. It fails with EWOULDBLOCK while another
// process holds it. The descriptor is close-on-exec, so initdb and the
// server do not inherit (and keep) the lock.
func lockOwner(dir string, create bool) (*os.File, error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(filepath.Join(dir, lockName), flag, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// cleanOld removes the directories of earlier test servers whose test
// binary is gone: their owner lock is free. Test binaries of several
// packages start servers at the same time, so a directory without its lock
// file yet, or held, is left alone. (A pid check does not do: while initdb
// runs, postmaster.pid holds the bootstrap backend's negated pid.)
func cleanOld() {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), "vc-pgtest-*"))
	for _, d := range old {
		f, err := lockOwner(d, false)
		switch {
		case err == nil:
			_ = os.RemoveAll(d)
			f.Close()
		case errors.Is(err, os.ErrNotExist):
			// Being set up, or left by a version without the lock.
			if st, err := os.Stat(d); err == nil && time.Since(st.ModTime()) > time.Hour {
				_ = os.RemoveAll(d)
			}
		}
	}
}
