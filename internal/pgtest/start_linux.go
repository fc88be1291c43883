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
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

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

// cleanOld removes the directories of earlier test servers that are gone.
func cleanOld() {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), "vc-pgtest-*"))
	for _, d := range old {
		pidData, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid"))
		if err == nil {
			line, _, _ := strings.Cut(string(pidData), "\n")
			if pid, err := strconv.Atoi(strings.TrimSpace(line)); err == nil && pid > 0 {
				if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
					continue // still running
				}
			}
		} else if st, err := os.Stat(d); err == nil && time.Since(st.ModTime()) < time.Minute {
			continue // being set up
		}
		_ = os.RemoveAll(d)
	}
}
